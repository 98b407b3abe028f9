// Host staging of GPU buffers for collectives (see coll_staging.h).
#include "accel/coll_staging.h"

#include <algorithm>

#include "accel/accel.h"

namespace axon::accel {

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

using coll::Kind;

// Collectives whose non-vector buffer on this side holds one block per peer.
bool send_blocks(Kind k) { return k == Kind::alltoall || k == Kind::scatter; }
bool recv_blocks(Kind k) { return k == Kind::alltoall || k == Kind::gather || k == Kind::allgather; }
bool reduce_scatter(Kind k) { return k == Kind::reduce_scatter || k == Kind::reduce_scatter_block; }

MPI_Count sum(const std::vector<MPI_Count>& v) {
  MPI_Count s = 0;
  for (MPI_Count x : v) s += x;
  return s;
}

Span send_span(const coll::Args& a, int peers) {
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

Span recv_span(const coll::Args& a, int peers) {
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
bool writes_whole_recv(const coll::Args& a) {
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

bool collective_on_device(const coll::Args& a) { return on_device(a.sendbuf) || on_device(a.recvbuf); }

CollStaging::~CollStaging() {
  pinned_free(recv_host_, recv_len_);
  pinned_free(send_host_, send_len_);
}

int CollStaging::finish() {
  if (finished_) return MPI_SUCCESS;
  finished_ = true;
  return copy_out();
}

int CollStaging::copy_out() {
  if (recv_copy_ && copy_from_host(recv_device_, recv_host_, recv_copy_) != 0) return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

int CollStaging::copy_in() {
  if (send_copy_ && copy_to_host(send_host_, send_device_, send_copy_) != 0) return MPI_ERR_OTHER;
  if (recv_copy_in_ && recv_copy_ && copy_to_host(recv_host_, recv_device_, recv_copy_) != 0) return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

int stage_collective(coll::Args* a, int peers, std::unique_ptr<CollStaging>* out) {
  auto st = std::make_unique<CollStaging>();
  if (a->sendbuf && !a->in_place && on_device(a->sendbuf)) {
    Span s = send_span(*a, peers);
    size_t n = s.len();
    st->send_len_ = n ? n : 1;
    st->send_host_ = pinned_alloc(st->send_len_);
    if (!st->send_host_) return MPI_ERR_NO_MEM;
    const auto* dev = static_cast<const uint8_t*>(a->sendbuf) + s.lo;
    st->send_device_ = dev;
    st->send_copy_ = n;
    if (copy_to_host(st->send_host_, dev, n) != 0) return MPI_ERR_OTHER;
    a->sendbuf = static_cast<uint8_t*>(st->send_host_) - s.lo;
  }
  if (a->recvbuf && on_device(a->recvbuf)) {
    Span s = recv_span(*a, peers);
    size_t n = s.len();
    st->recv_len_ = n ? n : 1;
    st->recv_host_ = pinned_alloc(st->recv_len_);
    if (!st->recv_host_) return MPI_ERR_NO_MEM;
    st->recv_device_ = static_cast<uint8_t*>(a->recvbuf) + s.lo;
    st->recv_copy_ = n;
    st->recv_copy_in_ = !writes_whole_recv(*a);
    if (st->recv_copy_in_ && copy_to_host(st->recv_host_, st->recv_device_, n) != 0) return MPI_ERR_OTHER;
    a->recvbuf = static_cast<uint8_t*>(st->recv_host_) - s.lo;
  }
  *out = std::move(st);
  return MPI_SUCCESS;
}

}  // namespace axon::accel
