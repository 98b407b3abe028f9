// Collectives with GPU buffers: the MPI layer (src/mpi/coll.cpp) swaps the
// device send and receive buffers of a collective for host copies, runs the
// host algorithm, and copies the receive buffer back — when a blocking call
// returns, or when a nonblocking one completes. Only the bytes the call can
// touch (the span of its counts, displacements and types) are copied. The
// host copies come from accel's pinned pool: a copy to or from pinned memory
// runs at the link's speed, while one from fresh malloc'ed pages made the
// driver lock them on every call (2 MiB allreduce 7x slower than 1 MiB on
// an H200, docs/performance.md).
// Reductions still combine with the GPU kernels where they apply
// (coll::Args::device_combine, accel::combine_on_device). Persistent calls
// copy in at every start (copy_in) and back at every completion (copy_out).
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
  // Persistent collectives, at every start and completion: the device data
  // to the host copies again (send span; receive span unless the call
  // writes it whole), and the receive span back (0 or an MPI error class).
  int copy_in();
  int copy_out();

 private:
  friend int stage_collective(coll::Args* a, int peers, std::unique_ptr<CollStaging>* out);
  const void* send_device_ = nullptr;  // start of the send span on the device
  size_t send_copy_ = 0;               // bytes copied in
  bool recv_copy_in_ = false;          // whether the receive span is copied in
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
