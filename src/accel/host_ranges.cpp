// Host memory told from device memory without the CUDA driver (host_ranges.h).
//
// Why not simply cache the driver's "host" answers? A host range the driver
// called host stays host only while its mapping lives: free() of a large
// block munmaps it, and the driver may later place a device or managed
// allocation at the same addresses (under unified addressing device memory
// is an ordinary range of the process's address space, reserved by the
// driver with mmap). Axon cannot see either event: glibc's free() calls
// munmap internally, past any interposition, the driver offers no
// allocation callbacks, and cuMemAlloc/cuMemFree are called by the
// application (often through cudart), never through Axon. A host cache
// keyed by address would then send a device buffer through the CPU.
//
// So the driver is skipped only for memory that cannot be unmapped while a
// pointer into it is valid, because the process itself holds the mapping:
//  - the calling thread's live stack: between the current frame and the
//    top of the thread's stack, every page is mapped stack (a buffer in a
//    caller's frame); other threads' stacks are not covered (a finished
//    thread's stack is unmapped);
//  - the brk heap, [start_brk, sbrk(0)): one kernel mapping that brk()
//    grows and shrinks, which no mmap can overlap; glibc's main arena
//    serves small and medium malloc()s from it. sbrk(0) reads glibc's
//    cached break (no system call);
//  - the executable's own loaded segments (static arrays, Fortran COMMON
//    blocks), mapped until exit;
//  - Axon's own pinned buffers (cuMemAllocHost), whose release Axon makes.
// A pointer elsewhere (a large malloc served by mmap, thread arenas, other
// allocators, shared memory) still costs one cuPointerGetAttributes call,
// without accel's lock: the driver is thread-safe.
#include "accel/host_ranges.h"

#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace axon::accel::detail {

namespace {

constexpr size_t kImageRanges = 8;
uintptr_t image_begin[kImageRanges] = {};
uintptr_t image_end[kImageRanges] = {};
size_t image_count = 0;
uintptr_t heap_begin = 0;  // start_brk; 0: unknown (heap not trusted)
std::once_flag init_once;

// Axon's pinned buffers: 128 slots (the pool keeps at most 4 per size class
// plus those in use); a buffer without a slot is only slower to classify.
RangeTable<128> pinned_table;

// start_brk, field 47 of /proc/self/stat (Linux 3.5 and later).
uintptr_t read_start_brk() {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char buf[2048];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Field 2 (the command) is in parentheses and may hold spaces.
  char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  ++p;
  for (int field = 3; field <= 47; ++field) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(p, &end, 10);
    if (field == 3) {  // the state is a letter
      while (*p == ' ') ++p;
      end = p + 1;
    } else if (end == p) {
      return 0;
    }
    if (field == 47) return static_cast<uintptr_t>(v);
    p = end;
  }
  return 0;
}

int collect_image(dl_phdr_info* info, size_t, void*) {
  // The first object is the executable itself; its segments stay mapped.
  for (int i = 0; i < info->dlpi_phnum && image_count < kImageRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    image_begin[image_count] = info->dlpi_addr + ph.p_vaddr;
    image_end[image_count] = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    ++image_count;
  }
  return 1;  // stop after the first object
}

// The calling thread's stack, [lo, top); top 0 when it cannot be told.
struct Stack {
  uintptr_t lo = 0, top = 0;
  bool asked = false;
};
const Stack& my_stack() {
  thread_local Stack s;
  if (!s.asked) {
    s.asked = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* lo = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
        s.lo = reinterpret_cast<uintptr_t>(lo);
        s.top = s.lo + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  return s;
}

}  // namespace

void host_ranges_init() {
  std::call_once(init_once, [] {
    heap_begin = read_start_brk();
    dl_iterate_phdr(collect_image, nullptr);
  });
}

bool known_host(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  // The live part of this thread's stack: from this frame up to its top —
  // only while this frame is on that stack (code running on a stack of its
  // own, a coroutine's or a signal stack, would make the range meaningless).
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const Stack& st = my_stack();
  if (here >= st.lo && here < st.top && a >= here && a < st.top) return true;
  if (heap_begin && a >= heap_begin && a < reinterpret_cast<uintptr_t>(sbrk(0))) return true;
  for (size_t i = 0; i < image_count; ++i)
    if (a >= image_begin[i] && a < image_end[i]) return true;
  return pinned(p);
}

void pinned_added(const void* p, size_t len) {
  size_t slot = pinned_table.free_slot();
  if (slot == 128 || len == 0) return;
  const auto a = reinterpret_cast<uintptr_t>(p);
  pinned_table.put(slot, a, a + len, 1);
}

void pinned_removed(const void* p) {
  size_t slot = pinned_table.slot_of(reinterpret_cast<uintptr_t>(p));
  if (slot != 128) pinned_table.put(slot, 0, 0, -1);
}

bool pinned(const void* p) { return pinned_table.find(reinterpret_cast<uintptr_t>(p)) == 1; }

}  // namespace axon::accel::detail
