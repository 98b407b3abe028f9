// libFuzzer target: btl/tcp's parsers (src/btl/tcp/wire.h), the code the
// transport runs on every byte a connection brings and on every business
// card it reads from PMIx.
// Input: one mode byte, then the bytes. Mode bit 0 set: a business card;
// clear: a connection's byte stream (a handshake record, then frames, with
// a frame limit of 1 KiB << (mode >> 5)), consumed the way
// TcpTransport::consume does; every prefix of the first record must be
// answered "need more" or "bad", never a record longer than itself.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "btl/tcp/wire.h"

using namespace axon::btl::tcp;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void stream(const std::vector<uint8_t>& bytes, size_t max_frame) {
  bool handshake = true;
  size_t pos = 0;
  while (pos < bytes.size()) {
    // An exact copy of what is left: a read past it is a heap overflow.
    std::vector<uint8_t> left(bytes.begin() + static_cast<ptrdiff_t>(pos), bytes.end());
    Parsed p = parse_next(handshake, left.data(), left.size(), max_frame, 32);
    if (p.kind == Parsed::NeedMore || p.kind == Parsed::Bad) {
      check(p.kind == Parsed::NeedMore || p.why != nullptr);
      return;
    }
    check(p.consumed > 0 && p.consumed <= left.size());
    if (p.kind == Parsed::Frame) {
      check(p.frame.length <= max_frame && p.frame.am_id < 32);
      check(sizeof(FrameHeader) + p.frame.length <= p.consumed);
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < p.frame.length; ++i) sink = sink ^ left[sizeof(FrameHeader) + i];
    } else {
      check(handshake && p.consumed == sizeof(Hello));
      handshake = false;
    }
    pos += p.consumed;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (mode & 1) {
    Card card;
    if (parse_card(bytes.data(), bytes.size(), &card)) check(make_card(card.token, card.entries) == bytes);
    return 0;
  }
  size_t max_frame = size_t(1024) << (mode >> 5);
  stream(bytes, max_frame);
  for (size_t k = 0; k < bytes.size() && k < 64; ++k) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(k));
    Parsed p = parse_next(true, prefix.data(), prefix.size(), max_frame, 32);
    check(p.kind != Parsed::Handshake || p.consumed <= k);
    p = parse_next(false, prefix.data(), prefix.size(), max_frame, 32);
    check(p.kind != Parsed::Frame || p.consumed <= k);
  }
  return 0;
}
