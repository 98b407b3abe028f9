#include "btl/sm/layout.h"

namespace axon::btl::sm {

const char* check_segment(const void* base, size_t size, uint32_t rings, uint32_t me) {
  if (size < rings_offset()) return "it is smaller than a segment header";
  const auto* h = static_cast<const SegmentHeader*>(base);
  if (h->magic.load(std::memory_order_acquire) != kSegmentMagic) return "it is not initialised";
  if (h->nrings != rings) return "its ring count is not the node's rank count";
  if (me >= h->nrings) return "it has no ring for this rank";
  if (h->nslots == 0 || h->nslots > kMaxSlots) return "its slot count is out of range";
  if (h->slot_stride < sizeof(SlotHeader) + kLine || h->slot_stride > kMaxStride || h->slot_stride % kLine)
    return "its slot size is out of range";
  if (h->owner_pid <= 0) return "it names no owner process";
  // At most 2^16 rings of 2^16 slots of 2^24 bytes: no overflow in 64 bits.
  uint64_t need = rings_offset() + uint64_t(h->nrings) * ring_bytes(h->nslots, h->slot_stride);
  if (need > size) return "its rings extend past its end";
  return nullptr;
}

}  // namespace axon::btl::sm
