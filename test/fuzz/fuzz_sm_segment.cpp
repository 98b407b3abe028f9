// libFuzzer target: what btl/sm checks before it trusts memory another
// process wrote (src/btl/sm/layout.h) -- a local peer's segment header, the
// slots and copy descriptors in it -- and the segment names ranks hand each
// other (base/shm_file.h parse_name: the sm card, the coll and osc names).
// Input: rings (byte 0), our ring index (byte 1), then the segment's bytes.
// A header check_segment() accepts is walked the way the transport does.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "base/shm_file.h"
#include "btl/sm/layout.h"

using namespace axon::btl::sm;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Aligned {  // exactly `size` bytes: a read past them is a heap overflow
  explicit Aligned(size_t size) : p(static_cast<uint8_t*>(::operator new(size ? size : 1, std::align_val_t(64)))) {}
  ~Aligned() { ::operator delete(p, std::align_val_t(64)); }
  uint8_t* p;
};

void walk(uint8_t* base, size_t size, uint32_t me) {
  const auto* h = reinterpret_cast<const SegmentHeader*>(base);
  uint32_t nslots = h->nslots, stride = h->slot_stride;
  volatile uint64_t sink = 0;
  // Where a sender's next message goes in its ring of the peer's segment
  // (send(): tail % nslots).
  sink = (sink + 12345) % nslots;
  for (uint32_t r = 0; r < h->nrings; ++r) {
    size_t ring = rings_offset() + size_t(r) * ring_bytes(nslots, stride);
    check(ring + ring_bytes(nslots, stride) <= size);
    const auto* control = reinterpret_cast<const RingControl*>(base + ring);
    sink = sink + control->head.load(std::memory_order_relaxed);
    if (r != me) continue;
    const uint8_t* slots = reinterpret_cast<const uint8_t*>(control + 1);
    for (uint32_t k = 0; k < nslots; ++k) {
      const auto* slot = reinterpret_cast<const SlotHeader*>(slots + size_t(k) * stride);
      uint32_t length = slot->length;
      if (!slot_fits(length, stride)) continue;  // the transport ends the job here
      const uint8_t* msg = reinterpret_cast<const uint8_t*>(slot + 1);
      for (uint32_t i = 0; i < length; ++i) sink = sink + msg[i];
    }
  }
  for (uint64_t key = 0; key <= kCopyDescriptors + 1; ++key)
    if (descriptor_key_ok(key)) sink = sink + descriptors_of(base)[key - 1].length;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint32_t rings = data[0] % 65, me = data[1] % 65;
  size_t len = size - 2;
  {
    Aligned seg(len);
    if (len) std::memcpy(seg.p, data + 2, len);
    if (check_segment(seg.p, len, rings, me) == nullptr) {
      check(me < rings && len >= rings_offset());
      walk(seg.p, len, me);
    }
  }
  // The same bytes as a name received from another rank.
  std::string name;
  const std::string prefix = "/axon.axon.123.9abc";
  char* copy = new char[size];
  std::memcpy(copy, data, size);
  if (axon::shm::parse_name(copy, size, prefix, &name)) {
    check(name.compare(0, prefix.size() + 1, prefix + ".") == 0);
    check(name.size() > prefix.size() + 1 && name.find('/', 1) == std::string::npos);
  }
  delete[] copy;
  return 0;
}
