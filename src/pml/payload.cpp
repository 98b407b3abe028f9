// The payload buffer cache (payload.h): free lists by power-of-two size
// class, holding at most kCachedBytes in all; larger payloads and anything
// beyond that go straight back to malloc.
#include "pml/payload.h"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace axon::pml {

namespace {

constexpr size_t kSmallestClass = 256;
constexpr size_t kLargestClass = size_t{1} << 20;
// Enough for the messages of a few local senders running a ring's worth of
// eager messages ahead (64 slots of up to 32 KiB each, btl/sm), bounded so
// that an idle rank does not hold more than this.
constexpr size_t kCachedBytes = size_t{8} << 20;
constexpr int kClasses = std::countr_zero(kLargestClass) - std::countr_zero(kSmallestClass) + 1;

class Cache {
 public:
  ~Cache() {
    for (auto& list : free_)
      for (uint8_t* p : list) std::free(p);
  }
  // A buffer of `capacity` bytes (a size class), from the cache if it has one.
  uint8_t* take(size_t capacity) {
    auto& list = free_[index(capacity)];
    if (!list.empty()) {
      uint8_t* p = list.back();
      list.pop_back();
      cached_ -= capacity;
      return p;
    }
    auto* p = static_cast<uint8_t*>(std::malloc(capacity));
    if (!p) throw std::bad_alloc();
    return p;
  }
  size_t cached() const { return cached_; }
  void give(uint8_t* p, size_t capacity) {
    if (cached_ + capacity > kCachedBytes) {
      std::free(p);
      return;
    }
    free_[index(capacity)].push_back(p);
    cached_ += capacity;
  }

 private:
  static int index(size_t capacity) { return std::countr_zero(capacity) - std::countr_zero(kSmallestClass); }
  std::vector<uint8_t*> free_[kClasses];
  size_t cached_ = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

size_t Payload::cached_bytes() { return cache().cached(); }
size_t Payload::cache_limit() { return kCachedBytes; }

Payload::Payload(Payload&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Payload& Payload::operator=(Payload&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void Payload::assign(const uint8_t* bytes, size_t len) {
  if (len > capacity_ && len > 0) {
    release();
    if (len <= kLargestClass) {
      capacity_ = std::bit_ceil(std::max(len, kSmallestClass));
      data_ = cache().take(capacity_);
    } else {
      data_ = static_cast<uint8_t*>(std::malloc(len));
      if (!data_) throw std::bad_alloc();
      capacity_ = len;
    }
  }
  if (len) std::memcpy(data_, bytes, len);
  size_ = len;
}

void Payload::release() {
  if (data_) {
    // (Only payloads above the largest class were malloc'ed at their length.)
    if (capacity_ <= kLargestClass) cache().give(data_, capacity_);
    else std::free(data_);
  }
  data_ = nullptr;
  size_ = capacity_ = 0;
}

}  // namespace axon::pml
