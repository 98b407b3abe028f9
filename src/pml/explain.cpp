// AXON_EXPLAIN=1: each rank prints which protocol its point-to-point sends
// take and why, once per peer class, size class and memory kind (the words
// come from src/diag/path.h, shared with axon_info --explain). Collectives
// explain themselves too (src/coll/select.cpp, as with AXON_COLL_EXPLAIN).
#include <algorithm>
#include <cstdio>

#include "accel/accel.h"
#include "base/param.h"
#include "diag/path.h"
#include "pml/internal.h"
#include "rte/rte.h"

namespace axon::pml {

namespace {

BoolParam explain_param{"AXON_EXPLAIN", false,
                        "Every rank prints, once per peer class (itself, this node, another node), size class "
                        "(within the transport's eager limit or above) and memory kind (host or GPU), the "
                        "transport and protocol its point-to-point messages take and why; collectives print "
                        "their algorithm and why (as AXON_COLL_EXPLAIN). axon_info --explain prints the table "
                        "for this node without a job"};

// What was explained already, by peer class, size class and memory kind.
bool explained[3][2][2];

}  // namespace

bool explain_sends = false;

void explain_init() {
  explain_sends = explain_param.get();
  std::fill(&explained[0][0][0], &explained[0][0][0] + sizeof explained / sizeof(bool), false);
}

bool explaining() { return explain_param.get(); }

void explain_send(int dest_world, size_t length, SendMode mode, bool contiguous, const Request* r,
                  const btl::Transport* t) {
  const btl::Caps& caps = t->caps();
  diag::TransportFacts facts;
  facts.name = t->name();
  facts.eager_limit = caps.eager_limit;
  facts.can_get = caps.can_get;
  facts.can_put = caps.can_put;
  facts.registers = caps.registers;
  diag::Message m;
  m.length = length;
  m.synchronous = mode == SendMode::Synchronous;
  m.contiguous = contiguous;
  if (r && r->device) {
    m.device = true;
    facts.device_eager_limit = device_eager_limit(r, t);
    facts.device_ipc = (r->device & kDeviceIpc) && caps.ipc_peers && accel::ipc_enabled();
  }
  if (r && !contiguous) facts.pack_segment = send_segment(r, caps);
  const int me = rte::job().rank;
  const diag::PeerClass peer = dest_world == me            ? diag::PeerClass::Self
                               : rte::is_local(dest_world) ? diag::PeerClass::SameNode
                                                           : diag::PeerClass::OtherNode;
  bool& seen = explained[static_cast<int>(peer)][static_cast<int>(diag::size_class(facts, m))][m.device];
  if (seen) return;
  seen = true;
  const diag::PathExplained e = diag::explain_path(facts, m);
  std::fprintf(stderr, "axon explain: rank %d to rank %d (%s, %s), %s of %s: %s: %s\n", me, dest_world,
               diag::peer_class_name(peer), facts.name.c_str(), diag::size_text(length).c_str(),
               m.device ? "GPU memory" : "host memory", e.protocol.c_str(), e.why.c_str());
}

}  // namespace axon::pml
