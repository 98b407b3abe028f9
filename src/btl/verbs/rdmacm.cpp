// btl/verbs: connections. Each peer gets one reliable-connected QP, created
// the first time we send to it (lazily: a job where ranks talk to few peers
// sets up few QPs), through librdmacm using the IP address and port
// published in the peer's business card. Both sides may connect at once;
// the connection initiated by the lower rank wins (on_connect_request), so
// a pair always ends with exactly one QP. The private data of the request
// and the accept (Hello) carry the job's identity, the rank, the receive
// buffers posted and where the credit mailbox is.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>

#include "base/clock.h"
#include "base/log.h"
#include "base/status.h"
#include "diag/events.h"
#include "rte/rte.h"

namespace axon::btl::verbs {

uint64_t hash_string(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

int VerbsTransport::connect_peers() {
  const rte::Job& job = rte::job();
  endpoints_.resize(job.size);
  std::vector<uint8_t> data;
  for (int r = 0; r < job.size; ++r) {
    if (r == job.rank) continue;
    if (rte::lookup(r, card_key_.c_str(), &data) == 0 && data.size() == sizeof(Card)) {
      std::memcpy(&endpoints_[r].card, data.data(), sizeof(Card));
      endpoints_[r].has_card = endpoints_[r].card.magic == kCardMagic;
    }
  }
  return 0;
}

// The established connection to `peer` in *out: kOk, kAgain while it is
// being set up (started here on first use), kUnreachable when it failed.
int VerbsTransport::established(int peer, Conn** out) {
  Endpoint& ep = endpoints_[peer];
  Conn* c = ep.conn;
  if (!c || !c->established) {
    if (ep.failed) return kUnreachable;
    if (!has_conn(peer)) {
      if (ep.await_deadline == 0) {
        if (start_connect(peer) != 0) return kUnreachable;
      } else if (now_ns() > ep.await_deadline) {
        peer_failed(peer, "it rejected our connection for its own, which never came");
        return kUnreachable;
      }
    }
    poll_events();
    c = ep.conn;
    if (!c || !c->established) return ep.failed ? kUnreachable : kAgain;
  }
  *out = c;
  return kOk;
}

bool VerbsTransport::connecting_to(int peer) const {
  for (const auto& [id, c] : conns_)
    if (c->peer == peer && c->active && !c->superseded) return true;
  return false;
}

Conn* VerbsTransport::new_conn(int peer, bool active) {
  auto c = std::make_unique<Conn>();
  c->peer = peer;
  c->active = active;
  c->deadline_ns = now_ns() + static_cast<uint64_t>(std::max<int64_t>(1, timeout_param.get())) * 1000000000ull;
  Conn* raw = c.get();
  pending_.push_back(std::move(c));
  return raw;
}

int VerbsTransport::start_connect(int peer) {
  Endpoint& ep = endpoints_[peer];
  Conn* c = new_conn(peer, true);
  if (rdma_create_id(channel_, &c->id, c, RDMA_PS_TCP) != 0) {
    log::error("verbs: rdma_create_id failed: %s", strerror(errno));
    drop(c);
    return 1;
  }
  conns_[c->id] = c;
  sockaddr_storage dst{};
  if (ep.card.family == AF_INET) {
    auto& sin = reinterpret_cast<sockaddr_in&>(dst);
    sin.sin_family = AF_INET;
    sin.sin_port = ep.card.port;
    std::memcpy(&sin.sin_addr, ep.card.addr, 4);
  } else {
    auto& sin6 = reinterpret_cast<sockaddr_in6&>(dst);
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = ep.card.port;
    std::memcpy(&sin6.sin6_addr, ep.card.addr, 16);
  }
  sockaddr_storage src = port_.addr;
  int ms = static_cast<int>(std::max<int64_t>(1, timeout_param.get()) * 1000);
  if (rdma_resolve_addr(c->id, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&dst), ms) != 0) {
    peer_failed(peer, "cannot resolve the address " + ip_text(dst) + " of its device " + ep.card.device + ": " +
                       strerror(errno));
    drop(c);
    return 1;
  }
  ++connecting_;
  return 0;
}

// Creates the QP on c->id and posts its receive buffers.
int VerbsTransport::setup_qp(Conn* c) {
  ibv_qp_init_attr qa{};
  qa.send_cq = send_cq_;
  qa.recv_cq = recv_cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = max_send_wr_;
  qa.cap.max_recv_wr = credits_;
  qa.cap.max_send_sge = 3;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = static_cast<uint32_t>(inline_param.get());
  qa.sq_sig_all = 0;
  if (rdma_create_qp(c->id, pd_, &qa) != 0) {
    // Some devices allow less inline data: retry without.
    qa.cap.max_inline_data = 0;
    if (rdma_create_qp(c->id, pd_, &qa) != 0) {
      log::error("verbs: cannot create a queue pair for rank %d: %s%s", c->peer, strerror(errno),
                 errno == ENOMEM ? (" (" + reg_hint(ENOMEM) + ")").c_str() : "");
      return 1;
    }
  }
  c->qp = c->id->qp;
  c->max_inline = qa.cap.max_inline_data;
  c->slot_size = slot_size_;
  by_qpn_[c->qp->qp_num] = c;
  if (int err = c->recv_mem.allocate(size_t(credits_) * slot_size_)) return err;
  c->recv_mr.reset(ibv_reg_mr(pd_, c->recv_mem.p, c->recv_mem.size, IBV_ACCESS_LOCAL_WRITE));
  if (!c->recv_mr) {
    log::error("verbs: cannot register receive buffers for rank %d: %s", c->peer, reg_hint(errno).c_str());
    return 1;
  }
  for (uint32_t i = 0; i < credits_; ++i)
    if (post_recv(c, i) != 0) return 1;
  return 0;
}

int VerbsTransport::post_recv(Conn* c, uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uint64_t>(c->recv_mem.bytes() + size_t(slot) * c->slot_size), c->slot_size,
              c->recv_mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int err = ibv_post_recv(c->qp, &wr, &bad);
  if (err && !closing_) log::error("verbs: ibv_post_recv for rank %d failed: %s", c->peer, strerror(err));
  return err;
}

Hello VerbsTransport::hello() const {
  return Hello{kHelloMagic, rte::job().rank, credits_, mailbox_mr_->rkey,
               reinterpret_cast<uint64_t>(mailbox_mem_.p), job_hash_};
}

void VerbsTransport::conn_params(rdma_conn_param* p, const Hello* h) const {
  std::memset(p, 0, sizeof *p);
  p->private_data = h;
  p->private_data_len = sizeof *h;
  uint8_t rd = static_cast<uint8_t>(std::min(dev_attr_.max_qp_rd_atom, 16));
  uint8_t init = static_cast<uint8_t>(std::min(dev_attr_.max_qp_init_rd_atom, 16));
  p->responder_resources = rd;
  p->initiator_depth = init;
  p->retry_count = 7;
  p->rnr_retry_count = 7;
}

void VerbsTransport::take_hello(Conn* c, const Hello& h) {
  c->peer_credits = h.credits;
  c->mailbox_addr = h.mailbox_addr;
  c->mailbox_rkey = h.mailbox_rkey;
}

// Handles the connection manager's events; returns how many.
int VerbsTransport::poll_events() {
  int count = 0;
  rdma_cm_event* ev = nullptr;
  while (rdma_get_cm_event(channel_, &ev) == 0) {
    ++count;
    rdma_cm_event_type type = ev->event;
    int status = ev->status;
    rdma_cm_id* id = ev->id;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      on_connect_request(ev);
      continue;  // acked inside
    }
    Hello h{};
    bool has_hello = ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof h;
    if (has_hello) std::memcpy(&h, ev->param.conn.private_data, sizeof h);
    rdma_ack_cm_event(ev);
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Conn* c = it->second;
    on_event(c, type, status, has_hello ? &h : nullptr);
  }
  // Connections that took too long (the clock is read only when one is pending).
  uint64_t now = 0;
  for (size_t i = 0; i < pending_.size();) {
    Conn* c = pending_[i].get();
    if (!c->established && !c->superseded && now == 0) now = now_ns();
    if (!c->established && !c->superseded && now > c->deadline_ns) {
      if (c->active) --connecting_;
      peer_failed(c->peer, "no connection within AXON_BTL_VERBS_CONNECT_TIMEOUT=" +
                               std::to_string(timeout_param.get()) + " s (is the peer alive and its port up?)");
      drop(c);
      continue;
    }
    ++i;
  }
  return count;
}

void VerbsTransport::on_event(Conn* c, rdma_cm_event_type type, int status, const Hello* h) {
  Endpoint& ep = endpoints_[c->peer];
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (c->superseded) return drop_active(c);
      if (rdma_resolve_route(c->id, static_cast<int>(std::max<int64_t>(1, timeout_param.get()) * 1000)) != 0) {
        peer_failed(c->peer, std::string("rdma_resolve_route failed: ") + strerror(errno));
        return drop_active(c);
      }
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      if (c->superseded) return drop_active(c);
      if (setup_qp(c) != 0) {
        peer_failed(c->peer, "cannot set up a queue pair");
        return drop_active(c);
      }
      Hello mine = hello();
      rdma_conn_param p;
      conn_params(&p, &mine);
      if (rdma_connect(c->id, &p) != 0) {
        peer_failed(c->peer, std::string("rdma_connect failed: ") + strerror(errno));
        return drop_active(c);
      }
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      if (c->active) {
        --connecting_;
        if (!h || h->magic != kHelloMagic) {
          peer_failed(c->peer, "the peer accepted without Axon's connection data");
          return drop(c);
        }
        take_hello(c, *h);
      }
      if (!c->established) mark_established(c);
      return;
    case RDMA_CM_EVENT_REJECTED:
      if (c->active) --connecting_;
      // Both sides connected at once and the peer's request wins: wait for it.
      if (h && h->magic == kBusyMagic) {
        if (!ep.conn && !has_accepted(c->peer)) ep.await_deadline = c->deadline_ns;
        return drop(c);
      }
      if (!ep.conn && !c->superseded && !has_accepted(c->peer))
        peer_failed(c->peer, "the connection was rejected (reason " + std::to_string(status) +
                                 "); is the peer still running?");
      return drop(c);
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      if (c->active && !c->established) --connecting_;
      if (!c->superseded)
        peer_failed(c->peer, std::string(rdma_event_str(type)) + " (status " + std::to_string(status) + ": " +
                                 strerror(status < 0 ? -status : status) +
                                 "); check that both nodes' RDMA ports are ACTIVE and can reach each other's "
                                 "IP address (axon_info --doctor)");
      return drop(c);
    case RDMA_CM_EVENT_DISCONNECTED:
      c->disconnected = true;
      return;
    default:
      return;
  }
}

// Any connection to `peer` on its way or up (ours or the peer's).
bool VerbsTransport::has_conn(int peer) const {
  for (const auto& [id, c] : conns_)
    if (c->peer == peer && !c->superseded) return true;
  return false;
}

void VerbsTransport::mark_established(Conn* c) {
  c->established = true;
  if (c->superseded) return;
  endpoints_[c->peer].conn = c;
  live_.push_back(c);
  log::debug(2, "verbs: connected to rank %d (%s)", c->peer, c->active ? "we asked" : "it asked");
  if (diag::events::subscribed(diag::events::Event::ConnectionSetup))
    diag::events::raise_connection_setup(c->peer, diag::events::Transport::Verbs);
}

bool VerbsTransport::has_accepted(int peer) const {
  for (const auto& [id, c] : conns_)
    if (c->peer == peer && !c->active) return true;
  return false;
}

void VerbsTransport::on_connect_request(rdma_cm_event* ev) {
  const rte::Job& job = rte::job();
  Hello h{};
  bool ok = ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof h;
  if (ok) std::memcpy(&h, ev->param.conn.private_data, sizeof h);
  ok = ok && h.magic == kHelloMagic && h.job == job_hash_ && h.rank >= 0 && h.rank < job.size &&
       h.rank != job.rank && ev->id->verbs == ctx_;
  rdma_conn_param req = ev->param.conn;
  rdma_cm_id* id = ev->id;
  rdma_ack_cm_event(ev);
  if (!ok) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return;
  }
  int peer = h.rank;
  Endpoint& ep = endpoints_[peer];
  // Simultaneous connect: the connection initiated by the lower rank wins.
  bool ours_pending = connecting_to(peer);
  if (ep.conn || has_accepted(peer) || (ours_pending && peer > job.rank)) {
    Hello busy = hello();
    busy.magic = kBusyMagic;
    rdma_reject(id, &busy, sizeof busy);
    rdma_destroy_id(id);
    return;
  }
  if (ours_pending)
    for (auto& [cid, c] : conns_)
      if (c->peer == peer && c->active) c->superseded = true;
  Conn* c = new_conn(peer, false);
  c->id = id;
  id->context = c;
  conns_[id] = c;
  take_hello(c, h);
  if (setup_qp(c) != 0) {
    rdma_reject(id, nullptr, 0);
    peer_failed(peer, "cannot set up a queue pair");
    return drop(c);
  }
  Hello mine = hello();
  rdma_conn_param p;
  conn_params(&p, &mine);
  p.responder_resources = std::min(p.responder_resources, req.initiator_depth);
  p.initiator_depth = std::min(p.initiator_depth, req.responder_resources);
  if (rdma_accept(id, &p) != 0) {
    peer_failed(peer, std::string("rdma_accept failed: ") + strerror(errno));
    return drop(c);
  }
}

void VerbsTransport::drop_active(Conn* c) {
  --connecting_;
  drop(c);
}

// Destroys a connection that lost or failed (never one in use).
void VerbsTransport::drop(Conn* c) {
  Endpoint& ep = endpoints_[c->peer];
  if (ep.conn == c) ep.conn = nullptr;
  std::erase(live_, c);
  if (c->qp) {
    by_qpn_.erase(c->qp->qp_num);
    rdma_destroy_qp(c->id);
    c->qp = nullptr;
  }
  if (c->id) {
    conns_.erase(c->id);
    rdma_destroy_id(c->id);
    c->id = nullptr;
  }
  std::erase_if(pending_, [c](const std::unique_ptr<Conn>& p) { return p.get() == c; });
}

void VerbsTransport::peer_failed(int peer, const std::string& why) {
  Endpoint& ep = endpoints_[peer];
  if (ep.failed) return;
  ep.failed = true;
  // A secondary rail only adds bandwidth: without it rail 0 carries all.
  (rail_ == 0 ? log::error : log::warn)("verbs: rail %d: cannot connect to rank %d (%s via %s): %s", rail_, peer,
             ep.card.family == AF_INET ? inet_ntoa(*reinterpret_cast<const in_addr*>(ep.card.addr)) : "IPv6",
             ep.card.device, why.c_str());
}

// Secondary rails connect when rail 0 first sends to a peer, so they are up
// by the time large messages come.
void VerbsTransport::connect_ahead(int peer) {
  if (!reaches(peer)) return;
  Endpoint& ep = endpoints_[peer];
  if (ep.conn || ep.await_deadline || has_conn(peer)) return;
  start_connect(peer);
}

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
