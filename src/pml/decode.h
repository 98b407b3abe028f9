// What the PML accepts from a transport before a handler looks at it: every
// message long enough for its headers, the sender's rank in range, and the
// fields after a matched message's MatchHeader read in one place. Pure
// functions of a byte buffer, so test/fuzz runs them on arbitrary input.
//
// Only authenticated peers of the job reach these (btl/tcp's handshake,
// btl/sm's private segments, docs/security.md): the checks keep a message
// that is malformed -- by a bug or memory corruption in a peer -- from
// reading past its end or allocating without bound; they cannot make a
// hostile peer of the job harmless (request ids are addresses, by design).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pml/wire.h"

namespace axon::pml {

// A sender's rank in a communicator is below this (the matching tables
// grow to it).
constexpr int32_t kMaxSource = 1 << 22;

// nullptr when the `len` bytes at `msg` are a well-formed message of
// `am_id` (one of AmId), else what is wrong with it. (Inline: every
// message passes it.)
inline const char* check_message(int am_id, const void* msg, size_t len) {
  size_t need = 0;
  bool matched = false;
  switch (am_id) {
    case kAmEager: need = sizeof(MatchHeader), matched = true; break;
    case kAmEagerShort: need = sizeof(ShortMatchHeader); break;  // its source is checked below
    case kAmEagerSync: need = sizeof(MatchHeader) + sizeof(SyncInfo), matched = true; break;
    case kAmRts: need = sizeof(MatchHeader) + sizeof(RtsInfo), matched = true; break;
    case kAmRtsDevice: need = sizeof(MatchHeader) + sizeof(RtsInfo) + sizeof(DeviceRtsInfo), matched = true; break;
    case kAmFin:
    case kAmSyncAck:
    case kAmCts:
    case kAmPutFin: need = sizeof(ReplyInfo); break;
    case kAmFrag: need = sizeof(FragInfo); break;
    case kAmCancel: need = sizeof(CancelInfo); break;
    case kAmCancelReply: need = sizeof(CancelReplyInfo); break;
    case kAmCtsPut: need = sizeof(PutCtsInfo); break;
    case kAmSegAck:
    case kAmSegKey:
    case kAmPutSegAck:
    case kAmPutSegKey: need = sizeof(SegInfo); break;
    default: return "not a message of the PML";
  }
  if (len < need) return "shorter than its headers";
  if (matched) {
    MatchHeader h;
    std::memcpy(&h, msg, sizeof h);
    if (h.source < 0 || h.source >= kMaxSource) return "its sender's rank is out of range";
  }
  if (am_id == kAmEagerShort) {
    ShortMatchHeader h;
    std::memcpy(&h, msg, sizeof h);
    if (h.source < 0 || h.source >= kMaxSource) return "its sender's rank is out of range";
  }
  if (am_id == kAmCancel) {
    CancelInfo c;
    std::memcpy(&c, msg, sizeof c);
    if (c.source < 0 || c.source >= kMaxSource) return "its sender's rank is out of range";
  }
  return nullptr;
}

// The MatchHeader of a kAmEagerShort message check_message() accepted.
inline MatchHeader expand_short(const void* msg, size_t len) {
  ShortMatchHeader s;
  std::memcpy(&s, msg, sizeof s);
  return MatchHeader{s.context, s.source, s.tag, s.seq, len - sizeof s};
}

// The fields of a matched message (kAmEager, kAmEagerSync, kAmRts,
// kAmRtsDevice) after its MatchHeader: `rest`, `rest_len` bytes of a
// message check_message() accepted (kAmEagerShort's rest is kAmEager's).
struct MatchRest {
  uint64_t sender_request = 0;
  uint64_t address = 0;
  uint64_t key = 0;
  bool synchronous = false;
  bool readable = true;
  uint64_t segment = 0;
  uint64_t key1 = 0;
  bool has_ipc = false;
  accel::IpcHandle ipc;  // only with has_ipc
  const uint8_t* payload = nullptr;  // eager: the data
  size_t payload_len = 0;
};
void parse_match_rest(int am_id, const uint8_t* rest, size_t rest_len, MatchRest* out);

}  // namespace axon::pml
