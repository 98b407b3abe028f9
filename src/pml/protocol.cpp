// The eager protocol, fragments, the send queues and cancellation.
//
//  eager        payload rides with the match header when it fits the
//               transport's eager limit; synchronous sends wait for an ack.
//  rendezvous   rndv.cpp: the receiver reads the sender's buffer (RGET) or
//               the sender writes the receiver's (RPUT) in one copy.
//  fragments    without single-copy support the receiver answers a
//               rendezvous announcement with CTS and the sender streams
//               fragments of at most the eager limit.
//  GPU buffers  device.cpp: eager through one copy, CUDA IPC between ranks
//               of one node (kAmRtsDevice + FIN), or pipelined staging
//               through pinned host chunks (CTS + fragments).
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "accel/accel.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "base/status.h"
#include "diag/events.h"
#include "pml/internal.h"

namespace axon::pml {

const uint8_t* send_data(const Request* r) {
  return r->staging ? r->staging : static_cast<const uint8_t*>(r->buffer);
}

bool non_contiguous(const Request* r) { return !r->type->contiguous && r->length > 0; }

namespace {

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

SizeParam pack_segment_param{"AXON_PML_PACK_SEGMENT", 64 * 1024,
                             "Non-contiguous sends larger than twice this many bytes that the receiver reads in "
                             "one copy are packed and read in segments of this size, packing one while the "
                             "previous is read (0: pack the whole message first)"};

}  // namespace

// Packs the whole message once, for a protocol that sends it in one piece.
int stage_whole_send(Request* r) {
  if (!non_contiguous(r) || r->staging) return kOk;
  r->staging = static_cast<uint8_t*>(malloc(r->length));
  if (!r->staging) return kNoMemory;
  pack_items(*r->type, r->buffer, static_cast<size_t>(r->count), r->staging);
  r->packed = r->length;
  return kOk;
}

size_t send_segment(const Request* r, const btl::Caps& caps) {
  if (!caps.can_get && caps.can_put) return 0;  // RPUT: the receiver exposes; the sender writes whole
  size_t seg = caps.expose_segment;
  if (!seg && non_contiguous(r)) {
    // Whole pages (see the staging buffer in try_first_message).
    const size_t page = page_bytes();
    seg = (static_cast<size_t>(std::max<int64_t>(pack_segment_param.get(), 0)) + page - 1) / page * page;
  }
  return seg && r->length > 2 * seg ? seg : 0;
}

namespace {

// A control message (reply) waiting for room in the transport.
struct Reply {
  int dest_world;
  int am_id;
  uint8_t len;
  alignas(8) uint8_t bytes[sizeof(PutCtsInfo) + sizeof(SegRtsInfo)];  // the largest control message
};

std::deque<Request*> queued_sends;     // first message could not be sent yet
std::vector<int> queued_to;            // by world rank: queued sends to that peer
std::deque<Request*> streaming;        // senders pushing fragments
std::deque<Reply> queued_replies;



// ---- non-contiguous data -------------------------------------------------------
// Senders pack a non-contiguous message only when a protocol needs it in one
// piece: eager messages (at most the eager limit) and rendezvous reads
// (the receiver copies straight out of our memory). Fragments are packed one
// at a time by a convertor into a bounce buffer, and receivers unpack eager
// payloads and fragments straight into the user's buffer; only a rendezvous
// read lands in a staging buffer first. The cursors live here, keyed by
// request, from the first fragment to the end of the message.

struct FragmentCursor {
  Convertor cv;
  std::vector<uint8_t> bounce;  // sender: the fragment packed but not yet sent
  size_t pending = 0;
};
std::unordered_map<const Request*, FragmentCursor> cursors;

FragmentCursor& cursor_for(Request* r, size_t items) {
  auto it = cursors.find(r);
  if (it == cursors.end()) it = cursors.emplace(r, FragmentCursor{Convertor(*r->type, r->buffer, items), {}, 0}).first;
  return it->second;
}


Counter eager_sends{"axon_pml_eager_sends", Counter::Class::Counter,
                    "Sends whose data went with the first message (eager protocol)"};

Counter fragments_sent{"axon_pml_fragments_sent", Counter::Class::Counter,
                      "Fragments of large host messages streamed through the transport's eager path "
                      "(no single-copy transfer to that peer)"};
Counter pipelined_packs{"axon_pml_pipelined_packs", Counter::Class::Counter,
                       "Non-contiguous rendezvous sends packed segment by segment while the receiver reads "
                       "(AXON_PML_PACK_SEGMENT)"};
Counter eager_packed{"axon_pml_eager_packed", Counter::Class::Counter,
                    "Eager sends of non-contiguous data packed straight into the transport's buffer (no "
                    "staging copy)"};

// Packs a whole non-contiguous message (send_packed's callback).
void pack_whole(void* context, uint8_t* dst, size_t) {
  const Request* r = static_cast<const Request*>(context);
  pack_items(*r->type, r->buffer, static_cast<size_t>(r->count), dst);
}

// Sends an eager message's payload after `header`: packed by the transport
// when the data is non-contiguous, as it is otherwise.
int send_eager(btl::Transport* t, Request* r, int am_id, const void* header, size_t header_len) {
  if (non_contiguous(r) && !r->staging) {
    int rc = t->send_packed(r->dest_world, am_id, header, header_len, r->length, pack_whole, r);
    if (rc == kOk) eager_packed.add();
    return rc;
  }
  return t->send(r->dest_world, am_id, header, header_len, send_data(r), r->length);
}

// MPI_T's axon_protocol_switch: a send to a peer that takes another
// protocol than the previous one to it (the first send to a peer counts).
// Called only while a tool subscribes; the protocol is the sender's choice
// (a device buffer's IPC is offered, the receiver may still stage).
void note_protocol(int dest_world, size_t length, uint8_t device, SendMode mode, const btl::Transport* t) {
  using diag::events::Protocol;
  const btl::Caps& caps = t->caps();
  Protocol p;
  if (device && length > caps.eager_limit)
    p = (device & kDeviceIpc) && caps.ipc_peers ? Protocol::DeviceIpc : Protocol::DeviceStaged;
  else if (length <= caps.eager_limit)
    p = mode == SendMode::Synchronous ? Protocol::EagerSync : Protocol::Eager;
  else
    p = caps.can_get ? Protocol::RendezvousGet : caps.can_put ? Protocol::RendezvousPut : Protocol::Fragments;
  static std::vector<int> last;  // by world rank; -1: nothing sent yet
  if (last.size() <= size_t(dest_world)) last.resize(dest_world + 1, -1);
  if (last[dest_world] == static_cast<int>(p)) return;
  last[dest_world] = static_cast<int>(p);
  const std::string_view name = t->name();
  using diag::events::Transport;
  const Transport transport = name == "self"  ? Transport::Self
                              : name == "sm"  ? Transport::Sm
                              : name == "tcp" ? Transport::Tcp
                              : name == "verbs" ? Transport::Verbs
                                                : Transport::Other;
  diag::events::raise_protocol_switch(dest_world, length, transport, p);
}

// Tries to put the first message of a send on the wire.
int try_first_message(Request* r) {
  btl::Transport* t = btl::route(r->dest_world);
  if (diag::events::subscribed(diag::events::Event::ProtocolSwitch)) [[unlikely]]
    note_protocol(r->dest_world, r->length, r->device, r->mode, t);
  if (explain_sends) [[unlikely]]
    explain_send(r->dest_world, r->length, r->mode, !non_contiguous(r), r, t);
  MatchHeader h{r->ctx->id, r->ctx->rank, r->match_tag, r->seq, r->length};
  int rc;
  if (r->device) {
    // GPU memory: large messages are announced with the device RTS; small
    // ones are copied to the host once and go eager below.
    if (r->length > device_eager_limit(r, t)) {
      rc = device_send_rts(r, t, h);
      if (rc == kOk) {
        r->state = kSendWaitFin;
        track_pending_send(r);
        count_rendezvous_send();
        count_traffic(r->dest_world, h.context, h.length, PeerTraffic::kRendezvous);
      }
      return rc;
    }
    if ((rc = device_stage_eager(r)) != kOk) return rc;
  }
  // Fragments (no single-copy read or write) pack piece by piece; the other
  // paths need the message in one piece.
  // An eager message packs straight into the transport (send_packed); a
  // single-copy read or write needs the message whole in memory.
  const btl::Caps& caps = t->caps();
  if (r->length > caps.eager_limit && (caps.can_get || caps.can_put) && non_contiguous(r) && !r->staging) {
    // A read in segments takes the first two packed; each later one is
    // packed when the receiver acknowledges the one two before it
    // (rndv.cpp on_seg_ack), while it reads the next.
    if (size_t seg = send_segment(r, caps)) {
      // Page-aligned, so that segments (whole pages) share no page: a
      // registering transport's cache then never merges one segment's
      // registration into the next.
      void* staging = nullptr;
      if (posix_memalign(&staging, page_bytes(), r->length) != 0) return kNoMemory;
      r->staging = static_cast<uint8_t*>(staging);
      r->packed = 0;
      pack_send_through(r, 2 * seg);
      pipelined_packs.add();
    } else if (stage_whole_send(r) != kOk) {
      return kNoMemory;
    }
  }
  // (From here the report's count takes the message from `h` and a copy of
  // the destination: a completed eager request may be released already.)
  const int dest_world = r->dest_world;
  const bool eager = r->length <= caps.eager_limit;
  if (eager) {
    if (r->mode == SendMode::Synchronous) {
      struct {
        MatchHeader h;
        SyncInfo s;
      } hdr{h, {to_id(r)}};
      rc = send_eager(t, r, kAmEagerSync, &hdr, sizeof hdr);
      if (rc == kOk) {
        r->state = kSendWaitAck;
        track_pending_send(r);
        eager_sends.add();
      }
    } else {
      ShortMatchHeader s{h.context, h.source, h.tag, h.seq};
      rc = send_eager(t, r, kAmEagerShort, &s, sizeof s);
      if (rc == kOk) {
        eager_sends.add();
        r->bytes = r->length;
        r->state = kSendEagerSent;
        request_complete(r);
      }
    }
  } else {
    rc = rndv_send_rts(r, t, h);
    if (rc == kOk) track_pending_send(r);
  }
  if (rc == kOk) count_traffic(dest_world, h.context, h.length, eager ? PeerTraffic::kEager : PeerTraffic::kRendezvous);
  return rc;
}

// Pushes fragments until done or the transport is full. True when done.
bool stream_fragments(Request* r) {
  btl::Transport* t = btl::route(r->dest_world);
  if (r->device) {
    if (!device_stream(r, t)) return false;
    finish_send(r);
    return true;
  }
  size_t chunk_max = t->caps().eager_limit;
  FragmentCursor* fc = non_contiguous(r) && !r->staging ? &cursor_for(r, static_cast<size_t>(r->count)) : nullptr;
  while (r->offset < r->length) {
    size_t chunk = std::min(chunk_max, r->length - r->offset);
    const uint8_t* data = send_data(r) + r->offset;
    if (fc) {
      // Pack the next fragment unless a refused one is still waiting.
      if (fc->pending == 0) {
        fc->bounce.resize(chunk_max);
        fc->pending = convertor_pack(fc->cv, fc->bounce.data(), chunk);
      }
      chunk = fc->pending;
      data = fc->bounce.data();
    }
    // Each fragment carries its offset, so fragments may take different
    // rails (stripe.cpp) and arrive in any order.
    FragInfo fi{r->remote_id, r->offset};
    int rc = post_striped(t, r->dest_world, chunk, [&](int rail) {
      return rail == 0 ? t->send(r->dest_world, kAmFrag, &fi, sizeof fi, data, chunk)
                       : t->send_on(rail, r->dest_world, kAmFrag, &fi, sizeof fi, data, chunk);
    });
    if (rc == kAgain) return false;
    if (fc) fc->pending = 0;
    if (rc != kOk) {
      r->error = MPI_ERR_OTHER;
      break;
    }
    fragments_sent.add();
    r->offset += chunk;
  }
  finish_send(r);
  return true;
}

// Cursors exist only while non-contiguous fragments stream: skip the hash
// lookup on every other completion (most of them).
void forget_cursor(const Request* r) {
  if (!cursors.empty()) cursors.erase(r);
}



}  // namespace

void pack_send_through(Request* r, size_t end) {
  if (!r->staging || r->packed >= r->length) return;
  end = std::min(end, r->length);
  FragmentCursor& fc = cursor_for(r, static_cast<size_t>(r->count));
  while (r->packed < end) {
    size_t n = convertor_pack(fc.cv, r->staging + r->packed, end - r->packed);
    if (n == 0) break;  // cannot happen for a type whose size covers `length`; never spin
    r->packed += n;
  }
}

void finish_recv(Request* r) {
  forget_cursor(r);
  if (r->truncated) r->error = MPI_ERR_TRUNCATE;
  if (r->staging) {
    // Exactly the bytes that arrived: whole items, then the part of the
    // next item a short message holds (MPI_Get_elements counts those too).
    unpack_bytes(*r->type, r->staging, r->bytes, r->buffer);
    free(r->staging);
    r->staging = nullptr;
  }
  request_complete(r);
}

uint8_t* recv_data(Request* r) { return r->staging ? r->staging : static_cast<uint8_t*>(r->buffer); }

// A send whose protocol finished. While a cancel request is out, completion
// waits for its reply: the reply names this request, so it must stay alive.
void finish_send(Request* r) {
  forget_cursor(r);
  release_exposure(r);  // e.g. exposed for a read, answered by CTS (fragments) instead
  r->bytes = r->length;
  if (r->cancel_pending) {
    r->done_while_cancelling = true;
    return;
  }
  request_complete(r);
}

namespace {
// What matching settles for any protocol: the status's source and tag,
// truncation, and the bytes that will land (returned).
size_t accept_match(Request* r, const MatchHeader& h) {
  r->source = h.source;
  r->tag = h.tag;
  size_t n = std::min<size_t>(h.length, r->length);
  r->truncated = h.length > r->length;
  // A shorter message that ends inside a basic element of a derived receive
  // type made of one basic type cannot match its type signature (MPI-4.1
  // 3.3.1): like MPICH, report it as truncation rather than unpack half an
  // element. Contiguous and mixed-type receive types get the bytes without
  // an error, as in MPICH and Open MPI (MPI_Get_elements then says
  // MPI_UNDEFINED).
  if (!r->truncated && h.length < r->length && r->type && !r->type->contiguous &&
      r->type->signature_count == 1) {
    MPI_Count items = 0;
    if (!count_elements(*r->type, h.length, &items)) r->truncated = true;
  }
  return n;
}

// An eager payload into the receive buffer (unpacked, copied to the device,
// or copied); its byte count set.
void take_eager(Request* r, const void* payload, size_t n) {
  if (n && non_contiguous(r) && !r->staging) unpack_bytes(*r->type, payload, n, r->buffer);
  else if (n && r->device) {
    if (accel::copy_from_host(r->buffer, payload, n) != 0) r->error = MPI_ERR_OTHER;
  } else if (n) std::memcpy(recv_data(r), payload, n);
  r->bytes = n;
}
}  // namespace

void deliver_eager(Request* r, const MatchHeader& h, const void* payload, size_t payload_len) {
  take_eager(r, payload, std::min(accept_match(r, h), payload_len));
  finish_recv(r);
}

void deliver(Request* r, Message& m, const void* payload, size_t payload_len) {
  const MatchHeader& h = m.header;
  size_t n = accept_match(r, h);
  if (m.am_id != kAmRts && m.am_id != kAmRtsDevice) {
    take_eager(r, payload, std::min(n, payload_len));
    if (m.synchronous) send_reply(m.source_world, kAmSyncAck, m.sender_request, 0);
    finish_recv(r);
    return;
  }
  btl::Transport* t = btl::route(m.source_world);
  if (m.am_id == kAmRtsDevice) {
    // The sender's data is GPU memory: copy it directly when this process
    // can address it (same process, or CUDA IPC on this node), else have it
    // staged through fragments (CTS below).
    if (const void* src = device_source(m)) {
      if (n && non_contiguous(r) && !r->staging) {
        r->staging = static_cast<uint8_t*>(malloc(n));
        if (!r->staging) r->error = MPI_ERR_NO_MEM;
      }
      if (n && r->error == MPI_SUCCESS &&
          (r->device ? accel::copy(recv_data(r), src, n) : accel::copy_to_host(recv_data(r), src, n)) != 0)
        r->error = MPI_ERR_OTHER;
      r->bytes = n;
      send_reply(m.source_world, kAmFin, m.sender_request, 0);
      finish_recv(r);
      return;
    }
  } else if (rndv_receive(r, m, t, n)) {
    return;  // read or written in one copy (rndv.cpp)
  }
  r->state = kRecvFragments;
  r->message_length = h.length;
  r->offset = 0;
  r->bytes = n;
  send_reply(m.source_world, kAmCts, m.sender_request, to_id(r));
}

void on_frag(int, const void* msg, size_t len) {
  FragInfo fi;
  std::memcpy(&fi, msg, sizeof fi);
  Request* r = from_id(fi.receiver_request);
  const uint8_t* data = static_cast<const uint8_t*>(msg) + sizeof fi;
  size_t data_len = len - sizeof fi;
  if (fi.offset < r->length) {
    size_t n = std::min(data_len, r->length - fi.offset);
    if (r->device) {
      device_frag(r, fi.offset, data, n);
    } else if (non_contiguous(r) && !r->staging) {
      // Fragments come in order; seek only if one did not.
      FragmentCursor& fc = cursor_for(r, static_cast<size_t>(r->count));
      if (fc.cv.position != fi.offset) convertor_seek(fc.cv, fi.offset);
      convertor_unpack(fc.cv, data, n);
    } else {
      std::memcpy(recv_data(r) + fi.offset, data, n);
    }
  }
  r->offset += data_len;
  if (r->offset >= r->message_length) {
    if (r->device) device_recv_flush(r);
    finish_recv(r);
  }
}

void on_reply(int am_id, const void* msg) {
  ReplyInfo info;
  std::memcpy(&info, msg, sizeof info);
  Request* r = from_id(info.sender_request);
  switch (am_id) {
    case kAmFin:
      release_exposure(r);
      finish_send(r);
      break;
    case kAmSyncAck:
      finish_send(r);
      break;
    case kAmCts:
      pack_send_through(r, r->length);  // fragments from staging: all of it packed first
      r->remote_id = info.receiver_request;
      r->offset = 0;
      r->state = kSendStreaming;
      if (!stream_fragments(r)) streaming.push_back(r);
      break;
    default:
      break;
  }
}

void send_control(int dest_world, int am_id, const void* info, size_t len) {
  if (queued_replies.empty()) {
    int rc = btl::route(dest_world)->send(dest_world, am_id, info, len, nullptr, 0);
    if (rc == kOk) return;
  }
  Reply reply{dest_world, am_id, static_cast<uint8_t>(len), {}};
  std::memcpy(reply.bytes, info, len);
  queued_replies.push_back(reply);
}

void send_reply(int dest_world, int am_id, uint64_t sender_request, uint64_t receiver_request) {
  ReplyInfo info{sender_request, receiver_request};
  send_control(dest_world, am_id, &info, sizeof info);
}

namespace {
// The eager send without a request. Inlined into MPI_Send's and MPI_Isend's
// fast paths below (as a call it cost two more prologues per message);
// send_immediate is the same for the pml's other callers.
[[gnu::always_inline]] inline int send_now(const void* buf, size_t len, int dest, int tag, Context* ctx,
                                           uint32_t* seq) {
  int dest_world = ctx->world_of[dest];
  if (size_t(dest_world) < queued_to.size() && queued_to[dest_world] > 0) return kAgain;
  btl::Transport* t = btl::route(dest_world);
  if (len > t->caps().eager_limit) return kAgain;
  ShortMatchHeader h{ctx->id, ctx->rank, tag, ctx->next_seq[dest]};
  int rc = t->send(dest_world, kAmEagerShort, &h, sizeof h, buf, len);
  if (rc == kOk) {
    if (seq) *seq = h.seq;
    ++ctx->next_seq[dest];
    eager_sends.add();
    count_traffic(dest_world, ctx->id, len, PeerTraffic::kEager);
    if (diag::events::subscribed(diag::events::Event::ProtocolSwitch)) [[unlikely]]
      note_protocol(dest_world, len, 0, SendMode::Standard, t);
    if (explain_sends) [[unlikely]]
      explain_send(dest_world, len, SendMode::Standard, true, nullptr, t);
  }
  return rc;
}

// Whether a send may try the eager path without a request (send_immediate):
// contiguous host data to a real peer; `bytes` its length.
[[gnu::always_inline]] inline bool immediate_candidate(const void* buf, MPI_Count count, const Datatype* type,
                                                       int dest, size_t* bytes) {
  return dest != kProcNull && type->contiguous && !accel::on_device(buf) && bytes_for_count(*type, count, bytes);
}
}  // namespace

int send_immediate(const void* buf, size_t len, int dest, int tag, Context* ctx, uint32_t* seq) {
  return send_now(buf, len, dest, tag, ctx, seq);
}

bool try_send_now(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx) {
  size_t bytes = 0;
  if (!immediate_candidate(buf, count, type, dest, &bytes)) return false;
  progress::Guard guard;
  return send_now(buf, bytes, dest, tag, ctx, nullptr) == kOk;
}

Request* isend_now(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx) {
  size_t bytes = 0;
  if (!immediate_candidate(buf, count, type, dest, &bytes)) return nullptr;
  progress::Guard guard;
  uint32_t seq = 0;
  if (send_now(buf, bytes, dest, tag, ctx, &seq) != kOk) return nullptr;
  // The request of a message that is out already: what MPI_Wait's status
  // and MPI_Cancel read (cancel_send withdraws an eager message still
  // unmatched at the receiver by its context, rank and sequence number).
  Request* r = detail::take_request(Request::Kind::Send);  // under the guard above
  r->source = kAnySource;
  r->tag = kAnyTag;
  r->buffer = const_cast<void*>(buf);
  r->count = count;
  r->type = type;  // held as every request holds it (request_release drops it)
  datatype_retain(const_cast<Datatype*>(type));
  r->length = r->bytes = bytes;
  r->peer = dest;
  r->match_tag = tag;
  r->ctx = ctx;
  r->dest_world = ctx->world_of[dest];
  r->seq = seq;
  r->state = kSendEagerSent;
  r->complete.store(true, std::memory_order_relaxed);
  return r;
}

int start_send(Request* r) {
  Context* ctx = r->ctx;
  r->dest_world = ctx->world_of[r->peer];
  r->seq = ctx->next_seq[r->peer]++;
  r->state = kSendQueued;
  r->cancel_when_sent = false;  // a persistent request starts afresh
  if (queued_to.size() <= size_t(r->dest_world)) queued_to.resize(r->dest_world + 1, 0);
  if (queued_to[r->dest_world] == 0) {
    int rc = try_first_message(r);
    if (rc == kOk) return MPI_SUCCESS;
    if (rc != kAgain) {
      r->error = MPI_ERR_OTHER;
      request_complete(r);
      return MPI_ERR_OTHER;
    }
  }
  // Keep per-peer order: once one send waits, later ones to that peer wait behind it.
  ++queued_to[r->dest_world];
  queued_sends.push_back(r);
  track_pending_send(r);
  return MPI_SUCCESS;
}

namespace {
int retry_pending_work();
}  // namespace

// Every progress call runs this hook: with nothing queued it costs a few
// compares (the deques' empty()), and the work is out of line.
int retry_pending() {
  if (queued_replies.empty() && queued_sends.empty() && streaming.empty() && !rndv_stalled) [[likely]] return 0;
  return retry_pending_work();
}

namespace {
int retry_pending_work() {
  int done = 0;
  while (!queued_replies.empty()) {
    Reply& reply = queued_replies.front();
    int rc = btl::route(reply.dest_world)
                 ->send(reply.dest_world, reply.am_id, reply.bytes, reply.len, nullptr, 0);
    if (rc == kAgain) break;
    queued_replies.pop_front();
    ++done;
  }
  if (!queued_sends.empty()) {
    // A peer whose send failed in this pass is skipped for the rest of the
    // pass, so messages to one peer leave in the order they were posted.
    static std::vector<uint64_t> blocked_in_pass;
    static uint64_t pass = 0;
    ++pass;
    if (blocked_in_pass.size() < queued_to.size()) blocked_in_pass.resize(queued_to.size(), 0);
    for (size_t n = queued_sends.size(); n > 0; --n) {
      Request* r = queued_sends.front();
      queued_sends.pop_front();
      int dest = r->dest_world;  // r may be released once its message is out
      if (blocked_in_pass[dest] == pass) {
        queued_sends.push_back(r);
        continue;
      }
      // Only a user's request can be cancelled, and it stays allocated until
      // the user completes it, so `r` may be read after it left. One the
      // user freed (MPI_Request_free after MPI_Cancel) is released when it
      // completes, which an eager message does as it leaves: it is kept
      // until its cancel went out.
      bool cancel_now = r->cancel_when_sent;
      bool release_after_cancel = cancel_now && r->free_when_complete;
      if (release_after_cancel) r->free_when_complete = false;
      int rc = try_first_message(r);
      if (rc == kAgain) {
        if (release_after_cancel) r->free_when_complete = true;
        blocked_in_pass[dest] = pass;
        queued_sends.push_back(r);
        continue;
      }
      if (rc != kOk) {
        r->error = MPI_ERR_OTHER;
        r->cancel_when_sent = false;  // nothing left to cancel
        if (release_after_cancel) r->free_when_complete = true;
        request_complete(r);
      } else if (cancel_now) {
        r->cancel_when_sent = false;
        cancel_send(r);
        if (release_after_cancel) {
          r->free_when_complete = true;
          if (r->complete.load(std::memory_order_acquire)) request_release(r);  // nothing left to answer
        }
      }
      --queued_to[dest];
      ++done;
    }
  }
  if (rndv_stalled) done += rndv_retry();
  for (size_t n = streaming.size(); n > 0; --n) {
    Request* r = streaming.front();
    streaming.pop_front();
    if (stream_fragments(r)) ++done;
    else streaming.push_back(r);
  }
  return done;
}
}  // namespace

// ---- cancelling sends --------------------------------------------------------

bool cancel_answered(const Request* r) { return !r->cancel_pending && !r->cancel_when_sent; }

void cancel_send(Request* r) {
  // Only a message waiting at the receiver for a match can be withdrawn:
  // one being fragmented was matched. A send still queued here (its
  // transport was full or still connecting) already holds its sequence
  // number, so it cannot simply vanish: it leaves as usual and the cancel
  // follows it (retry_pending).
  if (r->cancel_pending || r->cancelled) return;
  if (r->state == kSendQueued && !r->complete.load(std::memory_order_acquire)) {
    r->cancel_when_sent = true;
    return;
  }
  // An eager message completed its request as it left, yet it may still
  // wait unmatched at the receiver: the request becomes incomplete again
  // until the receiver answers, and then completes as cancelled (withdrawn)
  // or as sent. Any other completed send was matched.
  bool eager_sent = r->state == kSendEagerSent && r->complete.load(std::memory_order_acquire);
  if (!eager_sent && (r->complete.load(std::memory_order_acquire) ||
                      (r->state != kSendWaitFin && r->state != kSendWaitAck)))
    return;
  if (eager_sent) {
    r->complete.store(false, std::memory_order_relaxed);
    r->done_while_cancelling = true;
  }
  r->cancel_pending = true;
  CancelInfo info{to_id(r), r->ctx->id, r->ctx->rank, r->seq, 0};
  // Queued and retried when the transport is full: dropping it would leave
  // an unmatched synchronous or rendezvous send with nothing to end it.
  send_control(r->dest_world, kAmCancel, &info, sizeof info);
}

// Receiver: withdraw the message if it still waits unmatched.
void on_cancel(int src_world, const void* msg, size_t) {
  CancelInfo info;
  std::memcpy(&info, msg, sizeof info);
  uint64_t withdrawn = 0;
  MatchQueues* q = queues_for(info.context);
  for (auto it = q->unexpected.begin(); it != q->unexpected.end(); ++it) {
    Message* m = *it;
    if (m->source_world == src_world && m->header.source == info.source && m->header.seq == info.seq) {
      q->unexpected.erase(it);
      delete m;
      withdrawn = 1;
      break;
    }
  }
  CancelReplyInfo reply{info.sender_request, withdrawn};
  // A reply that cannot go now would leave the sender waiting: retry from progress.
  if (btl::route(src_world)->send(src_world, kAmCancelReply, &reply, sizeof reply, nullptr, 0) != kOk)
    send_reply(src_world, kAmCancelReply, reply.sender_request, reply.withdrawn);
}

void on_cancel_reply(int, const void* msg, size_t) {
  CancelReplyInfo reply;
  std::memcpy(&reply, msg, sizeof reply);
  Request* r = from_id(reply.sender_request);
  r->cancel_pending = false;
  if (reply.withdrawn) {
    release_exposure(r);
    r->cancelled = true;
    r->bytes = 0;
    request_complete(r);
  } else if (r->done_while_cancelling) {
    request_complete(r);
  }
}

}  // namespace axon::pml
