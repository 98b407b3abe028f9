// Multi-rail striping: which of a peer's rails carries the next piece.
//
// A transport may reach a peer over several rails (btl.h Transport::rails:
// the ports or devices of btl/verbs, the NIC address pairs of btl/tcp). The
// protocols split what they move into pieces anyway — rendezvous pieces of
// Caps::max_rdma bytes (rndv.cpp), fragments of the eager limit
// (protocol.cpp) — so striping is a choice made per piece, here, once for
// every transport: each rail gets bytes in proportion to its weight (its
// link rate). The rule is stride scheduling on virtual finish times: a
// rail's "time" is the bytes it was given divided by its weight, and the next
// piece goes to the rail whose time after taking it would be smallest. A rail
// that joins later (a connection still opening at the first pieces) starts at
// the busiest rail's time, so it takes its share from then on instead of a
// burst that would queue behind itself. A rail whose queue is full (kAgain)
// is skipped for that piece: the caller asks again with it refused, so a slow
// rail never holds up the others.
#include <algorithm>
#include <unordered_map>

#include "base/counter.h"
#include "pml/internal.h"

namespace axon::pml {

namespace {

Counter rail_pieces{"axon_pml_rail_pieces", Counter::Class::Counter,
                    "Rendezvous pieces and fragments the pml striped onto a rail other than a peer's "
                    "first (multi-rail transports)"};

struct PeerRails {
  int known = 0;              // rails seen so far; later ones join at the busiest time
  double time[btl::kMaxRails] = {};  // bytes given / weight
};

// By transport and peer; only peers with several rails get an entry.
struct Key {
  const btl::Transport* t;
  int peer;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<const void*>()(k.t) ^ (static_cast<size_t>(static_cast<unsigned>(k.peer)) * 0x9e3779b97f4a7c15ull);
  }
};
std::unordered_map<Key, PeerRails, KeyHash> shares;

PeerRails& rails_of(btl::Transport* t, int peer, int n) {
  PeerRails& p = shares[Key{t, peer}];
  if (n > p.known) {
    double busiest = 0;
    for (int k = 0; k < p.known; ++k) busiest = std::max(busiest, p.time[k]);
    for (int k = p.known; k < n; ++k) p.time[k] = busiest;
    p.known = n;
  }
  return p;
}

}  // namespace

int pick_rail(btl::Transport* t, int peer, size_t len, unsigned refused) {
  int n = std::min(t->rails(peer), btl::kMaxRails);
  if (n <= 1) return (refused & 1u) ? -1 : 0;
  PeerRails& p = rails_of(t, peer, n);
  int best = -1;
  double best_finish = 0;
  for (int k = 0; k < n; ++k) {
    if (refused & (1u << k)) continue;
    uint32_t w = t->rail_weight(peer, k);
    if (w == 0) continue;
    double finish = p.time[k] + static_cast<double>(len) / w;
    if (best < 0 || finish < best_finish) {
      best = k;
      best_finish = finish;
    }
  }
  return best;
}

void charge_rail(btl::Transport* t, int peer, int rail, size_t len) {
  int n = std::min(t->rails(peer), btl::kMaxRails);
  if (n <= 1 || rail >= n) return;
  PeerRails& p = rails_of(t, peer, n);
  uint32_t w = std::max<uint32_t>(1, t->rail_weight(peer, rail));
  p.time[rail] += static_cast<double>(len) / w;
  if (rail != 0) rail_pieces.add();
}

void reset_rails() { shares.clear(); }

}  // namespace axon::pml
