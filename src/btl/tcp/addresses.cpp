// btl/tcp: which of a peer's addresses to use, and striping over several
// (docs/tcp.md, "Start-up and business card", "Striping").
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "btl/tcp/internal.h"
#include "rte/rte.h"

namespace axon::btl::tcp {

namespace {

BoolParam striping_param{"AXON_BTL_TCP_STRIPING", true,
                         "Spread the fragments of large messages to a rank on another node over one "
                         "connection per pair of interfaces on a common subnet, when both ranks have "
                         "several"};
BoolParam stripe_local_param{"AXON_BTL_TCP_STRIPE_LOCAL", false,
                             "Stripe to ranks of this node too, over every address they listen on "
                             "(lets striping be tested on one machine)"};

Counter striped{"axon_btl_tcp_striped_messages", Counter::Class::Counter,
                "Fragments sent over a peer's additional connections (striping)"};

}  // namespace

// Picks the peer's address: its loopback one when it shares our node (ranks
// of one node share a network namespace), else one on a subnet one of our
// interfaces is on, else any non-loopback one (routed).
void TcpTransport::choose_address(int r, const std::vector<uint8_t>& bytes) {
  Card card;
  if (!parse_card(bytes.data(), bytes.size(), &card)) {
    log::warn("tcp: rank %d published a business card this version cannot read", r);
    return;
  }
  const std::vector<CardEntry>& entries = card.entries;
  const CardEntry* pick = nullptr;
  const Interface* via = nullptr;  // our interface on pick's subnet
  const bool local = same_node(r);
  if (local) {
    for (const CardEntry& e : entries)
      if (e.loopback && !pick) pick = &e;
    if (!pick && !entries.empty()) pick = &entries[0];
  } else {
    for (const CardEntry& e : entries) {
      if (e.loopback || pick) continue;
      for (const auto& l : listeners_)
        if (!pick && !l->iface.loopback && (e.addr & l->iface.mask) == (l->iface.addr & l->iface.mask)) {
          pick = &e;
          via = &l->iface;
        }
    }
    for (const CardEntry& e : entries)
      if (!e.loopback && !pick) pick = &e;
  }
  if (!pick) {
    log::debug(1, "tcp: no address of rank %d is usable from here", r);
    return;
  }
  Peer& p = peers_[r];
  p.reachable = true;
  p.addr = pick->addr;
  p.port = pick->port;
  std::memcpy(p.token, card.token, sizeof p.token);
  p.weight = via ? weight_of(via->speed_mbs, pick->speed_mbs) : kDefaultWeight;
  log::debug(2, "tcp: rank %d at %s", r, ip_text(p.addr, p.port).c_str());
  if (!striping_param.get()) return;
  // Striping links: each further pair of one of our interfaces and one of
  // the peer's addresses on its subnet, neither used twice.
  std::vector<const CardEntry*> used{pick};
  std::vector<const Interface*> used_ifaces{via};
  for (const auto& l : listeners_) {
    if (p.extra.size() + 1 >= kMaxLinks) break;
    if (local) {
      if (!stripe_local_param.get()) break;
      for (const CardEntry& e : entries)  // one node: every other address the peer listens on
        if (std::find(used.begin(), used.end(), &e) == used.end() && p.extra.size() + 1 < kMaxLinks) {
          used.push_back(&e);
          p.extra.push_back({e.addr, e.port, kDefaultWeight});
        }
      break;
    }
    if (l->iface.loopback || std::find(used_ifaces.begin(), used_ifaces.end(), &l->iface) != used_ifaces.end())
      continue;
    for (const CardEntry& e : entries) {
      if (e.loopback || std::find(used.begin(), used.end(), &e) != used.end()) continue;
      if ((e.addr & l->iface.mask) != (l->iface.addr & l->iface.mask)) continue;
      used.push_back(&e);
      used_ifaces.push_back(&l->iface);
      p.extra.push_back({e.addr, e.port, weight_of(l->iface.speed_mbs, e.speed_mbs)});
      break;
    }
  }
  if (!p.extra.empty()) log::debug(2, "tcp: rank %d: %zu more connection(s) for striping", r, p.extra.size());
}

// Ranks of this job: PMIx says who shares the node. A foreign process is
// taken as local when its host name is ours (its loopback address is then
// reachable; separate network namespaces with one host name are not
// supported for dynamic processes).
bool TcpTransport::same_node(int id) {
  if (const rte::Proc* p = rte::foreign(id)) return p->hostname == rte::job().hostname;
  return rte::is_local(id);
}

uint32_t TcpTransport::weight_of(uint32_t a, uint32_t b) {
  if (a && b) return std::min(a, b);
  return a ? a : b ? b : kDefaultWeight;
}

// The connection for an order-insensitive message: the least loaded by
// stride scheduling among the ordered connection and the open links whose
// queue has room.
Conn* TcpTransport::pick_link(Peer& p) {
  p.pass.resize(p.links.size() + 1, 0);
  Conn* best = nullptr;
  size_t best_index = 0;
  for (size_t k = 0; k <= p.links.size(); ++k) {
    Conn* c = k == 0 ? p.open : p.links[k - 1];
    if (!c || c->state != ConnState::Open || (c->out_bytes >= queue_limit_ && !c->out.empty())) continue;
    if (!best || p.pass[k] < p.pass[best_index]) {
      best = c;
      best_index = k;
    }
  }
  if (!best) return p.open;  // all full: the ordered one refuses with kAgain
  if (best != p.open) striped.add();
  // Links the peer opened may outnumber the pairs we found ourselves.
  uint32_t w = best_index == 0                  ? p.weight
               : best_index - 1 < p.extra.size() ? p.extra[best_index - 1].weight
                                                 : kDefaultWeight;
  p.pass[best_index] += 1000000000ull / std::max<uint32_t>(1, w);
  return best;
}

// A striping connection from us; it carries nothing until accepted.
void TcpTransport::start_link(int peer, uint32_t k) {
  Peer& p = peers_[peer];
  const Peer::Address& a = p.extra[k - 1];
  std::string why;
  if (!dial(peer, k, a.addr, a.port, &why))
    log::debug(1, "tcp: no striping link %u to rank %d: %s", k, peer, why.c_str());
}

void TcpTransport::open_link(Conn* c) {
  Peer& p = peers_[c->peer];
  if (p.links.size() < c->link) p.links.resize(c->link, nullptr);
  p.links[c->link - 1] = c;
  p.pass.resize(p.links.size() + 1, 0);
  // Start level with the busiest connection so the new one takes its share, not a burst.
  p.pass[c->link] = *std::max_element(p.pass.begin(), p.pass.end());
  c->state = ConnState::Open;
  log::debug(2, "tcp: striping link %u to rank %d open (%s)", c->link, c->peer, c->where.c_str());
  flush(c);
}

}  // namespace axon::btl::tcp
