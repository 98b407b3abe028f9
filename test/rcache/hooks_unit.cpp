// hooks_unit: every way memory goes away invalidates the cached
// registrations over it, before the pages go, and a later acquire at the
// same address registers anew. Exact counts, with the fake transport.
//
// In a sanitizer build the hooks refuse to install (the sanitizer's
// allocator unmaps with raw system calls): then this checks the refusal and
// that a host-memory cache registers every acquire, and stops.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/counter.h"
#include "fake_ops.h"

using axon::rcache::Cache;
using axon::rcache::Handle;
using fake::kPage;
using fake::map_pages;

namespace {

uint64_t counter_value(const char* name) {
  for (const axon::Counter* c : axon::Counter::all())
    if (std::strcmp(c->name(), name) == 0) return c->value();
  CHECK(false, "no counter %s", name);
  return ~0ull;
}

char* page_up(char* p) {
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1));
}

void test_state() {
  CHECK(axon::rcache::enabled(), "hooks not installed: %s", axon::rcache::status().c_str());
  CHECK(axon::rcache::state() == 0, "state %llu", static_cast<unsigned long long>(axon::rcache::state()));
  CHECK(axon::rcache::status().rfind("on: ", 0) == 0, "status '%s'", axon::rcache::status().c_str());
  CHECK(counter_value("axon_rcache_state") == 0, "axon_rcache_state reads %llu",
        static_cast<unsigned long long>(counter_value("axon_rcache_state")));
}

// munmap of a buffer in use: invalidated at once, deregistered when its
// Handle goes; mapped again at the same address, it is registered anew.
void test_munmap() {
  fake::Transport t;
  Cache c(t.ops());
  CHECK(c.caching(), "a host-memory cache does not cache");
  const uint64_t hits0 = counter_value("axon_rcache_hits"), inval0 = counter_value("axon_rcache_invalidations");
  char* p = map_pages(4);
  {
    Handle h = c.acquire(p + 100, 4 * kPage - 200, 1);
    CHECK(h && h.cached() && h.base() == p && h.length() == 4 * kPage, "first acquire: base %p length %zu",
          h.base(), h.length());
    Handle again = c.acquire(p, 4 * kPage, 1);
    CHECK(t.registrations() == 1 && again.get() == h.get(), "same buffer twice: %d registrations",
          t.registrations());
    CHECK(c.stats().hits == 1 && c.stats().misses == 1, "hits %llu misses %llu",
          static_cast<unsigned long long>(c.stats().hits), static_cast<unsigned long long>(c.stats().misses));
    CHECK(counter_value("axon_rcache_hits") == hits0 + 1, "axon_rcache_hits did not count the hit");
    CHECK(munmap(p, 4 * kPage) == 0, "munmap: %s", std::strerror(errno));
    CHECK(c.stats().invalidations == 1, "munmap: %llu invalidations",
          static_cast<unsigned long long>(c.stats().invalidations));
    CHECK(counter_value("axon_rcache_invalidations") == inval0 + 1, "axon_rcache_invalidations");
    CHECK(t.deregistrations() == 0, "deregistered while in use");
    CHECK(c.stats().cached_regions == 0, "an invalidated region is still cached");
  }
  CHECK(t.deregistrations() == 1, "not deregistered when its last Handle went (%d)", t.deregistrations());
  const uint64_t remapped = fake::tick();
  CHECK(map_pages(4, p) == p, "could not map the same address again");
  {
    Handle h = c.acquire(p, 4 * kPage, 1);
    CHECK(t.registrations() == 2 && c.stats().misses == 2 && c.stats().hits == 1,
          "acquire after munmap+mmap: %d registrations", t.registrations());
    CHECK(t.record(h).seq > remapped, "the registration predates the new mapping (stale)");
  }
  // Unused when unmapped: the hook only marks it; deregistered at the next acquire.
  CHECK(munmap(p, 4 * kPage) == 0, "munmap");
  CHECK(c.stats().invalidations == 2 && t.deregistrations() == 1,
        "unused region: %llu invalidations, %d deregistrations (the hook must not deregister)",
        static_cast<unsigned long long>(c.stats().invalidations), t.deregistrations());
  char* other = map_pages(1);
  Handle h = c.acquire(other, 1, 1);
  CHECK(t.deregistrations() == 2, "the next acquire did not deregister the invalidated region");
  h.reset();
  munmap(other, kPage);
}

// munmap of the middle page of a registered region.
void test_partial_munmap() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(3);
  char* far = map_pages(2);
  c.acquire(p, 3 * kPage, 1);
  c.acquire(far, 2 * kPage, 1);
  CHECK(munmap(p + kPage, kPage) == 0, "munmap of the middle page");
  CHECK(c.stats().invalidations == 1, "%llu invalidations (the other buffer must stay)",
        static_cast<unsigned long long>(c.stats().invalidations));
  Handle first = c.acquire(p, kPage, 1), last = c.acquire(p + 2 * kPage, kPage, 1);
  CHECK(first && last && t.registrations() == 4, "the outer pages: %d registrations (want 4)", t.registrations());
  CHECK(first.base() == p && first.length() == kPage, "first page: %p+%zu", first.base(), first.length());
  Handle hit = c.acquire(far, 2 * kPage, 1);
  CHECK(c.stats().hits == 1 && t.registrations() == 4, "the untouched buffer is not a hit");
  CHECK(t.deregistrations() == 1, "%d deregistrations", t.deregistrations());
  first.reset(), last.reset(), hit.reset();
  munmap(p, 3 * kPage), munmap(far, 2 * kPage);
}

void test_mremap() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(4);
  char* target = map_pages(4);
  c.acquire(p, 4 * kPage, 1);
  c.acquire(target, 4 * kPage, 1);
  // Moves p's pages over target: both ranges' registrations are stale.
  void* moved = mremap(p, 4 * kPage, 4 * kPage, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  CHECK(moved == target, "mremap: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == 2, "mremap moving: %llu invalidations (want 2)",
        static_cast<unsigned long long>(c.stats().invalidations));
  const uint64_t moved_at = fake::tick();
  Handle h = c.acquire(target, 4 * kPage, 1);
  CHECK(t.registrations() == 3 && t.record(h).seq > moved_at, "acquire at the new address is not a new registration");
  h.reset();
  CHECK(map_pages(4, p) == p, "map the old address again");
  h = c.acquire(p, 4 * kPage, 1);
  CHECK(t.registrations() == 4, "acquire at the old address: %d registrations", t.registrations());
  h.reset();

  // Shrinking in place drops only the tail; growing in place keeps the pages.
  char* q = map_pages(4);
  c.acquire(q, kPage, 1);
  c.acquire(q + 3 * kPage, kPage, 1);
  const uint64_t before = c.stats().invalidations;
  CHECK(mremap(q, 4 * kPage, 2 * kPage, 0) == q, "mremap shrink: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == before + 1, "shrink: %llu invalidations (want 1)",
        static_cast<unsigned long long>(c.stats().invalidations - before));
  CHECK(mremap(q, 2 * kPage, 3 * kPage, 0) == q, "mremap grow in place: %s", std::strerror(errno));
  const int regs = t.registrations();
  h = c.acquire(q, kPage, 1);
  CHECK(c.stats().invalidations == before + 1 && t.registrations() == regs, "growing in place invalidated the head");
  h.reset();
  munmap(p, 4 * kPage), munmap(target, 4 * kPage), munmap(q, 3 * kPage);
}

void test_madvise() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(4);
  c.acquire(p, 4 * kPage, 1);
  CHECK(madvise(p, 4 * kPage, MADV_WILLNEED) == 0, "madvise WILLNEED");
  CHECK(c.stats().invalidations == 0, "MADV_WILLNEED invalidated");
  CHECK(madvise(p + kPage, kPage, MADV_DONTNEED) == 0, "madvise DONTNEED");
  CHECK(c.stats().invalidations == 1, "MADV_DONTNEED: %llu invalidations",
        static_cast<unsigned long long>(c.stats().invalidations));
  const uint64_t dropped = fake::tick();
  Handle h = c.acquire(p, 4 * kPage, 1);
  CHECK(t.registrations() == 2 && t.record(h).seq > dropped, "acquire after MADV_DONTNEED is not a new registration");
  h.reset();
  CHECK(madvise(p, kPage, MADV_FREE) == 0, "madvise FREE: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == 2, "MADV_FREE did not invalidate");
  munmap(p, 4 * kPage);
}

void test_mmap_fixed() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(4);
  c.acquire(p, 4 * kPage, 1);
  CHECK(mmap(p, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
            MAP_FAILED && errno == EEXIST, "MAP_FIXED_NOREPLACE over a mapping");
  CHECK(c.stats().invalidations == 0, "a refused MAP_FIXED_NOREPLACE invalidated");
  CHECK(mmap(p + kPage, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p + kPage,
        "MAP_FIXED: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == 1, "MAP_FIXED over a registered page did not invalidate");
  Handle h = c.acquire(p, 4 * kPage, 1);
  CHECK(t.registrations() == 2, "acquire after MAP_FIXED: %d registrations", t.registrations());
  h.reset();
  munmap(p, 4 * kPage);
}

void test_shm() {
  fake::Transport t;
  Cache c(t.ops());
  const int id = shmget(IPC_PRIVATE, 4 * kPage, IPC_CREAT | 0600);
  CHECK(id >= 0, "shmget: %s", std::strerror(errno));
  if (id < 0) return;
  char* s = static_cast<char*>(shmat(id, nullptr, 0));
  CHECK(s != reinterpret_cast<char*>(-1), "shmat: %s", std::strerror(errno));
  char* far = map_pages(1);
  c.acquire(far, kPage, 1);
  c.acquire(s + kPage, 2 * kPage, 1);
  CHECK(shmdt(s) == 0, "shmdt: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == 1, "shmdt: %llu invalidations (want 1)",
        static_cast<unsigned long long>(c.stats().invalidations));
  // shmat with SHM_REMAP over registered memory replaces it.
  char* p = map_pages(4);
  c.acquire(p, 4 * kPage, 1);
  CHECK(shmat(id, p, SHM_REMAP) == p, "shmat SHM_REMAP: %s", std::strerror(errno));
  CHECK(c.stats().invalidations == 2, "shmat SHM_REMAP did not invalidate");
  CHECK(shmdt(p) == 0, "shmdt");
  shmctl(id, IPC_RMID, nullptr);
  munmap(far, kPage);
}

// glibc's free() unmaps a large block with its internal __munmap.
void test_free_large() {
  fake::Transport t;
  Cache c(t.ops());
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  const size_t size = 4 << 20;
  char* p = static_cast<char*>(std::malloc(size));
  std::memset(p, 7, size);
  c.acquire(p, size, 1);
  std::free(p);
  CHECK(c.stats().invalidations == 1, "free() of a %zu-byte block: %llu invalidations", size,
        static_cast<unsigned long long>(c.stats().invalidations));
  char* q = static_cast<char*>(std::malloc(size));
  std::memset(q, 8, size);
  Handle h = c.acquire(q, size, 1);
  CHECK(t.registrations() == 2 && c.stats().hits == 0, "acquire after free+malloc%s: %d registrations",
        q == p ? " (same address)" : "", t.registrations());
  CHECK(t.deregistrations() == 1, "the freed block's registration: %d deregistrations", t.deregistrations());
  h.reset();
  std::free(q);
}

// The heap shrinks with brk: sbrk(negative), and malloc_trim.
void test_brk() {
  fake::Transport t;
  Cache c(t.ops());
  mallopt(M_TRIM_THRESHOLD, 512 << 20);  // no trimming but ours
  // Room in malloc's heap, so the cache's own allocations do not move the break.
  std::free(std::malloc(200 * 1024));
  char* old_break = static_cast<char*>(sbrk(0));
  CHECK(sbrk(static_cast<intptr_t>(16 * kPage)) == old_break, "sbrk grow");
  char* region = page_up(old_break);
  c.acquire(region, 8 * kPage, 1);
  CHECK(t.registrations() == 1, "heap region not registered");
  if (sbrk(0) == old_break + 16 * kPage) {
    CHECK(sbrk(-static_cast<intptr_t>(16 * kPage)) == old_break + 16 * kPage, "sbrk shrink");
    CHECK(c.stats().invalidations == 1, "sbrk(negative): %llu invalidations",
          static_cast<unsigned long long>(c.stats().invalidations));
    CHECK(sbrk(0) == old_break, "the break is %p, not %p", sbrk(0), static_cast<void*>(old_break));
  } else {
    CHECK(false, "something else moved the break between sbrk calls; not shrinking");
  }
  CHECK(sbrk(0) == reinterpret_cast<void*>(syscall(SYS_brk, 0)), "glibc's __curbrk differs from the kernel's break");

  // malloc_trim gives the top of the heap back (brk) and drops free pages
  // inside it (madvise): either invalidates a registration of freed heap.
  void* blocks[16];
  for (void*& b : blocks) std::memset(b = std::malloc(64 * 1024), 3, 64 * 1024);
  const uint64_t before = c.stats().invalidations;
  c.acquire(blocks[15], 64 * 1024, 1);
  for (void* b : blocks) std::free(b);
  CHECK(c.stats().invalidations == before, "free() of small blocks invalidated without trimming");
  malloc_trim(0);
  CHECK(c.stats().invalidations == before + 1, "malloc_trim: %llu invalidations (want 1)",
        static_cast<unsigned long long>(c.stats().invalidations - before));
  CHECK(sbrk(0) == reinterpret_cast<void*>(syscall(SYS_brk, 0)), "__curbrk wrong after malloc_trim");
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  void* after = std::malloc(1000);  // malloc still works on the shrunk heap
  CHECK(after != nullptr, "malloc after the heap shrank");
  std::free(after);
}

// Several caches (one per device) all see every event.
void test_two_caches() {
  fake::Transport t1, t2;
  Cache c1(t1.ops()), c2(t2.ops());
  char* p = map_pages(2);
  c1.acquire(p, 2 * kPage, 1);
  c2.acquire(p, kPage, 2);
  munmap(p, 2 * kPage);
  CHECK(c1.stats().invalidations == 1 && c2.stats().invalidations == 1, "two caches: %llu and %llu invalidations",
        static_cast<unsigned long long>(c1.stats().invalidations),
        static_cast<unsigned long long>(c2.stats().invalidations));
}

// A forked child: the hooks forget the parent's caches, and caches register
// every acquire (uncached) without their locks; the parent is unaffected.
void test_fork() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(2);
  char* q = map_pages(2);
  c.acquire(p, 2 * kPage, 1);
  c.acquire(q, 2 * kPage, 1);
  const pid_t child = fork();
  if (child == 0) {
    int bad = 0;
    munmap(q, 2 * kPage);                 // the hook must not touch the copy of the cache
    bad |= c.stats().invalidations != 0;  // (its lock is free here: no other thread)
    std::free(std::malloc(8 << 20));
    Handle h = c.acquire(p, 2 * kPage, 1);
    bad |= (!h || h.cached() || t.registrations() != 3) << 1;
    h.reset();
    bad |= (t.deregistrations() != 1) << 2;
    _exit(bad);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child, "fork/waitpid: %s", std::strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status 0x%x (bits: 1 the hook reached the "
        "cache, 2 the child cached, 4 no deregistration)", status);
  Handle h = c.acquire(q, 2 * kPage, 1);
  CHECK(c.stats().hits == 1 && t.registrations() == 2, "the parent's cache changed in the child's fork");
  h.reset();
  munmap(q, 2 * kPage);
  CHECK(c.stats().invalidations == 1, "the parent's hooks after fork: %llu invalidations",
        static_cast<unsigned long long>(c.stats().invalidations));
  munmap(p, 2 * kPage);
}

// The hooks make the system calls themselves: results and errno as glibc's.
void test_syscall_results() {
  errno = 0;
  CHECK(munmap(reinterpret_cast<void*>(1), kPage) == -1 && errno == EINVAL, "munmap(unaligned): errno %d", errno);
  errno = 0;
  CHECK(madvise(reinterpret_cast<void*>(1), kPage, MADV_DONTNEED) == -1 && errno == EINVAL, "madvise: errno %d", errno);
  errno = 0;
  CHECK(mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1) == MAP_FAILED && errno == EINVAL,
        "mmap(offset 1): errno %d", errno);
  errno = 0;
  CHECK(shmdt(reinterpret_cast<void*>(kPage)) == -1 && errno == EINVAL, "shmdt(not attached): errno %d", errno);
  errno = 0;
  CHECK(mremap(reinterpret_cast<void*>(kPage), kPage, 2 * kPage, 0) == MAP_FAILED && errno == EFAULT,
        "mremap(unmapped): errno %d", errno);
  char* p = map_pages(1);
  CHECK(p != nullptr && munmap(p, kPage) == 0, "mmap/munmap through the hooks");
}

// Another library patching munmap after us replaces our jump; simulated
// by writing glibc's original first instruction back (mov $SYS_munmap, %eax).
// The caches must notice at the next acquire, drop everything, stop caching.
// Last: it leaves munmap unhooked.
void test_overwritten() {
  fake::Transport t;
  Cache c(t.ops());
  char* p = map_pages(2);
  c.acquire(p, 2 * kPage, 1);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  auto* entry = static_cast<uint8_t*>(libc ? dlsym(libc, "munmap") : nullptr);
  if (entry && entry[0] == 0xf3 && entry[1] == 0x0f && entry[2] == 0x1e && entry[3] == 0xfa) entry += 4;  // endbr64
  CHECK(entry && entry[0] == 0xe9, "libc's munmap does not start with our jump");
  if (!entry || entry[0] != 0xe9) return;
  auto* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(entry) & ~(kPage - 1));
  CHECK(mprotect(page, kPage, PROT_READ | PROT_WRITE | PROT_EXEC) == 0, "mprotect libc: %s", std::strerror(errno));
  const uint8_t original[5] = {0xb8, SYS_munmap, 0, 0, 0};
  std::memcpy(entry, original, sizeof original);
  mprotect(page, kPage, PROT_READ | PROT_EXEC);
  Handle h = c.acquire(p, 2 * kPage, 1);
  CHECK(h && !h.cached() && !c.caching() && t.registrations() == 2, "still caching with munmap unhooked");
  CHECK(c.stats().cached_regions == 0 && c.stats().invalidations == 1, "the cache was not flushed");
  CHECK(t.deregistrations() == 1, "the flushed registration was not deregistered");
  CHECK(!axon::rcache::enabled() && axon::rcache::status().find("overwritten") != std::string::npos,
        "status '%s'", axon::rcache::status().c_str());
  CHECK(axon::rcache::state() == (static_cast<uint64_t>(axon::rcache::Off::Overwritten) | 1u << 8),
        "state %llu", static_cast<unsigned long long>(axon::rcache::state()));
  h.reset();
  CHECK(t.deregistrations() == 2, "uncached registration not deregistered at release");
  CHECK(munmap(p, 2 * kPage) == 0, "the restored munmap");
  dlclose(libc);
}

}  // namespace

int main() {
  if (!axon::rcache::enabled()) {
    // Only a sanitizer build may refuse here (x86_64 Linux, glibc).
    const uint64_t s = axon::rcache::state();
    std::printf("hooks not installed: %s\n", axon::rcache::status().c_str());
    CHECK(static_cast<axon::rcache::Off>(s & 0xff) == axon::rcache::Off::Sanitizer, "refused for another reason");
    fake::Transport t;
    Cache c(t.ops());
    char* p = map_pages(1);
    Handle a = c.acquire(p, kPage, 1), b = c.acquire(p, kPage, 1);
    CHECK(!c.caching() && t.registrations() == 2 && !a.cached(), "a refused cache cached");
    a.reset(), b.reset();
    CHECK(t.deregistrations() == 2, "uncached registrations not deregistered at release");
    munmap(p, kPage);
    return unit::finish("hooks_unit");
  }
  test_state();
  test_munmap();
  test_partial_munmap();
  test_mremap();
  test_madvise();
  test_mmap_fixed();
  test_shm();
  test_free_large();
  test_brk();
  test_two_caches();
  test_fork();
  test_syscall_results();
  test_overwritten();
  return unit::finish("hooks_unit");
}
