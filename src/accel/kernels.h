// GPU kernels for device buffers (docs/cuda.md, "GPU kernels"): datatype
// pack/unpack and the predefined reductions, run by the GPU on device
// memory, plus the MPI-level helpers that use them and fall back to host
// copies when they cannot.
//
// The kernels (kernels.cu) are compiled by nvcc at build time into a fatbin
// embedded in libmpi (configure --with-nvcc, AXON_HAVE_CUDA_KERNELS) and
// loaded with cuModuleLoadData through the dlopen'ed driver the first time
// one is needed. Every call is synchronous (the GPU finished when it
// returns) unless it says otherwise. Without kernels (no nvcc at build
// time, no driver, a GPU whose architecture the fatbin lacks,
// AXON_ACCEL_KERNELS=0) available() is false and the callers stage through
// host memory.
#pragma once

#include <cstddef>

#include "accel/accel.h"
#include "axon_config.h"
#include "base/counter.h"
#include "base/param.h"
#include "datatype/datatype.h"
#include "op/op.h"

namespace axon::accel {

// AXON_ACCEL_KERNELS and the MPI_T counters (kernels_params.cpp: declared in
// every build so that axon_info lists the same set).
extern BoolParam kernels_param;
extern Counter gpu_packs;         // pack/unpack done by a GPU kernel
extern Counter gpu_reductions;    // reductions done by a GPU kernel
extern Counter host_staged_ops;   // device pack/unpack/reductions done on host copies
// Reducing collectives on GPU buffers (src/coll/device_staging.cpp): whose local
// combine steps run as GPU kernels, and those that combine on the CPU
// (no kernels, a user-defined op, a type the kernels do not cover).
extern Counter coll_kernel_reductions;
extern Counter coll_host_reductions;

namespace kernels {

#if AXON_HAVE_CUDA
// Whether the kernels are usable in the calling thread's CUDA context
// (loads them on the first call).
bool available();

// Return codes of the calls below: 0 done, 1 not supported here (nothing
// was touched: the caller stages through the host), -1 the GPU failed
// (logged; the caller reports MPI_ERR_OTHER).
//
// `count` items of `t` at `user` (device memory) <-> the dense packed stream
// at `packed` (device memory, t.size * count bytes). Unpack writes only the
// bytes the type covers: holes keep their contents.
int pack(void* packed, const void* user, std::size_t count, const Datatype& t);
int unpack(void* user, const void* packed, std::size_t count, const Datatype& t);

// inout[i] = in[i] op inout[i] (op_apply's semantics, bit for bit) for a
// predefined arithmetic op on device memory; the caller checked that the op
// is defined for the type. With `wait` false the kernel is only queued on
// accel's stream (0: launched); accel::stream_mark tells when it is done.
int reduce(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t, bool wait = true);
// Whether reduce() has a kernel for this op and type's element kind and the
// kernels are usable (loads them on the first call). A type the check
// passes may still be refused by reduce() (an irregular derived type).
bool reduce_supported(const Op& op, const Datatype& t);

// Device memory (plain cuMemAlloc memory: IPC can export it) for packed
// data, e.g. the PML packing a non-contiguous device buffer into a
// contiguous one before sending it: nullptr when the kernels are not
// available or the GPU is out of memory. Freed buffers are pooled by
// power-of-two size class (a few, until finalize); scratch_free takes the
// size given to scratch_alloc.
void* scratch_alloc(std::size_t bytes);
void scratch_free(void* p, std::size_t bytes);

// Queued work (the device steps of collective schedules, which overlap with
// their messages): on a stream of the kernels' own, which accel's copies
// (the pml's device messages) do not wait behind. reduce(..., false)
// launches on it; queue_copy queues a device copy on it (0 queued, 1 not
// possible here: copy synchronously instead, -1 failed); queue_mark sets
// *done to an event after everything queued so far (nullptr when nothing
// ever was, or there was no event and the queue was waited for here):
// poll it with accel::event_poll. 0, or -1 when that wait failed.
int queue_copy(void* dst, const void* src, std::size_t len);
int queue_mark(Event* done);

// Frees the cached layouts and unloads the module (from accel::finalize).
void finalize();
#else
inline int queue_copy(void*, const void*, std::size_t) { return 1; }
inline int queue_mark(Event* done) {
  *done = nullptr;
  return 0;
}
inline void* scratch_alloc(std::size_t) { return nullptr; }
inline void scratch_free(void*, std::size_t) {}
inline bool available() { return false; }
inline int pack(void*, const void*, std::size_t, const Datatype&) { return 1; }
inline int unpack(void*, const void*, std::size_t, const Datatype&) { return 1; }
inline int reduce(const Op&, const void*, void*, std::size_t, const Datatype&, bool = true) { return 1; }
inline bool reduce_supported(const Op&, const Datatype&) { return false; }
inline void finalize() {}
#endif

}  // namespace kernels

// ---- MPI-level operations on buffers of which one is (or may be) GPU memory.
// Each runs on the GPU when every buffer is device memory and a kernel
// applies, else on host copies of the spans involved (device data copied
// in, results copied back, holes untouched). They return an MPI error class.

// op_apply(op, in, inout, count, t) (MPI_Reduce_local).
int device_op_apply(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t);
// The same, queued on accel's stream when a kernel can do it on device
// memory (MPI_SUCCESS: launched, done once a later accel::stream_mark's
// event is; MPI_ERR_OTHER: the launch failed); 1 when it cannot be queued
// (the caller waits for its queued work, then calls device_op_apply).
int device_op_queue(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t);
// Why a reducing collective on GPU buffers that reduces `bytes` does not
// combine with the GPU kernels (a user-defined op, no kernels, none for the
// op and type, fewer bytes than AXON_ACCEL_COLL_KERNEL_MIN), or null when
// it does.
const char* collective_host_reason(const Op& op, const Datatype& t, std::size_t bytes);
// Counts (coll_kernel_reductions, or coll_host_reductions when
// `host_reason` is given) and logs at debug level 1 where one reducing
// collective on GPU buffers combines.
void count_collective_combine(const char* what, const char* host_reason);
// A collective's local combine step (src/coll/schedule.cpp) on host
// operands of a collective on GPU buffers: both spans go to device scratch,
// a kernel computes inout = in op inout there, the result comes back.
// op_apply on the host when a kernel cannot (counted in host_staged_ops).
int combine_on_device(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t);
// pack_items / unpack_items (MPI_Pack / MPI_Unpack).
int device_pack(const Datatype& t, const void* user, std::size_t count, void* packed);
int device_unpack(const Datatype& t, const void* packed, std::size_t count, void* user);

}  // namespace axon::accel
