#include "btl/tcp/wire.h"

#include <cstring>

namespace axon::btl::tcp {

namespace {

Parsed bad(const char* why) {
  Parsed r;
  r.kind = Parsed::Bad;
  r.why = why;
  return r;
}

Parsed parse_handshake(const uint8_t* p, size_t avail) {
  Parsed r;
  if (avail >= 4) {
    uint32_t magic;
    std::memcpy(&magic, p, 4);
    if (magic != kHelloMagic) return bad("not an Axon connection (garbage instead of a handshake)");
  }
  if (avail >= 12) {
    uint16_t version;
    uint32_t length;
    std::memcpy(&version, p + 4, 2);
    std::memcpy(&length, p + 8, 4);
    if (version != kVersion) return bad("handshake of another version");
    if (length > kHelloBody) return bad("oversized handshake (length too large)");
    if (length < kHelloBody) return bad("malformed handshake (length too small)");
  }
  if (avail < sizeof(Hello)) return r;
  r.kind = Parsed::Handshake;
  r.consumed = sizeof(Hello);
  std::memcpy(&r.hello, p, sizeof(Hello));
  return r;
}

Parsed parse_frame(const uint8_t* p, size_t avail, size_t max_frame, int max_am_ids) {
  Parsed r;
  if (avail < sizeof(FrameHeader)) return r;
  FrameHeader fh;
  std::memcpy(&fh, p, sizeof fh);
  r.frame = fh;
  if (fh.magic != kFrameMagic || fh.am_id >= max_am_ids || fh.length > max_frame || (fh.flags & ~kFlagBye)) {
    r.kind = Parsed::Bad;
    r.why = "malformed message header";
  }
  if (r.kind == Parsed::Bad) return r;
  size_t need = sizeof fh + padded(fh.length);
  if (avail < need) return r;
  r.kind = Parsed::Frame;
  r.consumed = need;
  return r;
}

}  // namespace

Parsed parse_next(bool handshake, const uint8_t* p, size_t avail, size_t max_frame, int max_am_ids) {
  return handshake ? parse_handshake(p, avail) : parse_frame(p, avail, max_frame, max_am_ids);
}

bool parse_card(const uint8_t* p, size_t len, Card* out) {
  CardHeader h;
  if (len < sizeof h) return false;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kCardMagic || h.version != kVersion || len != sizeof h + size_t(h.count) * sizeof(CardEntry))
    return false;
  std::memcpy(out->token, h.token, sizeof h.token);
  out->entries.resize(h.count);
  if (h.count) std::memcpy(out->entries.data(), p + sizeof h, size_t(h.count) * sizeof(CardEntry));
  return true;
}

std::vector<uint8_t> make_card(const uint8_t* token, const std::vector<CardEntry>& entries) {
  std::vector<uint8_t> card(sizeof(CardHeader) + entries.size() * sizeof(CardEntry));
  CardHeader h{kCardMagic, kVersion, static_cast<uint16_t>(entries.size()), {}};
  std::memcpy(h.token, token, kTokenBytes);
  std::memcpy(card.data(), &h, sizeof h);
  if (!entries.empty()) std::memcpy(card.data() + sizeof h, entries.data(), entries.size() * sizeof(CardEntry));
  return card;
}

}  // namespace axon::btl::tcp
