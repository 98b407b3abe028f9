#include "pml/decode.h"

#include <cstring>

namespace axon::pml {

void parse_match_rest(int am_id, const uint8_t* rest, size_t rest_len, MatchRest* out) {
  out->sender_request = out->address = out->key = out->segment = out->key1 = 0;
  out->synchronous = out->has_ipc = false;
  out->readable = true;
  out->payload = rest;
  out->payload_len = rest_len;
  if (am_id == kAmEagerSync) {
    SyncInfo s;
    std::memcpy(&s, rest, sizeof s);
    out->sender_request = s.sender_request;
    out->synchronous = true;
    out->payload += sizeof s;
    out->payload_len -= sizeof s;
  } else if (am_id == kAmRts || am_id == kAmRtsDevice) {
    RtsInfo info;
    std::memcpy(&info, rest, sizeof info);
    out->sender_request = info.sender_request;
    out->address = info.address;
    out->key = info.key;
    out->synchronous = info.synchronous;
    out->readable = !(info.flags & kRtsNotReadable);
    if (am_id == kAmRts && (info.flags & kRtsSegmented) && rest_len >= sizeof info + sizeof(SegRtsInfo)) {
      SegRtsInfo seg;
      std::memcpy(&seg, rest + sizeof info, sizeof seg);
      out->segment = seg.segment;
      out->key1 = seg.key1;
    }
    if (am_id == kAmRtsDevice) {
      DeviceRtsInfo dev;
      std::memcpy(&dev, rest + sizeof info, sizeof dev);
      out->has_ipc = dev.has_ipc != 0;
      if (out->has_ipc) out->ipc = dev.ipc;
    }
    out->payload_len = 0;
  }
}

}  // namespace axon::pml
