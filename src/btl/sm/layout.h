// btl/sm: the layout of a rank's shared-memory segment (a header, the copy
// descriptors, then one ring per local sender) and the checks a rank makes
// before it trusts a segment or a slot another process wrote. Pure: no
// system calls, so test/fuzz runs the checks on arbitrary bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace axon::btl::sm {

constexpr uint64_t kSegmentMagic = 0x41584f4e534d3031ull;  // "AXONSM01"
constexpr size_t kLine = 64;
constexpr size_t kMaxHeader = 64;  // largest PML header carried in front of a payload
// Lines of the next slot a polling consumer asks for ahead of its message
// (see progress()): 4 covers messages up to 256 bytes with their headers.
// 6 also sped up 256-320 bytes but cost 6-10 % of the 1 KiB streaming rate
// (the consumer pulled lines the producer was still writing); 10 cost 25 %.
constexpr size_t kPolledLines = 4;
constexpr uint64_t kCmaProbeValue = 0x636d612070726f62ull;

struct alignas(kLine) SegmentHeader {
  std::atomic<uint64_t> magic;   // written last by the owner
  uint32_t nrings;
  uint32_t nslots;
  uint32_t slot_stride;
  int32_t owner_pid;
  uint64_t cma_probe;            // kCmaProbeValue, read by peers through CMA
  uint64_t cma_probe_addr;       // its address in the owner's address space
  std::atomic<uint32_t> attached;  // local peers that have mapped this segment
  // Where the owner last waited: its CPU plus one (0: not known). Its own
  // line: peers read it while they poll, the owner writes it when it moves.
  alignas(kLine) std::atomic<int32_t> cpu_plus_one;
};

// One large message being copied by CMA. The sender arms it when it announces
// the message; the receiver fills in its buffer and both sides take pieces
// with fetch_add until none are left, so the copy runs on two cores while the
// sender waits, and on the receiver's alone when the sender is busy elsewhere.
struct alignas(kLine) CopyDescriptor {
  std::atomic<uint32_t> state;      // kCopyFree, kCopyArmed (sender), kCopyJoined (receiver)
  std::atomic<uint32_t> failed;     // the sender could not write a piece it took
  uint64_t source_address;          // sender's buffer, in the sender's address space
  uint64_t dest_address;            // receiver's buffer, in the receiver's address space
  uint64_t length;                  // bytes to move
  uint64_t chunk;                   // bytes per piece
  int32_t receiver_pid;
  std::atomic<uint64_t> next_piece;
  std::atomic<uint64_t> bytes_done;
};
constexpr uint32_t kCopyFree = 0, kCopyArmed = 1, kCopyJoined = 2;
constexpr int kCopyDescriptors = 32;

struct alignas(kLine) RingControl {
  std::atomic<uint64_t> head;  // next slot the consumer will read
};

struct alignas(16) SlotHeader {
  std::atomic<uint64_t> sequence;  // index+1 once the slot holds message `index`
  uint32_t length;
  uint16_t am_id;
  uint16_t reserved;
};
static_assert(sizeof(SlotHeader) == 16);


inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

inline size_t ring_bytes(uint32_t nslots, uint32_t stride) { return sizeof(RingControl) + size_t(nslots) * stride; }

inline size_t rings_offset() {
  return round_up(sizeof(SegmentHeader), kLine) + kCopyDescriptors * sizeof(CopyDescriptor);
}

inline CopyDescriptor* descriptors_of(void* segment) {
  return reinterpret_cast<CopyDescriptor*>(static_cast<uint8_t*>(segment) + round_up(sizeof(SegmentHeader), kLine));
}

// Limits a segment's header must respect (far above anything Axon makes).
constexpr uint32_t kMaxSlots = 1u << 16;
constexpr uint32_t kMaxStride = 1u << 24;

// Whether the `size` mapped bytes at `base` are a segment a local peer
// made for a node of `rings` ranks, in which we are ring `me`: the magic,
// ring count, slot count and stride as the owner writes them, and every ring
// inside the mapping. nullptr when it is; else what is wrong.
const char* check_segment(const void* base, size_t size, uint32_t rings, uint32_t me);

// Whether a slot's length fits a ring of `stride`-byte slots (a message's
// bytes follow the slot header).
inline bool slot_fits(uint32_t length, uint32_t stride) { return length <= stride - sizeof(SlotHeader); }

// Whether a copy descriptor's key (its index plus one, carried in the PML's
// RTS) names one of the segment's descriptors.
inline bool descriptor_key_ok(uint64_t key) { return key >= 1 && key <= kCopyDescriptors; }

}  // namespace axon::btl::sm
