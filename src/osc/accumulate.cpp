// Accumulate, Get_accumulate, Fetch_and_op and Compare_and_swap at the
// origin: type checks, then per target the NIC's atomics (rdma.h), active
// messages, hardware atomics on mapped memory, or a read-modify-write under
// the target's accumulate lock. The element atomics and the lock are shared
// with the target side of active messages (target.cpp), so local and remote
// accumulates on the same memory are atomic with each other.
#include "osc/internal.h"

#include <cstring>
#include <vector>

#include "osc/am.h"
#include "osc/rdma.h"

namespace axon::osc {

namespace {

// The basic type every element of `t` has, or nullptr (mixed / empty).
const Datatype* basic_of(const Datatype& t) {
  if (t.predefined) return &t;
  if (t.signature_count == 0) return nullptr;
  const Datatype* b = t.signature[0].basic;
  for (size_t i = 1; i < t.signature_count; ++i)
    if (t.signature[i].basic != b) return nullptr;
  return b;
}

// Whether accesses of `basic` elements at these runs use hardware atomics:
// mapped memory, 4- or 8-byte elements, every element aligned. The choice
// depends only on the window flavor, the type and the address, so concurrent
// accumulates on the same location with the same basic type always take the
// same path (their atomicity is what MPI requires).
bool use_atomics(const Peer& p, const Datatype& basic, uint64_t at, const Datatype& t, size_t count) {
  if (p.path != Path::Mapped || (basic.size != 4 && basic.size != 8) || !basic.contiguous) return false;
  bool aligned = true;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    if ((at + off) % basic.size || len % basic.size) aligned = false;
  });
  return aligned;
}

// Every element of `t` at `at` on an 8-byte boundary (NIC atomics).
bool aligned8(uint64_t at, const Datatype& t, size_t count) {
  bool aligned = true;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    if ((at + off) % 8 || len % 8) aligned = false;
  });
  return aligned;
}

// Active messages name target memory by its offset from the target's base;
// locate() gives Rdma peers' absolute addresses.
uint64_t am_at(const Peer& p, uint64_t at) { return p.path == Path::Rdma ? at - p.base : at; }

}  // namespace

// inout = in op inout on `count` packed elements of `basic`. op_apply works
// on elements laid out with their extent: pair types with padding
// (MPI_DOUBLE_INT ...) are unpacked around it.
int apply_packed(const Op& op, const unsigned char* in, unsigned char* inout, size_t count, const Datatype& basic) {
  if (basic.contiguous) return op_apply(op, in, inout, count, basic);
  const size_t extent = static_cast<size_t>(basic.extent);
  std::vector<unsigned char> a(count * extent), b(count * extent);
  unpack_items(basic, in, count, a.data());
  unpack_items(basic, inout, count, b.data());
  int rc = op_apply(op, a.data(), b.data(), count, basic);
  if (rc == MPI_SUCCESS) pack_items(basic, b.data(), count, inout);
  return rc;
}

// Compare-and-swap of one aligned 4- or 8-byte word in memory other
// processes map too; `result` receives the old value.
void atomic_compare_and_swap(void* word, size_t size, const void* origin, const void* compare, void* result) {
  if (size == 4) {
    uint32_t expected, desired;
    memcpy(&expected, compare, 4);
    memcpy(&desired, origin, 4);
    __atomic_compare_exchange_n(static_cast<uint32_t*>(word), &expected, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    memcpy(result, &expected, 4);
  } else {
    uint64_t expected, desired;
    memcpy(&expected, compare, 8);
    memcpy(&desired, origin, 8);
    __atomic_compare_exchange_n(static_cast<uint64_t*>(word), &expected, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    memcpy(result, &expected, 8);
  }
}

int accumulate(Window* w, const void* origin, size_t ocount, const Datatype* otype, void* result,
               size_t rcount, const Datatype* rtype, int target, MPI_Aint disp, size_t tcount,
               const Datatype& ttype, const Op& op) {
  const Datatype* basic = basic_of(ttype);
  const size_t bytes = ttype.size * tcount;
  if (bytes == 0) return MPI_SUCCESS;
  if (!basic || basic->size == 0) return MPI_ERR_TYPE;
  if (!op_defined_for(op, *basic)) return MPI_ERR_OP;
  const bool no_op = op.kind == OpKind::no_op;
  if (!no_op) {
    const Datatype* obasic = otype ? basic_of(*otype) : nullptr;
    if (!obasic || obasic->element != basic->element || otype->size * ocount != bytes) return MPI_ERR_TYPE;
  }
  if (result && rtype->size * rcount != bytes) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS) return rc;

  // Origin data and fetched data as packed streams of basic elements.
  std::vector<unsigned char> in_buf, old_buf;
  const unsigned char* in = nullptr;
  if (!no_op) {
    in = static_cast<const unsigned char*>(origin);
    if (!otype->contiguous) {
      in_buf.resize(bytes);
      pack_items(*otype, origin, ocount, in_buf.data());
      in = in_buf.data();
    }
  }
  unsigned char* old = nullptr;
  if (result) {
    if (rtype->contiguous) old = static_cast<unsigned char*>(result);
    else old_buf.resize(bytes), old = old_buf.data();
  }

  const Peer& p = w->peers[target];
  if (rdma::nic(w, target, *basic, &op) && aligned8(at, ttype, tcount)) {
    rc = rdma::fetch_add(w, target, at, tcount, ttype, in, old);
  } else if (p.path == Path::Am || p.path == Path::Rdma) {
    // After this origin's NIC atomics to the target (accumulate ordering).
    if (p.path == Path::Rdma && w->nic_atomics) rc = rdma::flush(w, target);
    if (rc == MPI_SUCCESS) rc = am::accumulate(w, target, am_at(p, at), tcount, ttype, *basic, op, in, old);
  } else if (use_atomics(p, *basic, at, ttype, tcount)) {
    size_t done = 0;
    const size_t es = basic->size;
    for_each_run(ttype, tcount, [&](std::ptrdiff_t off, size_t len) {
      auto* mem = reinterpret_cast<unsigned char*>(at + off);
      for (size_t i = 0; i < len; i += es, done += es) {
        const void* src = in ? in + done : nullptr;
        void* dst = old ? old + done : nullptr;
        if (es == 4) atomic_element(reinterpret_cast<uint32_t*>(mem + i), src, dst, op, *basic);
        else atomic_element(reinterpret_cast<uint64_t*>(mem + i), src, dst, op, *basic);
      }
    });
  } else {
    std::vector<unsigned char> cur(bytes);
    if (p.path == Path::Cma) cma_order(w, target);  // after this origin's queued Put / Get
    AccLock lock(w, target);
    rc = transfer(w, target, at, tcount, ttype, cur.data(), false);
    if (rc == MPI_SUCCESS && old) memcpy(old, cur.data(), bytes);
    if (rc == MPI_SUCCESS && !no_op) {
      rc = apply_packed(op, in, cur.data(), bytes / basic->size, *basic);
      if (rc == MPI_SUCCESS) rc = transfer(w, target, at, tcount, ttype, cur.data(), true);
    }
  }
  if (rc == MPI_SUCCESS && result && !rtype->contiguous) unpack_items(*rtype, old, rcount, result);
  return rc;
}

int compare_and_swap(Window* w, const void* origin, const void* compare, void* result, const Datatype& type,
                     int target, MPI_Aint disp) {
  uint64_t at;
  int rc = locate(w, target, disp, 1, type, &at);
  if (rc != MPI_SUCCESS) return rc;
  const Peer& p = w->peers[target];
  if (rdma::nic(w, target, type, nullptr) && at % 8 == 0)
    return rdma::compare_and_swap(w, target, at, origin, compare, result);
  if (p.path == Path::Am || p.path == Path::Rdma) {
    if (p.path == Path::Rdma && w->nic_atomics) rc = rdma::flush(w, target);
    return rc != MPI_SUCCESS ? rc : am::compare_and_swap(w, target, am_at(p, at), type, origin, compare, result);
  }
  if (use_atomics(p, type, at, type, 1)) {
    atomic_compare_and_swap(reinterpret_cast<void*>(at), type.size, origin, compare, result);
    return MPI_SUCCESS;
  }
  std::vector<unsigned char> cur(type.size);
  if (p.path == Path::Cma) cma_order(w, target);
  AccLock lock(w, target);
  rc = transfer(w, target, at, 1, type, cur.data(), false);
  if (rc != MPI_SUCCESS) return rc;
  memcpy(result, cur.data(), type.size);
  if (memcmp(cur.data(), compare, type.size) == 0)
    rc = transfer(w, target, at, 1, type, const_cast<unsigned char*>(static_cast<const unsigned char*>(origin)),
                  true);
  return rc;
}

}  // namespace axon::osc
