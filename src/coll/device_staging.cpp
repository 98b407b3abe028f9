// Collectives on GPU buffers: the device send and receive buffers of a call
// are swapped for host copies, the host algorithm runs on them, and the
// receive buffer is copied back (engine.cpp: when a blocking call returns,
// in a last round of a nonblocking or persistent call's schedule). Only the
// bytes the call can touch (the span of its counts, displacements and
// types) are copied. The host copies come from accel's pinned pool: a copy
// to or from pinned memory runs at the link's speed, while one from fresh
// malloc'ed pages made the driver lock them on every call (2 MiB allreduce
// 7x slower than 1 MiB on an H200, docs/performance.md). Reductions still
// combine with the GPU kernels where they apply (Args::device_combine,
// accel::combine_on_device). Persistent calls copy in at every start
// (copy_in) and back at every completion (copy_out).
#include <algorithm>
#include <cstdint>

#include "accel/accel.h"
#include "accel/kernels.h"
#include "coll/internal.h"

namespace axon::coll {

namespace {

// Bytes [lo, hi) relative to a buffer that a call touches.
struct Span {
  ptrdiff_t lo = 0, hi = 0;
  bool any = false;
  // `count` items of `t` starting `offset` bytes into the buffer.
  void add(const Datatype* t, MPI_Count count, ptrdiff_t offset) {
    if (!t || count <= 0) return;
    ptrdiff_t last = static_cast<ptrdiff_t>(count - 1) * t->extent;
    ptrdiff_t l = offset + t->true_lb + std::min<ptrdiff_t>(0, last);
    ptrdiff_t h = offset + t->true_lb + t->true_extent + std::max<ptrdiff_t>(0, last);
    lo = any ? std::min(lo, l) : l;
    hi = any ? std::max(hi, h) : h;
    any = true;
  }
  size_t len() const { return any && hi > lo ? static_cast<size_t>(hi - lo) : 0; }
};

// Collectives whose non-vector buffer on this side holds one block per peer.
bool send_blocks(Kind k) { return k == Kind::alltoall || k == Kind::scatter; }
bool recv_blocks(Kind k) { return k == Kind::alltoall || k == Kind::gather || k == Kind::allgather; }
bool reduce_scatter(Kind k) { return k == Kind::reduce_scatter || k == Kind::reduce_scatter_block; }

MPI_Count sum(const std::vector<MPI_Count>& v) {
  MPI_Count s = 0;
  for (MPI_Count x : v) s += x;
  return s;
}

Span send_span(const Args& a, int peers) {
  Span s;
  if (a.kind == Kind::alltoallw) {
    for (size_t i = 0; i < a.sendcounts.size(); ++i) s.add(a.sendtypes[i], a.sendcounts[i], a.sdispls[i]);
  } else if (!a.sendcounts.empty()) {
    for (size_t i = 0; i < a.sendcounts.size(); ++i) s.add(a.sendtype, a.sendcounts[i], a.sdispls[i] * a.sendtype->extent);
  } else if (reduce_scatter(a.kind)) {
    s.add(a.sendtype, sum(a.recvcounts), 0);
  } else {
    s.add(a.sendtype, a.sendcount * (send_blocks(a.kind) ? peers : 1), 0);
  }
  return s;
}

Span recv_span(const Args& a, int peers) {
  Span s;
  if (a.kind == Kind::alltoallw) {
    for (size_t i = 0; i < a.recvcounts.size(); ++i) s.add(a.recvtypes[i], a.recvcounts[i], a.rdispls[i]);
  } else if (reduce_scatter(a.kind)) {
    // In place, the whole input is in the receive buffer.
    s.add(a.recvtype, a.in_place ? sum(a.recvcounts) : a.recvcount, 0);
  } else if (!a.recvcounts.empty()) {
    for (size_t i = 0; i < a.recvcounts.size(); ++i) s.add(a.recvtype, a.recvcounts[i], a.rdispls[i] * a.recvtype->extent);
  } else {
    s.add(a.recvtype, a.recvcount * (recv_blocks(a.kind) ? peers : 1), 0);
  }
  return s;
}

// Whether the call writes every byte of the receive span on every rank, so
// the span need not be copied up first (contiguous types only: a copy
// keeps the holes of others).
bool writes_whole_recv(const Args& a) {
  if (a.in_place || !a.recvtype || !a.recvtype->contiguous) return false;
  switch (a.kind) {
    case Kind::allreduce: case Kind::allgather: case Kind::alltoall: case Kind::reduce_scatter_block:
    case Kind::scan:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool names_device_memory(const Args& a) { return accel::on_device(a.sendbuf) || accel::on_device(a.recvbuf); }

DeviceStaging::~DeviceStaging() {
  accel::pinned_free(recv_host_, recv_len_);
  accel::pinned_free(send_host_, send_len_);
}

int DeviceStaging::finish() {
  if (finished_) return MPI_SUCCESS;
  finished_ = true;
  return copy_out();
}

int DeviceStaging::copy_out() {
  if (recv_copy_ && accel::copy_from_host(recv_device_, recv_host_, recv_copy_) != 0) return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

int DeviceStaging::copy_in() {
  if (send_copy_ && accel::copy_to_host(send_host_, send_device_, send_copy_) != 0) return MPI_ERR_OTHER;
  if (recv_copy_in_ && recv_copy_ && accel::copy_to_host(recv_host_, recv_device_, recv_copy_) != 0)
    return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

int stage_device_buffers(Args* a, int peers, std::unique_ptr<DeviceStaging>* out) {
  auto st = std::make_unique<DeviceStaging>();
  if (a->sendbuf && !a->in_place && accel::on_device(a->sendbuf)) {
    Span s = send_span(*a, peers);
    size_t n = s.len();
    st->send_len_ = n ? n : 1;
    st->send_host_ = accel::pinned_alloc(st->send_len_);
    if (!st->send_host_) return MPI_ERR_NO_MEM;
    const auto* dev = static_cast<const uint8_t*>(a->sendbuf) + s.lo;
    st->send_device_ = dev;
    st->send_copy_ = n;
    if (accel::copy_to_host(st->send_host_, dev, n) != 0) return MPI_ERR_OTHER;
    a->sendbuf = static_cast<uint8_t*>(st->send_host_) - s.lo;
  }
  if (a->recvbuf && accel::on_device(a->recvbuf)) {
    Span s = recv_span(*a, peers);
    size_t n = s.len();
    st->recv_len_ = n ? n : 1;
    st->recv_host_ = accel::pinned_alloc(st->recv_len_);
    if (!st->recv_host_) return MPI_ERR_NO_MEM;
    st->recv_device_ = static_cast<uint8_t*>(a->recvbuf) + s.lo;
    st->recv_copy_ = n;
    st->recv_copy_in_ = !writes_whole_recv(*a);
    if (st->recv_copy_in_ && accel::copy_to_host(st->recv_host_, st->recv_device_, n) != 0) return MPI_ERR_OTHER;
    a->recvbuf = static_cast<uint8_t*>(st->recv_host_) - s.lo;
  }
  // Reductions: the local combine steps run as GPU kernels where they
  // apply, else on the CPU. Each call's choice is counted and logged: here
  // when no kernel applies, else by engine.cpp once it knows the algorithm
  // (the node-level ones combine on the CPU).
  if (a->op && a->recvtype) {
    // The bytes the call reduces: its count, or its per-rank counts.
    MPI_Count items = a->recvcount;
    for (MPI_Count n : a->recvcounts) items += n;
    const auto bytes = static_cast<size_t>(items) * a->recvtype->size;
    const char* why = accel::collective_host_reason(*a->op, *a->recvtype, bytes);
    if (why) accel::count_collective_combine(kind_name(a->kind), why);
    a->device_combine = !why;
  }
  *out = std::move(st);
  return MPI_SUCCESS;
}

}  // namespace axon::coll
