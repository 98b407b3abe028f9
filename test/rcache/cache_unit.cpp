// cache_unit: the registration cache's bookkeeping with a fake transport,
// exact counts: hits and sub-range hits, access bits, merging, the LRU
// bound, failures, explicit invalidation, and a multi-threaded stress with
// threads acquiring and releasing while others map, unmap and free memory,
// which must never see a stale registration.
//
//   cache_unit          all of that (the memory hooks invalidate where they
//                       are installed; in a sanitizer build, where they are
//                       not, the same checks run on an Explicit cache)
//   cache_unit off      run with AXON_RCACHE=off: nothing is cached
//   cache_unit max16k   run with AXON_RCACHE_MAX_BYTES=16k: the bound applies
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/counter.h"
#include "fake_ops.h"

using axon::rcache::Cache;
using axon::rcache::Handle;
using axon::rcache::Invalidation;
using axon::rcache::Options;
using fake::kPage;
using fake::map_pages;

namespace {

unsigned long long u(uint64_t v) { return static_cast<unsigned long long>(v); }

uint64_t counter_value(const char* name) {
  for (const axon::Counter* c : axon::Counter::all())
    if (std::strcmp(c->name(), name) == 0) return c->value();
  CHECK(false, "no counter %s", name);
  return ~0ull;
}

bool hooks = false;  // the memory hooks are installed

// Host memory is invalidated by the hooks; without them the tests use an
// Explicit cache and say what they unmap.
Options host_options(size_t max_bytes = 0) {
  Options o;
  o.max_bytes = max_bytes;
  if (!hooks) o.invalidation = Invalidation::Explicit;
  return o;
}

void test_hits() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  CHECK(c.caching(), "the cache does not cache");
  // Four pages with a hole after them (the fifth, unmapped).
  char* p = map_pages(5);
  munmap(p + 4 * kPage, kPage);
  c.acquire(p, 4 * kPage, 1);
  Handle sub = c.acquire(p + kPage + 10, 100, 1);
  CHECK(sub && sub.cached() && sub.base() == p && sub.length() == 4 * kPage,
        "sub-range: base %p length %zu", sub.base(), sub.length());
  CHECK(t.registrations() == 1 && c.stats().hits == 1 && c.stats().misses == 1,
        "sub-range is not a hit: %d registrations, %llu hits", t.registrations(), u(c.stats().hits));
  CHECK(c.stats().cached_bytes == 4 * kPage && c.stats().cached_regions == 1, "cached %llu bytes in %llu",
        u(c.stats().cached_bytes), u(c.stats().cached_regions));
  // A range reaching past the region is a miss (the union is registered).
  Handle wider = c.acquire(p + 3 * kPage, 2 * kPage, 1);
  CHECK(!wider && errno == EFAULT, "past the mapping: the fake refuses (EFAULT), got %s",
        wider ? "a registration" : std::strerror(errno));
  CHECK(t.refused() == 2, "the union then the buffer alone were tried: %d refusals", t.refused());
  CHECK(c.stats().cached_regions == 1 && sub.get() != nullptr, "a failed miss disturbed the cache");
  sub.reset();
  errno = 0;
  CHECK(!c.acquire(p, 0, 1) && errno == EINVAL, "len 0: errno %d", errno);
  munmap(p, 4 * kPage);
  if (!hooks) c.invalidate(p, 4 * kPage);
}

void test_access() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  char* p = map_pages(2);
  Handle first = c.acquire(p, 2 * kPage, 1);
  Handle second = c.acquire(p, kPage, 2);  // needs a bit the cached region lacks
  CHECK(t.registrations() == 2 && c.stats().misses == 2, "another access bit: %d registrations", t.registrations());
  CHECK(t.record(second).access == 3 &&
            t.record(second).start == reinterpret_cast<uintptr_t>(p),
        "merged registration: access %d (want 1|2)", t.record(second).access);
  CHECK(t.deregistrations() == 0, "the region merged away was deregistered while in use");
  first.reset();
  CHECK(t.deregistrations() == 1, "the region merged away was not deregistered at its release");
  Handle third = c.acquire(p + kPage, 1, 1), fourth = c.acquire(p, 1, 3);
  CHECK(third.get() == second.get() && fourth.get() == second.get() && t.registrations() == 2,
        "access 1 and 3 are not hits on the 1|2 region");
  third.reset(), fourth.reset(), second.reset();
  munmap(p, 2 * kPage);
  if (!hooks) c.invalidate(p, 2 * kPage);
}

void test_merge() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  char* p = map_pages(6);
  c.acquire(p, kPage, 1);
  c.acquire(p + 3 * kPage, kPage, 1);
  Handle all = c.acquire(p, 5 * kPage, 1);
  CHECK(t.registrations() == 3 && t.deregistrations() == 2 && c.stats().cached_regions == 1,
        "merge: %d registrations, %d deregistrations, %llu regions (want 3, 2, 1)", t.registrations(),
        t.deregistrations(), u(c.stats().cached_regions));
  Handle inside = c.acquire(p + 3 * kPage, kPage, 1);
  CHECK(inside.get() == all.get() && t.registrations() == 3, "a merged-away range is not served by the union");
  // Overlapping the end: the union grows to cover both.
  Handle grown = c.acquire(p + 4 * kPage, 2 * kPage, 1);
  CHECK(grown.base() == p && grown.length() == 6 * kPage && t.registrations() == 4,
        "grown region %p+%zu", grown.base(), grown.length());
  CHECK(t.deregistrations() == 2, "deregistered the region still held");
  all.reset(), inside.reset();
  CHECK(t.deregistrations() == 3, "the replaced region was not deregistered when released");
  CHECK(c.stats().cached_bytes == 6 * kPage, "cached bytes %llu", u(c.stats().cached_bytes));
  grown.reset();
  munmap(p, 6 * kPage);
  if (!hooks) c.invalidate(p, 6 * kPage);
}

// A chain of buffers each sharing a page with the next (the pieces of an
// unaligned buffer): merging every link would re-register the whole chain
// each time (quadratic); the cache registers each link with at most its
// neighbour (a link's region replaces the one it overlaps), so the pinning
// stays linear and the chain's last link stays cached.
void test_chain() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  constexpr int kLinks = 16, kPages = 4;
  char* p = map_pages(kLinks * kPages + 1);
  for (int i = 0; i < kLinks; ++i) c.acquire(p + i * kPages * kPage + 100, kPages * kPage, 1);  // pages 4i .. 4i+4
  const size_t asked = kLinks * (kPages + 1) * kPage;
  CHECK(t.registrations() == kLinks && t.registered_bytes() <= 2 * asked,
        "chain: %d registrations of %zu bytes for %d links of %zu (quadratic merging?)", t.registrations(),
        t.registered_bytes(), kLinks, (kPages + 1) * kPage);
  CHECK(c.stats().cached_regions == 1, "chain: %llu regions cached (each replaces the one it overlaps)",
        u(c.stats().cached_regions));
  Handle last = c.acquire(p + (kLinks - 1) * kPages * kPage + 100, kPages * kPage, 1);
  CHECK(t.registrations() == kLinks, "chain: the last link is not cached");
  last.reset();
  munmap(p, (kLinks * kPages + 1) * kPage);
  if (!hooks) c.invalidate(p, (kLinks * kPages + 1) * kPage);
}

// Memory unmapped while a miss registers a merged region over it: the
// region must not be cached. Buffer b (pages 1-2) is cached; a (pages 0-1)
// shares page 1, so a's miss registers pages 0-2; meanwhile page 2 is
// unmapped and mapped again (new memory, which the union's registration
// does not hold).
void test_invalidated_while_registering() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  char* x = map_pages(3);
  c.acquire(x + kPage, 2 * kPage, 1);
  uint64_t remapped = 0;
  char* again = nullptr;
  t.during_next_registration = [&] {
    if (!hooks) c.invalidate(x + 2 * kPage, kPage);
    munmap(x + 2 * kPage, kPage);
    again = map_pages(1, x + 2 * kPage);
    remapped = fake::tick();
  };
  Handle a = c.acquire(x, 2 * kPage, 1);
  CHECK(a && a.base() == x && a.length() == 3 * kPage, "merged registration %p+%zu", a.base(), a.length());
  CHECK(again == x + 2 * kPage, "map page 2 again");
  CHECK(c.stats().cached_regions == 0, "a region unmapped while registering was cached (%llu regions)",
        u(c.stats().cached_regions));
  Handle b = c.acquire(x + 2 * kPage, kPage, 1);
  CHECK(b && t.record(b).seq > remapped, "page 2 served by a registration older than its mapping (stale)");
  const int deregs = t.deregistrations();
  a.reset();
  CHECK(t.deregistrations() == deregs + 1, "the uncached merged registration outlived its Handle");
  b.reset();
  munmap(x, 3 * kPage);
  if (!hooks) c.invalidate(x, 3 * kPage);
}

void test_lru(size_t max_bytes, const char* what) {
  fake::Transport t;
  Cache c(t.ops(), host_options(max_bytes));
  const size_t fit = (max_bytes ? max_bytes : 16384) / kPage;  // regions of a page that fit
  const uint64_t evictions0 = counter_value("axon_rcache_evictions");
  std::vector<char*> b;
  for (size_t i = 0; i <= fit; ++i) b.push_back(map_pages(2));  // two pages: never adjacent
  for (size_t i = 0; i <= fit; ++i) c.acquire(b[i], 1, 1);
  CHECK(c.stats().evictions == 1 && t.deregistrations() == 1 && c.stats().cached_bytes == fit * kPage,
        "%s: %llu evictions, %d deregistrations, %llu bytes cached (want 1, 1, %zu)", what, u(c.stats().evictions),
        t.deregistrations(), u(c.stats().cached_bytes), fit * kPage);
  CHECK(counter_value("axon_rcache_evictions") == evictions0 + 1, "axon_rcache_evictions");
  Handle held = c.acquire(b[1], 1, 1);
  CHECK(c.stats().hits == 1, "%s: the second region was evicted, not the least recently used", what);
  Handle again = c.acquire(b[0], 1, 1);  // a miss, evicting b[2] (b[1] is held)
  CHECK(c.stats().misses == fit + 2 && c.stats().evictions == 2, "%s: %llu misses %llu evictions", what,
        u(c.stats().misses), u(c.stats().evictions));
  const int regs = t.registrations();
  c.acquire(b[3], 1, 1);
  CHECK(t.registrations() == regs, "%s: b[3] was evicted instead of b[2]", what);
  c.acquire(b[2], 1, 1);
  CHECK(t.registrations() == regs + 1, "%s: b[2] was not evicted", what);
  // Bigger than the bound: registered for its Handle alone.
  char* big = map_pages(fit + 2);
  Handle alone = c.acquire(big, (fit + 1) * kPage, 1);
  CHECK(alone && !alone.cached(), "%s: a buffer over the bound was cached", what);
  const int deregs = t.deregistrations();
  alone.reset();
  CHECK(t.deregistrations() == deregs + 1, "%s: an uncached registration outlived its Handle", what);
  held.reset(), again.reset();
  for (char* x : b) {
    munmap(x, 2 * kPage);
    if (!hooks) c.invalidate(x, 2 * kPage);
  }
  munmap(big, (fit + 2) * kPage);
}

void test_explicit_and_fallback() {
  fake::Transport t;
  Options o;
  o.invalidation = Invalidation::Explicit;
  Cache c(t.ops(), o);
  CHECK(c.caching(), "an Explicit cache does not cache");
  char* p = map_pages(3);
  c.acquire(p, 2 * kPage, 1);
  c.invalidate(p + kPage, 1);
  CHECK(c.stats().invalidations == 1 && c.stats().cached_regions == 0, "invalidate(): %llu invalidations",
        u(c.stats().invalidations));
  c.acquire(p, 2 * kPage, 1);
  CHECK(t.registrations() == 2 && t.deregistrations() == 1, "after invalidate(): %d registrations, %d deregistrations",
        t.registrations(), t.deregistrations());
  // The owner unmaps the first page without telling the cache; a request
  // overlapping the stale region makes a union the driver refuses: the
  // buffer alone is registered instead, uncached.
  munmap(p, kPage);
  Handle h = c.acquire(p + kPage, 2 * kPage, 1);
  CHECK(h && !h.cached() && h.base() == p + kPage && t.refused() == 1, "fallback: %s, %d refusals",
        h ? (h.cached() ? "cached" : "alone") : "failed", t.refused());
  h.reset();
  c.invalidate(p, 3 * kPage);
  munmap(p + kPage, 2 * kPage);
}

void test_handles() {
  fake::Transport t;
  Cache c(t.ops(), host_options());
  char* p = map_pages(2);
  char* q = map_pages(2);
  Handle a = c.acquire(p, kPage, 1);
  Handle b(std::move(a));
  CHECK(!a && b && b.base() == p, "move construction");
  Handle d = c.acquire(q, kPage, 1);
  d = std::move(b);  // releases q's (it stays cached), takes p's
  CHECK(!b && d.base() == p && c.stats().cached_regions == 2 && t.deregistrations() == 0, "move assignment");
  d.reset();
  CHECK(!d && d.get() == nullptr && d.length() == 0, "reset");
  munmap(p, 2 * kPage), munmap(q, 2 * kPage);
  if (!hooks) c.invalidate(p, 2 * kPage), c.invalidate(q, 2 * kPage);
}

// ---- stress ----------------------------------------------------------------------------
struct Rng {
  uint64_t s;
  uint64_t next() { return s ^= s << 13, s ^= s >> 7, s ^= s << 17; }
};

void stress() {
  constexpr int kWorkers = 4, kChurners = 2, kBuffers = 8, kIterations = 20000;
  fake::Transport t;
  Cache c(t.ops(), host_options(16 * kPage));  // a small bound: evictions race too
  std::atomic<int> stale{0}, wrong{0}, failed{0}, acquired{0};
  std::atomic<bool> stop{false};
  auto worker = [&](uint64_t seed) {
    Rng rng{seed};
    struct Buffer { char* p; size_t pages; uint64_t changed; };
    Buffer bufs[kBuffers];
    for (Buffer& b : bufs) b.pages = 1 + rng.next() % 4, b.p = map_pages(b.pages), b.changed = fake::tick();
    std::vector<Handle> held;
    for (int i = 0; i < kIterations; ++i) {
      const uint64_t r = rng.next();
      Buffer& b = bufs[r % kBuffers];
      const size_t bytes = b.pages * kPage;
      switch ((r >> 8) % 8) {
        default: {
          const size_t off = (r >> 16) % bytes, len = 1 + (r >> 32) % (bytes - off);
          Handle h = c.acquire(b.p + off, len, 1 + static_cast<int>((r >> 40) % 3));
          if (!h) { failed.fetch_add(1); break; }
          acquired.fetch_add(1);
          const fake::Record rec = t.record(h);
          const uintptr_t at = reinterpret_cast<uintptr_t>(b.p) + off;
          if (!rec.live || rec.seq < b.changed) stale.fetch_add(1);
          if (rec.start > at || rec.end < at + len) wrong.fetch_add(1);
          if (held.size() < 4) held.push_back(std::move(h));  // some stay in use across changes
          else held.erase(held.begin());
          break;
        }
        case 5: {  // unmapped, mapped again at the same address when still free
          if (!hooks) c.invalidate(b.p, bytes);
          munmap(b.p, bytes);
          char* again = map_pages(b.pages, b.p);
          b.p = again ? again : map_pages(b.pages);
          b.changed = fake::tick();
          break;
        }
        case 6:
          if (!hooks) c.invalidate(b.p, bytes);
          madvise(b.p, bytes, MADV_DONTNEED);
          b.p[0] = 1;
          b.changed = fake::tick();
          break;
        case 7:
          if (!hooks) c.invalidate(b.p, bytes);
          mmap(b.p, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
          b.p[0] = 1;
          b.changed = fake::tick();
          break;
      }
    }
    held.clear();
    for (Buffer& b : bufs) {
      if (!hooks) c.invalidate(b.p, b.pages * kPage);
      munmap(b.p, b.pages * kPage);
    }
  };
  // Memory traffic through every hook while the workers run: malloc/free of
  // large and small blocks (glibc's internal munmap, madvise, brk), mmap.
  auto churner = [&](uint64_t seed) {
    Rng rng{seed};
    for (int i = 0; !stop.load(); ++i) {
      const size_t size = 1024 + rng.next() % (2 << 20);
      char* m = static_cast<char*>(std::malloc(size));
      if (m) m[0] = 1, m[size - 1] = 1;
      std::free(m);
      const size_t pages = 1 + rng.next() % 16;
      if (char* p = map_pages(pages)) munmap(p, pages * kPage);
      if (i % 64 == 0) malloc_trim(0);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kChurners; ++i) threads.emplace_back(churner, 0x9e3779b97f4a7c15ull * (i + 101));
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) workers.emplace_back(worker, 0x9e3779b97f4a7c15ull * (i + 1));
  for (std::thread& w : workers) w.join();
  stop.store(true);
  for (std::thread& th : threads) th.join();
  CHECK(stale.load() == 0, "stress: %d stale registrations served", stale.load());
  CHECK(wrong.load() == 0, "stress: %d registrations not covering the buffer", wrong.load());
  CHECK(failed.load() == 0, "stress: %d acquires failed", failed.load());
  CHECK(t.bad_deregistrations() == 0, "stress: %d bad deregistrations", t.bad_deregistrations());
  const Cache::Stats s = c.stats();
  std::printf("stress (%s): %d acquires, %llu hits, %llu misses, %llu invalidations, %llu evictions\n",
              hooks ? "memory hooks" : "explicit", acquired.load(), u(s.hits), u(s.misses), u(s.invalidations),
              u(s.evictions));
  CHECK(s.hits > 0 && s.invalidations > 0 && s.evictions > 0, "stress did not exercise hits, invalidations, evictions");
}

void check_no_caching() {
  fake::Transport t;
  Cache c(t.ops());
  Options o;
  o.invalidation = Invalidation::Explicit;
  Cache explicit_cache(t.ops(), o);
  CHECK(!c.caching() && !explicit_cache.caching(), "AXON_RCACHE=off: a cache caches");
  char* p = map_pages(1);
  Handle a = c.acquire(p, kPage, 1), b = c.acquire(p, kPage, 1), e = explicit_cache.acquire(p, kPage, 1);
  CHECK(a && b && e && t.registrations() == 3 && c.stats().hits == 0 && !a.cached(),
        "AXON_RCACHE=off: %d registrations for 3 acquires", t.registrations());
  a.reset();
  CHECK(t.deregistrations() == 1, "AXON_RCACHE=off: not deregistered at release");
  b.reset(), e.reset();
  CHECK(t.live() == 0, "AXON_RCACHE=off: %d registrations left", t.live());
  munmap(p, kPage);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "off") {
    CHECK(static_cast<axon::rcache::Off>(axon::rcache::state() & 0xff) == axon::rcache::Off::Param,
          "state %llu, status '%s'", u(axon::rcache::state()), axon::rcache::status().c_str());
    CHECK(axon::rcache::status() == "off: AXON_RCACHE=off", "status '%s'", axon::rcache::status().c_str());
    CHECK(!axon::rcache::enabled(), "enabled() with AXON_RCACHE=off");
    check_no_caching();
    return unit::finish("cache_unit off");
  }
  hooks = axon::rcache::enabled();
  std::printf("registration cache: %s\n", axon::rcache::status().c_str());
  if (mode == "max16k") {
    test_lru(0, "AXON_RCACHE_MAX_BYTES=16k");
    return unit::finish("cache_unit max16k");
  }
  test_hits();
  test_access();
  test_merge();
  test_chain();
  test_invalidated_while_registering();
  test_lru(4 * kPage, "max_bytes 4 pages");
  test_explicit_and_fallback();
  test_handles();
  stress();
  return unit::finish("cache_unit");
}
