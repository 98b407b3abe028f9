// CUDA driver loading, pointer classification, copies and IPC (see accel.h
// and docs/cuda.md). Compiled only when configure found cuda.h; the header's
// types and entry-point names are used, the library is dlopen'ed.
#include "accel/accel.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda.h>

#include "base/backoff.h"
#include "base/log.h"
#include "accel/params.h"
#include "accel/driver.h"  // for the GPU kernels: driver_symbol, lock_stream, finalize_hook
#include "accel/host_ranges.h"

namespace axon::accel {

namespace {

// The driver entry points Axon uses. The names come from cuda.h, whose macros
// map them to the current ABI versions (cuMemGetAddressRange ->
// cuMemGetAddressRange_v2, ...), so the dlsym names match this header.
#define AXON_CU_STR2(x) #x
#define AXON_CU_STR(x) AXON_CU_STR2(x)
#define AXON_CU_REQUIRED(X)        \
  X(cuInit)                        \
  X(cuDeviceGetCount)              \
  X(cuDeviceGet)                   \
  X(cuCtxGetCurrent)               \
  X(cuCtxSetCurrent)               \
  X(cuDevicePrimaryCtxGetState)    \
  X(cuDevicePrimaryCtxRetain)      \
  X(cuPointerGetAttributes)        \
  X(cuMemGetAddressRange)          \
  X(cuMemcpy)                      \
  X(cuMemcpyAsync)                 \
  X(cuStreamCreate)                \
  X(cuStreamDestroy)               \
  X(cuStreamSynchronize)           \
  X(cuEventCreate)                 \
  X(cuEventDestroy)                \
  X(cuEventRecord)                 \
  X(cuEventQuery)                  \
  X(cuEventSynchronize)            \
  X(cuMemAllocHost)                \
  X(cuMemFreeHost)
#define AXON_CU_OPTIONAL(X)        \
  X(cuMemHostRegister)             \
  X(cuMemHostUnregister)           \
  X(cuIpcGetMemHandle)             \
  X(cuIpcOpenMemHandle)            \
  X(cuIpcCloseMemHandle)           \
  X(cuMemGetHandleForAddressRange) \
  X(cuDeviceGetAttribute)          \
  X(cuPointerSetAttribute)         \
  X(cuGetErrorString)

struct Driver {
#define AXON_CU_FIELD(name) decltype(&::name) name = nullptr;
  AXON_CU_REQUIRED(AXON_CU_FIELD)
  AXON_CU_OPTIONAL(AXON_CU_FIELD)
#undef AXON_CU_FIELD
};

Driver cu;
std::mutex start_mutex;
const char* off_reason = "";
int device_count = 0;

// Accel's shared state below is guarded by `lock`, and nothing that waits
// for the GPU runs under it: a copy's wait, an event poll and a stream
// synchronisation happen after the lock is released, and classify() takes
// it only to record a device range it has just learnt. So under
// MPI_THREAD_MULTIPLE a thread waiting for its copy never holds up another
// thread's MPI call on host memory.
std::mutex lock;
// A CUDA context existed once: from then on, device memory may exist
// (checked before anything else: a process without contexts pays nothing).
std::atomic<bool> context_seen{false};
// Device of the last device pointer seen (for the contexts Axon makes current).
std::atomic<int> last_device{0};

// The device and managed allocation ranges seen last (tag: the Memory
// kind), read without the lock. Entries outlive cuMemFree: under unified
// addressing the driver keeps a freed device range reserved, so the range
// can only come back as device (or managed) memory, never as host memory.
constexpr size_t kCacheSize = 8;
detail::RangeTable<kCacheSize> device_ranges;
size_t cache_next = 0;  // round-robin replacement (under `lock`)

// Accel's stream, made at the first copy (needs a context).
std::atomic<CUstream> stream{nullptr};
// How copies are waited for (AXON_ACCEL_COPY_WAIT, read at start()): the
// stream's own synchronization, or an event polled from here.
bool wait_by_event = false;

std::vector<CUevent> free_events;
std::unordered_map<void*, bool> pinned_kind;  // buffer -> from cuMemAllocHost
// Free pinned buffers by size class (a power of two): cuMemAllocHost costs
// far more than a copy, so buffers are reused, and classes keep varying
// message sizes from each allocating their own. Fixed arrays, not a node
// container: taking and returning a buffer allocates nothing (an eager
// device message costs no malloc).
constexpr size_t kPinnedMinClass = 4096;
constexpr size_t kPinnedMaxClass = size_t{64} << 20;  // larger: plain malloc, not kept
constexpr size_t kPinnedFreePerClass = 4;
constexpr size_t kPinnedClasses = 15;                 // 4 KiB .. 64 MiB
static_assert(kPinnedMinClass << (kPinnedClasses - 1) == kPinnedMaxClass);
struct PinnedClass {
  void* free[kPinnedFreePerClass] = {};
  size_t count = 0;
};
std::array<PinnedClass, kPinnedClasses> pinned_pool;
size_t pinned_class(size_t len) { return std::bit_ceil(std::max(len, kPinnedMinClass)); }
PinnedClass& pool_of(size_t cls) { return pinned_pool[std::countr_zero(cls) - std::countr_zero(kPinnedMinClass)]; }
// Copies through a bounce buffer go in pieces of at most this size; each
// copy borrows its bounce buffer from the pool (several threads may copy
// at once, and a small copy needs only a small buffer).
constexpr size_t kBounceChunk = size_t{1} << 20;

struct Export {
  unsigned long long buffer_id;
  IpcHandle handle;
};
std::unordered_map<uintptr_t, Export> exports;  // by allocation base
// Peer allocations mapped here, by (peer, the allocation's base in the
// peer). An open mapping keeps the peer's memory allocated even after the
// peer frees it. A freed allocation's address comes back in a later
// cuMemAlloc with another buffer id: the handle for it closes the stale
// mapping (ipc_open), so mappings of freed allocations do not pile up
// while their addresses are reused; beyond AXON_ACCEL_IPC_MAPPINGS the
// least recently used are closed (copies are synchronous: none is in use
// then).
struct Mapping {
  CUdeviceptr base;  // here
  uint64_t buffer_id;
  uint64_t last_use;
};
std::map<std::pair<int, uint64_t>, Mapping> opened;
uint64_t mapping_clock = 0;

const char* error_name(CUresult rc) {
  const char* s = nullptr;
  if (cu.cuGetErrorString && cu.cuGetErrorString(rc, &s) == CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

void turn_off(const char* why) {
  off_reason = why;
  log::debug(1, "accel: CUDA support off: %s", why);
  detail::state.store(1, std::memory_order_release);
}

void start() {
  std::lock_guard<std::mutex> guard(start_mutex);
  if (detail::state.load(std::memory_order_acquire) != 0) return;
  if (!enable_param.get()) return turn_off("disabled (AXON_ACCEL=0)");
  void* lib = dlopen(library_param.get().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return turn_off("no CUDA driver (libcuda could not be loaded)");
  // Never dlclose'd: the driver does not support being unloaded.
  bool missing = false;
#define AXON_CU_LOAD(name)                                                          \
  cu.name = reinterpret_cast<decltype(cu.name)>(dlsym(lib, AXON_CU_STR(name))); \
  if (!cu.name) {                                                                   \
    log::debug(1, "accel: the CUDA driver lacks %s", AXON_CU_STR(name));          \
    missing = true;                                                                 \
  }
#define AXON_CU_LOAD_OPTIONAL(name) \
  cu.name = reinterpret_cast<decltype(cu.name)>(dlsym(lib, AXON_CU_STR(name)));
  AXON_CU_REQUIRED(AXON_CU_LOAD)
  AXON_CU_OPTIONAL(AXON_CU_LOAD_OPTIONAL)
#undef AXON_CU_LOAD
#undef AXON_CU_LOAD_OPTIONAL
  if (missing) return turn_off("the CUDA driver lacks entry points Axon needs");
  if (cu.cuInit(0) != CUDA_SUCCESS) return turn_off("cuInit failed (no usable GPU or driver)");
  if (cu.cuDeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0)
    return turn_off("no CUDA device");
  log::debug(1, "accel: CUDA driver %s loaded, %d device(s)", library_param.get().c_str(), device_count);
  const std::string& wait = copy_wait_param.get();
  wait_by_event = wait == "event";
  if (wait != "sync" && wait != "event")
    log::warn("AXON_ACCEL_COPY_WAIT=%s is neither sync nor event; using sync", wait.c_str());
  detail::host_ranges_init();
  detail::state.store(2, std::memory_order_release);
}

bool started_on() {
  int s = detail::state.load(std::memory_order_acquire);
  if (s == 0) {
    start();
    s = detail::state.load(std::memory_order_acquire);
  }
  return s == 2;
}

// Whether any CUDA context exists in the process: the calling thread's
// current one, or an active primary context (what the runtime API uses).
bool any_context() {
  CUcontext ctx = nullptr;
  if (cu.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) return true;
  for (int d = 0; d < device_count; ++d) {
    CUdevice dev;
    unsigned flags = 0;
    int active = 0;
    if (cu.cuDeviceGet(&dev, d) == CUDA_SUCCESS && cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS &&
        active)
      return true;
  }
  return false;
}

// Copies and streams need a current context on this thread: use the one the
// application made current, else the primary context of the device of the
// last device pointer seen. Per-thread driver state only: no lock needed.
bool ensure_context() {
  CUcontext ctx = nullptr;
  if (cu.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) return true;
  CUdevice dev;
  if (cu.cuDeviceGet(&dev, last_device.load(std::memory_order_relaxed)) != CUDA_SUCCESS) return false;
  if (cu.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return false;
  return cu.cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

// Makes accel's stream. Caller holds `lock` with a current context.
bool make_stream_locked() {
  if (stream.load(std::memory_order_relaxed)) return true;
  // A blocking stream (not CU_STREAM_NON_BLOCKING): its copies start after
  // work the application queued on the legacy default stream, e.g. the tail
  // of a cudaMemcpy from pageable memory, which returns before its DMA ends.
  CUstream s = nullptr;
  CUresult rc = cu.cuStreamCreate(&s, CU_STREAM_DEFAULT);
  if (rc != CUDA_SUCCESS) {
    log::debug(1, "accel: cannot create a CUDA stream (%s): copies go on the legacy stream", error_name(rc));
    return false;
  }
  stream.store(s, std::memory_order_release);
  return true;
}

// The stream copies go on: accel's own, else (the driver refused to make
// one) the legacy stream. Either way each copy is waited for on that
// stream: a plain cuMemcpy would return before a device-to-device copy
// ends, or before data from pageable memory lands. Caller has a context.
CUstream copy_stream() {
  if (CUstream s = stream.load(std::memory_order_acquire)) return s;
  std::lock_guard<std::mutex> guard(lock);
  return make_stream_locked() ? stream.load(std::memory_order_relaxed) : CU_STREAM_LEGACY;
}

// An event from the free list, else a new one (timing off); nullptr when
// the driver has none to give. Give it back with give_event once waited for.
CUevent take_event() {
  {
    std::lock_guard<std::mutex> guard(lock);
    if (!free_events.empty()) {
      CUevent e = free_events.back();
      free_events.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  return cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS ? e : nullptr;
}

void give_event(CUevent e) {
  std::lock_guard<std::mutex> guard(lock);
  free_events.push_back(e);
}

// Waits for everything queued on `s` so far, as AXON_ACCEL_COPY_WAIT says.
// Called without `lock`.
CUresult wait_for(CUstream s) {
  if (!wait_by_event) return cu.cuStreamSynchronize(s);
  CUevent e = take_event();
  if (!e) return cu.cuStreamSynchronize(s);
  CUresult rc = cu.cuEventRecord(e, s);
  if (rc == CUDA_SUCCESS) {
    // A short spin covers a copy's few microseconds; past it, give the core
    // to whoever shares it (ranks outnumbering cores).
    Backoff backoff(2000);
    while ((rc = cu.cuEventQuery(e)) == CUDA_ERROR_NOT_READY) backoff.idle();
  } else {
    rc = cu.cuStreamSynchronize(s);
  }
  give_event(e);
  return rc;
}

// A copy complete on return. cuMemcpy is not enough: between two device
// buffers it returns before the copy ends, and from pageable memory before
// the data lands; a receiver that answers FIN early lets the sender reuse
// a buffer that is still being read. So: the copy on accel's stream (which
// also starts after the application's legacy-stream work), then a wait.
// Caller has a current context and does not hold `lock`.
CUresult copy_and_wait(CUdeviceptr dst, CUdeviceptr src, size_t len) {
  CUstream s = copy_stream();
  CUresult rc = cu.cuMemcpyAsync(dst, src, len, s);
  if (rc != CUDA_SUCCESS) return rc;
  return wait_for(s);
}

}  // namespace

namespace detail {
std::atomic<int> state{0};

Memory classify_slow(const void* p) {
  if (!started_on()) return Memory::Host;
  // The stack, the brk heap, the executable, Axon's pinned buffers: host,
  // whatever the driver holds (host_ranges.cpp says why that is sound).
  if (known_host(p)) return Memory::Host;
  if (!context_seen.load(std::memory_order_acquire)) {
    // No context anywhere: no device memory can exist yet.
    if (!any_context()) return Memory::Host;
    context_seen.store(true, std::memory_order_release);
  }
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (int kind = device_ranges.find(a); kind >= 0) return static_cast<Memory>(kind);
  unsigned memory_type = 0;
  unsigned is_managed = 0;
  CUdeviceptr range_start = 0;
  size_t range_size = 0;
  int ordinal = -1;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* values[] = {&memory_type, &is_managed, &range_start, &range_size, &ordinal};
  // Without the lock: the driver is thread-safe.
  if (cu.cuPointerGetAttributes(5, attrs, values, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    return Memory::Host;  // not known to the driver: plain host memory
  Memory kind = Memory::Host;
  if (is_managed) kind = Memory::Managed;
  else if (memory_type == CU_MEMORYTYPE_DEVICE) kind = Memory::Device;
  // Host answers are not cached: host_ranges.cpp says why.
  if (kind == Memory::Host) return kind;
  if (ordinal >= 0) last_device.store(ordinal, std::memory_order_relaxed);
  if (range_size > 0) {
    std::lock_guard<std::mutex> guard(lock);
    device_ranges.put(cache_next, static_cast<uintptr_t>(range_start), static_cast<uintptr_t>(range_start) + range_size,
                      static_cast<int>(kind));
    cache_next = (cache_next + 1) % kCacheSize;
  }
  return kind;
}
}  // namespace detail

bool available() { return started_on(); }

const char* why_off() { return detail::state.load(std::memory_order_acquire) == 1 ? off_reason : ""; }

namespace {
int copy_checked(void* dst, const void* src, size_t len, const void* host, bool to_device);
}  // namespace

int copy(void* dst, const void* src, size_t len) { return copy_checked(dst, src, len, nullptr, false); }

int copy_async(void* dst, const void* src, size_t len, Event* done) {
  *done = nullptr;
  if (len == 0) return 0;
  if (!started_on()) {
    std::memcpy(dst, src, len);
    return 0;
  }
  if (!ensure_context()) {
    log::error("accel: no CUDA context for a copy");
    return -1;
  }
  CUstream s = copy_stream();
  CUresult rc = cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), len, s);
  if (rc != CUDA_SUCCESS) {
    log::error("accel: cuMemcpyAsync of %zu bytes failed: %s", len, error_name(rc));
    return -1;
  }
  CUevent e = take_event();
  if (!e) return cu.cuStreamSynchronize(s) == CUDA_SUCCESS ? 0 : -1;  // no event: wait for the copy now
  if (cu.cuEventRecord(e, s) != CUDA_SUCCESS) {
    give_event(e);
    return cu.cuStreamSynchronize(s) == CUDA_SUCCESS ? 0 : -1;
  }
  *done = e;
  return 0;
}

int event_poll(Event e) {
  if (!e) return 0;
  CUresult rc = cu.cuEventQuery(static_cast<CUevent>(e));
  if (rc == CUDA_ERROR_NOT_READY) return 1;
  if (rc != CUDA_SUCCESS) log::error("accel: device work failed: %s", error_name(rc));
  give_event(static_cast<CUevent>(e));
  return rc == CUDA_SUCCESS ? 0 : -1;
}

bool event_done(Event e) { return event_poll(e) != 1; }

int event_finish(Event e) {
  if (!e) return 0;
  CUresult rc = cu.cuEventSynchronize(static_cast<CUevent>(e));
  if (rc != CUDA_SUCCESS) log::error("accel: device work failed: %s", error_name(rc));
  give_event(static_cast<CUevent>(e));
  return rc == CUDA_SUCCESS ? 0 : -1;
}

void event_wait(Event e) { (void)event_finish(e); }

namespace {
// Caller holds `lock`. Only the first use of a size class reaches the
// driver (cuMemAllocHost: not a wait for the GPU).
void* pinned_alloc_locked(size_t len) {
  size_t cls = pinned_class(len);
  if (cls > kPinnedMaxClass) return std::malloc(len);
  if (PinnedClass& pc = pool_of(cls); pc.count > 0) return pc.free[--pc.count];
  void* p = nullptr;
  bool pinned = detail::state.load(std::memory_order_acquire) == 2 && ensure_context() &&
                cu.cuMemAllocHost(&p, cls) == CUDA_SUCCESS;
  if (!pinned) p = std::malloc(cls);  // still correct, only slower copies
  if (!p) return nullptr;
  pinned_kind[p] = pinned;
  if (pinned) detail::pinned_added(p, cls);
  return p;
}

void release_pinned(void* p) {
  if (pinned_kind[p]) {
    detail::pinned_removed(p);
    cu.cuMemFreeHost(p);
  } else {
    std::free(p);
  }
  pinned_kind.erase(p);
}
}  // namespace

void* pinned_alloc(size_t len) {
  std::lock_guard<std::mutex> guard(lock);
  return pinned_alloc_locked(len);
}

void pinned_free(void* p, size_t len) {
  if (!p) return;
  size_t cls = pinned_class(len);
  if (cls > kPinnedMaxClass) return std::free(p);
  std::lock_guard<std::mutex> guard(lock);
  PinnedClass& pc = pool_of(cls);
  if (pc.count >= kPinnedFreePerClass) return release_pinned(p);
  pc.free[pc.count++] = p;
}

namespace {
// Copies between device memory and ordinary host memory in kBounceChunk
// pieces through a pinned buffer borrowed from the pool. Caller has a
// current context and does not hold `lock`.
int copy_bounced(void* dst, const void* src, size_t len, bool to_device) {
  const size_t chunk = std::min(len, kBounceChunk);
  void* bounce = pinned_alloc(chunk);
  if (!bounce) return -1;
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  int result = 0;
  for (size_t done = 0; done < len;) {
    size_t n = std::min(chunk, len - done);
    CUresult rc;
    if (to_device) {
      std::memcpy(bounce, s + done, n);
      rc = copy_and_wait(reinterpret_cast<CUdeviceptr>(d + done), reinterpret_cast<CUdeviceptr>(bounce), n);
    } else {
      rc = copy_and_wait(reinterpret_cast<CUdeviceptr>(bounce), reinterpret_cast<CUdeviceptr>(s + done), n);
      if (rc == CUDA_SUCCESS) std::memcpy(d + done, bounce, n);
    }
    if (rc != CUDA_SUCCESS) {
      log::error("accel: copy of %zu bytes through a pinned bounce buffer failed: %s", n, error_name(rc));
      result = -1;
      break;
    }
    done += n;
  }
  pinned_free(bounce, chunk);
  return result;
}

// Every copy: `host` is the side known to be ordinary host memory (nullptr:
// unknown, the driver's path), which goes through a bounce buffer when
// small and not inside one of Axon's pinned buffers.
int copy_checked(void* dst, const void* src, size_t len, const void* host, bool to_device) {
  if (len == 0) return 0;
  if (!started_on()) {
    std::memcpy(dst, src, len);
    return 0;
  }
  if (!ensure_context()) {
    log::error("accel: no CUDA context for a copy");
    return -1;
  }
  if (host && len <= static_cast<size_t>(bounce_param.get()) && !detail::pinned(host))
    return copy_bounced(dst, src, len, to_device);
  CUresult rc = copy_and_wait(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), len);
  if (rc != CUDA_SUCCESS) {
    log::error("accel: copy of %zu bytes failed: %s", len, error_name(rc));
    return -1;
  }
  return 0;
}

}  // namespace

int copy_from_host(void* device_dst, const void* host_src, size_t len) {
  return copy_checked(device_dst, host_src, len, host_src, true);
}

int copy_to_host(void* host_dst, const void* device_src, size_t len) {
  return copy_checked(host_dst, device_src, len, host_dst, false);
}

bool ipc_enabled() { return ipc_param.get() && cu.cuIpcGetMemHandle && cu.cuIpcOpenMemHandle; }

bool ipc_export(const void* p, IpcHandle* h) {
  if (!started_on() || !ipc_enabled()) return false;
  // The driver's IPC and attribute calls act on the current context.
  if (!ensure_context()) return false;
  // One query per message: the allocation's base and size (a handle names a
  // whole cuMemAlloc allocation) and its buffer id, which tells a new
  // allocation at the same base (freed and allocated again) from the one
  // whose handle is cached.
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned long long buffer_id = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void* values[] = {&base, &size, &buffer_id};
  if (cu.cuPointerGetAttributes(3, attrs, values, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS || !base)
    return false;
  const uint64_t offset = reinterpret_cast<uintptr_t>(p) - base;
  {
    std::lock_guard<std::mutex> guard(lock);
    if (auto it = exports.find(base); it != exports.end() && it->second.buffer_id == buffer_id) {
      *h = it->second.handle;
      h->offset = offset;
      return true;
    }
  }
  // First export of this allocation (outside the lock: it waits for the
  // legacy stream).
  CUipcMemHandle mh;
  CUresult rc = cu.cuIpcGetMemHandle(&mh, base);
  if (rc != CUDA_SUCCESS) {
    log::debug(2, "accel: no IPC handle for %p: %s", p, error_name(rc));
    return false;
  }
  // Another process will read this allocation with its own copies, which
  // are not ordered after this process's work on the legacy stream. Make
  // synchronous copies into the allocation wait for their DMA from now on
  // (a cudaMemcpy from pageable memory otherwise returns early), and let
  // anything already queued finish once. Without either guarantee the peer
  // could read bytes that have not landed: no IPC then, the message is
  // staged (the caller's fallback).
  unsigned one = 1;
  if (!cu.cuPointerSetAttribute) {
    log::debug(1, "accel: the driver lacks cuPointerSetAttribute: device messages are staged, not sent by IPC");
    return false;
  }
  if ((rc = cu.cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, base)) != CUDA_SUCCESS) {
    log::debug(1, "accel: cannot order copies into %p for IPC (SYNC_MEMOPS: %s): staged instead", p, error_name(rc));
    return false;
  }
  if ((rc = cu.cuStreamSynchronize(CU_STREAM_LEGACY)) != CUDA_SUCCESS) {
    log::debug(1, "accel: cannot wait for the legacy stream before exporting %p: %s", p, error_name(rc));
    return false;
  }
  Export e{buffer_id, {}};
  static_assert(sizeof mh == sizeof e.handle.bytes);
  std::memcpy(e.handle.bytes, &mh, sizeof mh);
  e.handle.alloc_size = size;
  e.handle.base = static_cast<uint64_t>(base);
  e.handle.buffer_id = buffer_id;
  {
    std::lock_guard<std::mutex> guard(lock);
    exports.insert_or_assign(base, e);
  }
  *h = e.handle;
  h->offset = offset;
  return true;
}

namespace {
// Closes one cached mapping. Caller holds `lock`.
void close_mapping_locked(std::map<std::pair<int, uint64_t>, Mapping>::iterator it) {
  if (cu.cuIpcCloseMemHandle) {
    CUresult rc = cu.cuIpcCloseMemHandle(it->second.base);
    if (rc != CUDA_SUCCESS) log::debug(1, "accel: closing an IPC mapping failed: %s", error_name(rc));
  }
  opened.erase(it);
}
}  // namespace

void* ipc_open(int peer_world, const IpcHandle& h) {
  if (!started_on() || !ipc_enabled()) return nullptr;
  std::lock_guard<std::mutex> guard(lock);
  const std::pair<int, uint64_t> key{peer_world, h.base};
  auto it = opened.find(key);
  if (it != opened.end() && it->second.buffer_id != h.buffer_id) {
    // The peer freed the allocation we mapped and has a new one at its
    // address: the old mapping only keeps dead memory alive.
    close_mapping_locked(it);
    it = opened.end();
  }
  if (it == opened.end()) {
    if (!ensure_context()) return nullptr;
    const auto cap = static_cast<size_t>(ipc_mappings_param.get());
    while (!opened.empty() && opened.size() >= cap) {
      close_mapping_locked(std::min_element(opened.begin(), opened.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      }));
    }
    CUipcMemHandle mh;
    std::memcpy(&mh, h.bytes, sizeof mh);
    CUdeviceptr base = 0;
    CUresult rc = cu.cuIpcOpenMemHandle(&base, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (rc != CUDA_SUCCESS) {
      log::debug(1, "accel: cannot open the IPC handle of rank %d: %s", peer_world, error_name(rc));
      return nullptr;
    }
    it = opened.emplace(key, Mapping{base, h.buffer_id, 0}).first;
  }
  it->second.last_use = ++mapping_clock;
  return reinterpret_cast<void*>(it->second.base + h.offset);
}

int dmabuf_fd(const void* p, size_t len, uint64_t* offset) {
  if (!started_on() || !cu.cuMemGetHandleForAddressRange || !cu.cuDeviceGetAttribute) return -1;
  // Only cuMemAlloc memory (not managed, not host) can be exported.
  if (classify(p) != Memory::Device) return -1;
  if (!ensure_context()) return -1;
  // The whole allocation is exported (page-rounded): one fd serves every
  // buffer in it, and the driver wants page-aligned ranges anyway.
  CUdeviceptr base = 0;
  size_t size = 0;
  const auto a = reinterpret_cast<CUdeviceptr>(p);
  if (cu.cuMemGetAddressRange(&base, &size, a) != CUDA_SUCCESS || !base || a + len > base + size) return -1;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (base % page != 0) return -1;
  // The device must support dma-buf export (Linux kernel and driver
  // support: open kernel modules, CUDA 11.7 and later).
  int ordinal = -1;
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
  void* value = &ordinal;
  CUdevice device = 0;
  int supported = 0;
  if (cu.cuPointerGetAttributes(1, &attr, &value, base) != CUDA_SUCCESS || ordinal < 0 ||
      cu.cuDeviceGet(&device, ordinal) != CUDA_SUCCESS ||
      cu.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device) != CUDA_SUCCESS ||
      !supported) {
    log::debug(2, "accel: device %d cannot export dma-buf handles", ordinal);
    return -1;
  }
  int fd = -1;
  const size_t span = (size + page - 1) / page * page;
  CUresult rc = cu.cuMemGetHandleForAddressRange(&fd, base, span, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (rc != CUDA_SUCCESS || fd < 0) {
    log::debug(2, "accel: no dma-buf handle for %p: %s", p, error_name(rc));
    return -1;
  }
  *offset = a - base;
  return fd;
}

size_t eager_limit() { return static_cast<size_t>(eager_param.get()); }

size_t staging_chunk() {
  int64_t c = chunk_param.get();
  return c < 4096 ? 4096 : static_cast<size_t>(c);
}

void finalize() {
  if (detail::state.load(std::memory_order_acquire) != 2) return;
  if (detail::finalize_hook) detail::finalize_hook();  // the GPU kernels; takes the lock itself
  CUstream s = stream.exchange(nullptr, std::memory_order_acq_rel);
  if (s) cu.cuStreamSynchronize(s);  // before the lock: a wait
  std::lock_guard<std::mutex> guard(lock);
  if (cu.cuIpcCloseMemHandle)
    for (auto& [key, mapping] : opened) cu.cuIpcCloseMemHandle(mapping.base);
  opened.clear();
  exports.clear();
  for (PinnedClass& pc : pinned_pool) {
    while (pc.count > 0) release_pinned(pc.free[--pc.count]);
  }
  pinned_kind.clear();
  for (CUevent e : free_events) cu.cuEventDestroy(e);
  free_events.clear();
  if (s) cu.cuStreamDestroy(s);
  device_ranges.clear();
  cache_next = 0;
}

// ---- for the GPU kernels (driver.h, kernels.cpp) ---------------------------
namespace detail {

void (*finalize_hook)() = nullptr;

void* driver_symbol(const char* name) {
  if (!started_on()) return nullptr;
  // The library start() opened (RTLD_NOLOAD: no second load); the extra
  // reference is dropped at once, the driver stays loaded for good.
  void* lib = dlopen(library_param.get().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!lib) return nullptr;
  void* sym = dlsym(lib, name);
  dlclose(lib);
  return sym;
}

CUevent pooled_event() { return take_event(); }
void return_event(CUevent e) { give_event(e); }

std::unique_lock<std::mutex> lock_stream(CUstream* s, CUcontext* context) {
  std::unique_lock<std::mutex> guard(lock, std::defer_lock);
  *s = nullptr;
  *context = nullptr;
  if (!started_on()) return guard;
  guard.lock();
  if (!ensure_context() || !make_stream_locked() || cu.cuCtxGetCurrent(context) != CUDA_SUCCESS || !*context) {
    guard.unlock();
    return guard;
  }
  *s = stream.load(std::memory_order_relaxed);
  return guard;
}

}  // namespace detail

}  // namespace axon::accel
