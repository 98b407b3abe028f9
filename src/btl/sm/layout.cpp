#include "btl/sm/layout.h"

namespace axon::btl::sm {

const char* check_segment(const void* base, size_t size, uint32_t rings, uint32_t me) {
  if (size < sizeof(SegmentHeader)) return "it is smaller than a segment header";
  const auto* h = static_cast<const SegmentHeader*>(base);
  if (h->magic.load(std::memory_order_acquire) != kSegmentMagic) return "it is not initialised";
  if (h->nrings != rings || rings == 0 || rings > kMaxRings) return "its ring count is not the node's rank count";
  if (me >= h->nrings) return "it has no ring for this rank";
  uint64_t capacity = h->ring_capacity;
  if (capacity < kMinCapacity || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0)
    return "its ring size is out of range";
  if (h->record_step != kPackedStep && h->record_step != kLine) return "its record step is neither 8 nor a line";
  if (h->owner_pid <= 0) return "it names no owner process";
  // At most 2^16 rings of 2^28 bytes: no overflow in 64 bits.
  if (segment_bytes(h->nrings, capacity) > size) return "its rings extend past its end";
  return nullptr;
}

}  // namespace axon::btl::sm
