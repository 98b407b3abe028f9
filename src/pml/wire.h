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
};

struct MatchHeader {
  uint32_t context;
  int32_t source;   // sender's rank in the communicator
  int32_t tag;
  uint32_t seq;     // per (context, sender, receiver) order
  uint64_t length;  // bytes in the whole message
};
static_assert(sizeof(MatchHeader) == 24);

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
