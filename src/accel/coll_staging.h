// Collectives with GPU buffers: the MPI layer (src/mpi/coll.cpp) swaps the
// device send and receive buffers of a collective for host copies, runs the
// host algorithm, and copies the receive buffer back — when a blocking call
// returns, or when a nonblocking one completes. Only the bytes the call can
// touch (the span of its counts, displacements and types) are copied. The
// host copies come from accel's pinned pool: a copy to or from pinned memory
// runs at the link's speed, while one from fresh malloc'ed pages made the
// driver lock them on every call (2 MiB allreduce 7x slower than 1 MiB on
// an H200, docs/performance.md).
// This helper sits above src/coll (it reads coll::Args); accel.h does not.
#pragma once

#include <memory>

#include "coll/coll.h"

namespace axon::accel {

class CollStaging {
 public:
  ~CollStaging();
  // Copies the receive buffer back to the device; 0 or an MPI error class.
  int finish();

 private:
  friend int stage_collective(coll::Args* a, int peers, std::unique_ptr<CollStaging>* out);
  void* recv_device_ = nullptr;  // start of the span on the device
  void* recv_host_ = nullptr;  // pinned_alloc'ed, recv_len_ bytes
  size_t recv_len_ = 0;
  size_t recv_copy_ = 0;       // bytes copied back at finish
  void* send_host_ = nullptr;  // pinned_alloc'ed, send_len_ bytes
  size_t send_len_ = 0;
  bool finished_ = false;
};

// Whether a collective's arguments name GPU memory (one cheap check per
// buffer while no CUDA driver is in use).
bool collective_on_device(const coll::Args& a);
// Replaces the device buffers of *a with host copies (send data and the
// receive span copied in: in-place data and untouched bytes survive).
// `peers`: the size of the group the per-rank blocks refer to. Returns 0 or
// an MPI error class.
int stage_collective(coll::Args* a, int peers, std::unique_ptr<CollStaging>* out);

}  // namespace axon::accel
