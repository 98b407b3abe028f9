// A fake transport for the registration cache's tests: "registers" memory
// by recording the range with a sequence number, and counts registrations
// and deregistrations exactly. Like a real driver it refuses ranges that are
// not mapped (EFAULT) and maps and unmaps memory of its own in both calls,
// so the memory hooks run inside them.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <mutex>

#include "rcache/rcache.h"
#include "../unit/unit_check.h"

namespace fake {

inline const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// One clock for registrations and the tests' memory changes: a registration
// made after a change has a greater number.
inline std::atomic<uint64_t> clock{0};
inline uint64_t tick() { return clock.fetch_add(1) + 1; }

struct Record {
  uintptr_t start = 0, end = 0;
  int access = 0;
  uint64_t seq = 0;  // clock at registration
  bool live = false;
};

class Transport {
 public:
  static constexpr size_t kMaxRecords = 1 << 17;

  Transport() {
    void* m = mmap(nullptr, kMaxRecords * sizeof(Record), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    records_ = m == MAP_FAILED ? nullptr : static_cast<Record*>(m);
    CHECK(records_ != nullptr, "fake transport: no memory for its records");
  }
  ~Transport() {
    if (records_) munmap(records_, kMaxRecords * sizeof(Record));
  }
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  axon::rcache::Ops ops() { return {this, &Transport::reg, &Transport::dereg}; }

  int registrations() const { return registrations_.load(); }
  int deregistrations() const { return deregistrations_.load(); }
  size_t registered_bytes() const { return registered_bytes_.load(); }  // summed over registrations
  int live() const { return registrations_.load() - deregistrations_.load(); }
  int bad_deregistrations() const { return bad_.load(); }
  int refused() const { return refused_.load(); }

  // Runs once inside the next registration, after its range was checked:
  // what another thread might do while the driver pins the pages.
  std::function<void()> during_next_registration;

  Record record(const axon::rcache::Handle& h) {
    std::lock_guard lock(mutex_);
    const uintptr_t index = reinterpret_cast<uintptr_t>(h.get());
    return index >= 1 && index <= count_ ? records_[index - 1] : Record{};
  }

 private:
  static void driver_work() {  // a driver maps and unmaps memory of its own
    void* scratch = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch != MAP_FAILED) munmap(scratch, kPage);
  }

  static void* reg(void* ctx, void* addr, size_t len, int access) {
    auto* self = static_cast<Transport*>(ctx);
    driver_work();
    // Mapped? mincore fails with ENOMEM on a hole. Its vector is on the
    // stack, a page of it at a time, so the fake allocates nothing.
    unsigned char pages[256];
    for (size_t done = 0; done < len; done += sizeof pages * kPage) {
      const size_t n = std::min(len - done, sizeof pages * kPage);
      if (mincore(static_cast<char*>(addr) + done, n, pages) != 0) {
        self->refused_.fetch_add(1);
        errno = EFAULT;
        return nullptr;
      }
    }
    const uint64_t pinned = tick();  // the pages it holds are the ones mapped now
    if (self->during_next_registration) {
      auto during = std::move(self->during_next_registration);
      self->during_next_registration = nullptr;
      during();
    }
    std::lock_guard lock(self->mutex_);
    if (!self->records_ || self->count_ == kMaxRecords) {
      errno = ENOMEM;
      return nullptr;
    }
    Record& r = self->records_[self->count_++];
    r.start = reinterpret_cast<uintptr_t>(addr), r.end = r.start + len, r.access = access;
    r.seq = pinned, r.live = true;
    self->registrations_.fetch_add(1);
    self->registered_bytes_.fetch_add(len);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(self->count_));  // index + 1
  }

  static void dereg(void* ctx, void* handle) {
    auto* self = static_cast<Transport*>(ctx);
    driver_work();
    std::lock_guard lock(self->mutex_);
    const uintptr_t index = reinterpret_cast<uintptr_t>(handle);
    if (index < 1 || index > self->count_ || !self->records_[index - 1].live) {
      self->bad_.fetch_add(1);
      return;
    }
    self->records_[index - 1].live = false;
    self->deregistrations_.fetch_add(1);
  }

  std::mutex mutex_;
  Record* records_ = nullptr;  // mapped, not allocated: the fake never calls malloc
  size_t count_ = 0;
  std::atomic<int> registrations_{0}, deregistrations_{0}, bad_{0}, refused_{0};
  std::atomic<size_t> registered_bytes_{0};
};

// Anonymous pages at `at` exactly (MAP_FIXED_NOREPLACE), or anywhere.
inline char* map_pages(size_t pages, void* at = nullptr) {
  void* p = mmap(at, pages * kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
  if (p == MAP_FAILED) return nullptr;
  static_cast<char*>(p)[0] = 1;  // populated, as a buffer in use would be
  return static_cast<char*>(p);
}

}  // namespace fake
