// The rendezvous protocols: moving a large host message in one copy.
//
//  RGET  the sender announces the message (kAmRts) with its buffer's address
//        and the transport's key; on match the receiver reads it (get) and
//        answers FIN.
//  RPUT  a transport that writes rather than reads (can_put without
//        can_get, e.g. verbs without RDMA READ or AXON_BTL_VERBS_RNDV=put):
//        the sender does not expose its buffer, the receiver exposes its own
//        and answers CTS-put with address and key, the sender writes (put)
//        and answers PUT-FIN.
//  segments  a transport that registers memory may ask (Caps::expose_segment)
//        for very large buffers to be exposed two segments at a time, the
//        mover acknowledging each so the exposing side registers the next
//        while the current one moves (wire.h kRtsSegmented). A large
//        non-contiguous RGET send goes the same way (AXON_PML_PACK_SEGMENT):
//        the sender packs segment k+2 when k is acknowledged, while the
//        receiver reads k+1, instead of packing the whole message first.
//
// Every get/put is posted through one engine, Transfer below: the range is
// split into pieces of at most Caps::max_rdma bytes, up to Caps::rdma_depth
// in flight, each registered by the transport as it is posted (pipelined
// registration) and striped over the peer's rails (stripe.cpp), and the
// protocol's next step runs from the completion of the last piece. Nothing here waits for a transfer: a handler posts and returns,
// so a large read in flight does not hold up messages from other peers.
// Without single-copy support (or for GPU data) protocol.cpp streams
// fragments instead (CTS).
#include <algorithm>

#include "accel/accel.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/status.h"
#include "pml/internal.h"

namespace axon::pml {

namespace {

Counter rendezvous_sends{"axon_pml_rendezvous_sends", Counter::Class::Counter,
                         "Sends announced first and moved when matched (rendezvous protocol)"};
Counter rndv_segments{"axon_pml_rndv_segments", Counter::Class::Counter,
                      "Segments of large rendezvous send buffers exposed one at a time (kRtsSegmented)"};
Counter rndv_pieces{"axon_pml_rndv_pieces", Counter::Class::Counter,
                    "Rendezvous get/put operations posted to transports (pieces of at most the transport's "
                    "largest RDMA size)"};
Counter rndv_stalls{"axon_pml_rndv_stalls", Counter::Class::Counter,
                    "Times a rendezvous piece found the transport's queue full and waited for progress"};

// ---- the transfer engine ----------------------------------------------------------

// One single-copy movement of `length` bytes between `local` and the peer's
// memory at `remote` (exposed under `key`), then `then(request, ok)`.
struct Transfer {
  Request* r = nullptr;
  btl::Transport* t = nullptr;
  int peer = -1;
  bool write = false;  // put (local -> peer) rather than get
  uint8_t* local = nullptr;
  uint64_t remote = 0;
  uint64_t key = 0;
  size_t length = 0;
  size_t posted = 0;    // bytes handed to the transport
  int in_flight = 0;
  bool failed = false;
  bool stalled = false;  // in `stalled` below
  size_t piece_max = 0;  // 0: the whole range in one operation
  size_t piece_align = 1;  // pieces end on multiples of it (Caps::rdma_align)
  uint8_t* bounce = nullptr;  // host sender, GPU receiver: the pinned buffer read into
  void (*then)(Transfer* x, bool ok) = nullptr;
  // One operation per piece in flight; free ones are those with length 0.
  std::vector<btl::RdmaOp> ops;
  std::vector<size_t> op_length;
};

std::deque<Transfer*> stalled;  // found the transport full: retried by rndv_retry()

// Finished transfers, kept for reuse: a steady stream of rendezvous messages
// allocates nothing.
std::vector<std::unique_ptr<Transfer>> spare_transfers;

Transfer* new_transfer() {
  if (spare_transfers.empty()) return new Transfer;
  Transfer* x = spare_transfers.back().release();
  spare_transfers.pop_back();
  return x;
}

void recycle(Transfer* x) {
  std::vector<btl::RdmaOp> ops = std::move(x->ops);
  std::vector<size_t> lengths = std::move(x->op_length);
  *x = Transfer{};
  x->ops = std::move(ops);  // keep the capacity
  x->op_length = std::move(lengths);
  spare_transfers.emplace_back(x);
}

void pump(Transfer* x);

void piece_done(btl::RdmaOp* op, int status) {
  auto* x = static_cast<Transfer*>(op->context);
  size_t index = static_cast<size_t>(op - x->ops.data());
  x->op_length[index] = 0;
  --x->in_flight;
  if (status != kOk) x->failed = true;
  pump(x);
}

// Posts the pieces the depth allows; runs the continuation once every byte
// moved (or, after a failure, once the pieces in flight drained).
void pump(Transfer* x) {
  while (!x->failed && x->posted < x->length && x->in_flight < static_cast<int>(x->ops.size())) {
    size_t index = 0;
    while (x->op_length[index] != 0) ++index;
    size_t n = btl::piece_length(x->local + x->posted, x->length - x->posted, x->piece_max, x->piece_align);
    btl::RdmaOp* op = &x->ops[index];
    // Striped over the peer's rails (stripe.cpp); a full rail is skipped
    // for this piece, and the piece waits only when every rail is full.
    int rc = post_striped(x->t, x->peer, n, [&](int rail) {
      op->rail = rail;
      return x->write ? x->t->put(x->peer, x->local + x->posted, x->remote + x->posted, x->key, n, op)
                      : x->t->get(x->peer, x->local + x->posted, x->remote + x->posted, x->key, n, op);
    });
    if (rc == kAgain) {
      if (!x->stalled) {
        x->stalled = true;
        stalled.push_back(x);
        rndv_stalled = true;
        rndv_stalls.add();
      }
      return;
    }
    if (rc != kOk) {
      x->failed = true;
      break;
    }
    x->op_length[index] = n;
    x->posted += n;
    ++x->in_flight;
    rndv_pieces.add();
  }
  bool finished = x->in_flight == 0 && (x->failed || x->posted >= x->length);
  if (!finished || x->stalled) return;  // a stalled one finishes from rndv_retry()
  auto then = x->then;
  bool ok = !x->failed;
  then(x, ok);
  recycle(x);
}

// Starts moving `length` bytes; `then` runs when done (possibly before this
// returns, when the range is empty or the transport fails at once).
void start_transfer(Request* r, btl::Transport* t, int peer, bool write, uint8_t* local, uint64_t remote,
                    uint64_t key, size_t length, void (*then)(Transfer*, bool), uint8_t* bounce = nullptr) {
  Transfer* x = new_transfer();
  x->r = r;
  x->t = t;
  x->peer = peer;
  x->write = write;
  x->local = local;
  x->remote = remote;
  x->key = key;
  x->length = length;
  x->then = then;
  x->bounce = bounce;
  const btl::Caps& caps = t->caps();
  x->piece_max = caps.max_rdma;
  x->piece_align = caps.rdma_align;
  // rdma_depth pieces in flight on each rail the peer has.
  size_t depth = caps.max_rdma ? static_cast<size_t>(std::max(1, caps.rdma_depth) * std::max(1, t->rails(peer))) : 1;
  x->ops.assign(depth, btl::RdmaOp{piece_done, x});
  x->op_length.assign(depth, 0);
  pump(x);
}

// ---- segments ----------------------------------------------------------------------

// The exposing side of a segmented transfer (RGET sender, RPUT receiver):
// segment `ack.index` was moved. Release its key and expose the segment two
// further, if it lies within `total`, sending its key with `key_am`.
// expose(transport, offset, length) returns the new key.
template <class Expose>
void expose_next_segment(Request* r, const SegInfo& ack, size_t total, int key_am, Expose expose) {
  btl::Transport* t = btl::route(r->dest_world);
  unsigned slot = static_cast<unsigned>(ack.index % 2);
  if (r->seg_keys[slot]) t->unexpose(r->dest_world, r->seg_keys[slot]);
  r->seg_keys[slot] = 0;
  uint64_t next = ack.index + 2;
  if (next * r->seg_size >= total) return;
  size_t off = static_cast<size_t>(next * r->seg_size);
  size_t len = std::min<size_t>(static_cast<size_t>(r->seg_size), total - off);
  r->seg_keys[slot] = expose(t, off, len);
  rndv_segments.add();
  SegInfo key{ack.sender_request, ack.receiver_request, next, r->seg_keys[slot]};
  send_control(r->dest_world, key_am, &key, sizeof key);
}

// The moving side (RGET receiver, RPUT sender): the key of a further segment
// arrived; keep it in its slot.
void store_segment_key(Request* r, const SegInfo& key) {
  unsigned slot = static_cast<unsigned>(key.index % 2);
  r->seg_keys[slot] = key.key;
  r->seg_have |= static_cast<uint8_t>(1u << slot);
}

// The moving side's loop over segments (RGET receiver: `write` false; RPUT
// sender: true), `n` bytes in all: starts moving segment r->seg_index once its
// key is known; `moved` continues when it is done. Returns true once every
// segment moved. After a failure the remaining segments move nothing but the
// exchange runs to its end, so no key message can arrive after the request
// completed.
bool next_segment(Request* r, size_t n, bool write, void (*moved)(Transfer*, bool)) {
  uint64_t count = (n + r->seg_size - 1) / r->seg_size;
  if (r->seg_index >= count) return true;
  unsigned slot = static_cast<unsigned>(r->seg_index % 2);
  if (!(r->seg_have & (1u << slot))) return false;  // its key is on its way
  size_t off = static_cast<size_t>(r->seg_index * r->seg_size);
  size_t len = std::min<size_t>(static_cast<size_t>(r->seg_size), n - off);
  uint64_t key = r->seg_keys[slot];
  r->seg_have &= static_cast<uint8_t>(~(1u << slot));
  r->seg_keys[slot] = 0;
  uint8_t* local = write ? const_cast<uint8_t*>(send_data(r)) : recv_data(r);
  r->seg_moving = true;  // cleared by `moved`
  start_transfer(r, btl::route(r->dest_world), r->dest_world, write, local + off, r->seg_addr + off, key,
                 r->error == MPI_SUCCESS ? len : 0, moved);
  return false;
}

void read_segments(Request* r);
void write_segments(Request* r);

// A segment moved: acknowledge it unless it was the last (kAmSegAck from the
// RGET receiver, kAmPutSegAck from the RPUT sender), then go on.
void segment_moved(Transfer* x, bool ok) {
  Request* r = x->r;
  r->seg_moving = false;
  if (!ok) r->error = MPI_ERR_OTHER;
  size_t total = x->write ? r->message_length : r->bytes;
  uint64_t count = (total + r->seg_size - 1) / r->seg_size;
  if (++r->seg_index < count) {
    uint64_t mine = to_id(r);
    SegInfo info{x->write ? mine : r->remote_id, x->write ? r->remote_id : mine, r->seg_index - 1, total};
    send_control(r->dest_world, x->write ? kAmPutSegAck : kAmSegAck, &info, sizeof info);
  }
  if (x->write) write_segments(r);
  else read_segments(r);
}

// Receiver of a segmented RTS: reads the segments in order as their keys
// come (the sender exposes segment k+2 when k is acknowledged); after the
// last, FIN.
void read_segments(Request* r) {
  if (!next_segment(r, r->bytes, false, segment_moved)) return;
  send_reply(r->dest_world, kAmFin, r->remote_id, 0);
  finish_recv(r);
}

// RPUT sender, the receiver's buffer exposed in segments: writes them in
// order as their keys come; after the last, PUT-FIN. The keys are the
// receiver's: cleared as used, never released here.
void write_segments(Request* r) {
  if (!next_segment(r, r->message_length, true, segment_moved)) return;
  r->seg_keys[0] = r->seg_keys[1] = 0;
  ReplyInfo fin{r->error == MPI_SUCCESS ? 0u : 1u, r->remote_id};
  send_control(r->dest_world, kAmPutFin, &fin, sizeof fin);
  finish_send(r);
}

// ---- continuations of whole-buffer transfers -----------------------------------

// RGET receiver: the message is in our buffer (or staging); tell the sender.
void read_done(Transfer* x, bool ok) {
  Request* r = x->r;
  if (!ok) r->error = MPI_ERR_OTHER;
  send_reply(r->dest_world, kAmFin, r->remote_id, 0);
  finish_recv(r);
}

// Host sender, GPU receiver: the message is in the pinned buffer; copy it up.
void bounce_read_done(Transfer* x, bool ok) {
  Request* r = x->r;
  if (!ok || (x->length && accel::copy_from_host(r->buffer, x->bounce, x->length) != 0)) r->error = MPI_ERR_OTHER;
  if (x->bounce) accel::pinned_free(x->bounce, x->length);
  send_reply(r->dest_world, kAmFin, r->remote_id, 0);
  finish_recv(r);
}

// RPUT sender: the data is in the receiver's memory before PUT-FIN arrives.
void write_done(Transfer* x, bool ok) {
  Request* r = x->r;
  if (!ok) r->error = MPI_ERR_OTHER;
  ReplyInfo fin{ok ? 0u : 1u, r->remote_id};
  send_control(r->dest_world, kAmPutFin, &fin, sizeof fin);
  finish_send(r);
}

}  // namespace

void count_rendezvous_send() { rendezvous_sends.add(); }

bool rndv_stalled = false;

int rndv_retry() {
  int moved = 0;
  for (size_t n = stalled.size(); n > 0; --n) {
    Transfer* x = stalled.front();
    stalled.pop_front();
    x->stalled = false;
    size_t waiting = stalled.size();
    pump(x);  // may finish and free x, or stall again
    if (stalled.size() == waiting) ++moved;
  }
  rndv_stalled = !stalled.empty();
  return moved;
}

int rndv_send_rts(Request* r, btl::Transport* t, const MatchHeader& h) {
  // A transport that writes rather than reads: the receiver exposes its
  // buffer instead (kAmCtsPut), ours needs no registration. A very large
  // buffer is exposed two segments at a time (wire.h kRtsSegmented).
  const btl::Caps& caps = t->caps();
  bool readable = caps.can_get || !caps.can_put;
  size_t seg = send_segment(r, caps);
  if (readable && seg && !r->seg_size) {
    r->seg_size = seg;
    r->seg_keys[0] = t->expose(r->dest_world, send_data(r), seg);
    r->seg_keys[1] = t->expose(r->dest_world, send_data(r) + seg, seg);
    rndv_segments.add(2);
  } else if (readable && !r->seg_size && !r->exposed_key) {
    r->exposed_key = t->expose(r->dest_world, send_data(r), r->length);
  }
  struct {
    MatchHeader h;
    RtsInfo rts;
    SegRtsInfo seg;
  } hdr{h,
        {to_id(r), reinterpret_cast<uint64_t>(send_data(r)), r->seg_size ? r->seg_keys[0] : r->exposed_key,
         static_cast<uint8_t>(r->mode == SendMode::Synchronous),
         static_cast<uint8_t>((readable ? 0 : kRtsNotReadable) | (r->seg_size ? kRtsSegmented : 0)), {}},
        {r->seg_size, r->seg_keys[1]}};
  int rc = t->send(r->dest_world, kAmRts, &hdr, r->seg_size ? sizeof hdr : sizeof hdr.h + sizeof hdr.rts, nullptr, 0);
  if (rc == kOk) {
    r->state = kSendWaitFin;
    rendezvous_sends.add();
  }
  return rc;
}

void release_exposure(Request* r) {
  if (!r->exposed_key && !r->seg_keys[0] && !r->seg_keys[1]) return;
  btl::Transport* t = btl::route(r->dest_world);
  for (uint64_t* k : {&r->exposed_key, &r->seg_keys[0], &r->seg_keys[1]}) {
    if (*k) t->unexpose(r->dest_world, *k);
    *k = 0;
  }
}

bool rndv_receive(Request* r, Message& m, btl::Transport* t, size_t n) {
  const btl::Caps& caps = t->caps();
  bool rput = !r->device && caps.can_put && (!caps.can_get || !m.readable);
  bool rget = caps.can_get && m.readable && !(r->device && m.segment);
  if (!rput && !rget) return false;
  r->remote_id = m.sender_request;
  r->dest_world = m.source_world;  // a receive's peer: replies, unexpose in on_put_fin
  if (r->device && caps.can_get && m.readable && !m.segment) {
    // Host sender, GPU receiver: one read into host memory, one copy up,
    // through a pinned buffer of accel's pool (no allocation per message,
    // and the copy up runs at the bus's speed).
    uint8_t* bounce = n ? static_cast<uint8_t*>(accel::pinned_alloc(n)) : nullptr;
    if (n && !bounce) r->error = MPI_ERR_NO_MEM;
    r->bytes = n;
    r->state = kRecvReading;
    start_transfer(r, t, m.source_world, false, bounce, m.address, m.key, r->error == MPI_SUCCESS ? n : 0,
                   bounce_read_done, bounce);
    return true;
  }
  if (rput) {
    // RPUT: expose where the data goes (a staging buffer for non-contiguous
    // data, unpacked by finish_recv) and let the sender write it.
    if (n && non_contiguous(r) && !r->staging) {
      r->staging = static_cast<uint8_t*>(malloc(n));
      if (!r->staging) r->error = MPI_ERR_NO_MEM;
    }
    // A large buffer is exposed two segments at a time (wire.h kAmPutSegAck).
    uint64_t key = 0;
    size_t seg = caps.expose_segment;
    if (seg && n > 2 * seg && r->error == MPI_SUCCESS) {
      r->seg_keys[0] = t->expose_writable(m.source_world, recv_data(r), seg);
      r->seg_keys[1] = t->expose_writable(m.source_world, recv_data(r) + seg, seg);
      if (r->seg_keys[0] && r->seg_keys[1]) {
        r->seg_size = seg;
        key = r->seg_keys[0];
        rndv_segments.add(2);
      } else {
        release_exposure(r);
        r->error = MPI_ERR_OTHER;
      }
    } else if (n && r->error == MPI_SUCCESS && !(key = t->expose_writable(m.source_world, recv_data(r), n))) {
      r->error = MPI_ERR_OTHER;
    }
    if (!key) n = 0;  // nothing exposed: the sender writes nothing, the receive fails
    if (!r->seg_size) r->exposed_key = key;
    r->bytes = n;
    r->state = kRecvWaitPut;
    struct {
      PutCtsInfo cts;
      SegRtsInfo seg;
    } cts{{m.sender_request, to_id(r), reinterpret_cast<uint64_t>(recv_data(r)), key, n}, {seg, r->seg_keys[1]}};
    send_control(m.source_world, kAmCtsPut, &cts, r->seg_size ? sizeof cts : sizeof cts.cts);
    return true;
  }
  // A single-copy read needs one contiguous target: non-contiguous data is
  // read into a staging buffer that finish_recv unpacks.
  if (n && non_contiguous(r) && !r->staging) {
    r->staging = static_cast<uint8_t*>(malloc(n));
    if (!r->staging) r->error = MPI_ERR_NO_MEM;
  }
  r->bytes = n;
  if (n && m.segment) {
    // Exposed in segments: read them as their keys come (read_segments).
    r->state = kRecvSegments;
    r->seg_size = m.segment;
    r->seg_addr = m.address;
    r->seg_keys[0] = m.key;
    r->seg_keys[1] = m.key1;
    r->seg_have = 3;
    r->seg_index = 0;
    read_segments(r);
    return true;
  }
  r->state = kRecvReading;
  start_transfer(r, t, m.source_world, false, recv_data(r), m.address, m.key, r->error == MPI_SUCCESS ? n : 0,
                 read_done);
  return true;
}

// Sender: segment `index` was read. Release it and expose the one two
// further, if the receiver reads that far.
void on_seg_ack(int, const void* msg, size_t) {
  SegInfo ack;
  std::memcpy(&ack, msg, sizeof ack);
  Request* r = from_id(ack.sender_request);
  size_t total = std::min<size_t>(r->length, static_cast<size_t>(ack.key));
  expose_next_segment(r, ack, total, kAmSegKey, [&](btl::Transport* t, size_t off, size_t len) {
    pack_send_through(r, off + len);  // non-contiguous data: packed while the receiver reads the segment before
    return t->expose(r->dest_world, send_data(r) + off, len);  // 0: the receiver's read fails
  });
}

// Receiver: the key of a further segment.
void on_seg_key(int, const void* msg, size_t) {
  SegInfo key;
  std::memcpy(&key, msg, sizeof key);
  Request* r = from_id(key.receiver_request);
  store_segment_key(r, key);
  if (!r->seg_moving) read_segments(r);  // else the segment moving picks it up when done
}

// Sender: the receiver exposed its buffer; write the message into it.
void on_cts_put(int, const void* msg, size_t len) {
  PutCtsInfo cts;
  std::memcpy(&cts, msg, sizeof cts);
  Request* r = from_id(cts.sender_request);
  btl::Transport* t = btl::route(r->dest_world);
  release_exposure(r);  // exposed for a read that did not come
  pack_send_through(r, r->length);  // the writes take it whole
  size_t n = std::min<size_t>(cts.length, r->length);
  r->remote_id = cts.receiver_request;
  if (n && len >= sizeof cts + sizeof(SegRtsInfo)) {
    // The receiver exposed its buffer in segments: write them as their keys come.
    SegRtsInfo seg;
    std::memcpy(&seg, static_cast<const uint8_t*>(msg) + sizeof cts, sizeof seg);
    r->seg_size = seg.segment;
    r->seg_addr = cts.address;
    r->seg_keys[0] = cts.key;
    r->seg_keys[1] = seg.key1;
    r->seg_have = 3;
    r->seg_index = 0;
    r->message_length = n;
    write_segments(r);
    return;
  }
  start_transfer(r, t, r->dest_world, true, const_cast<uint8_t*>(send_data(r)), cts.address, cts.key, n,
                 write_done);
}

// RPUT receiver: segment `index` was written. Release it and expose the one
// two further, if there is one.
void on_put_seg_ack(int, const void* msg, size_t) {
  SegInfo ack;
  std::memcpy(&ack, msg, sizeof ack);
  Request* r = from_id(ack.receiver_request);
  expose_next_segment(r, ack, r->bytes, kAmPutSegKey, [&](btl::Transport* t, size_t off, size_t len) {
    uint64_t key = t->expose_writable(r->dest_world, recv_data(r) + off, len);
    if (!key) r->error = MPI_ERR_OTHER;  // the sender's write fails too
    return key;
  });
}

// RPUT sender: the key of a further segment of the receiver's buffer.
void on_put_seg_key(int, const void* msg, size_t) {
  SegInfo key;
  std::memcpy(&key, msg, sizeof key);
  Request* r = from_id(key.sender_request);
  store_segment_key(r, key);
  if (!r->seg_moving) write_segments(r);  // else the segment moving picks it up when done
}

// Receiver: the sender's writes are complete.
void on_put_fin(int, const void* msg, size_t) {
  ReplyInfo fin;
  std::memcpy(&fin, msg, sizeof fin);
  Request* r = from_id(fin.receiver_request);
  release_exposure(r);  // the whole buffer, or what is left of its segments
  if (fin.sender_request && r->error == MPI_SUCCESS) r->error = MPI_ERR_OTHER;
  finish_recv(r);
}

}  // namespace axon::pml
