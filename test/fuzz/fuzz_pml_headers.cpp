// libFuzzer target: the PML's message checks and its reading of a matched
// message's headers (src/pml/decode.h), which every message from a peer
// passes before a handler sees it.
// Input: the active-message id (byte 0), then the message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pml/decode.h"

using namespace axon::pml;

namespace {
void check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int am_id = data[0] % 20;
  std::vector<uint8_t> msg(data + 1, data + size);
  if (check_message(am_id, msg.data(), msg.size()) != nullptr) return 0;
  volatile uint64_t sink = 0;
  if (am_id == kAmEager || am_id == kAmEagerShort || am_id == kAmEagerSync || am_id == kAmRts ||
      am_id == kAmRtsDevice) {
    // What on_match_message reads.
    MatchHeader h;
    size_t header_len = am_id == kAmEagerShort ? sizeof(ShortMatchHeader) : sizeof h;
    if (am_id == kAmEagerShort) {
      h = expand_short(msg.data(), msg.size());
      check(h.length == msg.size() - header_len);
      am_id = kAmEager;
    } else {
      std::memcpy(&h, msg.data(), sizeof h);
    }
    check(h.source >= 0 && h.source < kMaxSource);
    const uint8_t* rest = msg.data() + header_len;
    size_t rest_len = msg.size() - header_len;
    MatchRest r;
    parse_match_rest(am_id, rest, rest_len, &r);
    check(r.payload >= rest && r.payload + r.payload_len <= rest + rest_len);
    for (size_t i = 0; i < r.payload_len; ++i) sink = sink + r.payload[i];
  } else {
    // The handlers read their fixed part: as long as check_message asked.
    uint8_t fixed[64];
    size_t n = am_id == kAmCtsPut ? sizeof(PutCtsInfo) : am_id == kAmCancel ? sizeof(CancelInfo) : 16;
    if (am_id >= kAmSegAck) n = sizeof(SegInfo);
    std::memcpy(fixed, msg.data(), n);
    sink = sink + fixed[0];
    if (am_id == kAmFrag) {
      size_t payload = msg.size() - sizeof(FragInfo);  // on_frag's data_len
      check(payload <= msg.size());
    }
  }
  return 0;
}
