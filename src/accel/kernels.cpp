// Loader and launcher of the GPU kernels (kernels.h, kernels.cu). Compiled
// whenever CUDA is on; without an embedded fatbin (no nvcc at build time)
// available() is simply false.
//
// Kernel state (module, layouts, scratch pool) is touched under accel's lock
// (detail::lock_stream); launches are made under it and waited for after it
// is released, so no other thread's MPI call waits for a kernel.
#include "accel/kernels.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "accel/accel.h"
#include "accel/driver.h"
#include "accel/kernel_records.h"
#include "base/log.h"

#if AXON_HAVE_CUDA_KERNELS
// kernels_fatbin.S
extern "C" const unsigned char axon_kernels_fatbin[];
#endif

namespace axon::accel::kernels {

namespace {

#define AXON_KCU_STR2(x) #x
#define AXON_KCU_STR(x) AXON_KCU_STR2(x)
// The driver entry points the kernels need beyond accel's (names through
// cuda.h's macros, so cuMemAlloc resolves to cuMemAlloc_v2).
#define AXON_KCU_ENTRIES(X) \
  X(cuModuleLoadData)       \
  X(cuModuleUnload)         \
  X(cuModuleGetFunction)    \
  X(cuLaunchKernel)         \
  X(cuMemAlloc)             \
  X(cuMemFree)              \
  X(cuMemcpyHtoD)           \
  X(cuStreamSynchronize)    \
  X(cuStreamCreate)         \
  X(cuStreamDestroy)        \
  X(cuMemcpyAsync)          \
  X(cuEventRecord)          \
  X(cuGetErrorString)

struct Api {
#define AXON_KCU_FIELD(name) decltype(&::name) name = nullptr;
  AXON_KCU_ENTRIES(AXON_KCU_FIELD)
#undef AXON_KCU_FIELD
};

// The records the kernels read (kernel_records.h). A Piece starts with
// Axon's TypeBlock, field for field: blocks are copied into pieces as is.
using kernel_records::Layout;
using kernel_records::Piece;
static_assert(offsetof(TypeBlock, offset) == offsetof(Piece, offset) &&
              offsetof(TypeBlock, length) == offsetof(Piece, length) &&
              offsetof(TypeBlock, count) == offsetof(Piece, count) &&
              offsetof(TypeBlock, stride) == offsetof(Piece, stride) && sizeof(TypeBlock) == 32);

// Reduction storage types of kernels.cu, in the order of kReduceNames.
enum Storage : int { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, c32, c64, pfi, pdi, pli, pii, psi, pff, pdd,
                     storage_count };
constexpr const char* kReduceNames[storage_count] = {"i8",  "i16", "i32", "i64", "u8",  "u16", "u32",
                                                     "u64", "f32", "f64", "c32", "c64", "pfi", "pdi",
                                                     "pli", "pii", "psi", "pff", "pdd"};
// Bytes and alignment of one element of each storage type (the host types').
constexpr size_t kSize[storage_count] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16, 8, 16, 16, 8, 8, 8, 16};
constexpr size_t kAlign[storage_count] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 4, 8, 4, 8, 8, 4, 4, 4, 8};

// Op codes of kernels.cu.
enum OpCode : int { kSum = 0, kProd, kMin, kMax, kLand, kLor, kLxor, kBand, kBor, kBxor, kMinloc, kMaxloc };

// Big blocks are cut into pieces of at most this many bytes, so that one
// warp's share stays small and a few big blocks spread over the whole GPU
// (a multiple of 16: chunks keep 16-byte alignment, and of every element size).
constexpr size_t kPieceBytes = 4096;
// Below this average piece size one thread (not a warp) copies a piece.
constexpr size_t kThreadPieceBytes = 128;
constexpr unsigned kThreads = 256;
constexpr unsigned kMaxBlocks = 16384;
// Layouts kept on the device (least recently used evicted).
constexpr size_t kCachedLayouts = 16;

struct CachedLayout {
  const Datatype* type = nullptr;     // lookup key, validated by the block list below
  std::vector<TypeBlock> blocks;       // the type's blocks when cached
  CUdeviceptr pieces = 0;
  size_t piece_count = 0;
  size_t packed_bytes = 0;             // one unit
  bool per_thread = false;
  unsigned long long offset_bits = 0;  // OR of piece offsets, lengths and strides (alignment)
  uint64_t last_use = 0;
};

enum class Load { untried, on, off };

Api cu;
Load load_state = Load::untried;
CUmodule module = nullptr;
CUcontext module_context = nullptr;
CUfunction pack_fn = nullptr, unpack_fn = nullptr;
CUfunction reduce_fn[storage_count] = {};
CUfunction reduce_layout_fn[storage_count] = {};
std::vector<CachedLayout> layouts;
uint64_t use_clock = 0;
// The stream of queued work (kernels launched without waiting, queue_copy):
// not accel's, so that the pml's device copies of the messages that overlap
// with it do not wait behind it. Made on first use, under accel's lock.
CUstream queue_stream = nullptr;

const char* error_name(CUresult rc) {
  const char* s = nullptr;
  if (cu.cuGetErrorString && cu.cuGetErrorString(rc, &s) == CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

// Loads the module in `ctx` (first call only). Caller holds accel's lock.
bool load(CUcontext ctx) {
  if (load_state != Load::untried) return load_state == Load::on;
  load_state = Load::off;
#if !AXON_HAVE_CUDA_KERNELS
  (void)ctx;
  log::debug(1, "accel: no GPU kernels (built without nvcc)");
  return false;
#else
  if (!kernels_param.get()) {
    log::debug(1, "accel: GPU kernels disabled (AXON_ACCEL_KERNELS=0)");
    return false;
  }
  bool missing = false;
#define AXON_KCU_LOAD(name)                                                                           \
  cu.name = reinterpret_cast<decltype(cu.name)>(detail::driver_symbol(AXON_KCU_STR(name)));         \
  if (!cu.name) missing = true;
  AXON_KCU_ENTRIES(AXON_KCU_LOAD)
#undef AXON_KCU_LOAD
  if (missing) {
    log::debug(1, "accel: no GPU kernels: the CUDA driver lacks module/launch entry points");
    return false;
  }
  CUresult rc = cu.cuModuleLoadData(&module, axon_kernels_fatbin);
  if (rc != CUDA_SUCCESS) {
    // E.g. a GPU architecture the fatbin has no code for and whose PTX the
    // driver cannot JIT: staging still works.
    log::debug(1, "accel: GPU kernels not loaded: %s", error_name(rc));
    module = nullptr;
    return false;
  }
  bool ok = cu.cuModuleGetFunction(&pack_fn, module, "axon_pack") == CUDA_SUCCESS &&
            cu.cuModuleGetFunction(&unpack_fn, module, "axon_unpack") == CUDA_SUCCESS;
  for (int s = 0; ok && s < storage_count; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "axon_reduce_%s", kReduceNames[s]);
    ok = cu.cuModuleGetFunction(&reduce_fn[s], module, name) == CUDA_SUCCESS;
    std::snprintf(name, sizeof name, "axon_reduce_layout_%s", kReduceNames[s]);
    ok = ok && cu.cuModuleGetFunction(&reduce_layout_fn[s], module, name) == CUDA_SUCCESS;
  }
  if (!ok) {
    log::debug(1, "accel: GPU kernels incomplete in the embedded module");
    cu.cuModuleUnload(module);
    module = nullptr;
    return false;
  }
  module_context = ctx;
  load_state = Load::on;
  detail::finalize_hook = &finalize;
  log::debug(1, "accel: GPU kernels loaded");
  return true;
#endif
}

// The queued work's stream (nullptr: the driver made none). Caller holds
// accel's lock with the kernels' context current.
CUstream queue_stream_locked() {
  if (!queue_stream && cu.cuStreamCreate(&queue_stream, CU_STREAM_DEFAULT) != CUDA_SUCCESS) {
    log::debug(1, "accel: no stream for queued GPU work: device steps of collectives wait for each kernel");
    queue_stream = nullptr;
  }
  return queue_stream;
}

// accel's lock with the kernels usable in the current context, or an
// unowned lock (the caller answers "not supported").
std::unique_lock<std::mutex> lock_kernels(CUstream* stream) {
  CUcontext ctx = nullptr;
  std::unique_lock<std::mutex> guard = detail::lock_stream(stream, &ctx);
  if (!guard.owns_lock()) return guard;
  // A module belongs to the context it was loaded in; another context (an
  // application with several) stages through the host instead.
  if (!load(ctx) || ctx != module_context) guard.unlock();
  return guard;
}

bool same_blocks(const CachedLayout& c, const Datatype& t) {
  return c.type == &t && c.blocks.size() == t.block_count &&
         (t.block_count == 0 || std::memcmp(c.blocks.data(), t.blocks, t.block_count * sizeof(TypeBlock)) == 0);
}

void release(CachedLayout& c) {
  if (c.pieces) cu.cuMemFree(c.pieces);
  c.pieces = 0;
}

// The device copy of t's pieces: cached per type and validated against the
// type's block list on every use (a freed type's address may come back as
// another type). Caller holds accel's lock.
const CachedLayout* layout_for(const Datatype& t) {
  for (CachedLayout& c : layouts) {
    if (same_blocks(c, t)) {
      c.last_use = ++use_clock;
      return &c;
    }
  }
  std::vector<Piece> pieces;
  size_t packed = 0;
  unsigned long long bits = 0;
  for (size_t b = 0; b < t.block_count; ++b) {
    const TypeBlock& tb = t.blocks[b];
    size_t len = tb.length, rows = tb.count;
    long long stride = tb.stride;
    if (len == 0 || rows == 0) continue;
    if (rows > 1 && stride == static_cast<long long>(len)) {
      // Back-to-back runs: one long run.
      len *= rows;
      rows = 1;
    }
    if (rows == 1) stride = 0;
    if (len >= kPieceBytes) {
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < len; c += kPieceBytes)
          pieces.push_back({tb.offset + static_cast<long long>(r) * stride + static_cast<long long>(c),
                            std::min(kPieceBytes, len - c), 1, 0, packed + r * len + c});
    } else {
      size_t per = std::max<size_t>(1, kPieceBytes / len);
      for (size_t r = 0; r < rows; r += per)
        pieces.push_back({tb.offset + static_cast<long long>(r) * stride, len, std::min(per, rows - r), stride,
                          packed + r * len});
    }
    packed += len * rows;
  }
  for (const Piece& p : pieces)
    bits |= static_cast<unsigned long long>(p.offset) | p.length | (p.count > 1 ? static_cast<unsigned long long>(p.stride) : 0);
  CachedLayout c;
  c.type = &t;
  c.blocks.assign(t.blocks, t.blocks + t.block_count);
  c.piece_count = pieces.size();
  c.packed_bytes = packed;
  c.per_thread = !pieces.empty() && packed / pieces.size() < kThreadPieceBytes;
  c.offset_bits = bits;
  c.last_use = ++use_clock;
  if (!pieces.empty()) {
    size_t bytes = pieces.size() * sizeof(Piece);
    CUresult rc = cu.cuMemAlloc(&c.pieces, bytes);
    if (rc == CUDA_SUCCESS) rc = cu.cuMemcpyHtoD(c.pieces, pieces.data(), bytes);
    if (rc != CUDA_SUCCESS) {
      log::debug(1, "accel: cannot upload a datatype layout (%zu pieces): %s", pieces.size(), error_name(rc));
      release(c);
      return nullptr;
    }
  }
  if (layouts.size() >= kCachedLayouts) {
    auto oldest = std::min_element(layouts.begin(), layouts.end(),
                                   [](const CachedLayout& a, const CachedLayout& b) { return a.last_use < b.last_use; });
    release(*oldest);
    *oldest = std::move(c);
    return &*oldest;
  }
  layouts.push_back(std::move(c));
  return &layouts.back();
}

unsigned grid_for(unsigned long long threads_needed) {
  unsigned long long blocks = (threads_needed + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<unsigned long long>(blocks, 1, kMaxBlocks));
}

// Launches under accel's lock (`guard`), releases it, then waits unless
// told not to (the caller marks the stream: accel::stream_mark): another
// thread's MPI call must not wait for this kernel too. The stream lives
// until finalize, so it outlives the lock.
int launch(CUfunction f, unsigned grid, CUstream stream, void** params, const char* what,
           std::unique_lock<std::mutex>& guard, bool wait = true) {
  CUresult rc = cu.cuLaunchKernel(f, grid, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr);
  guard.unlock();
  if (rc == CUDA_SUCCESS && wait) rc = cu.cuStreamSynchronize(stream);
  if (rc != CUDA_SUCCESS) {
    log::error("accel: GPU kernel %s failed: %s", what, error_name(rc));
    return -1;
  }
  return 0;
}

bool make_layout(const Datatype& t, size_t count, const CachedLayout& c, Layout* l) {
  size_t units = 0;
  if (__builtin_mul_overflow(count, t.reps, &units)) return false;
  *l = Layout{c.pieces, c.piece_count, units, t.reps, static_cast<long long>(t.rep_stride),
              static_cast<long long>(t.extent), c.packed_bytes};
  return true;
}

// A device-to-device copy complete on return. cuMemcpy does not wait for
// device-to-device copies (the driver only orders them on the legacy
// stream), so the copy runs on accel's stream and is waited for.
int copy_synchronous(void* dst, const void* src, size_t len) {
  static decltype(&::cuMemcpyAsync) memcpy_async = nullptr;
  static decltype(&::cuStreamSynchronize) stream_sync = nullptr;
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  std::unique_lock<std::mutex> guard = detail::lock_stream(&stream, &ctx);
  if (guard.owns_lock()) {
    if (!memcpy_async) {
      memcpy_async = reinterpret_cast<decltype(memcpy_async)>(detail::driver_symbol(AXON_KCU_STR(cuMemcpyAsync)));
      stream_sync = reinterpret_cast<decltype(stream_sync)>(detail::driver_symbol(AXON_KCU_STR(cuStreamSynchronize)));
    }
    if (memcpy_async && stream_sync) {
      CUresult rc = memcpy_async(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), len, stream);
      guard.unlock();  // the wait runs without accel's lock
      if (rc == CUDA_SUCCESS) rc = stream_sync(stream);
      if (rc == CUDA_SUCCESS) return 0;
      log::error("accel: device-to-device copy of %zu bytes failed: %s", len, error_name(rc));
      return -1;
    }
    guard.unlock();
  }
  return accel::copy(dst, src, len) == 0 ? 0 : -1;
}

int pack_or_unpack(bool do_pack, void* dst, const void* src, size_t count, const Datatype& t) {
  if (count == 0 || t.size == 0) return 0;
  if (t.contiguous) {
    if (copy_synchronous(dst, src, t.size * count) != 0) return -1;
    gpu_packs.add();
    return 0;
  }
  CUstream stream = nullptr;
  std::unique_lock<std::mutex> guard = lock_kernels(&stream);
  if (!guard.owns_lock()) return 1;
  const CachedLayout* c = layout_for(t);
  if (!c) return 1;
  if (c->packed_bytes * t.reps != t.size) {
    log::debug(1, "accel: layout of %zu bytes per unit does not match the type's size %zu", c->packed_bytes, t.size);
    return 1;
  }
  Layout l;
  if (!make_layout(t, count, *c, &l)) return 1;
  if (l.piece_count == 0) return 0;
  int per_thread = c->per_thread ? 1 : 0;
  unsigned long long work = l.units * l.piece_count;
  unsigned grid = grid_for(per_thread ? work : work * 32);
  void* params[] = {&dst, const_cast<void**>(&src), &l, &per_thread};
  int rc = launch(do_pack ? pack_fn : unpack_fn, grid, stream, params, do_pack ? "pack" : "unpack", guard);
  if (rc == 0) gpu_packs.add();
  return rc;
}

// The storage type of an element kind, or -1 without a GPU kernel.
int storage_of(ElementKind e) {
  switch (e) {
    case ElementKind::int8: return i8;
    case ElementKind::int16: return i16;
    case ElementKind::int32: return i32;
    case ElementKind::int64: return i64;
    case ElementKind::uint8: return u8;
    case ElementKind::uint16: return u16;
    case ElementKind::uint32: return u32;
    case ElementKind::uint64: return u64;
    case ElementKind::float32: return f32;
    case ElementKind::float64: return f64;
    case ElementKind::complex_float32: return c32;
    case ElementKind::complex_float64: return c64;
    // Logical and byte ops are the integer formulas on unsigned storage.
    case ElementKind::c_bool:
    case ElementKind::logical8:
    case ElementKind::byte: return u8;
    case ElementKind::logical16: return u16;
    case ElementKind::logical32: return u32;
    case ElementKind::logical64: return u64;
    case ElementKind::pair_float_int: return pfi;
    case ElementKind::pair_double_int: return pdi;
    case ElementKind::pair_long_int: return sizeof(long) == 8 ? pli : -1;
    case ElementKind::pair_int_int:
    case ElementKind::pair_integer_integer: return pii;
    case ElementKind::pair_short_int: return psi;
    case ElementKind::pair_real_real: return pff;
    case ElementKind::pair_double_double: return pdd;
    default: return -1;
  }
}

int op_code(OpKind k) {
  switch (k) {
    case OpKind::sum: return kSum;
    case OpKind::prod: return kProd;
    case OpKind::min: return kMin;
    case OpKind::max: return kMax;
    case OpKind::land: return kLand;
    case OpKind::lor: return kLor;
    case OpKind::lxor: return kLxor;
    case OpKind::band: return kBand;
    case OpKind::bor: return kBor;
    case OpKind::bxor: return kBxor;
    case OpKind::minloc: return kMinloc;
    case OpKind::maxloc: return kMaxloc;
    default: return -1;
  }
}

// Whether the kernels.cu dispatch has this (op, storage) pair: exactly the
// host table's combinations for the kinds above.
bool op_supported(int op, int s) {
  if (s >= pfi) return op == kMinloc || op == kMaxloc;
  if (s == c32 || s == c64) return op == kSum || op == kProd;
  if (s == f32 || s == f64) return op == kSum || op == kProd || op == kMin || op == kMax;
  return op >= kSum && op <= kBxor;
}

}  // namespace

bool available() {
  CUstream stream = nullptr;
  return lock_kernels(&stream).owns_lock();
}

int pack(void* packed, const void* user, size_t count, const Datatype& t) {
  return pack_or_unpack(true, packed, user, count, t);
}

int unpack(void* user, const void* packed, size_t count, const Datatype& t) {
  return pack_or_unpack(false, user, packed, count, t);
}

bool reduce_supported(const Op& op, const Datatype& t) {
  const int code = op_code(op.kind);
  const int s = storage_of(t.element);
  return code >= 0 && s >= 0 && op_supported(code, s) && available();
}

int reduce(const Op& op, const void* in, void* inout, size_t count, const Datatype& t, bool wait) {
  const int code = op_code(op.kind);
  const int s = storage_of(t.element);
  if (code < 0 || s < 0 || !op_supported(code, s)) return 1;
  if (count == 0) return 0;
  const auto align_bits = reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(inout);
  if (align_bits % kAlign[s] != 0) return 1;  // a misaligned access would kill the context
  if (t.predefined || t.contiguous) {
    // op_apply's element count; the storage size must be the type's.
    size_t n = 0;
    if (__builtin_mul_overflow(count, t.elements_per_item, &n)) return 1;
    if (n == 0) return 0;
    // Elements are `extent / elements_per_item` bytes apart in op_apply
    // (a padded pair like MPI_SHORT_INT has extent 8, size 6).
    if (n * kSize[s] != static_cast<size_t>(t.extent) * count) return 1;
    CUstream stream = nullptr;
    std::unique_lock<std::mutex> guard = lock_kernels(&stream);
    if (!guard.owns_lock() || (!wait && !(stream = queue_stream_locked()))) return 1;
    int opc = code;
    unsigned long long elements = n;
    void* params[] = {&inout, const_cast<void**>(&in), &elements, &opc};
    int rc = launch(reduce_fn[s], grid_for(n), stream, params, "reduce", guard, wait);
    if (rc == 0) gpu_reductions.add();
    return rc;
  }
  // A derived type of one basic type with holes, as op_apply treats it: the
  // kernel runs on each block, holes untouched.
  if (t.signature_count == 0) return 0;
  const Datatype& basic = *t.signature[0].basic;
  if (!basic.contiguous || basic.size != kSize[s]) return 1;
  if ((static_cast<unsigned long long>(t.extent) | static_cast<unsigned long long>(t.rep_stride)) % kAlign[s] != 0)
    return 1;
  CUstream stream = nullptr;
  std::unique_lock<std::mutex> guard = lock_kernels(&stream);
  if (!guard.owns_lock() || (!wait && !(stream = queue_stream_locked()))) return 1;
  const CachedLayout* c = layout_for(t);
  if (!c || c->offset_bits % kAlign[s] != 0 || c->packed_bytes * t.reps != t.size) return 1;
  for (size_t b = 0; b < t.block_count; ++b)
    if (t.blocks[b].length % kSize[s] != 0) return 1;
  Layout l;
  if (!make_layout(t, count, *c, &l)) return 1;
  if (l.piece_count == 0) return 0;
  int opc = code;
  void* params[] = {&inout, const_cast<void**>(&in), &l, &opc};
  int rc = launch(reduce_layout_fn[s], grid_for(l.units * l.piece_count * 32), stream, params, "reduce (layout)",
                  guard, wait);
  if (rc == 0) gpu_reductions.add();
  return rc;
}

int queue_copy(void* dst, const void* src, size_t len) {
  if (len == 0) return 0;
  CUstream stream = nullptr;
  std::unique_lock<std::mutex> guard = lock_kernels(&stream);
  if (!guard.owns_lock() || !(stream = queue_stream_locked())) return 1;
  CUresult rc = cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), len, stream);
  if (rc == CUDA_SUCCESS) return 0;
  log::error("accel: queued device copy of %zu bytes failed: %s", len, error_name(rc));
  return -1;
}

int queue_mark(Event* done) {
  *done = nullptr;
  // The pool takes accel's lock itself: the event is had before it.
  CUevent e = detail::pooled_event();
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  std::unique_lock<std::mutex> guard = detail::lock_stream(&stream, &ctx);
  if (!guard.owns_lock() || !queue_stream) {  // nothing was ever queued
    guard.unlock();
    if (e) detail::return_event(e);
    return 0;
  }
  stream = queue_stream;
  if (e && cu.cuEventRecord(e, stream) == CUDA_SUCCESS) {
    *done = e;
    return 0;
  }
  guard.unlock();
  if (e) detail::return_event(e);
  // No event: wait for the queue now (correct, only not overlapped).
  CUresult rc = cu.cuStreamSynchronize(stream);
  if (rc == CUDA_SUCCESS) return 0;
  log::error("accel: queued GPU work failed: %s", error_name(rc));
  return -1;
}

// Device scratch is kept for reuse by power-of-two size class: cuMemAlloc
// and cuMemFree cost tens of microseconds (cuMemFree waits for the GPU),
// and a reused buffer keeps its IPC handle, so a peer that mapped it once
// finds the mapping in its cache. At most kPooledScratch buffers stay, the
// most recently returned: a full pool gives up its oldest buffer for the
// one coming back (keeping the oldest instead would leave a pool filled
// by earlier sizes, and every call of a new size would allocate and free
// its scratch: a steady stream of device-resident reductions did).
// Buffers are taken newest first.
namespace {
constexpr size_t kPooledScratch = 8;
constexpr size_t kMinScratch = 4096;
struct Scratch {
  CUdeviceptr p;
  size_t bytes;
};
std::vector<Scratch> scratch_pool;

size_t scratch_class(size_t bytes) { return std::bit_ceil(std::max(bytes, kMinScratch)); }
}  // namespace

void* scratch_alloc(size_t bytes) {
  CUstream stream = nullptr;
  std::unique_lock<std::mutex> guard = lock_kernels(&stream);
  if (!guard.owns_lock()) return nullptr;
  const size_t size = scratch_class(bytes);
  for (auto it = scratch_pool.rbegin(); it != scratch_pool.rend(); ++it) {
    if (it->bytes == size) {
      CUdeviceptr p = it->p;
      scratch_pool.erase(std::next(it).base());
      return reinterpret_cast<void*>(p);
    }
  }
  CUdeviceptr p = 0;
  CUresult rc = cu.cuMemAlloc(&p, size);
  if (rc != CUDA_SUCCESS) {
    log::debug(1, "accel: no device scratch of %zu bytes: %s", bytes, error_name(rc));
    return nullptr;
  }
  return reinterpret_cast<void*>(p);
}

void scratch_free(void* p, size_t bytes) {
  if (!p) return;
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  std::unique_lock<std::mutex> guard = detail::lock_stream(&stream, &ctx);
  // No context can be made current (a driver in a broken state): the
  // driver could not free it either, and the pool needs the lock.
  if (!guard.owns_lock()) return;
  if (scratch_pool.size() >= kPooledScratch) {
    if (cu.cuMemFree) cu.cuMemFree(scratch_pool.front().p);
    scratch_pool.erase(scratch_pool.begin());
  }
  scratch_pool.push_back({reinterpret_cast<CUdeviceptr>(p), scratch_class(bytes)});
}

void finalize() {
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  std::unique_lock<std::mutex> guard = detail::lock_stream(&stream, &ctx);
  if (cu.cuMemFree) {
    for (CachedLayout& c : layouts) release(c);
    for (const Scratch& b : scratch_pool) cu.cuMemFree(b.p);
  }
  if (queue_stream && cu.cuStreamDestroy) cu.cuStreamDestroy(queue_stream);
  queue_stream = nullptr;
  layouts.clear();
  scratch_pool.clear();
  if (module && guard.owns_lock()) cu.cuModuleUnload(module);
  module = nullptr;
  module_context = nullptr;
  // A later MPI session loads the module again.
  load_state = Load::untried;
}

}  // namespace axon::accel::kernels
