// btl/tcp's bytes: the handshake record, the frame header and the business
// card, and their parsers. Everything here is a pure function of a byte
// buffer (no sockets, no state), so test/fuzz runs the very code the
// transport uses on arbitrary input. docs/tcp.md has the layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace axon::btl::tcp {

constexpr uint32_t kCardMagic = 0x41584354;   // "AXCT"
constexpr uint32_t kHelloMagic = 0x41584853;  // "AXHS"
constexpr uint16_t kVersion = 1;
constexpr uint16_t kFrameMagic = 0xA7C5;
constexpr int kTokenBytes = 16;

enum HelloKind : uint16_t { kHello = 1, kAccept = 2, kReject = 3 };

// The first bytes on every connection, in both directions. All integers in
// host order: the job runs on one architecture (a peer of another byte
// order fails the magic check and is rejected).
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  uint32_t length;     // bytes after this field: sizeof(Hello) - 12
  int32_t from_rank;
  int32_t to_rank;
  uint32_t link;       // 0: the ordered connection; k > 0: striping connection k
  uint64_t job;        // hash of the PMIx namespace
  uint8_t token[kTokenBytes];  // Hello: the listener's; Accept: the connector's
};
static_assert(sizeof(Hello) == 48);
constexpr uint32_t kHelloBody = sizeof(Hello) - 12;

struct FrameHeader {
  uint32_t length;  // message bytes, without this header and the padding
  uint8_t am_id;
  uint8_t flags;    // kFlagBye: the sender is finalizing, a close will follow
  uint16_t magic;
};
static_assert(sizeof(FrameHeader) == 8);
constexpr uint8_t kFlagBye = 1;

struct CardHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t count;
  uint8_t token[kTokenBytes];
};
struct CardEntry {
  uint32_t addr;  // network order
  uint32_t mask;  // network order
  uint16_t port;  // network order
  uint8_t loopback;
  uint8_t pad;
  uint32_t speed_mbs;  // 0 when unknown
};
static_assert(sizeof(CardHeader) == 24 && sizeof(CardEntry) == 16);

inline size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

inline bool same_token(const uint8_t* a, const uint8_t* b) {
  unsigned diff = 0;  // no early exit: the time taken says nothing about the token
  for (int i = 0; i < kTokenBytes; ++i) diff |= unsigned(a[i] ^ b[i]);
  return diff == 0;
}

// What the bytes at the head of a connection's input hold.
struct Parsed {
  enum Kind { NeedMore, Handshake, Frame, Bad } kind = NeedMore;
  size_t consumed = 0;  // Handshake / Frame: bytes the record takes (frames: with padding)
  Hello hello{};        // Handshake
  FrameHeader frame{};  // Frame (payload at offset sizeof(FrameHeader))
  const char* why = nullptr;  // Bad: what is wrong, for the log
};

// The next record of `avail` bytes at `p`: a handshake record while
// `handshake` (the connection is not authenticated yet), else a frame of
// at most `max_frame` bytes with an active-message id below `max_am_ids`.
// A handshake is refused as soon as its first 4 (magic) or 12 (version,
// length) bytes are wrong, so garbage is turned away before 48 bytes came.
Parsed parse_next(bool handshake, const uint8_t* p, size_t avail, size_t max_frame, int max_am_ids);

// A business card as published through PMIx (key axon.btl.tcp): false when
// it is not one this version reads.
struct Card {
  uint8_t token[kTokenBytes] = {};
  std::vector<CardEntry> entries;
};
bool parse_card(const uint8_t* p, size_t len, Card* out);
std::vector<uint8_t> make_card(const uint8_t* token, const std::vector<CardEntry>& entries);

}  // namespace axon::btl::tcp
