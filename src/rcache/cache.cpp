// cache.cpp -- the registration cache: page-aligned regions in a sorted map,
// reference counts, an LRU bound, and invalidation from the memory hooks.
//
// Locking. A hook runs in whatever thread called munmap or free(), possibly
// inside malloc with an arena lock held, so whatever it locks must never be
// held by code that allocates or frees (which could wait for that arena lock,
// or recurse into the hook). Hence two locks per cache:
//   data_mutex   entries' states and reference counts, the LRU list, the
//                garbage list; taken by hooks. Nothing allocates, frees,
//                registers or deregisters under it.
//   update_mutex serializes changes to the map's structure (insert, erase)
//                and misses; never taken by hooks. Map nodes are allocated
//                before data_mutex is taken and inserted as node handles;
//                erased nodes are extracted under it and freed after.
// So a hook only marks entries dead; they are erased from the map and
// deregistered later, at the next acquire() or release (deregistration may
// itself unmap memory in the driver, and so call a hook).
//
// Invariant: the map's Valid entries do not overlap one another (a miss
// merges the valid regions it overlaps into one new region), so the one that
// may contain an address is the valid entry with the greatest start at or
// below it. Dead entries stay in the map until erased, skipped by every
// lookup. The region a miss is registering (at most one: misses are
// serialized) is not in the map until its registration is made, so the
// regions it replaces serve hits meanwhile, and a failed registration
// changes nothing; hooks check it separately.
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "rcache/rcache.h"

namespace axon::rcache {

struct Entry {
  enum class State : uint8_t {
    Pending,  // being registered by the thread that missed (Impl::pending)
    Valid,    // in the map, registered, served to acquire()
    Dead,     // not served: invalidated, evicted, merged away, or never cached
  };
  uintptr_t start = 0, end = 0;  // page-aligned
  int access = 0;
  void* handle = nullptr;  // Ops::reg's result
  uint32_t refs = 0;       // Handles holding it
  State state = State::Pending;
  bool cached = false;      // made to be cached (else registered for one Handle)
  bool in_map = false;
  bool in_lru = false;  // Valid and unused
  Entry* lru_prev = nullptr;
  Entry* lru_next = nullptr;
  Entry* next_garbage = nullptr;
  size_t length() const { return end - start; }
};

namespace {

SizeParam max_bytes_param{"AXON_RCACHE_MAX_BYTES", 0,
                          "Most bytes of memory a registration cache keeps registered (per device); unused "
                          "registrations beyond it are deregistered, least recently used first. 0: a quarter "
                          "of physical memory, or half the locked-memory limit (ulimit -l) when smaller"};

// Totals over every cache, for MPI_T (each cache also counts its own).
std::atomic<uint64_t> all_hits{0}, all_misses{0}, all_invalidations{0}, all_evictions{0}, all_cached_bytes{0};
uint64_t read_hits() { return all_hits.load(std::memory_order_relaxed); }
uint64_t read_misses() { return all_misses.load(std::memory_order_relaxed); }
uint64_t read_invalidations() { return all_invalidations.load(std::memory_order_relaxed); }
uint64_t read_evictions() { return all_evictions.load(std::memory_order_relaxed); }
uint64_t read_cached_bytes() { return all_cached_bytes.load(std::memory_order_relaxed); }
Counter hits_pvar{"axon_rcache_hits", Counter::Class::Counter,
                  "Registration cache hits: buffers served by a cached registration", &read_hits};
Counter misses_pvar{"axon_rcache_misses", Counter::Class::Counter,
                    "Registration cache misses: buffers that needed a new registration", &read_misses};
Counter invalidations_pvar{"axon_rcache_invalidations", Counter::Class::Counter,
                           "Cached registrations dropped because their memory was unmapped or remapped",
                           &read_invalidations};
Counter evictions_pvar{"axon_rcache_evictions", Counter::Class::Counter,
                       "Unused cached registrations deregistered to stay within AXON_RCACHE_MAX_BYTES",
                       &read_evictions};
Counter cached_bytes_pvar{"axon_rcache_cached_bytes", Counter::Class::Level,
                          "Bytes of memory the registration caches hold registered now", &read_cached_bytes};

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t configured_max_bytes() {
  static const size_t bytes = [] {
    if (int64_t set = max_bytes_param.get(); set > 0) return static_cast<size_t>(set);
    const long pages = sysconf(_SC_PHYS_PAGES);
    size_t limit = pages > 0 ? static_cast<size_t>(pages) * page_size() / 4 : size_t{1} << 30;
    // Registered pages count against RLIMIT_MEMLOCK (root is exempt); leave
    // half of it to the transport's own buffers.
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && geteuid() != 0)
      limit = std::min(limit, static_cast<size_t>(rl.rlim_cur / 2));
    return limit;
  }();
  return bytes;
}

}  // namespace

struct Cache::Impl {
  using Map = std::map<uintptr_t, Entry*>;
  using Node = Map::node_type;

  Ops ops;
  std::string name;
  Invalidation invalidation;
  size_t max_bytes;

  std::mutex update_mutex;
  std::mutex data_mutex;
  Map map;                                      // by start
  Entry* lru_head = nullptr;                    // least recently used unused valid entry
  Entry* lru_tail = nullptr;
  Entry* garbage = nullptr;                     // through next_garbage
  Entry* pending = nullptr;                     // the region a miss is registering
  std::atomic<bool> has_garbage{false};
  size_t cached_bytes = 0, cached_regions = 0;  // Valid entries
  std::atomic<uint64_t> held{0};                // references held by Handles
  Impl* next_attached = nullptr;                // the hooks' list of caches

  std::atomic<uint64_t> hits{0}, misses{0}, invalidations{0}, evictions{0}, registrations{0}, deregistrations{0};

  // ---- under data_mutex -----------------------------------------------------------------
  void lru_unlink(Entry* e) {
    (e->lru_prev ? e->lru_prev->lru_next : lru_head) = e->lru_next;
    (e->lru_next ? e->lru_next->lru_prev : lru_tail) = e->lru_prev;
    e->lru_prev = e->lru_next = nullptr;
    e->in_lru = false;
  }
  void lru_append(Entry* e) {
    e->lru_prev = lru_tail;
    e->lru_next = nullptr;
    (lru_tail ? lru_tail->lru_next : lru_head) = e;
    lru_tail = e;
    e->in_lru = true;
  }
  void push_garbage(Entry* e) {  // Dead and unused: deregistered at the next maintain()
    e->next_garbage = garbage;
    garbage = e;
    has_garbage.store(true, std::memory_order_release);
  }
  void take_ref(Entry* e) {
    if (e->refs++ == 0 && e->in_lru) lru_unlink(e);
    held.fetch_add(1, std::memory_order_relaxed);
  }
  // A Valid entry stops being served (its map node stays until erased).
  void kill(Entry* e) {
    e->state = Entry::State::Dead;
    cached_bytes -= e->length();
    --cached_regions;
    all_cached_bytes.fetch_sub(e->length(), std::memory_order_relaxed);
    if (e->in_lru) lru_unlink(e);
    if (e->refs == 0) push_garbage(e);
  }
  // The valid entry with the greatest start at or below `at`.
  Map::iterator live_at_or_below(uintptr_t at) {
    auto it = map.upper_bound(at);
    while (it != map.begin()) {
      --it;
      if (it->second->state != Entry::State::Dead) return it;
    }
    return map.end();
  }
  Entry* servable(uintptr_t start, uintptr_t end, int access) {
    auto it = live_at_or_below(start);
    if (it == map.end()) return nullptr;
    Entry* e = it->second;
    return e->state == Entry::State::Valid && e->end >= end && (e->access & access) == access ? e : nullptr;
  }
  void invalidate_range(uintptr_t start, uintptr_t end) {
    std::lock_guard lock(data_mutex);
    auto kill_one = [&](Entry* e) {
      if (e->state != Entry::State::Valid) return;
      kill(e);
      invalidations.fetch_add(1, std::memory_order_relaxed);
      all_invalidations.fetch_add(1, std::memory_order_relaxed);
    };
    // The registering thread will not cache it.
    if (pending && pending->start < end && pending->end > start) pending->state = Entry::State::Dead;
    if (auto below = live_at_or_below(start); below != map.end() && below->second->end > start) kill_one(below->second);
    for (auto it = map.upper_bound(start); it != map.end() && it->first < end; ++it) kill_one(it->second);
  }
  // Evicts unused valid entries, least recently used first, while over the
  // bound; their map nodes go to `removed` (reserved: allocates nothing).
  void evict_over_limit(std::vector<Node>& removed) {
    while (cached_bytes > max_bytes && lru_head) {
      Entry* victim = lru_head;
      kill(victim);
      removed.push_back(map.extract(victim->start));
      victim->in_map = false;
      evictions.fetch_add(1, std::memory_order_relaxed);
      all_evictions.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // ---- without data_mutex -----------------------------------------------------------------
  void deregister(Entry* e) {
    if (e->handle) {
      ops.dereg(ops.ctx, e->handle);
      deregistrations.fetch_add(1, std::memory_order_relaxed);
    }
    delete e;
  }

  // Under update_mutex: erases and deregisters the garbage, evicts over the bound.
  void maintain() {
    std::vector<Node> removed;
    removed.reserve(map.size());  // the map's structure changes only under update_mutex
    Entry* doomed;
    {
      std::lock_guard lock(data_mutex);
      evict_over_limit(removed);
      doomed = garbage;
      garbage = nullptr;
      has_garbage.store(false, std::memory_order_relaxed);
      for (Entry* e = doomed; e; e = e->next_garbage) {
        if (e->in_map) removed.push_back(map.extract(e->start));
        e->in_map = false;
      }
    }
    removed.clear();
    while (doomed) {
      Entry* next = doomed->next_garbage;
      deregister(doomed);
      doomed = next;
    }
  }

  // A registration for one Handle, never cached. Takes no lock (so it also
  // serves in a forked child, whatever the parent's threads held).
  Entry* register_alone(uintptr_t start, uintptr_t end, int access) {
    auto* e = new Entry;
    e->start = start, e->end = end, e->access = access;
    e->state = Entry::State::Dead;
    e->refs = 1;
    e->handle = ops.reg(ops.ctx, reinterpret_cast<void*>(start), end - start, access);
    registrations.fetch_add(1, std::memory_order_relaxed);
    if (!e->handle) {
      const int error = errno;
      delete e;
      errno = error;
      return nullptr;
    }
    held.fetch_add(1, std::memory_order_relaxed);
    return e;
  }

  Entry* miss(uintptr_t start, uintptr_t end, int access);
};

// ---- the hooks' list of caches ------------------------------------------------------------
namespace {
// A read-write lock with a static initializer: no constructor or destructor
// to order against other objects, so a hook may run at any time (during
// exit, too). Hooks read-lock it; attach and detach write-lock it.
pthread_rwlock_t attached_lock = PTHREAD_RWLOCK_INITIALIZER;
Cache::Impl* attached = nullptr;
std::atomic<int> attached_count{0};

// fork(): the child has only the forking thread, and a copy of the caches
// as other threads may have left them, mid-change and locked. So in the
// child the hooks forget every cache, and caches register every acquire
// without taking their locks. (Taking all the locks before fork instead
// would deadlock: glibc's fork takes malloc's arena locks after the
// prepare handlers, while a thread in free() holding an arena lock may be
// waiting in a hook for a cache's lock.)
std::atomic<bool> forked_child{false};
void in_forked_child() {
  attached = nullptr;
  attached_count.store(0);
  attached_lock = PTHREAD_RWLOCK_INITIALIZER;
  forked_child.store(true);
}

void attach(Cache::Impl* cache) {
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, in_forked_child); });
  pthread_rwlock_wrlock(&attached_lock);
  cache->next_attached = attached;
  attached = cache;
  attached_count.fetch_add(1, std::memory_order_release);
  pthread_rwlock_unlock(&attached_lock);
}

void detach(Cache::Impl* cache) {
  pthread_rwlock_wrlock(&attached_lock);
  for (Cache::Impl** p = &attached; *p; p = &(*p)->next_attached)
    if (*p == cache) {
      *p = cache->next_attached;
      attached_count.fetch_sub(1, std::memory_order_release);
      break;
    }
  pthread_rwlock_unlock(&attached_lock);
}
}  // namespace

void detail::invalidate_all(uintptr_t start, uintptr_t end) {
  if (attached_count.load(std::memory_order_acquire) == 0) return;
  pthread_rwlock_rdlock(&attached_lock);
  for (Cache::Impl* c = attached; c; c = c->next_attached) c->invalidate_range(start, end);
  pthread_rwlock_unlock(&attached_lock);
}

// ---- a miss -----------------------------------------------------------------------------
Entry* Cache::Impl::miss(uintptr_t start, uintptr_t end, int access) {
  std::unique_lock update(update_mutex);
  // Allocate everything before taking data_mutex: the node for the new entry,
  // and room for the nodes it replaces (at most every node in the map).
  std::vector<Node> removed;
  removed.reserve(map.size() + 1);
  auto* fresh = new Entry;
  Node node = [&] {
    Map scratch;
    scratch.emplace(start, fresh);
    return scratch.extract(scratch.begin());
  }();
  {
    std::unique_lock lock(data_mutex);
    if (Entry* e = servable(start, end, access)) {  // registered by another thread meanwhile
      take_ref(e);
      hits.fetch_add(1, std::memory_order_relaxed);
      all_hits.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      delete fresh;
      return e;
    }
    misses.fetch_add(1, std::memory_order_relaxed);
    all_misses.fetch_add(1, std::memory_order_relaxed);
    // The union with every valid region it overlaps: the one below it, then
    // those starting inside the (growing) union.
    fresh->start = start, fresh->end = end, fresh->access = access;
    if (auto below = live_at_or_below(start); below != map.end() && below->second->end > start) {
      fresh->start = below->second->start;
      fresh->end = std::max(fresh->end, below->second->end);
      fresh->access |= below->second->access;
    }
    for (auto it = map.lower_bound(fresh->start); it != map.end() && it->first < fresh->end; ++it) {
      if (it->second->state != Entry::State::Valid) continue;
      fresh->end = std::max(fresh->end, it->second->end);
      fresh->access |= it->second->access;
    }
    // Merging pays for re-registering the regions it absorbs. A chain of
    // buffers each sharing a page with the next (pieces of an unaligned
    // buffer, neighbouring heap blocks) would re-register the whole chain at
    // every link: quadratic. So a union over twice the request (and two
    // pages) is not made: the request is cached alone, and the regions it
    // overlaps stop being served instead.
    if (fresh->length() > 2 * (end - start) + 2 * page_size())
      fresh->start = start, fresh->end = end, fresh->access = access;
    if (fresh->length() > max_bytes) {
      // Too big to cache, merged or not: registered for this Handle alone.
      lock.unlock();
      update.unlock();
      delete fresh;
      return register_alone(start, end, access);
    }
    fresh->cached = true;
    fresh->refs = 1;
    fresh->state = Entry::State::Pending;
    pending = fresh;
    held.fetch_add(1, std::memory_order_relaxed);
  }

  void* handle = ops.reg(ops.ctx, reinterpret_cast<void*>(fresh->start), fresh->length(), fresh->access);
  const int reg_errno = errno;
  registrations.fetch_add(1, std::memory_order_relaxed);
  const bool merged = fresh->start != start || fresh->end != end;
  {
    std::lock_guard lock(data_mutex);
    pending = nullptr;
    fresh->handle = handle;
    if (!handle) {
      held.fetch_sub(1, std::memory_order_relaxed);
    } else if (fresh->state == Entry::State::Pending) {
      // The regions merged into it or overlapped by it stop being served;
      // dead entries there leave the map (one might have its key). No entry
      // appeared in the range meanwhile: only misses insert.
      if (auto below = live_at_or_below(fresh->start); below != map.end() && below->second->end > fresh->start) {
        Entry* e = below->second;
        kill(e);
        removed.push_back(map.extract(below));
        e->in_map = false;
      }
      for (auto it = map.lower_bound(fresh->start); it != map.end() && it->first < fresh->end;) {
        Entry* e = it->second;
        ++it;
        if (e->state == Entry::State::Valid) kill(e);
        removed.push_back(map.extract(e->start));
        e->in_map = false;
      }
      fresh->state = Entry::State::Valid;
      fresh->in_map = true;
      node.key() = fresh->start;
      map.insert(std::move(node));
      cached_bytes += fresh->length();
      ++cached_regions;
      all_cached_bytes.fetch_add(fresh->length(), std::memory_order_relaxed);
      evict_over_limit(removed);
    }
    // else its memory was unmapped while it was registered: the Handle
    // holds it alone (Dead, not in the map).
  }
  removed.clear();
  node = Node();
  if (!handle) {
    delete fresh;
    update.unlock();
    // A merged region may fail where the buffer alone would not (part of
    // it unmapped meanwhile, a limit): try the buffer alone.
    if (merged) return register_alone(start, end, access);
    errno = reg_errno;
    return nullptr;
  }
  maintain();  // deregisters what was merged away or evicted
  return fresh;
}

// ---- Cache ----------------------------------------------------------------------------
Cache::Cache(Ops ops, Options options) : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.ops = ops;
  c.name = options.name ? options.name : "rcache";
  c.invalidation = options.invalidation;
  c.max_bytes = options.max_bytes ? options.max_bytes : configured_max_bytes();
  // A cache of host memory caches only where the hooks tell it what is
  // unmapped; this is where they are installed, at the first such cache.
  caching_ = options.invalidation == Invalidation::MemoryHooks ? enabled() : detail::requested();
  if (caching_ && options.invalidation == Invalidation::MemoryHooks) attach(&c);
  log::debug(2, "%s: registration cache %s (at most %zu bytes)", c.name.c_str(),
             caching_ ? "on" : status().c_str(), c.max_bytes);
}

Cache::~Cache() {
  Impl& c = *impl_;
  if (forked_child.load()) return;  // the registrations are the parent's; its locks may be held
  if (caching_ && c.invalidation == Invalidation::MemoryHooks) detach(&c);  // no hook sees it after this
  std::lock_guard update(c.update_mutex);
  c.maintain();
  if (uint64_t in_use = c.held.load())
    log::warn("%s: registration cache destroyed with %llu registrations in use", c.name.c_str(),
              static_cast<unsigned long long>(in_use));
  // What is left in the map and unused; entries in use are left to their Handles.
  for (auto& [start, e] : c.map) {
    e->in_map = false;
    if (e->state == Entry::State::Valid) all_cached_bytes.fetch_sub(e->length(), std::memory_order_relaxed);
    if (e->refs == 0) c.deregister(e);
  }
  c.map.clear();
}

Handle Cache::acquire(void* addr, size_t len, int access) {
  if (len == 0) {
    errno = EINVAL;
    return {};
  }
  Impl& c = *impl_;
  const uintptr_t page = page_size();
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t last = reinterpret_cast<uintptr_t>(addr) + (len - 1);
  if (last < start) {  // wraps around the address space
    errno = EINVAL;
    return {};
  }
  const uintptr_t end = (last | (page - 1)) + 1;
  if (end == 0) {  // the buffer ends in the address space's last page (never user memory)
    errno = EINVAL;
    return {};
  }
  Entry* e = nullptr;
  if (!caching()) {
    // Stopped caching (the hooks were overwritten): drop what was flushed.
    if (caching_ && !forked_child.load() && c.has_garbage.load(std::memory_order_acquire)) {
      std::lock_guard update(c.update_mutex);
      c.maintain();
    }
    e = c.register_alone(start, end, access);
  } else {
    if (c.has_garbage.load(std::memory_order_acquire)) {
      std::lock_guard update(c.update_mutex);
      c.maintain();
    }
    {
      std::lock_guard lock(c.data_mutex);
      if ((e = c.servable(start, end, access))) {
        c.take_ref(e);
        c.hits.fetch_add(1, std::memory_order_relaxed);
        all_hits.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!e) e = c.miss(start, end, access);
  }
  return e ? Handle(this, e) : Handle();
}

void Cache::release(Entry* e) {
  Impl& c = *impl_;
  c.held.fetch_sub(1, std::memory_order_relaxed);
  if (!e->cached) {  // registered for its Handle alone: nothing else knows it
    c.deregister(e);
    return;
  }
  bool deregister_now = false;
  bool over;
  {
    std::lock_guard lock(c.data_mutex);
    if (--e->refs == 0) {
      if (e->state == Entry::State::Valid)
        c.lru_append(e);
      else if (!e->in_map)
        deregister_now = true;  // nothing else can reach it
      else
        c.push_garbage(e);
    }
    over = c.cached_bytes > c.max_bytes && c.lru_head;
  }
  if (deregister_now) c.deregister(e);
  // Deregister what is due now unless a miss is busy (it will).
  if ((over || c.has_garbage.load(std::memory_order_acquire)) && c.update_mutex.try_lock()) {
    c.maintain();
    c.update_mutex.unlock();
  }
}

bool Cache::caching() const {
  if (!caching_ || forked_child.load(std::memory_order_relaxed)) return false;
  return impl_->invalidation != Invalidation::MemoryHooks || detail::hooks_intact();
}

void Cache::invalidate(const void* addr, size_t len) {
  if (!len) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  impl_->invalidate_range(start, len > UINTPTR_MAX - start ? UINTPTR_MAX : start + len);
}

Cache::Stats Cache::stats() const {
  Impl& c = *impl_;
  Stats s;
  s.hits = c.hits.load(), s.misses = c.misses.load(), s.invalidations = c.invalidations.load();
  s.evictions = c.evictions.load(), s.registrations = c.registrations.load();
  s.deregistrations = c.deregistrations.load();
  std::lock_guard lock(c.data_mutex);
  s.cached_bytes = c.cached_bytes, s.cached_regions = c.cached_regions;
  return s;
}

// ---- Handle ---------------------------------------------------------------------------
Handle::Handle(Handle&& other) noexcept : cache_(other.cache_), entry_(other.entry_) {
  other.cache_ = nullptr, other.entry_ = nullptr;
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = other.cache_, entry_ = other.entry_;
    other.cache_ = nullptr, other.entry_ = nullptr;
  }
  return *this;
}

void Handle::reset() {
  if (entry_) cache_->release(entry_);
  cache_ = nullptr, entry_ = nullptr;
}

void* Handle::get() const { return entry_ ? entry_->handle : nullptr; }
void* Handle::base() const { return entry_ ? reinterpret_cast<void*>(entry_->start) : nullptr; }
size_t Handle::length() const { return entry_ ? entry_->length() : 0; }
bool Handle::cached() const { return entry_ && entry_->cached; }

}  // namespace axon::rcache
