// Transport selection and the endpoint table: which transport carries
// messages to each peer.
#include "btl/btl.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>

#include "base/log.h"
#include "base/param.h"
#include "btl/self/self.h"
#include "btl/sm/sm.h"
#include "btl/tcp/tcp.h"
#include "axon_config.h"
#ifdef AXON_HAVE_VERBS
#include "btl/verbs/verbs.h"
#endif
#include "rte/rte.h"

namespace axon::btl {

namespace detail {
std::vector<Transport*> routes;
}  // namespace detail
using detail::routes;

namespace {

StringParam btl_param{"AXON_BTL", "self,sm",
                      "Comma-separated transports to use (self, sm, tcp, verbs); a rank must be "
                      "reachable by one of them; unset, tcp and verbs (where an RDMA port is "
                      "active) are added when the job spans nodes. Each peer uses the fastest "
                      "transport that reaches it (sm, then verbs, then tcp)"};

void unknown_am(int src, const void*, size_t len) {
  log::error("dropped a %zu-byte message from rank %d with no handler", len, src);
}

AmHandler handlers[kMaxAmIds];
std::vector<std::unique_ptr<Transport>> transports;
// Progress: the transports that are some peer's route run on every call;
// the others (e.g. tcp opened beside verbs, which carries every peer) only
// every kIdleEvery-th, to accept what a peer might still send them (a
// process of another job connecting) without a system call per progress.
std::vector<Transport*> routed;
std::vector<Transport*> unrouted;
constexpr unsigned kIdleEvery = 64;
unsigned idle_calls = 0;

// Whether `a` carries a small message faster than `b`: lower latency, then
// higher bandwidth.
bool better(const Transport* a, const Transport* b) {
  const Caps &ca = a->caps(), &cb = b->caps();
  if (ca.latency_ns != cb.latency_ns) return ca.latency_ns < cb.latency_ns;
  return ca.bandwidth_mbs > cb.bandwidth_mbs;
}

void sort_by_routing() {
  routed.clear();
  unrouted.clear();
  for (auto& t : transports) {
    bool carries = std::find(routes.begin(), routes.end(), t.get()) != routes.end();
    (carries ? routed : unrouted).push_back(t.get());
  }
}

bool enabled(const char* name) {
  std::stringstream ss(btl_param.get());
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == name) return true;
  return false;
}

}  // namespace

void register_handler(int am_id, AmHandler h) { handlers[am_id] = h; }


AmHandler handler(int am_id) {
  AmHandler h = am_id >= 0 && am_id < kMaxAmIds ? handlers[am_id] : nullptr;
  return h ? h : unknown_am;
}

std::vector<const char*> available() {
  std::vector<const char*> names{"self", "sm", "tcp"};
#ifdef AXON_HAVE_VERBS
  names.push_back("verbs");
#endif
  return names;
}

int init() {
  const rte::Job& job = rte::job();
  {
    std::stringstream ss(btl_param.get());
    std::string item;
    while (std::getline(ss, item, ','))
      if (item != "self" && item != "sm" && item != "tcp" && item != "verbs") {
        log::error("AXON_BTL names an unknown transport \"%s\" (known: self, sm, tcp, verbs)", item.c_str());
        return 1;
      }
  }
  if (enabled("self")) transports.push_back(open_self());
  if (enabled("sm")) {
    int err = 0;
    auto sm = open_sm(&err);
    if (err) return err;
    if (sm) transports.push_back(std::move(sm));
  }
  // tcp: when AXON_BTL names it, and by default when some rank is on another
  // node (the default list stays self,sm: one-node jobs open no sockets).
  if (enabled("tcp") || (!btl_param.is_set() && job.local_size < job.size)) {
    int err = 0;
    auto tcp = open_tcp(&err);
    if (err) return err;
    if (tcp) transports.push_back(std::move(tcp));
  }
  // verbs: required when AXON_BTL names it; by default tried (and silently
  // left out if unusable) when some rank is on another node.
  if (enabled("verbs") || (!btl_param.is_set() && job.local_size < job.size)) {
#ifdef AXON_HAVE_VERBS
    int err = 0;
    auto verbs = open_verbs(enabled("verbs"), &err);
    if (err) return err;
    if (verbs) transports.push_back(std::move(verbs));
#else
    if (enabled("verbs")) {
      log::error("AXON_BTL names verbs, but this Axon was built without it (configure found no "
                 "libibverbs/librdmacm development files)");
      return 1;
    }
#endif
  }
  if (int err = rte::exchange()) return err;
  for (auto& t : transports)
    if (int err = t->connect_peers()) return err;

  routes.assign(job.size, nullptr);
  for (int peer = 0; peer < job.size; ++peer) {
    for (auto& t : transports)
      if (t->reaches(peer) && (!routes[peer] || better(t.get(), routes[peer]))) routes[peer] = t.get();
    if (!routes[peer]) {
      log::error("no transport reaches rank %d (AXON_BTL=%s): ranks on other nodes need tcp, "
                 "ranks on this node sm or tcp, and each rank self", peer, btl_param.get().c_str());
      return 1;
    }
  }
  sort_by_routing();
  return 0;
}

int open_dynamic() {
  for (auto& t : transports)
    if (std::strcmp(t->name(), "tcp") == 0) return 0;
  int err = 0;
  auto tcp = open_tcp_dynamic(&err);
  if (err || !tcp) return err ? err : 1;
  transports.push_back(std::move(tcp));
  sort_by_routing();
  return 0;
}

bool card(std::vector<uint8_t>* out) {
  for (auto& t : transports)
    if (t->card(out)) return true;
  return false;
}

int add_peer(int id, const std::vector<uint8_t>& peer_card) {
  if (id < 0) return 1;
  if (routes.size() <= size_t(id)) routes.resize(size_t(id) + 1, nullptr);
  if (routes[id]) return 0;
  for (auto& t : transports)
    if (t->add_peer(id, peer_card) && t->reaches(id)) {
      routes[id] = t.get();
      sort_by_routing();
      return 0;
    }
  return 1;
}

void finalize() {
  routes.clear();
  routed.clear();
  unrouted.clear();
  transports.clear();
}


int progress() {
  int n = 0;
  for (Transport* t : routed) n += t->progress();
  if (!unrouted.empty() && ++idle_calls >= kIdleEvery) {
    idle_calls = 0;
    for (Transport* t : unrouted) n += t->progress();
  }
  return n;
}

int Transport::send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len,
                           PackFn pack, void* context) {
  if (pack_buffer_.size() < payload_len) pack_buffer_.resize(payload_len);
  pack(context, pack_buffer_.data(), payload_len);
  return send(peer, am_id, header, header_len, pack_buffer_.data(), payload_len);
}

int DoneQueue::run_ready() {
  // A callback may post again and so push here: run only what was queued.
  running_.swap(ready_);
  int n = static_cast<int>(running_.size());
  for (const Ready& r : running_) r.op->done(r.op, r.status);
  running_.clear();
  return n;
}

}  // namespace axon::btl
