// Requests, progress and waiting, and the PML's public operations.
#include <cstdlib>
#include <algorithm>
#include <mutex>

#include "accel/accel.h"
#include "base/backoff.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "base/status.h"
#include "btl/btl.h"
#include "diag/hang.h"
#include "pml/decode.h"
#include "pml/internal.h"
#include "rte/rte.h"

namespace axon::pml {

void on_reply(int am_id, const void* msg);

namespace detail {
RequestPool request_pool;
}  // namespace detail
using detail::RequestPool;
using detail::request_pool;

namespace {

// MPI_Cancel of a send asks the receiver whether the message still waits
// unmatched there; the answer decides how the request completes. Waiting
// for it inside the call (the receiver answers from its progress engine,
// within microseconds when it is in any MPI call) makes the request
// complete once MPI_Cancel returns, so that a program polling with
// MPI_Request_get_status or MPI_Test sees it at once.
IntParam cancel_wait_param{"AXON_CANCEL_WAIT_MS", 1000,
                           "Milliseconds MPI_Cancel of a send waits (driving progress) for the receiver to say "
                           "whether the message was withdrawn; past that the request completes when the answer "
                           "comes. 0: return at once"};

Request* live_requests = nullptr;  // sends that waited, until released (track_pending_send)

void am_eager(int src, const void* m, size_t n) { on_match_message(kAmEager, src, m, n); }
void am_eager_short(int src, const void* m, size_t n) { on_match_message(kAmEagerShort, src, m, n); }
void am_eager_sync(int src, const void* m, size_t n) { on_match_message(kAmEagerSync, src, m, n); }
void am_rts(int src, const void* m, size_t n) { on_match_message(kAmRts, src, m, n); }
void am_rts_device(int src, const void* m, size_t n) { on_match_message(kAmRtsDevice, src, m, n); }
void am_fin(int, const void* m, size_t) { on_reply(kAmFin, m); }
void am_sync_ack(int, const void* m, size_t) { on_reply(kAmSyncAck, m); }
void am_cts(int, const void* m, size_t) { on_reply(kAmCts, m); }

// Every handler sees only a message check_message() accepted (decode.h): a
// malformed one is dropped with an error instead of read past its end.
template <int Id, btl::AmHandler H> void checked(int src, const void* m, size_t n) {
  if (const char* why = check_message(Id, m, n)) [[unlikely]] {
    log::error("pml: dropped a malformed message (id %d, %zu bytes) from rank %d: %s", Id, n, src, why);
    return;
  }
  H(src, m, n);
}

// Fills a request's arguments; the byte length covers `count` items.
int prepare(Request* r, void* buf, MPI_Count count, const Datatype* type, int peer, int tag, Context* ctx) {
  size_t bytes = 0;
  if (!bytes_for_count(*type, count, &bytes)) return MPI_ERR_COUNT;
  r->buffer = buf;
  r->count = count;
  r->type = type;
  // A pending operation keeps its derived type alive: the user may call
  // MPI_Type_free before it completes. request_release drops the reference.
  datatype_retain(const_cast<Datatype*>(type));
  r->length = bytes;
  r->peer = peer;
  r->match_tag = tag;
  r->ctx = ctx;
  return MPI_SUCCESS;
}

// Non-contiguous data: the protocols (protocol.cpp) pack and unpack it when
// they know how the message travels: whole-message staging only for eager
// sends and single-copy reads, a convertor per fragment otherwise, and
// receivers unpack eager payloads and fragments straight into the user
// buffer. Nothing to prepare when an operation starts.
// GPU buffers are classified here (one relaxed load while no CUDA driver is
// in use; src/accel/accel.h).
int stage_send(Request* r) { return accel::on_device(r->buffer) ? device_stage(r, true) : MPI_SUCCESS; }
int stage_recv(Request* r) { return accel::on_device(r->buffer) ? device_stage(r, false) : MPI_SUCCESS; }

void reset_result(Request* r) {
  r->complete.store(false, std::memory_order_relaxed);
  r->cancelled = r->truncated = false;
  r->cancel_pending = r->done_while_cancelling = false;
  r->source = kAnySource;
  r->tag = kAnyTag;
  r->error = MPI_SUCCESS;
  r->bytes = 0;
  r->state = 0;
  r->offset = 0;
  r->device = 0;
  r->seg_size = r->seg_index = r->seg_addr = 0;
  r->seg_keys[0] = r->seg_keys[1] = 0;
  r->seg_have = 0;
  r->seg_moving = false;
}

// A receive from MPI_PROC_NULL or a send to it completes at once.
void complete_proc_null(Request* r) {
  r->source = kProcNull;
  r->tag = kAnyTag;
  r->bytes = 0;
  request_complete(r);
}

}  // namespace

int32_t peer_cpu(const Context* ctx, int peer) {
  if (peer < 0 || peer >= ctx->size()) return 0;
  return progress::peer_cpu(ctx->world_of[static_cast<size_t>(peer)]);
}

bool shares_my_cpu(const Context* ctx, int peer) {
  if (peer < 0 || peer >= ctx->size()) return false;
  return progress::shares_my_cpu(ctx->world_of[static_cast<size_t>(peer)]);
}

int init() {
  btl::register_handler(kAmEager, checked<kAmEager, am_eager>);
  btl::register_handler(kAmEagerShort, checked<kAmEagerShort, am_eager_short>);
  btl::register_handler(kAmEagerSync, checked<kAmEagerSync, am_eager_sync>);
  btl::register_handler(kAmRts, checked<kAmRts, am_rts>);
  btl::register_handler(kAmRtsDevice, checked<kAmRtsDevice, am_rts_device>);
  btl::register_handler(kAmFin, checked<kAmFin, am_fin>);
  btl::register_handler(kAmSyncAck, checked<kAmSyncAck, am_sync_ack>);
  btl::register_handler(kAmCts, checked<kAmCts, am_cts>);
  btl::register_handler(kAmFrag, checked<kAmFrag, on_frag>);
  btl::register_handler(kAmCtsPut, checked<kAmCtsPut, on_cts_put>);
  btl::register_handler(kAmPutFin, checked<kAmPutFin, on_put_fin>);
  btl::register_handler(kAmSegAck, checked<kAmSegAck, on_seg_ack>);
  btl::register_handler(kAmSegKey, checked<kAmSegKey, on_seg_key>);
  btl::register_handler(kAmPutSegAck, checked<kAmPutSegAck, on_put_seg_ack>);
  btl::register_handler(kAmPutSegKey, checked<kAmPutSegKey, on_put_seg_key>);
  btl::register_handler(kAmCancel, checked<kAmCancel, on_cancel>);
  btl::register_handler(kAmCancelReply, checked<kAmCancelReply, on_cancel_reply>);
  // The PML's queued sends, replies and stalled transfers go first after the
  // transports.
  progress::add_hook(retry_pending);
  explain_init();
  return 0;
}

void finalize() {
  accel::finalize();
  device_states_free();
  reset_rails();  // a re-initialised runtime (sessions) opens new transports
  peer_traffic.clear();  // and counts afresh (the report was written before)
  for (size_t i = 0; i < request_pool.count; ++i) delete request_pool.slots[i];
  request_pool.count = 0;
  live_requests = nullptr;  // the ones never released stay where their owner left them
}

void describe_pending_sends(std::string* out) {
  constexpr int kShown = 8;
  int shown = 0;
  std::string lines;
  for (const Request* r = live_requests; r; r = r->live_next) {
    if (r->kind != Request::Kind::Send || r->complete.load(std::memory_order_acquire) ||
        r->state == kSendEagerSent || (r->persistent && !r->active))
      continue;
    if (++shown > kShown) {
      lines += "    ... and more\n";
      break;
    }
    int peer = -1;
    lines += "    " + describe_request(r, &peer) + "\n";
  }
  *out += lines.empty() ? "  pending sends: none\n" : "  pending sends:\n" + lines;
}

// Only sends that wait (queued, or for an ack, a FIN or a CTS) are linked:
// an eager send completes at once and never pays for the list.
void track_pending_send(Request* r) {
  if (r->live) return;  // a persistent send started again
  r->live = true;
  r->live_next = live_requests;
  if (live_requests) live_requests->live_prev = r;
  live_requests = r;
}

namespace {
// What a request may hold besides itself: a place in the pending-send list,
// a packed copy, device state, a derived type. Out of line: an eager send's
// request holds none of them, and its release then saves no registers.
[[gnu::noinline]] void release_holdings(Request* r) {
  if (r->live) {
    if (r->live_prev) r->live_prev->live_next = r->live_next;
    else live_requests = r->live_next;
    if (r->live_next) r->live_next->live_prev = r->live_prev;
    r->live_next = r->live_prev = nullptr;
    r->live = false;
  }
  if (r->staging) {
    free(r->staging);
    r->staging = nullptr;
  }
  if (r->device_state) device_complete(r);  // never completed (e.g. a persistent request never started)
  datatype_release(const_cast<Datatype*>(r->type));
}
}  // namespace

void request_release(Request* r) {
  progress::Guard guard;
  if (r->live || r->staging || r->device_state || (r->type && !r->type->predefined)) [[unlikely]]
    release_holdings(r);
  r->type = nullptr;
  r->magic = kRequestFreed;
  if (request_pool.count < RequestPool::kCapacity) [[likely]] request_pool.slots[request_pool.count++] = r;
  else delete r;
}

void request_complete(Request* r) {
  // Storing `complete` must be the last touch of a request someone waits
  // for: the waiter may return and reuse the memory (a stack request) at once.
  // Requests with a callback or freed on completion have no waiter.
  if (r->device_state) device_complete(r);
  if (r->on_complete) r->on_complete(r);
  if (r->free_when_complete) {
    r->complete.store(true, std::memory_order_release);
    request_release(r);
    return;
  }
  r->complete.store(true, std::memory_order_release);
}

void release_when_complete(Request* r, void (*done)(Request*)) {
  if (r->complete.load(std::memory_order_acquire)) {
    done(r);
    request_release(r);
    return;
  }
  r->on_complete = done;
  r->free_when_complete = true;
}

namespace {

// The world rank a send or a receive from one source waits for; -1 for
// anything else (any source, generalized and collective requests).
int awaited_peer(const Request* r) {
  if (r->kind != Request::Kind::Send && r->kind != Request::Kind::Recv) return -1;
  if (r->peer < 0 || !r->ctx || r->peer >= r->ctx->size()) return -1;
  return r->ctx->world_of[static_cast<size_t>(r->peer)];
}

}  // namespace

void wait(Request* r) {
  if (r->complete.load(std::memory_order_acquire)) return;
  progress::wait_for_peer([r] { return r->complete.load(std::memory_order_acquire); }, awaited_peer(r));
}

int start_recv(Request* r) {
  MatchQueues* q = r->ctx->queues;
  for (auto it = q->unexpected.begin(); it != q->unexpected.end(); ++it) {
    Message* m = *it;
    if (matches(r->peer, r->match_tag, m->header)) {
      q->unexpected.erase(it);
      deliver(r, *m, m->payload.data(), m->payload.size());
      delete m;
      return MPI_SUCCESS;
    }
  }
  posted_append(q, r);
  return MPI_SUCCESS;
}

int isend(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx,
          SendMode mode, Request** out) {
  progress::Guard guard;
  Request* r = request_alloc(Request::Kind::Send);
  reset_result(r);
  r->mode = mode;
  int rc = prepare(r, const_cast<void*>(buf), count, type, dest, tag, ctx);
  if (rc == MPI_SUCCESS && dest != kProcNull) rc = stage_send(r);
  if (rc != MPI_SUCCESS) {
    request_release(r);
    return rc;
  }
  *out = r;
  if (dest == kProcNull) {
    complete_proc_null(r);
    return MPI_SUCCESS;
  }
  return start_send(r);
}

int irecv(void* buf, MPI_Count count, const Datatype* type, int source, int tag, Context* ctx,
          Request** out) {
  progress::Guard guard;
  Request* r = request_alloc(Request::Kind::Recv);
  reset_result(r);
  int rc = prepare(r, buf, count, type, source, tag, ctx);
  if (rc == MPI_SUCCESS && source != kProcNull) rc = stage_recv(r);
  if (rc != MPI_SUCCESS) {
    request_release(r);
    return rc;
  }
  *out = r;
  if (source == kProcNull) {
    complete_proc_null(r);
    return MPI_SUCCESS;
  }
  return start_recv(r);
}

bool local_card(std::vector<uint8_t>* card) {
  progress::Guard guard;
  return btl::open_dynamic() == 0 && btl::card(card);
}

int add_peer(int id, const std::vector<uint8_t>& card) {
  progress::Guard guard;
  // Per-peer PML state (sequence numbers, queues) grows on first use: what
  // a new process needs first is a route.
  return btl::add_peer(id, card) == 0 ? MPI_SUCCESS : MPI_ERR_INTERN;
}

int send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx,
         SendMode mode) {
  if (dest == kProcNull) return MPI_SUCCESS;
  // (A count too large for the type fails in isend's prepare().)
  if (mode != SendMode::Synchronous && try_send_now(buf, count, type, dest, tag, ctx)) return MPI_SUCCESS;
  Request* r = nullptr;
  int rc = isend(buf, count, type, dest, tag, ctx, mode, &r);
  if (rc != MPI_SUCCESS) return rc;
  wait(r);
  progress::Guard guard;
  rc = r->error;
  request_release(r);
  return rc;
}

size_t node_eager_limit() {
  const rte::Job& job = rte::job();
  for (int peer : job.local_peers)
    if (peer != job.rank) return btl::route(peer)->caps().eager_limit;
  return 0;
}

int recv(void* buf, MPI_Count count, const Datatype* type, int source, int tag, Context* ctx,
         Request* result) {
  // The request lives on our stack: nothing else refers to it once it completes.
  Request& r = *result;
  r.magic = kRequestMagic;
  r.kind = Request::Kind::Recv;
  reset_result(&r);
  int rc = prepare(&r, buf, count, type, source, tag, ctx);
  if (rc != MPI_SUCCESS) return rc;
  // This request is never released, and the caller's handle keeps the type
  // alive for the whole blocking call: give back prepare's reference (the
  // count stays above zero, so nothing is freed here).
  datatype_release(const_cast<Datatype*>(type));
  if (source == kProcNull) {
    complete_proc_null(&r);
    return MPI_SUCCESS;
  }
  {
    progress::Guard guard;
    if ((rc = stage_recv(&r)) != MPI_SUCCESS) return rc;
    start_recv(&r);
  }
  wait(&r);
  return r.error;
}

Request* send_init(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag,
                   Context* ctx, SendMode mode) {
  progress::Guard guard;
  Request* r = request_alloc(Request::Kind::Send);
  reset_result(r);
  r->persistent = true;
  r->mode = mode;
  if (prepare(r, const_cast<void*>(buf), count, type, dest, tag, ctx) != MPI_SUCCESS) {
    request_release(r);
    return nullptr;
  }
  // Inactive persistent requests count as complete for Wait/Test.
  r->complete.store(true, std::memory_order_relaxed);
  return r;
}

Request* recv_init(void* buf, MPI_Count count, const Datatype* type, int source, int tag, Context* ctx) {
  progress::Guard guard;
  Request* r = request_alloc(Request::Kind::Recv);
  reset_result(r);
  r->persistent = true;
  if (prepare(r, buf, count, type, source, tag, ctx) != MPI_SUCCESS) {
    request_release(r);
    return nullptr;
  }
  r->complete.store(true, std::memory_order_relaxed);
  return r;
}

int start(Request* r) {
  progress::Guard guard;
  reset_result(r);
  r->active = true;
  free(r->staging);
  r->staging = nullptr;
  r->packed = 0;
  if (r->peer == kProcNull) {
    complete_proc_null(r);
    return MPI_SUCCESS;
  }
  if (r->kind == Request::Kind::Send) {
    if (int rc = stage_send(r); rc != MPI_SUCCESS) return rc;
    return start_send(r);
  }
  if (int rc = stage_recv(r); rc != MPI_SUCCESS) return rc;
  return start_recv(r);
}

int iprobe(int source, int tag, Context* ctx, bool* found, Request* info) {
  progress::progress();
  progress::Guard guard;
  *found = false;
  for (Message* m : ctx->queues->unexpected) {
    if (matches(source, tag, m->header)) {
      *found = true;
      info->source = m->header.source;
      info->tag = m->header.tag;
      info->bytes = m->header.length;
      info->error = MPI_SUCCESS;
      info->cancelled = false;
      return MPI_SUCCESS;
    }
  }
  return MPI_SUCCESS;
}

int improbe(int source, int tag, Context* ctx, bool* found, Message** msg, Request* info) {
  progress::progress();
  progress::Guard guard;
  *found = false;
  auto& queue = ctx->queues->unexpected;
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    Message* m = *it;
    if (matches(source, tag, m->header)) {
      queue.erase(it);
      *found = true;
      *msg = m;
      info->source = m->header.source;
      info->tag = m->header.tag;
      info->bytes = m->header.length;
      info->error = MPI_SUCCESS;
      info->cancelled = false;
      return MPI_SUCCESS;
    }
  }
  return MPI_SUCCESS;
}

bool message_valid(const Message* m) { return may_be_object<Message>(m) && m->magic == kMessageMagic; }

int imrecv(void* buf, MPI_Count count, const Datatype* type, Message* m, Request** out) {
  progress::Guard guard;
  Request* r = request_alloc(Request::Kind::Recv);
  reset_result(r);
  int rc = prepare(r, buf, count, type, m->header.source, m->header.tag, nullptr);
  if (rc == MPI_SUCCESS) rc = stage_recv(r);
  if (rc != MPI_SUCCESS) {
    request_release(r);
    return rc;
  }
  *out = r;
  deliver(r, *m, m->payload.data(), m->payload.size());
  delete m;
  return MPI_SUCCESS;
}

namespace {
// Drives progress until the receiver answered a send's cancel, for at most
// AXON_CANCEL_WAIT_MS. Without the lock between rounds: other threads go on.
void await_cancel_answer(Request* r) {
  int64_t ms = cancel_wait_param.get();
  if (ms <= 0) return;
  uint64_t deadline = now_ns() + static_cast<uint64_t>(ms) * 1000000u;
  auto answered = [r] {
    progress::Guard guard;
    return cancel_answered(r);
  };
  Backoff backoff(progress::spin_rounds());
  while (!answered() && now_ns() < deadline) {
    if (progress::progress() > 0) backoff.reset();
    else backoff.idle();
  }
}
}  // namespace

void cancel(Request* r) {
  // An inactive persistent request has nothing to cancel (its last
  // operation was completed and retired).
  if (r->persistent && !r->active) return;
  if (r->kind == Request::Kind::Send) {
    if (!r->ctx) return;  // a request that stands for no message of its own
    {
      progress::Guard guard;
      cancel_send(r);  // also for a completed eager send: its message may still be withdrawn
    }
    await_cancel_answer(r);
    return;
  }
  progress::Guard guard;
  if (r->complete.load(std::memory_order_acquire)) return;
  if (r->kind != Request::Kind::Recv) return;
  if (r->state != 0 || !r->ctx) return;  // already matched: it will complete normally
  // Still on the posted queue?
  for (Request* p = r->ctx->queues->posted_head; p; p = p->next) {
    if (p == r) {
      posted_remove(r->ctx->queues, r);
      r->cancelled = true;
      r->source = kAnySource;
      r->tag = kAnyTag;
      r->bytes = 0;
      request_complete(r);
      return;
    }
  }
}

}  // namespace axon::pml
