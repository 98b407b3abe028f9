// The target side of the active-message path (declared in am.h): what an
// operation or synchronization message that am.cpp received does to this
// rank's window memory and control words. It uses the same accumulate lock,
// hardware atomics and lock word as local origins (internal.h), so that
// local and remote accesses stay atomic with each other.
#include "osc/internal.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "osc/am.h"

namespace axon::osc {

namespace detail {

namespace {
unsigned char* own(const Window* w, uint64_t off) {
  const uint64_t base = w->flavor == Flavor::Dynamic ? 0 : reinterpret_cast<uint64_t>(w->base);
  return reinterpret_cast<unsigned char*>(base + off);
}
}  // namespace

int target_check(const Window* w, const Run* runs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Run& r = runs[i];
    if (r.len == 0) continue;
    if (w->flavor != Flavor::Dynamic) {
      if (r.off > w->bytes || r.len > w->bytes - r.off) return MPI_ERR_RMA_RANGE;
      continue;
    }
    if (!attached(w, w->rank, r.off, r.off + r.len)) return MPI_ERR_RMA_RANGE;
  }
  return MPI_SUCCESS;
}

void target_write(Window* w, const Run* runs, size_t n, const unsigned char* data) {
  for (size_t i = 0; i < n; data += runs[i].len, ++i) memcpy(own(w, runs[i].off), data, runs[i].len);
}

void target_read(const Window* w, const Run* runs, size_t n, unsigned char* data) {
  for (size_t i = 0; i < n; data += runs[i].len, ++i) memcpy(data, own(w, runs[i].off), runs[i].len);
}

int target_accumulate(Window* w, const Run* runs, size_t n, const Datatype& basic, const Op& op,
                      const unsigned char* in, unsigned char* old) {
  const size_t es = basic.size;
  // The same choice as use_atomics for a local origin on this memory.
  bool atomics = w->peers[w->rank].path == Path::Mapped && (es == 4 || es == 8) && basic.contiguous;
  for (size_t i = 0; i < n && atomics; ++i)
    if (reinterpret_cast<uint64_t>(own(w, runs[i].off)) % es || runs[i].len % es) atomics = false;
  size_t done = 0;
  if (atomics) {
    for (size_t i = 0; i < n; ++i) {
      unsigned char* mem = own(w, runs[i].off);
      for (size_t k = 0; k < runs[i].len; k += es, done += es) {
        const void* src = in ? in + done : nullptr;
        void* dst = old ? old + done : nullptr;
        if (es == 4) atomic_element(reinterpret_cast<uint32_t*>(mem + k), src, dst, op, basic);
        else atomic_element(reinterpret_cast<uint64_t*>(mem + k), src, dst, op, basic);
      }
    }
    return MPI_SUCCESS;
  }
  // Read-modify-write of the packed elements (an element may span runs:
  // pair types), under the accumulate lock as for a local origin.
  for (size_t i = 0; i < n; ++i) done += runs[i].len;
  std::vector<unsigned char> cur(done);
  AccLock lock(w, w->rank);
  target_read(w, runs, n, cur.data());
  if (old) memcpy(old, cur.data(), done);
  if (op.kind == OpKind::no_op) return MPI_SUCCESS;
  int rc = apply_packed(op, in, cur.data(), done / es, basic);
  if (rc == MPI_SUCCESS) target_write(w, runs, n, cur.data());
  return rc;
}

void target_cas(Window* w, uint64_t off, const Datatype& type, const void* origin, const void* compare,
                void* result) {
  unsigned char* mem = own(w, off);
  const size_t es = type.size;
  if (w->peers[w->rank].path == Path::Mapped && (es == 4 || es == 8) && reinterpret_cast<uint64_t>(mem) % es == 0) {
    atomic_compare_and_swap(mem, es, origin, compare, result);
    return;
  }
  AccLock lock(w, w->rank);
  memcpy(result, mem, es);
  if (memcmp(mem, compare, es) == 0) memcpy(mem, origin, es);
}

bool target_try_lock(Window* w, bool exclusive) {
  std::atomic<uint32_t>& word = peer_ctl(w, w->rank).lock;
  uint32_t v = word.load(std::memory_order_relaxed);
  if (exclusive) {
    v = 0;
    return word.compare_exchange_strong(v, kExclusive, std::memory_order_acquire);
  }
  while (!(v & kExclusive))
    if (word.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) return true;
  return false;
}

void target_unlock(Window* w, bool exclusive) {
  release_lock(peer_ctl(w, w->rank).lock, exclusive ? kLockedExclusive : kLockedShared);
}

void post_arrived(Window* w, int target) {
  post_counter(w, w->rank, target).fetch_add(1, std::memory_order_release);
}

void complete_arrived(Window* w) { peer_ctl(w, w->rank).completions.fetch_add(1, std::memory_order_release); }

}  // namespace detail

}  // namespace axon::osc
