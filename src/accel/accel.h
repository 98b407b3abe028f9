// Device (GPU) buffers: which memory a user pointer lives in, and the copies
// and inter-process handles the PML and the collectives need to move it.
//
// Only the CUDA driver API is supported. The driver is never linked: the
// first classification of a pointer dlopen()s it (AXON_ACCEL_CUDA_LIBRARY,
// default libcuda.so.1) and resolves the entry points with dlsym. Without a
// driver, without a device, or with AXON_ACCEL=0, every pointer is host
// memory and nothing else here is called. A build without cuda.h
// (configure --with-cuda=no) compiles classify() to a constant.
//
// Cost on the hot path: classify() of any pointer is one relaxed load and
// a branch while accel is off (or not yet started). Once a driver is
// loaded, memory the process itself keeps mapped (the calling thread's
// stack, the brk heap, the executable's segments, Axon's pinned buffers) is
// host memory without a driver call or a lock (host_ranges.cpp says why
// that is sound when memory is freed and comes back as device memory).
// Other pointers: while no CUDA context exists in the process, one
// cuCtxGetCurrent call plus a primary-context query per device; once one
// exists, device ranges come from a small lock-free range cache and the
// rest cost one cuPointerGetAttributes call (without accel's lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "axon_config.h"

namespace axon::accel {

enum class Memory : uint8_t { Host = 0, Device = 1, Managed = 2 };

#if AXON_HAVE_CUDA
namespace detail {
// 0: not started yet, 1: off (no driver / no device / disabled), 2: on.
extern std::atomic<int> state;
Memory classify_slow(const void* p);
}  // namespace detail

inline Memory classify(const void* p) {
  if (p == nullptr || detail::state.load(std::memory_order_relaxed) == 1) return Memory::Host;
  return detail::classify_slow(p);
}
#else
inline Memory classify(const void*) { return Memory::Host; }
#endif

// Device or managed: the CPU must not (or should not) touch it directly, so
// the protocols move it with the copy engine.
inline bool on_device(const void* p) { return classify(p) != Memory::Host; }

// Whether a driver with at least one device was loaded (starts accel).
bool available();
// The MPI memory allocation kinds this process supports (the
// mpi_memory_alloc_kinds info value): CUDA's three once the driver and a
// device are usable.
inline const char* memory_alloc_kinds() {
  return available() ? "mpi,system,cuda:device,cuda:managed,cuda:host" : "mpi,system";
}
// Why accel is off, for diagnostics ("" while on or not started).
const char* why_off();

// ---- copies (synchronous: complete on return) --------------------------------
// Any direction between host, device and managed memory (unified addressing).
// Returns 0 or -1 (the driver's error is logged).
int copy(void* dst, const void* src, size_t len);

// Between device memory and ordinary (pageable) host memory: up to
// AXON_ACCEL_BOUNCE_LIMIT through a pinned bounce buffer (a memcpy on the
// host side), because the driver's pageable path can cost tens of
// microseconds per call. Copies from and to pinned_alloc() buffers go
// straight to the driver. Returns 0 or -1.
int copy_from_host(void* device_dst, const void* host_src, size_t len);
int copy_to_host(void* host_dst, const void* device_src, size_t len);

// ---- asynchronous copies for pipelines ---------------------------------------
// An Event marks the end of one asynchronous copy on accel's own stream.
using Event = void*;
// Starts a copy; *done is set to an event to poll (nullptr when the copy was
// done synchronously). Returns 0 or -1.
int copy_async(void* dst, const void* src, size_t len, Event* done);
// Whether the copy behind `e` finished (true for nullptr); then releases it.
bool event_done(Event e);
// Waits for it, then releases it.
void event_wait(Event e);
// event_done with the driver's verdict: 0 finished, 1 still running (kept),
// -1 the work behind it failed (logged). Released unless 1.
int event_poll(Event e);
// Waits for it (event_wait): 0, or -1 when the work behind it failed.
int event_finish(Event e);

// Page-locked host memory for staging (cuMemAllocHost; plain malloc when the
// driver refuses, or above 64 MiB). Freed buffers are kept in a pool by
// power-of-two size class; pinned_free takes the length given to alloc.
void* pinned_alloc(size_t len);
void pinned_free(void* p, size_t len);

// ---- CUDA IPC between processes of one node -----------------------------------
struct IpcHandle {
  uint8_t bytes[64];    // CUipcMemHandle of the allocation holding the buffer
  uint64_t offset;      // of the buffer from the allocation's start
  uint64_t alloc_size;  // of the allocation
  // The allocation's base address in the sender and its
  // CU_POINTER_ATTRIBUTE_BUFFER_ID: a handle for a base the receiver has
  // mapped under another buffer id names a new allocation at a reused
  // address (the old one was freed), whose stale mapping is closed then.
  uint64_t base;
  uint64_t buffer_id;
};
static_assert(sizeof(IpcHandle) == 96);

// Whether device buffers may be moved with IPC (AXON_ACCEL_IPC).
bool ipc_enabled();
// Fills *h for device memory at `p` (handles are cached per allocation).
// False when the driver refuses (memory not from cuMemAlloc, e.g. VMM or
// managed): the caller stages instead.
bool ipc_export(const void* p, IpcHandle* h);
// Maps the peer's buffer and returns its address here, or nullptr.
// Mappings are cached per (peer, allocation base): a handle with another
// buffer id for a cached base closes the old mapping first (that
// allocation was freed), and beyond AXON_ACCEL_IPC_MAPPINGS the least
// recently used one is closed; the rest close at finalize.
void* ipc_open(int peer_world, const IpcHandle& h);

// GPUDirect RDMA groundwork (not used by a transport yet): a dma-buf file
// descriptor of the cuMemAlloc allocation holding [p, p + len), exported
// whole (page-rounded) with cuMemGetHandleForAddressRange
// (CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), and in *offset where p lies in it:
// what ibv_reg_dmabuf_mr(pd, *offset, len, iova, fd, access) takes. -1 when
// the device does not report CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, the
// driver lacks the entry points, or p is not device memory (managed, host).
// The caller owns the fd (close it once the registration is made).
int dmabuf_fd(const void* p, size_t len, uint64_t* offset);

// ---- staging parameters ------------------------------------------------------
// Device messages up to this many bytes go eager through one synchronous copy.
size_t eager_limit();
// Chunk of the pipelined staging path.
size_t staging_chunk();

// Closes IPC mappings, frees pinned buffers, the stream and events.
void finalize();

}  // namespace axon::accel
