// libFuzzer target: what btl/sm checks before it trusts memory another
// process wrote (src/btl/sm/layout.h, ring.h) -- a local peer's segment
// header, the records of the byte rings and the doorbells in it, the copy
// descriptors -- the node's CPU page (src/progress/cpu_page.h), and the
// segment names ranks hand each other (base/shm_file.h parse_name: the sm
// card, the CPU page, the coll and osc names).
// Input: rings (byte 0), our ring index (byte 1), then the segment's bytes.
// A header check_segment() accepts is walked the way the transport does:
// every ring read record by record (RingReader) and one poll of the whole
// inbox (Inbox: doorbells, then the rings that rang), stopping at a record
// reported corrupt (the transport ends the job there).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "base/shm_file.h"
#include "btl/sm/layout.h"
#include "btl/sm/ring.h"
#include "progress/cpu_page.h"

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

struct Corrupt {};  // thrown where the transport would end the job

volatile uint64_t sink = 0;

void read_bytes(const uint8_t* msg, uint32_t length) {
  for (uint32_t i = 0; i < length; ++i) sink = sink + msg[i];
}

void walk(uint8_t* base, size_t size, uint32_t me) {
  const auto* h = reinterpret_cast<const SegmentHeader*>(base);
  const uint32_t rings = h->nrings;
  const uint64_t capacity = h->ring_capacity;
  check(segment_bytes(rings, capacity) <= size);
  for (uint32_t r = 0; r < rings; ++r) {
    RingControl* control = ring_of(base, rings, capacity, r);
    sink = sink + control->head.load(std::memory_order_relaxed);
    RingReader reader;
    reader.attach(control, capacity, h->record_step);
    for (int k = 0; k < 256; ++k) {
      uint32_t am = 0, length = 0;
      const uint8_t* msg = nullptr;
      int got = reader.next(&am, &msg, &length);
      if (got != RingReader::kMessage) break;
      check(msg >= base && msg + length <= base + size);
      read_bytes(msg, length);
      reader.take(length);
    }
  }
  Inbox inbox;
  inbox.init(doorbells_of(base), rings, me);
  for (uint32_t r = 0; r < rings; ++r) inbox.reader(r).attach(ring_of(base, rings, capacity, r), capacity, h->record_step);
  try {
    for (uint32_t round = 0; round < kSweepEvery; ++round)
      inbox.poll([&](uint32_t, uint32_t, const uint8_t* msg, uint32_t length) { read_bytes(msg, length); },
                 [](uint32_t) { throw Corrupt{}; });
  } catch (const Corrupt&) {
  }
  for (uint64_t key = 0; key <= kCopyDescriptors + 1; ++key)
    if (descriptor_key_ok(key)) sink = sink + descriptors_of(base, rings)[key - 1].length;
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
      check(me < rings && len >= rings_offset(rings));
      walk(seg.p, len, me);
    }
  }
  {
    // The same bytes as the node's CPU page of `rings` ranks.
    Aligned page(len);
    if (len) std::memcpy(page.p, data + 2, len);
    if (axon::progress::check_cpu_page(page.p, len, rings) == nullptr) {
      check(axon::progress::cpu_page_bytes(rings) <= len);
      const axon::progress::CpuLine* lines = axon::progress::cpu_lines_of(page.p);
      for (uint32_t r = 0; r < rings; ++r) sink = sink + uint64_t(lines[r].cpu_plus_one.load());
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
