// hooks.cpp -- memory-event hooks patched into libc's own code.
//
// Why patching: glibc's free() unmaps large blocks with its internal
// __munmap, shrinks the heap with __brk and returns arena memory with
// __madvise, all called directly inside libc, not through the PLT, so
// defining munmap in our library (symbol interposition) would see the
// application's calls but not free()'s. The only place every caller passes
// through is the function's code itself. So the entry of each function
// (munmap, mremap, madvise, brk, shmdt, shmat, mmap) is overwritten with a
// 5-byte relative jump to a trampoline page mapped within 2 GiB of libc,
// which jumps to our hook. A hook invalidates the affected range in every
// cache, then makes the system call itself with syscall(2), so it never
// calls the code it replaced; brk keeps glibc's __curbrk exact, as glibc's
// brk does, because sbrk() (malloc's heap growth) trusts it.
//
// The jump is written with one 16-byte compare-and-exchange over the aligned
// block holding the entry, so no thread can execute a half-written jump.
// For munmap, madvise, brk, shmdt and shmat the 5 bytes are exactly the first
// instruction (mov $nr, %eax), so a thread sleeping in their system call
// returns into unchanged code. mmap's and mremap's first instructions are
// shorter: a thread preempted right after the first one while the patch is
// written would resume in the middle of the jump. The patch is written once,
// when the first cache is made (transport start-up), so this is a window of a
// few instructions, once per process.
//
// Installed once, on first use (std::call_once), never removed. When any
// step fails nothing is patched (or, for the self-test, the result is not
// trusted) and caches do not cache; state() says why.
#include "rcache/rcache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AXON_RCACHE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define AXON_RCACHE_SANITIZED 1
#endif
#endif

namespace axon::rcache {

namespace {

BoolParam rcache_param{"AXON_RCACHE", true,
                       "Cache memory registrations (verbs): needs the memory hooks patched into libc, which "
                       "invalidate cached registrations of memory the application unmaps. 0: register and "
                       "deregister the buffers of every transfer"};

enum HookIndex { kMunmap, kMremap, kMadvise, kBrk, kShmdt, kShmat, kMmap };

// Set while install() checks that each patched function reaches its hook.
std::atomic<bool> self_testing{false};
std::atomic<bool> reached[kHookedCount];
void mark_reached(int hook) {
  if (self_testing.load(std::memory_order_relaxed)) reached[hook].store(true, std::memory_order_relaxed);
}

// glibc's __curbrk: the program break as glibc believes it.
void** curbrk = nullptr;

// Where each jump was written and what it is, to notice when another
// library patches the same function after us (its patch replaces ours).
const uint8_t* patched_at[kHookedCount];
uint8_t patched_jump[kHookedCount][5];
std::atomic<uint64_t> lost_state{0};  // nonzero once a patch was found overwritten

uintptr_t end_of(uintptr_t start, size_t len) { return len > UINTPTR_MAX - start ? UINTPTR_MAX : start + len; }

void before_drop(const void* addr, size_t len) {
  if (len) detail::invalidate_all(reinterpret_cast<uintptr_t>(addr), end_of(reinterpret_cast<uintptr_t>(addr), len));
}

// Everything: used when a hook cannot tell what it drops.
void drop_everything() { detail::invalidate_all(0, UINTPTR_MAX); }

// ---- the hooks -------------------------------------------------------------------------
// Each has the C signature of the function it replaces. They allocate
// nothing and call no patched function: they may run inside malloc/free.

int hook_munmap(void* addr, size_t len) {
  mark_reached(kMunmap);
  before_drop(addr, len);
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

// mremap is variadic; new_address is only passed (and read) with
// MREMAP_FIXED or MREMAP_DONTUNMAP, like glibc's wrapper does.
void* hook_mremap(void* old_address, size_t old_size, size_t new_size, int flags, void* new_address) {
  mark_reached(kMremap);
  if (!(flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))) new_address = nullptr;
  // A mapping that may move leaves its old range (DONTUNMAP: empty); one
  // that shrinks in place drops its tail; one that grows in place keeps its pages.
  if (flags & (MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP))
    before_drop(old_address, old_size);
  else if (new_size < old_size)
    before_drop(static_cast<char*>(old_address) + new_size, old_size - new_size);
  if (flags & MREMAP_FIXED) before_drop(new_address, new_size);  // replaced by the moved pages
  return reinterpret_cast<void*>(syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address));
}

int hook_madvise(void* addr, size_t len, int advice) {
  mark_reached(kMadvise);
  // The advice values that drop the pages (the next touch maps new ones).
  if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE || advice == MADV_DONTNEED_LOCKED)
    before_drop(addr, len);
  return static_cast<int>(syscall(SYS_madvise, addr, len, advice));
}

// Like glibc's __brk: the kernel returns the new break (the old one on
// failure), which becomes __curbrk.
int hook_brk(void* addr) {
  mark_reached(kBrk);
  uintptr_t old_break = reinterpret_cast<uintptr_t>(*curbrk);
  if (old_break == 0) old_break = static_cast<uintptr_t>(syscall(SYS_brk, 0));
  const uintptr_t wanted = reinterpret_cast<uintptr_t>(addr);
  if (wanted != 0 && wanted < old_break) detail::invalidate_all(wanted, old_break);
  void* result = reinterpret_cast<void*>(syscall(SYS_brk, addr));
  *curbrk = result;
  if (reinterpret_cast<uintptr_t>(result) < wanted) {
    errno = ENOMEM;
    return -1;
  }
  return 0;
}

// The end of the System V segment attached at `addr`: the mapping starting
// there and every later mapping of the same inode (a segment's inode number
// is its id; holes from partial unmaps are covered too). Parses
// /proc/self/maps with raw system calls into a stack buffer, since this runs
// inside shmdt. False when the maps cannot be read; *end = addr when no
// mapping starts at addr (shmdt will fail with EINVAL).
bool segment_end(uintptr_t addr, uintptr_t* end) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  *end = addr;
  bool found = false;
  unsigned long long segment_inode = 0;
  // One line: "start-end perms offset dev inode   path".
  int field = 0;
  uintptr_t start = 0, stop = 0;
  unsigned long long inode = 0;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  char buf[2048];
  bool ok = true;
  for (;;) {
    const long n = syscall(SYS_read, fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    for (long i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\n') {
        if (!found && start == addr) {
          found = true;
          segment_inode = inode;
          *end = stop;
        } else if (found && segment_inode != 0 && inode == segment_inode && start >= addr) {
          *end = std::max(*end, stop);
        }
        field = 0, start = stop = 0, inode = 0;
      } else if (field == 0) {
        if (c == '-') field = 1; else if (hex(c) >= 0) start = start * 16 + static_cast<uintptr_t>(hex(c));
      } else if (field == 1) {
        if (c == ' ') field = 2; else if (hex(c) >= 0) stop = stop * 16 + static_cast<uintptr_t>(hex(c));
      } else if (field >= 2 && field <= 4) {
        if (c == ' ') ++field;  // perms, offset, dev
      } else if (field == 5) {
        if (c == ' ') field = 6; else if (c >= '0' && c <= '9') inode = inode * 10 + static_cast<unsigned>(c - '0');
      }
    }
  }
  syscall(SYS_close, fd);
  return ok;
}

int hook_shmdt(const void* addr) {
  mark_reached(kShmdt);
  const int saved_errno = errno;
  uintptr_t end = 0;
  if (segment_end(reinterpret_cast<uintptr_t>(addr), &end))
    detail::invalidate_all(reinterpret_cast<uintptr_t>(addr), end);
  else
    drop_everything();
  errno = saved_errno;
  return static_cast<int>(syscall(SYS_shmdt, addr));
}

int segment_size(int id, size_t* size) {
  shmid_ds ds{};
  if (syscall(SYS_shmctl, id, IPC_STAT, &ds) != 0) return -1;
  *size = ds.shm_segsz;
  return 0;
}

void* hook_shmat(int id, const void* addr, int flags) {
  mark_reached(kShmat);
  // SHM_REMAP attaches over whatever is mapped there.
  if (addr && (flags & SHM_REMAP)) {
    const int saved_errno = errno;
    size_t size = 0;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t at = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);  // SHM_RND rounds down (SHMLBA: a page)
    if (segment_size(id, &size) == 0)
      detail::invalidate_all(at, end_of(at, size));
    else
      drop_everything();
    errno = saved_errno;
  }
  return reinterpret_cast<void*>(syscall(SYS_shmat, id, addr, flags));
}

void* hook_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  mark_reached(kMmap);
  // MAP_FIXED replaces what was mapped there; MAP_FIXED_NOREPLACE fails instead.
  if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE)) before_drop(addr, len);
  if (offset & 4095) {  // glibc's check: the offset must be a multiple of 4 KiB
    errno = EINVAL;
    return MAP_FAILED;
  }
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
}

void* const kHooks[kHookedCount] = {
    reinterpret_cast<void*>(&hook_munmap), reinterpret_cast<void*>(&hook_mremap),
    reinterpret_cast<void*>(&hook_madvise), reinterpret_cast<void*>(&hook_brk),
    reinterpret_cast<void*>(&hook_shmdt),  reinterpret_cast<void*>(&hook_shmat),
    reinterpret_cast<void*>(&hook_mmap)};

// ---- installing ------------------------------------------------------------------------

uint64_t code(Off off, int hook = -1) { return static_cast<uint64_t>(off) | static_cast<uint64_t>(hook + 1) << 8; }

#if defined(__x86_64__) && defined(__linux__)

bool sanitizer_loaded() {
#ifdef AXON_RCACHE_SANITIZED
  return true;
#else
  // The program (or a preloaded runtime) may be instrumented even if we are not.
  for (const char* runtime : {"__asan_init", "__tsan_init", "__msan_init", "__hwasan_init", "__lsan_init"})
    if (dlsym(RTLD_DEFAULT, runtime)) return true;
  return false;
#endif
}

struct Target {
  uint8_t* at = nullptr;  // where the jump goes: the entry, or just past its endbr64
};

constexpr size_t kJumpLength = 5;        // e9 rel32
constexpr size_t kTrampolineSlot = 16;   // ff 25 00000000 (jmp *0(%rip)), then the hook's address

uint64_t find_target(void* libc, const char* libc_path, int hook, Target* target) {
  void* entry = dlsym(libc, kHookedFunctions[hook]);
  Dl_info info{};
  void* symbol_entry = nullptr;
  if (!entry || !dladdr1(entry, &info, &symbol_entry, RTLD_DL_SYMENT) || !symbol_entry ||
      !info.dli_fname || std::strcmp(info.dli_fname, libc_path) != 0)
    return code(Off::NoSymbol, hook);
  const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
  auto* p = static_cast<uint8_t*>(entry);
  // CET-enabled builds start functions with endbr64 (f3 0f 1e fa): keep it,
  // so indirect calls still land on one, and patch after it.
  const size_t skip = p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa ? 4 : 0;
  uint8_t* at = p + skip;
  if (at[0] == 0xe9 || at[0] == 0xeb || at[0] == 0xcc || (at[0] == 0xff && at[1] == 0x25) ||
      (at[0] == 0x49 && at[1] == 0xbb))
    return code(Off::AlreadyPatched, hook);
  // The jump must lie inside the function and inside one aligned 16-byte
  // block (one atomic write).
  if (symbol->st_size < skip + kJumpLength || (reinterpret_cast<uintptr_t>(at) & 15) + kJumpLength > 16)
    return code(Off::NotPatchable, hook);
  target->at = at;
  return 0;
}

bool within_rel32(const uint8_t* from_next, const uint8_t* to) {
  const long long distance = reinterpret_cast<intptr_t>(to) - reinterpret_cast<intptr_t>(from_next);
  return distance >= INT32_MIN && distance <= INT32_MAX;
}

// A page for the trampolines within reach of a rel32 jump from every target.
uint8_t* map_trampoline_page(const Target* targets, size_t page) {
  uintptr_t lowest = UINTPTR_MAX, highest = 0;
  for (int i = 0; i < kHookedCount; ++i) {
    lowest = std::min(lowest, reinterpret_cast<uintptr_t>(targets[i].at));
    highest = std::max(highest, reinterpret_cast<uintptr_t>(targets[i].at));
  }
  auto reaches = [&](const uint8_t* t) {
    for (int i = 0; i < kHookedCount; ++i)
      if (!within_rel32(targets[i].at + kJumpLength, t) || !within_rel32(targets[i].at + kJumpLength, t + page))
        return false;
    return true;
  };
  constexpr uintptr_t kStep = 16u << 20;
  for (uintptr_t step = 1; step <= 64; ++step) {
    const uintptr_t below = (lowest & ~(page - 1)) > step * kStep ? (lowest & ~(page - 1)) - step * kStep : 0;
    const uintptr_t above = (highest & ~(page - 1)) + step * kStep;
    for (uintptr_t hint : {below, above}) {
      if (!hint) continue;
      void* m = mmap(reinterpret_cast<void*>(hint), page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) continue;
      if (reaches(static_cast<uint8_t*>(m))) return static_cast<uint8_t*>(m);
      munmap(m, page);
    }
  }
  return nullptr;
}

bool cpu_has_cmpxchg16b() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_CMPXCHG16B);
}

// One atomic 16-byte store over the aligned block (lock cmpxchg16b).
bool exchange16(void* block, const uint8_t expected[16], const uint8_t desired[16]) {
  uint64_t lo, hi, new_lo, new_hi;
  std::memcpy(&lo, expected, 8), std::memcpy(&hi, expected + 8, 8);
  std::memcpy(&new_lo, desired, 8), std::memcpy(&new_hi, desired + 8, 8);
  bool swapped;
  asm volatile("lock cmpxchg16b %1"
               : "=@ccz"(swapped), "+m"(*static_cast<unsigned __int128*>(block)), "+a"(lo), "+d"(hi)
               : "b"(new_lo), "c"(new_hi)
               : "memory");
  return swapped;
}

uint64_t patch_libc() {
  if (!cpu_has_cmpxchg16b()) return code(Off::Unsupported);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!libc) return code(Off::NoLibc);
  // dlsym on libc's handle finds libc's own definitions, not an interposer's
  // (AddressSanitizer's munmap, say); the path tells them from ld.so's.
  link_map* map = nullptr;
  if (dlinfo(libc, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) {
    dlclose(libc);
    return code(Off::NoLibc);
  }
  Target targets[kHookedCount];
  uint64_t failed = 0;
  for (int i = 0; i < kHookedCount && !failed; ++i) failed = find_target(libc, map->l_name, i, &targets[i]);
  if (!failed) {
    curbrk = static_cast<void**>(dlsym(libc, "__curbrk"));
    if (!curbrk) failed = code(Off::NoSymbol, kBrk);
  }
  dlclose(libc);  // RTLD_NOLOAD took a reference; libc stays
  if (failed) return failed;

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  uint8_t* trampolines = map_trampoline_page(targets, page);
  if (!trampolines) return code(Off::NoTrampoline);
  for (int i = 0; i < kHookedCount; ++i) {
    uint8_t* slot = trampolines + i * kTrampolineSlot;
    const uint8_t jump_indirect[6] = {0xff, 0x25, 0, 0, 0, 0};
    std::memcpy(slot, jump_indirect, sizeof jump_indirect);
    std::memcpy(slot + sizeof jump_indirect, &kHooks[i], sizeof(void*));
  }
  if (mprotect(trampolines, page, PROT_READ | PROT_EXEC) != 0) {
    munmap(trampolines, page);
    return code(Off::Protect);
  }

  // Make every page to patch writable first (keeping it executable: other
  // threads may be running libc code on it), so it is all or nothing.
  auto page_of = [&](const uint8_t* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(page - 1)); };
  int writable = 0;
  for (; writable < kHookedCount; ++writable)
    if (mprotect(page_of(targets[writable].at), page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) break;
  if (writable < kHookedCount) {
    for (int i = 0; i < writable; ++i) mprotect(page_of(targets[i].at), page, PROT_READ | PROT_EXEC);
    munmap(trampolines, page);
    return code(Off::Protect, writable);
  }
  for (int i = 0; i < kHookedCount; ++i) {
    auto* block = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(targets[i].at) & ~uintptr_t{15});
    const size_t offset = static_cast<size_t>(targets[i].at - block);
    const uint8_t* slot = trampolines + i * kTrampolineSlot;
    const int32_t rel = static_cast<int32_t>(slot - (targets[i].at + kJumpLength));
    uint8_t before[16], after[16];
    do {
      std::memcpy(before, block, 16);
      std::memcpy(after, before, 16);
      after[offset] = 0xe9;
      std::memcpy(after + offset + 1, &rel, 4);
    } while (!exchange16(block, before, after));
    patched_at[i] = targets[i].at;
    std::memcpy(patched_jump[i], after + offset, kJumpLength);
  }
  for (int i = 0; i < kHookedCount; ++i) mprotect(page_of(targets[i].at), page, PROT_READ | PROT_EXEC);
  return 0;
}

// Calls each patched function harmlessly and checks its hook ran (not, e.g.,
// under an emulator that kept translating the old code). brk is not called:
// even brk(0) would race with another thread's sbrk over __curbrk.
uint64_t self_test() {
  for (auto& r : reached) r.store(false);
  self_testing.store(true);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    madvise(p, page, MADV_DONTNEED);
    void* q = mremap(p, page, page, 0);
    munmap(q == MAP_FAILED ? p : q, page);
  }
  const int saved_errno = errno;
  shmat(-1, nullptr, 0);  // EINVAL
  shmdt(nullptr);         // EINVAL
  errno = saved_errno;
  reached[kBrk].store(true);
  self_testing.store(false);
  for (int i = 0; i < kHookedCount; ++i)
    if (!reached[i].load()) return code(Off::NotReached, i);
  return 0;
}

#endif  // x86_64 Linux

uint64_t install() {
  if (!detail::requested()) return code(Off::Param);
#if !(defined(__x86_64__) && defined(__linux__))
  return code(Off::Unsupported);
#else
  if (sanitizer_loaded()) return code(Off::Sanitizer);
  if (const char* preload = std::getenv("LD_PRELOAD"); preload && std::strstr(preload, "vgpreload"))
    return code(Off::Valgrind);
  if (uint64_t failed = patch_libc()) return failed;
  return self_test();
#endif
}

std::once_flag installed_once;
uint64_t installed_state = 0;

uint64_t read_state() { return state(); }
Counter state_pvar{"axon_rcache_state", Counter::Class::Level,
                   "The registration cache's state: 0 on (memory hooks installed), else why it is off "
                   "(low byte: the reason, next byte: the libc function concerned; axon_info --doctor says it in "
                   "words). Reading it installs the hooks",
                   &read_state};

}  // namespace

uint64_t state() {
  std::call_once(installed_once, [] {
    installed_state = install();
    log::debug(1, "registration cache: %s", describe(installed_state).c_str());
  });
  if (uint64_t lost = lost_state.load(std::memory_order_acquire)) return lost;
  return installed_state;
}

bool detail::hooks_intact() {
  if (state() != 0) return false;
  for (int i = 0; i < kHookedCount; ++i) {
    if (std::memcmp(patched_at[i], patched_jump[i], sizeof patched_jump[i]) == 0) continue;
    uint64_t expected = 0;
    if (lost_state.compare_exchange_strong(expected, code(Off::Overwritten, i))) {
      // Unmaps since then went unseen: nothing cached can be trusted.
      invalidate_all(0, UINTPTR_MAX);
      log::warn("registration cache: %s", describe(lost_state.load()).c_str());
    }
    return false;
  }
  return true;
}

bool enabled() { return detail::hooks_intact(); }

bool detail::requested() {
  static const bool on = rcache_param.get();  // read once (thread-safe), like every Param
  return on;
}

const std::string& status() {
  detail::hooks_intact();  // notices an overwritten patch
  if (lost_state.load(std::memory_order_acquire)) {
    static const std::string lost = describe(lost_state.load());
    return lost;
  }
  static const std::string installed = describe(state());
  return installed;
}

}  // namespace axon::rcache
