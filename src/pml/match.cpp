// Matching: posted receives, unexpected messages, and MPI's non-overtaking
// rule (messages from one sender on one communicator match in send order,
// enforced with per-sender sequence numbers).
#include <algorithm>

#include "base/counter.h"
#include "base/log.h"
#include "diag/events.h"
#include "diag/hang.h"
#include "pml/decode.h"
#include "pml/internal.h"

namespace axon::pml {

namespace {
std::unordered_map<uint32_t, std::unique_ptr<MatchQueues>> all_queues;

uint64_t unexpected_queue_length() {
  progress::Guard guard;
  uint64_t n = 0;
  for (const auto& [id, q] : all_queues) n += q->unexpected.size();
  return n;
}

Counter unexpected_messages{"axon_pml_unexpected_messages", Counter::Class::Counter,
                            "Messages that arrived before a matching receive was posted"};
Counter unexpected_now{"axon_pml_unexpected_queue_length", Counter::Class::Level,
                       "Messages waiting for a matching receive right now (all communicators)",
                       unexpected_queue_length};
}

// Consecutive messages almost always belong to one communicator: the last
// lookup is remembered so the common case costs one comparison, not a hash.
namespace {
uint32_t last_id = 0;
MatchQueues* last_queues = nullptr;
}  // namespace

MatchQueues* queues_for(uint32_t context_id) {
  if (last_queues && last_id == context_id) return last_queues;
  auto& slot = all_queues[context_id];
  if (!slot) slot = std::make_unique<MatchQueues>();
  last_id = context_id;
  last_queues = slot.get();
  return last_queues;
}

void drop_queues(uint32_t context_id) {
  auto it = all_queues.find(context_id);
  if (it == all_queues.end()) return;
  if (last_queues == it->second.get()) last_queues = nullptr;
  for (Message* m : it->second->unexpected) delete m;
  for (Message* m : it->second->out_of_order) delete m;
  all_queues.erase(it);
}

void context_open(Context* ctx, uint32_t id, int rank, std::vector<int> world_of) {
  progress::Guard guard;
  ctx->id = id;
  ctx->rank = rank;
  ctx->world_of = std::move(world_of);
  ctx->next_seq.assign(ctx->world_of.size(), 0);
  ctx->queues = queues_for(id);
  ctx->queues->ctx = ctx;
  if (ctx->queues->expected_seq.size() < ctx->world_of.size())
    ctx->queues->expected_seq.resize(ctx->world_of.size(), 0);
}

void context_close(Context* ctx) {
  progress::Guard guard;
  if (ctx->queues) drop_queues(ctx->id);
  ctx->queues = nullptr;
}

bool context_has_posted(const Context* ctx) {
  progress::Guard guard;
  return ctx->queues && ctx->queues->posted_head;
}

bool matches(int want_source, int want_tag, const MatchHeader& h) {
  return (want_source == kAnySource || want_source == h.source) &&
         (want_tag == h.tag || (want_tag == kAnyTag && h.tag >= 0));
}

void posted_append(MatchQueues* q, Request* r) {
  r->next = nullptr;
  r->prev = q->posted_tail;
  if (q->posted_tail) q->posted_tail->next = r;
  else q->posted_head = r;
  q->posted_tail = r;
}

void posted_remove(MatchQueues* q, Request* r) {
  if (r->prev) r->prev->next = r->next;
  else q->posted_head = r->next;
  if (r->next) r->next->prev = r->prev;
  else q->posted_tail = r->prev;
  r->next = r->prev = nullptr;
}

namespace {

// The first posted receive that `h` matches, taken off the posted list; null
// when none does.
Request* take_posted(MatchQueues* q, const MatchHeader& h) {
  for (Request* r = q->posted_head; r; r = r->next) {
    if (matches(r->peer, r->match_tag, h)) {
      posted_remove(q, r);
      return r;
    }
  }
  return nullptr;
}

// Matches an in-order message against the posted receives, or keeps it.
void match_or_keep(MatchQueues* q, int src_world, int am_id, const MatchHeader& h, const uint8_t* rest,
                   size_t rest_len) {
  Message m;
  m.header = h;
  m.source_world = src_world;
  m.am_id = am_id;
  MatchRest info;
  parse_match_rest(am_id, rest, rest_len, &info);
  m.sender_request = info.sender_request;
  m.synchronous = info.synchronous;
  m.address = info.address;
  m.key = info.key;
  m.readable = info.readable;
  m.segment = info.segment;
  m.key1 = info.key1;
  if (info.has_ipc) m.ipc = &info.ipc;
  const uint8_t* payload = info.payload;
  size_t payload_len = info.payload_len;
  if (Request* r = take_posted(q, h)) {
    deliver(r, m, payload, payload_len);
    return;
  }
  auto* kept = new Message(std::move(m));
  if (info.has_ipc) {
    kept->ipc_kept = std::make_unique<const accel::IpcHandle>(info.ipc);
    kept->ipc = kept->ipc_kept.get();
  }
  if (am_id != kAmRts && am_id != kAmRtsDevice) kept->payload.assign(payload, payload_len);
  q->unexpected.push_back(kept);
  unexpected_messages.add();
  if (diag::events::subscribed(diag::events::Event::UnexpectedGrowth)) [[unlikely]]
    diag::events::raise_unexpected_growth(q->unexpected.size(), h.source, h.tag);
}

}  // namespace

namespace {
// queues_for's remembered lookup, inline for the arrival path.
MatchQueues* cached_queues(uint32_t context_id) {
  if (last_queues && last_id == context_id) [[likely]] return last_queues;
  return queues_for(context_id);
}
}  // namespace

void on_match_message(int am_id, int src_world, const void* msg, size_t len) {
  MatchHeader h;
  size_t header_len = sizeof h;
  if (am_id == kAmEagerShort) {
    h = expand_short(msg, len);
    header_len = sizeof(ShortMatchHeader);
    am_id = kAmEager;  // from here on, the same message
    // The common arrival: a standard eager message in its turn, with
    // nothing parked, for a receive already posted. It is delivered
    // without building a Message (as match_or_keep does for every kind);
    // that cost ~70 instructions per small message (callgrind).
    MatchQueues* q = cached_queues(h.context);
    const size_t source = size_t(h.source);
    if (source < q->expected_seq.size() && h.seq == q->expected_seq[source] && q->out_of_order.empty()) [[likely]] {
      if (Request* r = take_posted(q, h)) {
        ++q->expected_seq[source];
        deliver_eager(r, h, static_cast<const uint8_t*>(msg) + header_len, len - header_len);
        return;
      }
    }
  } else {
    std::memcpy(&h, msg, sizeof h);
  }
  const uint8_t* rest = static_cast<const uint8_t*>(msg) + header_len;
  size_t rest_len = len - header_len;

  MatchQueues* q = cached_queues(h.context);
  if (q->expected_seq.size() <= size_t(h.source)) q->expected_seq.resize(h.source + 1, 0);
  if (h.seq != q->expected_seq[h.source]) {
    // Ahead of an earlier message from the same sender (possible only when
    // messages to one peer travel over several transports): park it.
    auto* m = new Message;
    m->header = h;
    m->source_world = src_world;
    m->am_id = am_id;
    m->payload.assign(rest, rest_len);
    q->out_of_order.push_back(m);
    return;
  }
  ++q->expected_seq[h.source];
  match_or_keep(q, src_world, am_id, h, rest, rest_len);
  // Release parked messages that are now in turn.
  for (bool again = !q->out_of_order.empty(); again;) {
    again = false;
    for (auto it = q->out_of_order.begin(); it != q->out_of_order.end(); ++it) {
      Message* m = *it;
      if (m->header.seq == q->expected_seq[m->header.source]) {
        q->out_of_order.erase(it);
        ++q->expected_seq[m->header.source];
        match_or_keep(q, m->source_world, m->am_id, m->header, m->payload.data(), m->payload.size());
        delete m;
        again = true;
        break;
      }
    }
  }
}

}  // namespace axon::pml

namespace axon::pml {

// ---- the hang doctor's view (src/diag/hang.h) -------------------------------------

namespace {
std::string in_comm(const Context* ctx) {
  return ctx ? diag::hang::comm_name(ctx->id) : std::string("?");
}
std::string rank_or_wildcard(int rank) {
  return rank == kAnySource ? std::string("MPI_ANY_SOURCE") : std::to_string(rank);
}
std::string tag_or_wildcard(int tag) { return tag == kAnyTag ? std::string("MPI_ANY_TAG") : std::to_string(tag); }
const char* send_state(uint8_t state) {
  switch (state) {
    case kSendQueued: return "queued here (transport busy or connecting)";
    case kSendWaitAck: return "waiting for the receiver to match it (synchronous)";
    case kSendWaitFin: return "announced (rendezvous), waiting for the receiver to match it and take the data";
    case kSendWaitCts: return "waiting for the receiver to match it (rendezvous)";
    case kSendStreaming: return "sending fragments";
    case kSendEagerSent: return "sent";
    default: return "starting";
  }
}
const char* recv_state(uint8_t state) {
  switch (state) {
    case kRecvPosted: return "not matched yet";
    case kRecvFragments: return "matched, receiving fragments";
    case kRecvWaitPut: return "matched, waiting for the sender's write";
    case kRecvSegments: return "matched, reading segments";
    case kRecvReading: return "matched, reading the data";
    default: return "starting";
  }
}
}  // namespace

std::string describe_request(const Request* r, int* world_peer) {
  *world_peer = -1;
  bool done = r->complete.load(std::memory_order_acquire);
  const Context* ctx = r->ctx;
  auto world = [&](int peer) {
    return ctx && peer >= 0 && peer < ctx->size() ? ctx->world_of[static_cast<size_t>(peer)] : -1;
  };
  std::string text;
  switch (r->kind) {
    case Request::Kind::Send:
      text = "send to " + std::to_string(r->peer) + " tag " + std::to_string(r->match_tag) + " on " + in_comm(ctx) +
             " (" + std::to_string(r->length) + " bytes), " + (done ? "complete" : send_state(r->state));
      *world_peer = world(r->peer);
      break;
    case Request::Kind::Recv:
      text = "receive from " + rank_or_wildcard(r->peer) + " tag " + tag_or_wildcard(r->match_tag) + " on " +
             in_comm(ctx) + " (up to " + std::to_string(r->length) + " bytes), " +
             (done ? "complete" : recv_state(r->state));
      *world_peer = world(r->peer);
      break;
    case Request::Kind::Collective: text = std::string("nonblocking collective, ") + (done ? "complete" : "incomplete"); break;
    case Request::Kind::Generalized: text = std::string("generalized request, ") + (done ? "complete" : "incomplete"); break;
  }
  return text;
}

// Posted receives one per line (the first few of each context), then the
// unexpected messages per context: how many, and the first few.
void describe_matching(std::string* out) {
  constexpr int kShown = 8;
  std::string posted, unexpected;
  for (const auto& [id, q] : all_queues) {
    int shown = 0;
    for (const Request* r = q->posted_head; r; r = r->next) {
      if (++shown > kShown) {
        posted += "    ... and more\n";
        break;
      }
      posted += "    receive from " + rank_or_wildcard(r->peer) + " tag " + tag_or_wildcard(r->match_tag) + " on " +
                diag::hang::comm_name(id) + " (up to " + std::to_string(r->length) + " bytes)\n";
    }
    if (q->unexpected.empty()) continue;
    unexpected += "    " + std::to_string(q->unexpected.size()) + " on " + diag::hang::comm_name(id) + ":";
    shown = 0;
    for (const Message* m : q->unexpected) {
      if (++shown > kShown) {
        unexpected += " ...";
        break;
      }
      unexpected += std::string(shown > 1 ? "," : "") + " from " + std::to_string(m->header.source) + " tag " +
                    std::to_string(m->header.tag) + " (" + std::to_string(m->header.length) + " bytes)";
    }
    unexpected += "\n";
  }
  *out += posted.empty() ? "  posted receives: none\n" : "  posted receives:\n" + posted;
  *out += unexpected.empty() ? "  unexpected messages: none\n" : "  unexpected messages:\n" + unexpected;
}

}  // namespace axon::pml
