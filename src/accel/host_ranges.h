// Internal to src/accel (CUDA builds): telling host memory from device
// memory without asking the driver, and the small lock-free range tables
// accel.cpp keeps. See host_ranges.cpp for why each answer is sound.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace axon::accel::detail {

// A few address ranges, each with a small tag, read without any lock: a
// sequence counter (a seqlock) makes a reader that overlaps a writer give
// up and ask the slow way instead. One writer at a time (the caller's lock).
template <size_t N>
class RangeTable {
 public:
  // The tag of the range holding `a`; -1 when none does or a writer is busy.
  int find(uintptr_t a) const {
    const uint32_t s = seq_.load(std::memory_order_acquire);
    if (s & 1) return -1;
    int tag = -1;
    const size_t used = used_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < used && i < N; ++i) {
      if (a >= begin_[i].load(std::memory_order_relaxed) && a < end_[i].load(std::memory_order_relaxed)) {
        tag = tag_[i].load(std::memory_order_relaxed);
        break;
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    return seq_.load(std::memory_order_relaxed) == s ? tag : -1;
  }
  // Writers (serialised by the caller). An empty range clears the slot.
  void put(size_t slot, uintptr_t begin, uintptr_t end, int tag) {
    const uint32_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    begin_[slot].store(begin, std::memory_order_relaxed);
    end_[slot].store(end, std::memory_order_relaxed);
    tag_[slot].store(tag, std::memory_order_relaxed);
    if (slot >= used_.load(std::memory_order_relaxed)) used_.store(slot + 1, std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
  }
  // The slot holding exactly [begin, ...), or N. Writers only.
  size_t slot_of(uintptr_t begin) const {
    for (size_t i = 0; i < N; ++i)
      if (begin_[i].load(std::memory_order_relaxed) == begin && end_[i].load(std::memory_order_relaxed) > begin) return i;
    return N;
  }
  // A free slot, or N. Writers only.
  size_t free_slot() const {
    for (size_t i = 0; i < N; ++i)
      if (end_[i].load(std::memory_order_relaxed) <= begin_[i].load(std::memory_order_relaxed)) return i;
    return N;
  }
  void clear() {
    for (size_t i = 0; i < N; ++i) put(i, 0, 0, -1);
    used_.store(0, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<size_t> used_{0};
  std::atomic<uintptr_t> begin_[N] = {};
  std::atomic<uintptr_t> end_[N] = {};
  std::atomic<int> tag_[N] = {};
};

// Reads what known_host() needs that does not change while the process
// runs (the start of the brk heap, the executable's segments). Idempotent.
void host_ranges_init();

// True when `p` is certainly host memory, decided without the driver and
// without a lock: the calling thread's live stack, the brk heap, the
// executable's own segments, or one of Axon's pinned buffers. False means
// "ask the driver", not "device memory".
bool known_host(const void* p);

// Axon's pinned buffers (cuMemAllocHost) as they come and go (caller holds
// accel's lock). pinned() tells whether `p` lies in one.
void pinned_added(const void* p, size_t len);
void pinned_removed(const void* p);
bool pinned(const void* p);

}  // namespace axon::accel::detail
