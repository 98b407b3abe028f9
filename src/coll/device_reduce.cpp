// Reducing collectives on GPU buffers with the data kept in device memory
// (docs/cuda.md, "Reductions on the device"): reduce, allreduce,
// reduce_scatter(_block), scan and exscan, blocking, nonblocking and
// persistent. Such a call runs the point-to-point schedule of its algorithm
// (select.cpp) on the device buffers themselves: the schedule's scratch is
// device scratch (accel::kernels::scratch_alloc, pooled: no cuMemAlloc per
// call in steady state), its combine steps are GPU kernels on device memory
// (accel::device_op_apply) and its local copies device copies
// (accel::copy); the messages are device messages, which the pml moves
// device to device through CUDA IPC between ranks of a node that share
// memory (Caps::ipc_peers) and stages through pinned host chunks otherwise.
// Nothing of the user's buffers passes through host memory on the IPC path.
//
// Where the kernels cannot reduce (AXON_ACCEL_KERNELS=0, the module does
// not load, a user-defined op, an op/type pair without a kernel, a
// non-contiguous type, fewer bytes than AXON_ACCEL_COLL_KERNEL_MIN) the
// call keeps the host staging of device_staging.cpp, as do the
// non-reducing collectives.
//
// Every rank of a call must run the same algorithm, and a call's ranks may
// pass host buffers on some ranks and GPU buffers on others. The algorithm
// here is the one select.cpp gives a nonblocking call of the same
// arguments, which is what host ranks run for nonblocking and persistent
// calls too. A blocking call on host buffers may take the node segment or
// the direct version instead (host memory only): AXON_COLL_DEVICE_RESIDENT
// says what a blocking device call does about it (the engine.cpp hook).
#include <cstdint>

#include "accel/accel.h"
#include "accel/kernels.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "coll/internal.h"

namespace axon::coll {

namespace {

EnumParam resident_param{
    "AXON_COLL_DEVICE_RESIDENT",
    {"matched", "all", "off"},
    "Reducing collectives whose buffers on a rank are all GPU memory reduce with the GPU kernels on device memory "
    "(device scratch, device messages through CUDA IPC or staging) instead of host copies. matched (default): "
    "where a host rank of the call would run that same algorithm (nonblocking and persistent calls, blocking calls "
    "the selection gives a point-to-point schedule), so ranks may mix host and GPU buffers; the others are staged. "
    "all: every such call, with the point-to-point algorithm of a nonblocking call; the ranks of a blocking "
    "MPI_Reduce / MPI_Allreduce must then all pass GPU buffers or all host buffers (a host rank may take the node "
    "segment). off: always staged through host memory."};

Counter resident_calls{"axon_coll_device_resident_reductions", Counter::Class::Counter,
                       "Reducing collectives on GPU buffers reduced on the device with the data in device memory "
                       "(no host staging of the buffers)"};

bool reducing(Kind k) {
  switch (k) {
    case Kind::reduce:
    case Kind::allreduce:
    case Kind::reduce_scatter:
    case Kind::reduce_scatter_block:
    case Kind::scan:
    case Kind::exscan:
      return true;
    default:
      return false;
  }
}

// Whether every buffer of this rank that the call reads or writes is GPU
// memory. The receive buffer of a non-root reduce and of rank 0's exscan is
// not touched (MPI lets them be anything), unless it holds the input in
// place.
bool all_on_device(const Args& a, int rank) {
  if (!a.in_place && !accel::on_device(a.sendbuf)) return false;
  const bool recv_unused = (a.kind == Kind::reduce && rank != a.root) || (a.kind == Kind::exscan && rank == 0);
  return (recv_unused && !a.in_place) || accel::on_device(a.recvbuf);
}

// The bytes the call reduces (what AXON_ACCEL_COLL_KERNEL_MIN compares).
size_t reduced_bytes(const Args& a) {
  MPI_Count items = a.recvcount;
  for (MPI_Count n : a.recvcounts) items += n;
  return static_cast<size_t>(items) * a.recvtype->size;
}

}  // namespace

Resident device_resident_mode(const Args& a, const CommState* st) {
  // The parameter's values in order: matched, all, off.
  const int mode = resident_param.get();
  if (mode == 2 || !reducing(a.kind) || st->inter() || !a.op || !a.recvtype) return Resident::off;
  // The schedule's copies are byte ranges and the kernels' operands whole
  // items: contiguous types only (a padded pair type, a vector: staged).
  if (!a.recvtype->contiguous || (a.sendtype && !a.in_place && !a.sendtype->contiguous)) return Resident::off;
  if (!all_on_device(a, st->coll->rank)) return Resident::off;
  // A user-defined op runs on the CPU: staged, which also keeps a
  // non-commutative one's operand order as the host algorithms do.
  if (accel::collective_host_reason(*a.op, *a.recvtype, reduced_bytes(a))) return Resident::off;
  return mode == 0 ? Resident::matched : Resident::all;
}

void count_device_resident(const Args& a) {
  resident_calls.add();
  // It combines with the kernels: counted as such too (the counters of
  // device_staging.cpp cover every reducing call on GPU buffers).
  accel::count_collective_combine(kind_name(a.kind), nullptr);
  log::debug(1, "coll: %s on GPU buffers: reduced on the device (data stays in device memory)", kind_name(a.kind));
}

}  // namespace axon::coll
