// Shared between the PML's files; not an interface for other layers.
#pragma once

#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "btl/btl.h"
#include "pml/payload.h"
#include "pml/pml.h"
#include "pml/wire.h"

namespace axon::pml {

// A message that arrived before a matching receive was posted.
// The magic lets MPI_Mrecv / MPI_Imrecv reject a garbage MPI_Message (pml::message_valid).
inline constexpr uint32_t kMessageMagic = 0x4d534721u;  // "MSG!"

struct Message {
  uint32_t magic = kMessageMagic;
  MatchHeader header{};
  int source_world = -1;
  int am_id = 0;
  uint64_t sender_request = 0;
  uint64_t address = 0;           // rendezvous: data in the sender
  uint64_t key = 0;               // rendezvous: the transport's key for it
  bool synchronous = false;
  bool readable = true;           // rendezvous: the sender exposed its data for get()
  uint64_t segment = 0;           // rendezvous: exposed in segments of this size (kRtsSegmented)
  uint64_t key1 = 0;              // ... and segment 1's key
  Payload payload;                // eager: the data
  // kAmRtsDevice with an IPC handle of the sender's GPU buffer: in the
  // arriving packet's parse while the message is delivered at once (no
  // allocation per message), in `ipc_kept` once it waits unexpected (host
  // messages pay only for two null pointers).
  const accel::IpcHandle* ipc = nullptr;
  std::unique_ptr<const accel::IpcHandle> ipc_kept;
};

// Matching state of one context id. Exists as soon as a message for the id
// arrives, even before this process created the communicator.
struct MatchQueues {
  Context* ctx = nullptr;
  Request* posted_head = nullptr;   // receives in posting order
  Request* posted_tail = nullptr;
  std::deque<Message*> unexpected;  // arrival order
  std::vector<uint32_t> expected_seq;     // by source rank
  std::vector<Message*> out_of_order;     // arrived ahead of their turn (rare)
};

MatchQueues* queues_for(uint32_t context_id);
void drop_queues(uint32_t context_id);

bool matches(int want_source, int want_tag, const MatchHeader& h);
void posted_append(MatchQueues* q, Request* r);
void posted_remove(MatchQueues* q, Request* r);

// Arrival handlers (registered with the BTL).
void on_match_message(int am_id, int src_world, const void* msg, size_t len);  // eager, eager-sync, rts
void on_reply(int src_world, const void* msg, size_t len);          // fin, sync-ack, cts
void on_frag(int src_world, const void* msg, size_t len);
void on_cts_put(int src_world, const void* msg, size_t len);  // sender: write, then kAmPutFin
void on_put_fin(int src_world, const void* msg, size_t len);  // receiver: the data is in place
void on_seg_ack(int src_world, const void* msg, size_t len);  // sender: segment read, expose the next
void on_seg_key(int src_world, const void* msg, size_t len);  // receiver: the next segment's key
void on_put_seg_ack(int src_world, const void* msg, size_t len);  // RPUT receiver: segment written
void on_put_seg_key(int src_world, const void* msg, size_t len);  // RPUT sender: the next segment's key
void on_cancel(int src_world, const void* msg, size_t len);
void on_cancel_reply(int src_world, const void* msg, size_t len);
// Sends a cancel request for a send whose message may wait unmatched at the
// receiver (or marks a still queued one to follow it); no-op otherwise.
void cancel_send(Request* r);
// Whether a send's cancel has its answer: nothing is out or to go out.
bool cancel_answered(const Request* r);

// Delivers a message (arrived or unexpected) into a matched receive.
void deliver(Request* recv, Message& m, const void* eager_payload, size_t payload_len);
// The same for a standard eager message matched as it arrives (no Message
// is built: match.cpp's fast path for kAmEagerShort).
void deliver_eager(Request* recv, const MatchHeader& h, const void* payload, size_t payload_len);

// Sends a control reply; queued and retried when the transport is full.
void send_reply(int dest_world, int am_id, uint64_t sender_request, uint64_t receiver_request);
// Same for any control message of at most sizeof(PutCtsInfo) bytes.
void send_control(int dest_world, int am_id, const void* info, size_t len);
// Retries queued sends, fragments and replies; returns how many went out.
int retry_pending();
// The blocking-send fast path: a standard-mode eager message goes out with
// no request at all. kAgain when it cannot (too large, queue full, earlier
// sends to that peer still queued); nothing was consumed then. `seq`, when
// given, gets the message's sequence number.
int send_immediate(const void* buf, size_t len, int dest, int tag, Context* ctx, uint32_t* seq = nullptr);
// Starts an initialized send request (assigns its sequence number).
int start_send(Request* r);
int start_recv(Request* r);

// ---- GPU buffers (device.cpp, docs/cuda.md) ----------------------------------
constexpr uint8_t kDeviceBuffer = 1;  // Request::device: the buffer is device or managed memory
constexpr uint8_t kDeviceIpc = 2;     // ... and plain device memory (may have an IPC handle)
// Classifies a starting request's buffer. A non-contiguous device buffer
// gets a host shadow (the whole span copied; receives copy it back at
// completion) and the request continues as a host request.
int device_stage(Request* r, bool send);
// At completion (request_complete): copy a receive's shadow back, free buffers.
void device_complete(Request* r);
// Frees the pooled per-request device states (pml::finalize).
void device_states_free();
// Largest device message sent eager (one synchronous copy) over `t`.
size_t device_eager_limit(const Request* r, const btl::Transport* t);
// Sender: copies the device data into r->staging for an eager send.
int device_stage_eager(Request* r);
// Sender: announces a large device message (kAmRtsDevice), with an IPC handle
// when the peer is on this node and IPC is enabled. Returns the BTL's code.
int device_send_rts(Request* r, btl::Transport* t, const MatchHeader& h);
// Sender after CTS: pipelined staging device -> pinned host -> fragments.
// True when every fragment is out (or an error was recorded in r->error).
bool device_stream(Request* r, btl::Transport* t);
// Receiver: a fragment for a device buffer (collected in a pinned chunk).
void device_frag(Request* r, uint64_t offset, const uint8_t* data, size_t len);
// Receiver: copies what is left in the pinned chunk to the device.
void device_recv_flush(Request* r);
// Receiver of kAmRtsDevice: where to read the sender's data in this process
// (same process or an opened IPC mapping), or nullptr to stage.
const void* device_source(const Message& m);

// ---- protocol state shared by protocol.cpp (eager, fragments, cancel) and
// rndv.cpp (rendezvous single-copy transfers) ---------------------------------
// kSendEagerSent: a standard or ready eager message left and the request
// completed, but the message may still wait unmatched at the receiver (a
// cancel can withdraw it there).
enum SendState : uint8_t { kSendQueued = 1, kSendWaitAck, kSendWaitFin, kSendWaitCts, kSendStreaming, kSendEagerSent };
// kRecvReading: a single-copy read of the whole message is in flight.
enum RecvState : uint8_t { kRecvPosted = 1, kRecvFragments, kRecvWaitPut, kRecvSegments, kRecvReading };

// The bytes a send moves: the packed copy of a non-contiguous buffer, or the
// buffer itself; the receiving side's counterpart.
const uint8_t* send_data(const Request* r);
uint8_t* recv_data(Request* r);
bool non_contiguous(const Request* r);
// Packs a non-contiguous send whole into r->staging (kOk, or kNoMemory).
int stage_whole_send(Request* r);
// The segment size of a rendezvous send over `t` exposed in segments
// (wire.h kRtsSegmented), 0 when it goes whole: the transport's
// Caps::expose_segment, or for non-contiguous data AXON_PML_PACK_SEGMENT,
// so that packing segment k+2 overlaps the receiver's read of k+1.
size_t send_segment(const Request* r, const btl::Caps& caps);
// Packs r->staging up to byte `end` (in order; nothing for contiguous data
// or bytes already packed).
void pack_send_through(Request* r, size_t end);
// A receive / send whose protocol finished: unpack, release, complete.
void finish_recv(Request* r);
void finish_send(Request* r);
// Counts a send that went by rendezvous (RTS first).
void count_rendezvous_send();

// ---- rendezvous (rndv.cpp) -----------------------------------------------------
// Sender: announces a host message above the eager limit (kAmRts), exposing
// its buffer as `t` allows. The BTL's code.
int rndv_send_rts(Request* r, btl::Transport* t, const MatchHeader& h);
// Receiver: a matched kAmRts whose `n` bytes (at most the receive's size) can
// move in one copy over `t`: starts the read (RGET) or exposes the buffer for
// the sender's write (RPUT) and returns true. False: stream fragments instead.
bool rndv_receive(Request* r, Message& m, btl::Transport* t, size_t n);
// Releases what a rendezvous send or receive exposed (whole buffer or segments).
void release_exposure(Request* r);
// Posts transfers that found the transport full; returns how many moved.
int rndv_retry();
// Whether a transfer waits in rndv_retry's queue (the idle progress path
// tests this flag instead of calling it).
extern bool rndv_stalled;

// ---- multi-rail striping (stripe.cpp) ------------------------------------------
// The rail of `t` to `peer` that should carry the next `len` bytes: of the
// usable rails (Transport::rails, weight > 0) not in `refused` (bit k: rail k
// said kAgain just now), the one that would finish its share of the bytes so
// far first, shares weighted by Transport::rail_weight. -1 when every usable
// rail refused. Rail 0 at once for a peer with one rail.
int pick_rail(btl::Transport* t, int peer, size_t len, unsigned refused);
// `rail` took `len` bytes for `peer` (after a kOk from the transport).
void charge_rail(btl::Transport* t, int peer, int rail, size_t len);
// Posts `len` bytes for `peer` with post(rail) (the transport's code) on the
// rail pick_rail chooses, trying the others while rails answer kAgain, and
// charges the rail that took them. kAgain when every usable rail refused.
template <class Post> int post_striped(btl::Transport* t, int peer, size_t len, Post post) {
  int rc = kAgain;
  unsigned refused = 0;
  for (int rail; rc == kAgain && (rail = pick_rail(t, peer, len, refused)) >= 0; refused |= 1u << rail) {
    rc = post(rail);
    if (rc == kOk) charge_rail(t, peer, rail, len);
  }
  return rc;
}
// Forgets the rails' shares (btl finalize: peers and transports go away).
void reset_rails();

// The hang doctor lists sends that wait (describe_pending_sends): each one
// is linked when it starts waiting, unlinked by request_release (pml.cpp).
void track_pending_send(Request* r);

// ---- path explain (explain.cpp): AXON_EXPLAIN ------------------------------------
extern bool explain_sends;  // AXON_EXPLAIN, read at init
void explain_init();
// Prints the path of a send (once per peer class, size class and memory
// kind); `r` is null for a send without a request (send_immediate).
void explain_send(int dest_world, size_t length, SendMode mode, bool contiguous, const Request* r,
                  const btl::Transport* t);

// ---- traffic by peer (traffic.cpp) ------------------------------------------------
// The table behind traffic(); counting is two adds, under the PML lock.
extern std::vector<PeerTraffic> peer_traffic;
void grow_traffic(int dest_world);
inline void count_traffic(int dest_world, uint32_t context_id, size_t length, PeerTraffic::Protocol protocol) {
  if (size_t(dest_world) >= peer_traffic.size()) [[unlikely]] grow_traffic(dest_world);
  PeerTraffic& t = peer_traffic[size_t(dest_world)];
  const int origin = (context_id & 1) ? PeerTraffic::kCollective : PeerTraffic::kPointToPoint;
  ++t.messages[origin][protocol];
  t.bytes[origin][protocol] += length;
}

inline Request* from_id(uint64_t id) { return reinterpret_cast<Request*>(id); }
inline uint64_t to_id(Request* r) { return reinterpret_cast<uint64_t>(r); }

}  // namespace axon::pml
