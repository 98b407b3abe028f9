// btl/sm: the layout of a rank's shared-memory segment (a header, the
// doorbells, the copy descriptors, then one byte ring per local sender) and
// the checks a rank makes before it trusts a segment another process wrote.
// Pure: no system calls, so test/fuzz runs the checks on arbitrary bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace axon::btl::sm {

constexpr uint64_t kSegmentMagic = 0x41584f4e534d3032ull;  // "AXONSM02"
constexpr size_t kLine = 64;
constexpr size_t kMaxHeader = 64;  // largest PML header carried in front of a payload
constexpr uint64_t kCmaProbeValue = 0x636d612070726f62ull;

// The eager limit when AXON_BTL_SM_EAGER_LIMIT is 0. Below about 32 KiB,
// copying through a ring on each side beats the rendezvous (request, CMA
// read, completion: 3-4 us on one node, against 0.7 us for 16 KiB eager;
// docs/performance.md). The rings of a rank share a fixed budget
// (ring_capacity), so with more local ranks each ring is smaller and the
// limit shrinks to keep several of the largest messages in one. (Also
// axon_info --explain's.)
inline size_t default_eager_limit(int local_ranks) {
  if (local_ranks <= 8) return 32 * 1024;
  if (local_ranks <= 16) return 16 * 1024;
  return 8 * 1024;
}

struct alignas(kLine) SegmentHeader {
  std::atomic<uint64_t> magic;   // written last by the owner
  uint32_t nrings;
  uint32_t record_step;          // kPackedStep or kLine: where a record after a small one starts
  uint64_t ring_capacity;        // data bytes of each ring: a power of two
  int32_t owner_pid;
  uint64_t cma_probe;            // kCmaProbeValue, read by peers through CMA
  uint64_t cma_probe_addr;       // its address in the owner's address space
  std::atomic<uint32_t> attached;  // local peers that have mapped this segment
};

// One large message being copied by CMA. The sender arms it when it announces
// the message; the receiver fills in its buffer and both sides take pieces
// until none are left, so the copy runs on two cores while the sender waits,
// and on the receiver's alone when the sender is busy elsewhere. The receiver
// takes pieces from the front, the sender from the back (`claim_piece`): each
// core writes one end of the destination, so a buffer reused message after
// message (OSU's loops, a halo buffer) keeps most of its lines in the cache of
// the core that writes them. Pieces taken in arrival order had moved lines
// between the cores on every message: 0.85x of a single-core read at 256 KiB.
struct alignas(kLine) CopyDescriptor {
  std::atomic<uint32_t> state;      // kCopyFree, kCopyArmed (sender), kCopyJoined (receiver)
  std::atomic<uint32_t> failed;     // the sender could not write a piece it took
  uint64_t source_address;          // sender's buffer, in the sender's address space
  uint64_t dest_address;            // receiver's buffer, in the receiver's address space
  uint64_t length;                  // bytes to move
  uint64_t chunk;                   // bytes per piece
  int32_t receiver_pid;
  std::atomic<uint64_t> taken;      // pieces taken: from the front (low 32 bits), from the back (high)
  std::atomic<uint64_t> bytes_done;
};
constexpr uint32_t kCopyFree = 0, kCopyArmed = 1, kCopyJoined = 2;

// Takes the next piece of `pieces` from the front (receiver) or the back
// (sender): its index, or -1 once every piece is taken. Whatever a peer wrote
// into `taken`, an index returned lies in [0, pieces) and no index is
// returned twice while the word is ours alone to change.
inline int64_t claim_piece(std::atomic<uint64_t>& taken, uint64_t pieces, bool front) {
  uint64_t word = taken.load(std::memory_order_acquire);
  for (;;) {
    uint64_t from_front = word & 0xffffffffu, from_back = word >> 32;
    if (pieces > 0xffffffffu || from_front + from_back >= pieces) return -1;
    uint64_t next = front ? word + 1 : word + (uint64_t{1} << 32);
    if (taken.compare_exchange_weak(word, next, std::memory_order_acq_rel, std::memory_order_acquire))
      return front ? static_cast<int64_t>(from_front) : static_cast<int64_t>(pieces - 1 - from_back);
  }
}
constexpr int kCopyDescriptors = 32;

// The consumer's read position (bytes taken since the start, wrap-arounds
// included), alone in its line: the producer reads it only when its cached
// copy says the ring is full.
struct alignas(kLine) RingControl {
  std::atomic<uint64_t> head;
};

// A ring's records: an 8-byte header word, then the message, the next
// record at the following multiple of the segment's record step: 8 when
// small messages are packed (AXON_BTL_SM_PACK), else a line. The word is 0 where nothing is
// published yet; else kRecordValid | am_id << 32 | length, the am id
// kSkipRecord for filler (its length: bytes skipped after the word).
constexpr uint64_t kRecordValid = 1ull << 63;
constexpr uint32_t kSkipRecord = 0xffff;
constexpr size_t kRecordHeader = 8;
constexpr size_t kRecordAlign = 8;
constexpr uint32_t kPackedStep = 8;

// `v` rounded up to a multiple of `a`, a power of two (every alignment
// here is: a record step is 8 or a line, layout.cpp checks a peer's). A
// mask, not a division: record_bytes runs twice per message on each side,
// and a 64-bit divide by a run-time step cost tens of cycles each time.
inline size_t round_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
inline uint64_t record_word(uint32_t am_id, uint32_t length) {
  return kRecordValid | uint64_t(am_id) << 32 | length;
}
inline uint32_t record_am(uint64_t word) { return uint32_t(word >> 32) & 0xffff; }
inline uint32_t record_length(uint64_t word) { return uint32_t(word); }
// A record longer than a line fills whole lines, so the record after it
// starts a fresh line (no filler, one line fewer to cross).
inline size_t record_bytes(size_t length, size_t step) {
  const size_t bytes = round_up(kRecordHeader + length, step);
  return bytes > kLine ? round_up(bytes, kLine) : bytes;
}

inline size_t ring_bytes(uint64_t capacity) { return sizeof(RingControl) + capacity; }

// The doorbells: one byte per local sender, set by the sender when it
// publishes into a ring its receiver may have stopped polling (ring.h).
inline size_t doorbell_bytes(uint32_t rings) { return round_up(rings, kLine); }
inline size_t doorbells_offset() { return round_up(sizeof(SegmentHeader), kLine); }
inline size_t descriptors_offset(uint32_t rings) { return doorbells_offset() + doorbell_bytes(rings); }
inline size_t rings_offset(uint32_t rings) {
  return descriptors_offset(rings) + kCopyDescriptors * sizeof(CopyDescriptor);
}
inline size_t segment_bytes(uint32_t rings, uint64_t capacity) {
  return rings_offset(rings) + size_t(rings) * ring_bytes(capacity);
}

inline uint8_t* doorbells_of(void* segment) { return static_cast<uint8_t*>(segment) + doorbells_offset(); }
inline CopyDescriptor* descriptors_of(void* segment, uint32_t rings) {
  return reinterpret_cast<CopyDescriptor*>(static_cast<uint8_t*>(segment) + descriptors_offset(rings));
}
inline RingControl* ring_of(void* segment, uint32_t rings, uint64_t capacity, uint32_t index) {
  return reinterpret_cast<RingControl*>(static_cast<uint8_t*>(segment) + rings_offset(rings) +
                                        size_t(index) * ring_bytes(capacity));
}

// Limits a segment's header must respect (far above anything Axon makes).
constexpr uint32_t kMaxRings = 1u << 16;
constexpr uint64_t kMinCapacity = 1u << 10;
constexpr uint64_t kMaxCapacity = 1u << 28;

// Whether the `size` mapped bytes at `base` are a segment a local peer
// made for a node of `rings` ranks, in which we are ring `me`: the magic,
// ring count and capacity as the owner writes them, and every ring inside
// the mapping. nullptr when it is; else what is wrong.
const char* check_segment(const void* base, size_t size, uint32_t rings, uint32_t me);

// Whether a copy descriptor's key (its index plus one, carried in the PML's
// RTS) names one of the segment's descriptors.
inline bool descriptor_key_ok(uint64_t key) { return key >= 1 && key <= kCopyDescriptors; }

}  // namespace axon::btl::sm
