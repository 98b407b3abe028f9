// The registration cache: keeps memory registrations (ibv_reg_mr and the
// like) alive after a transfer, so the next transfer from the same buffer
// skips the registration, and drops them soundly when the application frees
// or remaps the memory under them. docs/rcache.md says how.
//
// A transport makes one Cache per protection domain (device), giving it its
// register and deregister functions; acquire() returns a Handle that holds the
// registration until it is destroyed or reset().
//
// Soundness: a cached registration pins the pages the buffer had when it was
// registered. When the application unmaps the buffer (munmap, free() of a
// large block, heap trim, madvise(MADV_DONTNEED), mremap, shmdt, mmap
// MAP_FIXED over it) and maps new memory at the same address, serving the old
// registration would move the old pages' data. So every Cache of host memory
// is invalidated by hooks patched into libc's entry points (hooks.cpp), run
// before the system call that drops the pages. Where the hooks cannot be
// installed, caches do not cache: every acquire() registers and the Handle's
// end deregisters, exactly as without a cache. status() says which, and why.
//
// Thread safety: every member of Cache, and a Handle's reset(), may be called
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace axon::rcache {

// How a Cache registers memory. The cache never interprets `access` except
// as a bit mask: a registration made with access A serves a request for B
// when (A & B) == B, and regions merged into one are registered with the
// union of their bits.
struct Ops {
  void* ctx = nullptr;  // handed back to reg and dereg (e.g. the ibv_pd*)
  // Registers [addr, addr + len) (page-aligned) and returns the transport's
  // handle (e.g. the ibv_mr*), or nullptr with errno set. Called without any
  // cache lock held; it may allocate, map and unmap memory.
  void* (*reg)(void* ctx, void* addr, size_t len, int access) = nullptr;
  void (*dereg)(void* ctx, void* handle) = nullptr;  // likewise
};

// What tells the cache that registered memory went away.
enum class Invalidation {
  MemoryHooks,  // host memory: the libc hooks (caches only where they are installed)
  Explicit,     // the owner calls Cache::invalidate() itself (e.g. from GPU free events)
};

struct Options {
  const char* name = "rcache";  // for log messages
  Invalidation invalidation = Invalidation::MemoryHooks;
  // The most bytes kept registered; unused registrations beyond it are
  // deregistered, least recently used first. 0: AXON_RCACHE_MAX_BYTES, whose
  // default 0 means a quarter of physical memory, or half the locked-memory
  // limit when that is smaller (registered pages count against it).
  size_t max_bytes = 0;
};

class Cache;
struct Entry;  // a registration (cache.cpp)

// A registration in use. Move-only; releases it when destroyed or reset():
// a cached one stays registered for the next acquire, an uncached or
// invalidated one is deregistered.
class Handle {
 public:
  Handle() = default;
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  explicit operator bool() const { return entry_ != nullptr; }
  void* get() const;       // the transport's handle (what Ops::reg returned)
  void* base() const;      // start of the registered region: page-aligned, at or below the buffer
  size_t length() const;   // its length: whole pages, covering the buffer
  bool cached() const;     // false: registered for this Handle alone
  void reset();            // releases now; the Handle becomes empty

 private:
  friend class Cache;
  Handle(Cache* cache, Entry* entry) : cache_(cache), entry_(entry) {}
  Cache* cache_ = nullptr;
  Entry* entry_ = nullptr;
};

class Cache {
 public:
  explicit Cache(Ops ops, Options options = {});
  // Deregisters every registration. Every Handle must be gone first.
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // A registration covering [addr, addr + len) with at least `access`:
  // a cached one when one covers it (a hit), else a new one (a miss). A miss
  // spans the cached regions the buffer overlaps (merged into one) when the
  // union is at most twice the buffer plus two pages; past that the buffer
  // is cached alone and the regions it overlaps stop being served (so a
  // chain of buffers sharing pages is not re-registered whole at each link).
  // A buffer that shares a page with a cached neighbour is best acquired
  // from its first whole page (the shared page a hit on the neighbour), as
  // the verbs transport does with its pipeline pieces. An empty Handle when
  // registration failed (errno from Ops::reg), or for len 0 (EINVAL).
  Handle acquire(void* addr, size_t len, int access);

  // Drops every cached registration overlapping [addr, addr + len): not
  // served again, deregistered once no Handle holds it. The memory hooks
  // call this; an Explicit cache's owner calls it when memory goes away.
  void invalidate(const void* addr, size_t len);

  // Whether acquire() caches: AXON_RCACHE is on, and for a MemoryHooks
  // cache the hooks are installed and intact (enabled()).
  bool caching() const;

  struct Stats {
    uint64_t hits = 0, misses = 0, invalidations = 0, evictions = 0;
    uint64_t registrations = 0, deregistrations = 0;  // calls of Ops::reg / Ops::dereg
    uint64_t cached_bytes = 0, cached_regions = 0;    // registered and servable now
  };
  Stats stats() const;

  struct Impl;  // cache.cpp

 private:
  friend class Handle;
  void release(Entry* entry);
  std::unique_ptr<Impl> impl_;
  bool caching_ = false;  // at construction: AXON_RCACHE on and (MemoryHooks) the hooks installed
};

// True when host-memory caches cache: AXON_RCACHE is on and the hooks are
// installed and intact. The first call (or the first MemoryHooks Cache)
// installs them; later calls check that no other library has overwritten
// them since (if one has, every cache is flushed and stops caching).
bool enabled();
// One line for axon_info --doctor: "on: ..." or "off: <why>".
const std::string& status();

// ---- the state as a number -------------------------------------------------
// axon_info --doctor is a separate program: it reads the state through the
// MPI_T performance variable axon_rcache_state (a level; reading it installs
// the hooks like enabled()) and turns it into text with describe(). The low
// byte is an Off reason (0: on), the next one the hooked function it concerns
// (index into kHookedFunctions, + 1; 0: none).
enum class Off : uint8_t {
  None = 0,        // on: the hooks are installed
  Param,           // AXON_RCACHE=off
  Unsupported,     // not x86_64 Linux
  Sanitizer,       // a sanitizer's allocator unmaps memory with raw system calls
  Valgrind,        // valgrind runs the code from its own translation
  NoLibc,          // libc.so.6 is not loaded (another C library)
  NoSymbol,        // a function to patch (or __curbrk) is not in libc
  NotPatchable,    // the function is too short, or its entry cannot be replaced atomically
  AlreadyPatched,  // its entry already jumps elsewhere (another library's hooks, a breakpoint)
  NoTrampoline,    // no memory within 2 GiB of libc for the jump to the hooks
  Protect,         // mprotect refused to make libc's code writable
  NotReached,      // after patching, calling the function did not reach the hook
  Overwritten,     // our patch was later overwritten (another library patched the function)
};
inline constexpr const char* kHookedFunctions[] = {"munmap", "mremap", "madvise", "brk", "shmdt", "shmat", "mmap"};
inline constexpr int kHookedCount = static_cast<int>(sizeof kHookedFunctions / sizeof kHookedFunctions[0]);

uint64_t state();  // installs the hooks on first use, like enabled()

inline std::string describe(uint64_t state) {
  const auto off = static_cast<Off>(state & 0xff);
  const uint64_t which = (state >> 8) & 0xff;
  const std::string fn = which >= 1 && which <= static_cast<uint64_t>(kHookedCount)
                             ? std::string(kHookedFunctions[which - 1]) : std::string("?");
  switch (off) {
    case Off::None:
      return "on: memory hooks patched into libc (munmap, mremap, madvise, brk, shmdt, shmat, mmap) "
             "invalidate cached registrations before memory is unmapped";
    case Off::Param: return "off: AXON_RCACHE=off";
    case Off::Unsupported: return "off: memory hooks are implemented for x86_64 Linux only";
    case Off::Sanitizer:
      return "off: a sanitizer (AddressSanitizer, ThreadSanitizer, ...) is loaded; its allocator unmaps freed "
             "memory with raw system calls the hooks cannot see";
    case Off::Valgrind: return "off: running under valgrind, which does not execute patched code";
    case Off::NoLibc: return "off: libc.so.6 (glibc) is not loaded";
    case Off::NoSymbol: return "off: libc has no " + fn + " to patch";
    case Off::NotPatchable: return "off: libc's " + fn + " cannot be patched (too short, or its entry not atomically writable)";
    case Off::AlreadyPatched: return "off: libc's " + fn + " already jumps elsewhere (another library's memory hooks?)";
    case Off::NoTrampoline: return "off: no memory free within 2 GiB of libc for the jump to the hooks";
    case Off::Protect: return "off: mprotect refused to make libc's code writable (SELinux execmod, PaX?)";
    case Off::NotReached: return "off: calling libc's " + fn + " did not reach its hook after patching";
    case Off::Overwritten:
      return "off: the hook patched into libc's " + fn + " was overwritten (by another library's memory hooks?); "
             "cached registrations were dropped";
  }
  return "off: unknown state " + std::to_string(state);
}

namespace detail {
// Between hooks.cpp and cache.cpp: a hook calls this before the system call
// that drops the pages of [start, end) (any alignment); it invalidates that
// range in every MemoryHooks cache. Allocates nothing.
void invalidate_all(uintptr_t start, uintptr_t end);
// Whether the installed hooks still are in place (false if never installed).
// Cheap: compares a few bytes of each patched entry.
bool hooks_intact();
// AXON_RCACHE's value, without installing anything (for Explicit caches).
bool requested();
}  // namespace detail

}  // namespace axon::rcache
