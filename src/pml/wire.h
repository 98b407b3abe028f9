// What the PML puts on the wire: active-message ids and headers.
#pragma once

#include <cstdint>

#include "accel/accel.h"

namespace axon::pml {

enum AmId : int {
  kAmEager = 1,      // MatchHeader + payload
  kAmEagerSync = 2,  // MatchHeader + SyncInfo + payload; receiver answers kAmSyncAck on match
  kAmRts = 3,        // MatchHeader + RtsInfo: ready to send a large message
  kAmFin = 4,        // ReplyInfo: receiver has read the sender's buffer
  kAmSyncAck = 5,    // ReplyInfo: a synchronous eager message was matched
  kAmCts = 6,        // ReplyInfo: clear to send fragments (no single-copy path)
  kAmFrag = 7,       // FragInfo + payload
  kAmCancel = 8,     // CancelInfo: the sender asks to withdraw an unmatched message
  kAmCancelReply = 9,  // CancelReplyInfo
  kAmRtsDevice = 10,   // MatchHeader + RtsInfo + DeviceRtsInfo: a large message in GPU memory
  kAmCtsPut = 11,      // PutCtsInfo: receiver exposed its buffer; the sender writes it (put) ...
  kAmPutFin = 12,      // ReplyInfo: ... and then says it is done (sender_request: 0 ok, 1 failed)
  kAmSegAck = 13,      // SegInfo: the receiver read segment `index` of a segmented RTS
  kAmSegKey = 14,      // SegInfo: the sender exposed segment `index` under `key`
  kAmPutSegAck = 15,   // SegInfo: RPUT in segments: the sender wrote segment `index`
  kAmPutSegKey = 16,   // SegInfo: the receiver exposed segment `index` under `key`
  kAmEagerShort = 17,  // ShortMatchHeader + payload: kAmEager whose length is its payload's
};

struct MatchHeader {
  uint32_t context;
  int32_t source;   // sender's rank in the communicator
  int32_t tag;
  uint32_t seq;     // per (context, sender, receiver) order
  uint64_t length;  // bytes in the whole message
};
static_assert(sizeof(MatchHeader) == 24);

// A standard eager message's header without the length, which is the
// payload's: 16 bytes instead of 24 in front of every small message (with
// the transport's own header, a 1-byte message then takes a third less of
// a cache line).
struct ShortMatchHeader {
  uint32_t context;
  int32_t source;
  int32_t tag;
  uint32_t seq;
};
static_assert(sizeof(ShortMatchHeader) == 16);

struct SyncInfo {
  uint64_t sender_request;
};

struct RtsInfo {
  uint64_t sender_request;
  uint64_t address;  // of the data in the sender's address space
  uint64_t key;      // the transport's key for reading it (Transport::expose)
  uint8_t synchronous;
  uint8_t flags;     // kRts* below
  uint8_t pad[6];
};
// The sender did not expose its buffer for reading (its transport prefers
// RDMA WRITE, Caps::can_put without can_get): the receiver must answer
// kAmCtsPut (or kAmCts), never read.
constexpr uint8_t kRtsNotReadable = 1;
// The sender exposed its buffer in segments (Caps::expose_segment), two at a
// time: SegRtsInfo follows RtsInfo; RtsInfo::key is segment 0's key. The
// receiver reads the segments in order and acknowledges each but the last
// (kAmSegAck), on which the sender releases it and exposes the segment two
// further (kAmSegKey): registration of segment k+2 overlaps reading k+1,
// the first byte moves after two segments were registered instead of the
// whole buffer, and the sender holds at most two registered at once. FIN
// ends it as usual.
constexpr uint8_t kRtsSegmented = 2;
struct SegRtsInfo {
  uint64_t segment;  // bytes per segment (the last one: the rest)
  uint64_t key1;     // segment 1's key
};
// RPUT the other way round: a receive buffer larger than two segments is
// exposed two at a time; kAmCtsPut then carries SegRtsInfo after PutCtsInfo
// (PutCtsInfo::key: segment 0), the sender writes the segments in order and
// acknowledges each but the last (kAmPutSegAck), the receiver releases it
// and exposes the one two further (kAmPutSegKey); PUT-FIN ends it.
// kAmSegAck: `key` is how many bytes the receiver reads in all (it may be
// shorter than the message), so the sender exposes no segment it would not read.
struct SegInfo {
  uint64_t sender_request;
  uint64_t receiver_request;
  uint64_t index;
  uint64_t key;
};

// kAmCtsPut: where the sender writes the message (at most `length` bytes:
// the receive buffer may be shorter than the message).
struct PutCtsInfo {
  uint64_t sender_request;
  uint64_t receiver_request;
  uint64_t address;  // in the receiver's address space
  uint64_t key;      // Transport::expose_writable
  uint64_t length;
};

// Follows RtsInfo in kAmRtsDevice. RtsInfo::address is the sender's device
// address (usable as is only by the same process); `ipc` opens it from
// another process of the node. The receiver answers FIN when it copied the
// data through IPC, or CTS to have it staged through host fragments.
struct DeviceRtsInfo {
  uint8_t has_ipc;
  uint8_t pad[7];
  accel::IpcHandle ipc;
};

struct ReplyInfo {
  uint64_t sender_request;
  uint64_t receiver_request;
};

struct CancelInfo {
  uint64_t sender_request;
  uint32_t context;
  int32_t source;
  uint32_t seq;
  uint32_t pad;
};

struct CancelReplyInfo {
  uint64_t sender_request;
  uint64_t withdrawn;  // 1: the message was removed unmatched; 0: it was already matched
};

struct FragInfo {
  uint64_t receiver_request;
  uint64_t offset;
};

}  // namespace axon::pml
