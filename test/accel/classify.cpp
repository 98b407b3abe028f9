// Pointer classification and the accel layer's copies and IPC export,
// against the fake driver (test/accel/fake_cuda.c). Compiled with the
// accel sources directly (the library's copy is hidden), run without MPI.
// The driver is AXON_ACCEL_CUDA_LIBRARY (test/accel/run.sh sets it).
//   classify fake       device / managed / pinned / host pointers, the
//                       cache, copies, async copies, IPC export
//   classify nodevice   the fake with FAKE_CUDA_DEVICES=0: accel off
//   classify none       no driver at all: accel off, host path
//   classify nostream   the fake refusing to create streams: copies still
//                       complete (on the legacy stream, waited for)
//   classify timing     (with the fake) prints the cost of classify() on a
//                       host pointer: accel off, driver without context,
//                       driver with context; no assertions
// The "fake" mode also checks the steady-state costs (driver calls counted
// per entry point by the fake): host memory classified without the driver,
// one query per IPC export, no wait for the GPU under accel's lock.
#include <sys/mman.h>
#include <ucontext.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
#include <string>
#include <vector>

#include <cuda.h>

#include "accel/accel.h"
#include "accel/kernel_records.h"
#include "fake_cuda_stats.h"

namespace {
int failures = 0;
#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)


template <class F> F sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    std::fprintf(stderr, "fake driver lacks %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

using namespace axon;

// The fake's per-entry-point call counts (fake_cuda_calls).
using Calls = std::map<std::string, unsigned long>;
Calls calls_now(void* lib) {
  auto calls = sym<int (*)(const char**, unsigned long*, int)>(lib, "fake_cuda_calls");
  const char* names[128];
  unsigned long counts[128];
  int n = std::min(calls(names, counts, 128), 128);
  Calls c;
  for (int i = 0; i < n; ++i) c[names[i]] = counts[i];
  return c;
}
// The calls made since `before` (entry points called at least once).
Calls calls_since(void* lib, const Calls& before) {
  Calls d;
  for (const auto& [name, n] : calls_now(lib))
    if (auto it = before.find(name); n > (it == before.end() ? 0 : it->second))
      d[name] = n - (it == before.end() ? 0 : it->second);
  return d;
}
std::string text(const Calls& c) {
  std::string t;
  for (const auto& [name, n] : c) t += (t.empty() ? "" : " ") + name + "=" + std::to_string(n);
  return t.empty() ? "none" : t;
}

// Host memory of every kind Axon vouches for (stack, brk heap, executable,
// its own pinned buffers) classified without a single driver call, in this
// thread and another one; and memory Axon cannot vouch for (unmapped, then
// given to the driver at the same address) asked again, so it comes back
// as device memory.
void host_without_driver(void* lib) {
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  static char in_image[256];
  char on_stack[256];
  std::vector<char> on_heap(256);
  void* axon_pinned = accel::pinned_alloc(8192);
  Calls before = calls_now(lib);
  for (int i = 0; i < 1000; ++i) {
    EXPECT(accel::classify(in_image + i % 256) == accel::Memory::Host);
    EXPECT(accel::classify(on_stack + i % 256) == accel::Memory::Host);
    EXPECT(accel::classify(on_heap.data() + i % 256) == accel::Memory::Host);
    EXPECT(accel::classify(static_cast<char*>(axon_pinned) + i) == accel::Memory::Host);
  }
  Calls made = calls_since(lib, before);
  std::printf("host classify x4000 (image, stack, heap, Axon's pinned buffer): driver calls: %s\n", text(made).c_str());
  EXPECT(made.empty());
  before = calls_now(lib);
  std::thread([&] {
    char its_stack[64];
    for (int i = 0; i < 100; ++i) {
      EXPECT(accel::classify(its_stack) == accel::Memory::Host);
      EXPECT(accel::classify(on_heap.data()) == accel::Memory::Host);
    }
  }).join();
  made = calls_since(lib, before);
  std::printf("another thread, its stack and the heap x200: driver calls: %s\n", text(made).c_str());
  EXPECT(made.empty());
  accel::pinned_free(axon_pinned, 8192);

  // Host memory Axon cannot vouch for: asked every time. Unmapped, its
  // addresses become device memory (the fake places the allocation there,
  // as a driver may): a cache of host answers would now be wrong.
  const size_t len = 1 << 20;
  void* h = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(h != MAP_FAILED);
  before = calls_now(lib);
  EXPECT(accel::classify(h) == accel::Memory::Host);
  EXPECT(accel::classify(h) == accel::Memory::Host);
  made = calls_since(lib, before);
  EXPECT(made["cuPointerGetAttributes"] == 2 && made.size() == 1);
  munmap(h, len);
  char at[32];
  std::snprintf(at, sizeof at, "%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(h)));
  setenv("FAKE_CUDA_ALLOC_AT", at, 1);
  CUdeviceptr again = 0;
  EXPECT(mem_alloc(&again, len) == CUDA_SUCCESS);
  unsetenv("FAKE_CUDA_ALLOC_AT");
  EXPECT(reinterpret_cast<void*>(again) == h);
  EXPECT(accel::classify(h) == accel::Memory::Device);

  // Code running on a stack of its own (a coroutine's, mapped after the
  // device memory, so below it): the thread's stack range must not reach
  // from there up to the thread's stack and take the device memory in.
  const size_t stack_len = 256 << 10;
  void* stack = MAP_FAILED;
  for (size_t below = 16; stack == MAP_FAILED && below < 4096; below *= 2)
    stack = mmap(static_cast<char*>(h) - below * stack_len, stack_len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  EXPECT(stack != MAP_FAILED && stack < h);
  static ucontext_t main_ctx, co_ctx;
  static void* device_ptr;
  static bool device_seen;
  device_ptr = h;
  device_seen = false;
  getcontext(&co_ctx);
  co_ctx.uc_stack.ss_sp = stack;
  co_ctx.uc_stack.ss_size = stack_len;
  co_ctx.uc_link = &main_ctx;
  makecontext(&co_ctx, [] { device_seen = accel::classify(device_ptr) == accel::Memory::Device; }, 0);
  swapcontext(&main_ctx, &co_ctx);
  EXPECT(device_seen);
  munmap(stack, stack_len);
  mem_free(again);
}

// The driver's IPC calls act on the current context, and a failed ordering
// call means no export (the message is staged). In steady state an export
// costs one pointer query.
void ipc_export_checks(void* lib) {
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  CUdeviceptr x = 0, y = 0;
  EXPECT(mem_alloc(&x, 8192) == CUDA_SUCCESS && mem_alloc(&y, 8192) == CUDA_SUCCESS);
  accel::IpcHandle hx{}, hy{};
  bool exported = false;
  std::thread([&] { exported = accel::ipc_export(reinterpret_cast<void*>(x), &hx); }).join();  // no context there
  EXPECT(exported);
  setenv("FAKE_CUDA_SYNC_MEMOPS", "0", 1);
  EXPECT(!accel::ipc_export(reinterpret_cast<void*>(y), &hy));
  unsetenv("FAKE_CUDA_SYNC_MEMOPS");
  EXPECT(accel::ipc_export(reinterpret_cast<void*>(y), &hy));
  Calls before = calls_now(lib);
  for (int i = 0; i < 100; ++i) EXPECT(accel::ipc_export(reinterpret_cast<char*>(y) + 64, &hy) && hy.offset == 64);
  Calls made = calls_since(lib, before);
  std::printf("ipc_export x100 (cached handle): driver calls: %s\n", text(made).c_str());
  EXPECT(made["cuPointerGetAttributes"] == 100);
  made.erase("cuPointerGetAttributes");
  made.erase("cuCtxGetCurrent");
  EXPECT(made.empty());
  mem_free(x);
  mem_free(y);
}

// While one thread waits for its copy (the fake's gate holds the wait),
// another thread can classify a device pointer never seen (which records
// its range under accel's lock) and take a pinned buffer (the pool, under
// the lock): no wait for the GPU holds the lock.
void no_wait_under_lock(void* lib) {
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  auto gate = sym<int (*)(int)>(lib, "fake_cuda_gate");
  CUdeviceptr a = 0, b = 0, fresh = 0;
  EXPECT(mem_alloc(&a, 4096) == CUDA_SUCCESS && mem_alloc(&b, 4096) == CUDA_SUCCESS &&
         mem_alloc(&fresh, 4096) == CUDA_SUCCESS);
  gate(1);
  std::thread copier([&] { EXPECT(accel::copy(reinterpret_cast<void*>(a), reinterpret_cast<void*>(b), 4096) == 0); });
  for (int i = 0; i < 50000 && gate(-1) == 0; ++i) usleep(100);
  EXPECT(gate(-1) > 0);  // the copier waits for its copy now
  auto other = std::async(std::launch::async, [&] {
    bool ok = accel::classify(reinterpret_cast<void*>(fresh)) == accel::Memory::Device;
    void* p = accel::pinned_alloc(4096);
    accel::pinned_free(p, 4096);
    return ok && p;
  });
  bool done = other.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  std::printf("another thread's classify and pinned_alloc while a copy waits: %s\n",
              done ? "done at once" : "BLOCKED (a wait holds accel's lock)");
  EXPECT(done);
  gate(0);
  copier.join();
  EXPECT(other.get());
  for (CUdeviceptr p : {a, b, fresh}) mem_free(p);
}

// The fake driver's emulation of Axon's kernels, through the driver API
// alone: a pack launched on a stream runs only when that stream
// synchronises (a copy on another, non-blocking stream still reads the old
// bytes), in launch order, and a launch that reaches outside its buffers
// faults (sticky, as a dead context: checked last).
int fake_kernels(void* lib) {
  namespace kr = axon::accel::kernel_records;
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
  auto set_current = sym<CUresult (*)(CUcontext)>(lib, "cuCtxSetCurrent");
  auto init = sym<CUresult (*)(unsigned)>(lib, "cuInit");
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  auto htod = sym<CUresult (*)(CUdeviceptr, const void*, size_t)>(lib, "cuMemcpyHtoD_v2");
  auto copy_async = sym<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>(lib, "cuMemcpyAsync");
  auto stream_create = sym<CUresult (*)(CUstream*, unsigned)>(lib, "cuStreamCreate");
  auto stream_sync = sym<CUresult (*)(CUstream)>(lib, "cuStreamSynchronize");
  auto load = sym<CUresult (*)(CUmodule*, const void*)>(lib, "cuModuleLoadData");
  auto get_function = sym<CUresult (*)(CUfunction*, CUmodule, const char*)>(lib, "cuModuleGetFunction");
  auto launch = sym<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void**, void**)>(lib, "cuLaunchKernel");
  auto stats = sym<void (*)(fake_cuda_stats*)>(lib, "fake_cuda_stats");
  CUcontext ctx = nullptr;
  EXPECT(init(0) == CUDA_SUCCESS && retain(&ctx, 0) == CUDA_SUCCESS && set_current(ctx) == CUDA_SUCCESS);
  CUmodule module = nullptr;
  const unsigned char not_fatbin[16] = {0x7f, 'E', 'L', 'F'};
  EXPECT(load(&module, not_fatbin) == CUDA_ERROR_INVALID_IMAGE);
  const unsigned char fatbin_header[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};  // magic 0xBA55ED50
  EXPECT(load(&module, fatbin_header) == CUDA_SUCCESS);
  CUfunction pack = nullptr, unpack = nullptr, nothing = nullptr;
  EXPECT(get_function(&pack, module, "axon_pack") == CUDA_SUCCESS);
  EXPECT(get_function(&unpack, module, "axon_unpack") == CUDA_SUCCESS);
  EXPECT(get_function(&nothing, module, "axon_reduce_layout_pdd") == CUDA_SUCCESS);
  EXPECT(get_function(&nothing, module, "no_such_kernel") == CUDA_ERROR_NOT_FOUND);

  // 4 units (2 items x 2 reps) of one piece: 3 runs of 4 bytes, 8 apart.
  CUdeviceptr user = 0, packed = 0, pieces = 0, out = 0;
  EXPECT(mem_alloc(&user, 256) == CUDA_SUCCESS && mem_alloc(&packed, 48) == CUDA_SUCCESS &&
         mem_alloc(&pieces, sizeof(kr::Piece)) == CUDA_SUCCESS && mem_alloc(&out, 48) == CUDA_SUCCESS);
  unsigned char host[256], zero[48] = {};
  for (int i = 0; i < 256; ++i) host[i] = static_cast<unsigned char>(i);
  kr::Piece piece{4, 4, 3, 8, 0};
  EXPECT(htod(user, host, sizeof host) == CUDA_SUCCESS && htod(pieces, &piece, sizeof piece) == CUDA_SUCCESS &&
         htod(packed, zero, sizeof zero) == CUDA_SUCCESS);
  kr::Layout layout{pieces, 1, 4, 2, 32, 100, 12};
  CUstream s = nullptr, other = nullptr;
  EXPECT(stream_create(&s, 0) == CUDA_SUCCESS && stream_create(&other, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  char* dst = reinterpret_cast<char*>(packed);
  char* src = reinterpret_cast<char*>(user);
  int per_thread = 0;
  void* params[] = {&dst, &src, &layout, &per_thread};
  EXPECT(launch(pack, 1, 1, 1, 2048, 1, 1, 0, s, params, nullptr) == CUDA_ERROR_INVALID_VALUE);  // > 1024 threads
  EXPECT(launch(pack, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
  auto download = [&](CUdeviceptr from, CUstream on, unsigned char* to) {
    // Through a device copy on `on`, then to the host.
    EXPECT(copy_async(out, from, 48, on) == CUDA_SUCCESS);
    auto dtoh = sym<CUresult (*)(void*, CUdeviceptr, size_t)>(lib, "cuMemcpyDtoH_v2");
    EXPECT(dtoh(to, out, 48) == CUDA_SUCCESS);
  };
  {
    fake_cuda_stats st{};
    stats(&st);
    EXPECT(st.kernel_launches == 1 && st.kernel_packs == 1 && st.kernels_run == 0);
  }
  // A copy on another, non-blocking stream reads the old bytes (the
  // synchronous download after it, on the legacy stream, then runs the
  // kernel: too late for that copy).
  unsigned char got[48];
  download(packed, other, got);
  EXPECT(std::memcmp(got, zero, sizeof got) == 0);
  EXPECT(stream_sync(s) == CUDA_SUCCESS);
  download(packed, other, got);
  unsigned char want[48];
  for (int u = 0; u < 4; ++u)
    for (int r = 0; r < 3; ++r)
      for (int b = 0; b < 4; ++b) want[u * 12 + r * 4 + b] = host[(u / 2) * 100 + (u % 2) * 32 + 4 + r * 8 + b];
  EXPECT(std::memcmp(got, want, sizeof want) == 0);

  // Unpack into zeroed user memory, then a launch that reaches past its
  // buffer: the next synchronisation reports it, and from then on.
  unsigned char zeros[256] = {};
  EXPECT(htod(user, zeros, sizeof zeros) == CUDA_SUCCESS);
  std::swap(dst, src);  // unpack(user, packed, ...)
  EXPECT(launch(unpack, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
  EXPECT(stream_sync(s) == CUDA_SUCCESS);
  {
    auto dtoh = sym<CUresult (*)(void*, CUdeviceptr, size_t)>(lib, "cuMemcpyDtoH_v2");
    unsigned char back[256];
    EXPECT(dtoh(back, user, sizeof back) == CUDA_SUCCESS);
    bool ok = true;
    for (int i = 0; i < 256; ++i) {
      int u = -1;
      for (int k = 0; k < 4; ++k) {
        int at = (k / 2) * 100 + (k % 2) * 32 + 4;
        if (i >= at && i < at + 20 && (i - at) % 8 < 4) u = k * 12 + (i - at) / 8 * 4 + (i - at) % 8;
      }
      ok = ok && back[i] == (u < 0 ? 0 : want[u]);
    }
    EXPECT(ok);
  }
  layout.units = 8;  // unit 7 starts at 332, past the 256-byte allocation
  EXPECT(launch(unpack, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
  EXPECT(stream_sync(s) == CUDA_ERROR_ILLEGAL_ADDRESS);
  fake_cuda_stats st{};
  stats(&st);
  EXPECT(st.kernel_faults == 1 && st.kernels_run == 3 && st.module_loads == 1);
  for (CUdeviceptr p : {user, packed, pieces, out}) mem_free(p);
  auto unload = sym<CUresult (*)(CUmodule)>(lib, "cuModuleUnload");
  auto stream_destroy = sym<CUresult (*)(CUstream)>(lib, "cuStreamDestroy_v2");
  EXPECT(unload(module) == CUDA_SUCCESS && stream_destroy(s) == CUDA_SUCCESS && stream_destroy(other) == CUDA_SUCCESS);
  std::printf("%s\n", failures ? "FAILED" : "ok: fake kernels");
  return failures ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string mode = argv[1];
  const char* lib_env = std::getenv("AXON_ACCEL_CUDA_LIBRARY");
  std::string lib_path = lib_env ? lib_env : "";
  if (mode == "none") {
    int x = 0;
    EXPECT(accel::classify(&x) == accel::Memory::Host);
    EXPECT(!accel::available());
    EXPECT(std::strstr(accel::why_off(), "no CUDA driver") != nullptr);
    char a[16] = "hello", b[16] = {};
    EXPECT(accel::copy(b, a, sizeof a) == 0 && std::strcmp(b, "hello") == 0);
    std::printf("%s\n", failures ? "FAILED" : "ok: no driver, host path");
    return failures ? 1 : 0;
  }
  if (mode == "timing") {
    // Accel off for this measurement is AXON_ACCEL=0 in another run; here
    // the driver is loaded: first no context, then a context.
    auto time_it = [](const char* what) {
      std::vector<char> host(64);
      constexpr int kCalls = 2000000;
      auto t0 = std::chrono::steady_clock::now();
      int device = 0;
      for (int i = 0; i < kCalls; ++i) device += accel::on_device(host.data() + (i & 7));
      auto t1 = std::chrono::steady_clock::now();
      std::printf("%-28s %7.1f ns per classify (%d device)\n", what,
                  std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls, device);
    };
    int probe = 0;
    (void)accel::classify(&probe);  // starts accel (or finds it off)
    time_it(accel::available() ? "driver, no context" : "accel off");
    if (accel::available()) {
      void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
      auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
      auto set_current = sym<CUresult (*)(CUcontext)>(lib, "cuCtxSetCurrent");
      CUcontext ctx = nullptr;
      retain(&ctx, 0);
      set_current(ctx);
      time_it("driver, context (fake)");
    }
    return 0;
  }
  if (mode == "fake-kernels") {
    void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
    if (!lib) return 1;
    return fake_kernels(lib);
  }
  if (mode == "nostream") {
    // The driver refuses a stream: a copy from pageable memory still lands
    // before accel::copy returns (a plain cuMemcpy would return first).
    setenv("FAKE_CUDA_STREAMS", "0", 1);
    void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
    if (!lib) return 1;
    auto stats = sym<void (*)(fake_cuda_stats*)>(lib, "fake_cuda_stats");
    auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
    auto set_current = sym<CUresult (*)(CUcontext)>(lib, "cuCtxSetCurrent");
    auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
    CUcontext ctx = nullptr;
    int probe = 0;
    EXPECT(accel::classify(&probe) == accel::Memory::Host && accel::available());
    EXPECT(retain(&ctx, 0) == CUDA_SUCCESS && set_current(ctx) == CUDA_SUCCESS);
    CUdeviceptr d = 0;
    EXPECT(mem_alloc(&d, 1 << 16) == CUDA_SUCCESS);
    std::vector<char> src(1 << 16), back(1 << 16);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 13 + 1);
    EXPECT(accel::copy(reinterpret_cast<void*>(d), src.data(), src.size()) == 0);
    fake_cuda_stats st{};
    stats(&st);
    std::printf("after the copy: %lu pageable write(s) not landed\n", st.pending_writes);
    EXPECT(st.pending_writes == 0);
    EXPECT(accel::copy(back.data(), reinterpret_cast<void*>(d), back.size()) == 0 && back == src);
    std::printf("%s\n", failures ? "FAILED" : "ok: copies without a stream are waited for");
    return failures ? 1 : 0;
  }
  if (mode == "nodevice") {
    int x = 0;
    EXPECT(accel::classify(&x) == accel::Memory::Host);
    EXPECT(!accel::available());
    EXPECT(std::strstr(accel::why_off(), "cuInit") != nullptr);
    std::printf("%s\n", failures ? "FAILED" : "ok: no device, host path");
    return failures ? 1 : 0;
  }
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "cannot load %s\n", lib_path.c_str());
    return 1;
  }
  auto stats = sym<void (*)(fake_cuda_stats*)>(lib, "fake_cuda_stats");
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto mem_managed = sym<CUresult (*)(CUdeviceptr*, size_t, unsigned)>(lib, "cuMemAllocManaged");
  auto mem_host = sym<CUresult (*)(void**, size_t)>(lib, "cuMemAllocHost_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  auto host_free = sym<CUresult (*)(void*)>(lib, "cuMemFreeHost");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
  auto set_current = sym<CUresult (*)(CUcontext)>(lib, "cuCtxSetCurrent");
  fake_cuda_stats st{};

  // Before any context exists, host pointers cost no driver query.
  std::vector<char> host(4096, 'h');
  EXPECT(accel::classify(host.data()) == accel::Memory::Host);
  EXPECT(accel::available());
  stats(&st);
  EXPECT(st.pointer_queries == 0);

  CUcontext ctx = nullptr;
  EXPECT(retain(&ctx, 0) == CUDA_SUCCESS && set_current(ctx) == CUDA_SUCCESS);
  CUdeviceptr dev = 0, dev2 = 0, managed = 0;
  void* pinned = nullptr;
  EXPECT(mem_alloc(&dev, 1 << 20) == CUDA_SUCCESS);
  EXPECT(mem_alloc(&dev2, 100) == CUDA_SUCCESS);
  EXPECT(mem_managed(&managed, 4096, 1) == CUDA_SUCCESS);
  EXPECT(mem_host(&pinned, 4096) == CUDA_SUCCESS);
  auto* d = reinterpret_cast<char*>(dev);

  EXPECT(accel::classify(d) == accel::Memory::Device);
  stats(&st);
  unsigned long q = st.pointer_queries;
  EXPECT(q == 1);
  // Inside the same allocation: answered by the range cache.
  EXPECT(accel::classify(d + 12345) == accel::Memory::Device);
  EXPECT(accel::classify(d + (1 << 20) - 1) == accel::Memory::Device);
  stats(&st);
  EXPECT(st.pointer_queries == q);
  // One past the end is not in the range.
  EXPECT(accel::classify(reinterpret_cast<char*>(dev2)) == accel::Memory::Device);
  EXPECT(accel::classify(reinterpret_cast<char*>(managed) + 10) == accel::Memory::Managed);
  EXPECT(accel::on_device(reinterpret_cast<char*>(managed)));
  EXPECT(accel::classify(pinned) == accel::Memory::Host);
  EXPECT(accel::classify(host.data()) == accel::Memory::Host);
  EXPECT(accel::classify(nullptr) == accel::Memory::Host);
  // Many allocations: the cache is bounded and still right after eviction.
  std::vector<CUdeviceptr> many(20);
  for (auto& m : many) EXPECT(mem_alloc(&m, 64) == CUDA_SUCCESS);
  for (int round = 0; round < 2; ++round)
    for (auto m : many) EXPECT(accel::classify(reinterpret_cast<char*>(m) + 63) == accel::Memory::Device);
  EXPECT(accel::classify(d + 7) == accel::Memory::Device);

  // Copies in every direction.
  std::vector<char> src(1 << 20), back(1 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + 3);
  EXPECT(accel::copy(d, src.data(), src.size()) == 0);
  EXPECT(accel::copy(reinterpret_cast<char*>(dev2), d + 1000, 100) == 0);
  EXPECT(accel::copy(back.data(), reinterpret_cast<char*>(dev2), 100) == 0);
  EXPECT(std::memcmp(back.data(), src.data() + 1000, 100) == 0);
  std::fill(back.begin(), back.end(), 0);
  accel::Event e = nullptr;
  EXPECT(accel::copy_async(back.data(), d, back.size(), &e) == 0);
  EXPECT(e != nullptr);
  EXPECT(!accel::event_done(e));  // the fake reports "not ready" once
  EXPECT(accel::event_done(e));
  EXPECT(back == src);
  void* p1 = accel::pinned_alloc(65536);
  void* p2 = accel::pinned_alloc(65536);
  EXPECT(p1 && p2 && p1 != p2);
  EXPECT(accel::classify(p1) == accel::Memory::Host);
  accel::pinned_free(p1, 65536);
  EXPECT(accel::pinned_alloc(65536) == p1);  // pooled
  accel::pinned_free(p1, 65536);
  accel::pinned_free(p2, 65536);

  // IPC export: plain device memory has a handle (with the offset of the
  // buffer in its allocation, cached per allocation); managed memory none.
  accel::IpcHandle h1{}, h2{};
  EXPECT(accel::ipc_enabled());
  EXPECT(accel::ipc_export(d + 4096, &h1));
  EXPECT(h1.offset == 4096 && h1.alloc_size == (1u << 20));
  EXPECT(accel::ipc_export(d + 8, &h2));
  EXPECT(h2.offset == 8 && std::memcmp(h1.bytes, h2.bytes, sizeof h1.bytes) == 0);
  stats(&st);
  EXPECT(st.ipc_exports == 1);
  EXPECT(!accel::ipc_export(reinterpret_cast<char*>(managed), &h1));
  // Opening one's own handle fails (as with the real driver): callers copy directly.
  EXPECT(accel::ipc_open(0, h2) == nullptr);
  // dma-buf (GPUDirect RDMA groundwork): the whole allocation is exported,
  // the offset says where the buffer lies in it. The fake's dma-buf is the
  // allocation's memfd: the device bytes read back through it.
  {
    uint64_t off = 0;
    const char msg[] = "dma-buf bytes";
    EXPECT(accel::copy(d + 8192 + 3, msg, sizeof msg) == 0);
    int fd = accel::dmabuf_fd(d + 8192 + 3, sizeof msg, &off);
    EXPECT(fd >= 0 && off == 8192 + 3);
    char back[sizeof msg] = {};
    EXPECT(fd >= 0 && pread(fd, back, sizeof back, static_cast<off_t>(off)) == static_cast<ssize_t>(sizeof back));
    EXPECT(std::memcmp(back, msg, sizeof msg) == 0);
    if (fd >= 0) close(fd);
    EXPECT(accel::dmabuf_fd(d + (1u << 20) - 8, 16, &off) == -1);  // beyond the allocation
    EXPECT(accel::dmabuf_fd(reinterpret_cast<void*>(managed), 64, &off) == -1);             // not cuMemAlloc memory
    EXPECT(accel::dmabuf_fd(&off, 8, &off) == -1);                 // host memory
    setenv("FAKE_CUDA_DMABUF", "0", 1);                            // a device without dma-buf support
    EXPECT(accel::dmabuf_fd(d, 4096, &off) == -1);
    unsetenv("FAKE_CUDA_DMABUF");
    stats(&st);
    EXPECT(st.dmabuf_exports == 1);
  }

  host_without_driver(lib);
  ipc_export_checks(lib);
  no_wait_under_lock(lib);

  accel::finalize();
  for (auto m : many) mem_free(m);
  mem_free(dev);
  mem_free(dev2);
  mem_free(managed);
  host_free(pinned);
  stats(&st);
  EXPECT(st.live_allocations == 0);  // pinned buffers were given back at finalize
  std::printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
