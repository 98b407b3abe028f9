// Transport selection and the endpoint table: which transport carries
// messages to each peer.
#include "btl/btl.h"

#include <cstring>
#include <sstream>
#include <string>

#include "base/log.h"
#include "base/param.h"
#include "btl/self/self.h"
#include "btl/sm/sm.h"
#include "rte/rte.h"

namespace axon::btl {

namespace {

StringParam btl_param{"AXON_BTL", "self,sm",
                      "Comma-separated transports to use (self, sm); a rank must be reachable "
                      "by one of them"};

void unknown_am(int src, const void*, size_t len) {
  log::error("dropped a %zu-byte message from rank %d with no handler", len, src);
}

AmHandler handlers[kMaxAmIds];
std::vector<std::unique_ptr<Transport>> transports;
std::vector<Transport*> routes;  // by world rank

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

std::vector<const char*> available() { return {"self", "sm"}; }

int init() {
  const rte::Job& job = rte::job();
  {
    std::stringstream ss(btl_param.get());
    std::string item;
    while (std::getline(ss, item, ','))
      if (item != "self" && item != "sm") {
        log::error("AXON_BTL names an unknown transport \"%s\" (available: self, sm)", item.c_str());
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
  if (int err = rte::exchange()) return err;
  for (auto& t : transports)
    if (int err = t->connect_peers()) return err;

  routes.assign(job.size, nullptr);
  for (int peer = 0; peer < job.size; ++peer) {
    for (auto& t : transports)
      if (t->reaches(peer) && (!routes[peer] || t->caps().latency_ns < routes[peer]->caps().latency_ns))
        routes[peer] = t.get();
    if (!routes[peer]) {
      log::error("no transport reaches rank %d (AXON_BTL=%s); this build supports ranks on one node "
                 "through self and sm", peer, btl_param.get().c_str());
      return 1;
    }
  }
  return 0;
}

void finalize() {
  routes.clear();
  transports.clear();
}

Transport* route(int world_rank) { return routes[world_rank]; }

int progress() {
  int n = 0;
  for (auto& t : transports) n += t->progress();
  return n;
}

}  // namespace axon::btl
