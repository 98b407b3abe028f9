// The bytes of an eager message kept until a receive matches it (or parked
// out of order), in buffers recycled through a per-process cache.
//
// Why a cache: senders that run ahead (a reduce's non-roots, a bcast's root,
// any pipelined exchange) leave many messages waiting at once, and they are
// all freed together when the receiver catches up. Through plain malloc a
// few hundred KiB freed at once went back to the kernel (glibc trims its heap
// top beyond 128 KiB) and came back a page fault at a time on the next burst:
// 4 ranks on 2 cores, 16 KiB MPI_Reduce, 28 us per call instead of 2-3 us.
//
// Not thread-safe by itself: Messages are made and destroyed under the PML
// lock (pml.h, Guard), like the queues that hold them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon::pml {

class Payload {
 public:
  Payload() = default;
  Payload(Payload&& other) noexcept;
  Payload& operator=(Payload&& other) noexcept;
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;
  ~Payload() { release(); }

  // Replaces the contents with a copy of `len` bytes at `bytes`.
  void assign(const uint8_t* bytes, size_t len);
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Bytes of free buffers the cache holds now, and the most it holds.
  static size_t cached_bytes();
  static size_t cache_limit();

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // the buffer's size class (0: none)
};

}  // namespace axon::pml
