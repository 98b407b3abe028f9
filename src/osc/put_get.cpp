// MPI_Put / MPI_Get at the origin: where the target's data is (range checks,
// dynamic windows' attached memory), the choice of path per target (mapped
// memory, CMA queue or call, RDMA, active messages), and whether an
// operation is inside an access epoch.
#include "osc/internal.h"

#include <cstring>
#include <vector>

#include "osc/am.h"
#include "osc/rdma.h"

namespace axon::osc {

namespace {

// The bytes [lo, hi) that `count` items of `t` touch, from their displacement.
void span_of(size_t count, const Datatype& t, std::ptrdiff_t* lo, std::ptrdiff_t* hi) {
  *lo = t.true_lb, *hi = t.true_lb + t.true_extent;
  if (count > 1) {
    std::ptrdiff_t span = static_cast<std::ptrdiff_t>(count - 1) * t.extent;
    (span < 0 ? *lo : *hi) += span;
  }
  if (count == 0 || t.size == 0) *lo = *hi = 0;
}

// The registration key of a Path::Rdma target's memory at `at` (0: reach
// it by active messages: a dynamic window's region that is not registered,
// or an access spanning regions), or MPI_ERR_RMA_RANGE (dynamic windows:
// not attached there). Counts dynamic windows' operations by path.
int rdma_key(Window* w, int target, uint64_t at, size_t count, const Datatype& t, uint64_t* key) {
  if (w->flavor != Flavor::Dynamic) {
    *key = w->peers[target].key;
    return MPI_SUCCESS;
  }
  std::ptrdiff_t lo, hi;
  span_of(count, t, &lo, &hi);
  int rc = rdma::dyn_key(w, target, at + static_cast<uint64_t>(lo), at + static_cast<uint64_t>(hi), key);
  if (rc == MPI_SUCCESS) rdma::count_dynamic(*key != 0);
  return rc;
}

}  // namespace

// Where `count` items of `t` at displacement `disp` of `target` are: checks
// the range and returns the address (local for Mapped / Self, the target's
// for Cma).
int locate(const Window* w, int target, MPI_Aint disp, size_t count, const Datatype& t, uint64_t* at) {
  const Peer& p = w->peers[target];
  std::ptrdiff_t lo, hi;
  span_of(count, t, &lo, &hi);
  if (w->flavor == Flavor::Dynamic) {
    // Absolute addresses: the whole access must lie in attached memory.
    uint64_t first = static_cast<uint64_t>(disp + lo), last = static_cast<uint64_t>(disp + hi);
    if (lo == hi || !p.same_node) {
      // Another node's regions are not visible here: that target checks.
      *at = static_cast<uint64_t>(disp);
      return MPI_SUCCESS;
    }
    if (!attached(w, target, first, last)) return MPI_ERR_RMA_RANGE;
    *at = static_cast<uint64_t>(disp);
    return MPI_SUCCESS;
  }
  if (disp < 0) return MPI_ERR_RMA_RANGE;
  __int128 off = static_cast<__int128>(disp) * p.disp_unit;
  if (lo != hi && (off + lo < 0 || off + hi > static_cast<__int128>(p.size))) return MPI_ERR_RMA_RANGE;
  uint64_t start = p.path == Path::Mapped ? reinterpret_cast<uint64_t>(p.mapped) : p.base;
  *at = start + static_cast<uint64_t>(off);
  return MPI_SUCCESS;
}

int check_access(const Window* w, int target) {
  if (w->ep.fence || holds_passive(w, target)) return MPI_SUCCESS;
  if (w->ep.started)
    for (int t : w->ep.start_group)
      if (t == target) return MPI_SUCCESS;
  return MPI_ERR_RMA_SYNC;
}

int check_passive(const Window* w, int target) {
  return holds_passive(w, target) ? MPI_SUCCESS : MPI_ERR_RMA_SYNC;
}

int put(Window* w, const void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype) {
  if (otype.size * ocount != ttype.size * tcount) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS || ttype.size * tcount == 0) return rc;
  const Peer& p = w->peers[target];
  if (otype.contiguous && ttype.contiguous && p.path <= Path::Self) {
    memcpy(reinterpret_cast<void*>(at), origin, otype.size * ocount);  // the common case
    return MPI_SUCCESS;
  }
  std::vector<unsigned char> packed;
  const unsigned char* dense = static_cast<const unsigned char*>(origin);
  if (!otype.contiguous) {
    packed.resize(otype.size * ocount);
    pack_items(otype, origin, ocount, packed.data());
    dense = packed.data();
  }
  if (p.path == Path::Rdma) {
    uint64_t key;
    rc = rdma_key(w, target, at, tcount, ttype, &key);
    if (rc != MPI_SUCCESS) return rc;
    if (key) return rdma::put(w, target, key, at, tcount, ttype, dense);
    return am::put(w, target, at, tcount, ttype, dense);  // dynamic: this region by active messages
  }
  if (p.path == Path::Am) {
    if (w->flavor == Flavor::Dynamic) rdma::count_dynamic(false);
    return am::put(w, target, at, tcount, ttype, dense);
  }
  if (p.path == Path::Cma) {
    // Contiguous origin: queued (the buffer is ours to read until the
    // synchronization); otherwise after what is queued, now.
    if (otype.contiguous && cma_enqueue(w, target, at, tcount, ttype, const_cast<unsigned char*>(dense), true))
      return MPI_SUCCESS;
    cma_order(w, target);
  }
  return transfer(w, target, at, tcount, ttype, const_cast<unsigned char*>(dense), true);
}

int get(Window* w, void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype) {
  if (otype.size * ocount != ttype.size * tcount) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS || ttype.size * tcount == 0) return rc;
  uint64_t key = 0;
  if (w->peers[target].path == Path::Rdma) {
    rc = rdma_key(w, target, at, tcount, ttype, &key);
    if (rc != MPI_SUCCESS) return rc;
  }
  if (key) {
    // Straight into the origin buffer, complete at the next flush; a
    // non-contiguous origin type is unpacked from a buffer filled now.
    if (otype.contiguous) return rdma::get(w, target, key, at, tcount, ttype, static_cast<unsigned char*>(origin));
    std::vector<unsigned char> packed(otype.size * ocount);
    rc = rdma::get(w, target, key, at, tcount, ttype, packed.data());
    if (rc == MPI_SUCCESS) rc = rdma::flush(w, target);
    if (rc == MPI_SUCCESS) unpack_items(otype, packed.data(), ocount, origin);
    return rc;
  }
  // Path::Rdma without a key: a dynamic window's region reached by messages.
  const bool by_am = w->peers[target].path == Path::Am || w->peers[target].path == Path::Rdma;
  if (w->peers[target].path == Path::Am && w->flavor == Flavor::Dynamic) rdma::count_dynamic(false);
  if (w->peers[target].path == Path::Cma) {
    // Contiguous origin: the data lands at the synchronization (MPI allows
    // it); otherwise read now, after what is queued.
    if (otype.contiguous && cma_enqueue(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin), false))
      return MPI_SUCCESS;
    cma_order(w, target);
  }
  if (otype.contiguous)
    return by_am ? am::get(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin))
                 : transfer(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin), false);
  std::vector<unsigned char> packed(otype.size * ocount);
  rc = by_am ? am::get(w, target, at, tcount, ttype, packed.data())
             : transfer(w, target, at, tcount, ttype, packed.data(), false);
  if (rc == MPI_SUCCESS) unpack_items(otype, packed.data(), ocount, origin);
  return rc;
}

}  // namespace axon::osc
