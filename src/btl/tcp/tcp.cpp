// btl/tcp: active messages over TCP sockets, for peers on other nodes.
//
// Start-up: every rank opens one listening socket per usable IPv4 interface
// address and publishes a business card (the addresses, their netmasks and
// ports, and a random 128-bit token) through rte. Nothing connects then:
// the first send() to a peer opens one connection, so a job whose ranks talk
// to a few neighbours holds a few sockets, not size-1.
//
// Handshake (connection.cpp): the connecting rank sends a Hello carrying the
// listener's token (which it can only have learned from the listener's
// card, through PMIx), the job's namespace hash and both ranks; the listener
// answers Accept with the connector's own token (mutual proof) or Reject.
// Anything else is refused; no byte of an unauthenticated connection reaches
// a handler. Every handshake has a deadline, a failed one is tried again,
// and strangers cannot crowd a peer's connection out.
//
// Simultaneous connect: when both ranks of a pair connect at once, the
// connection opened by the lower rank wins on both sides (see on_hello());
// data is queued per peer until a connection is accepted, so nothing is lost
// or reordered.
//
// Framing: an 8-byte FrameHeader (length, am id, flags, magic) then the bytes,
// padded to 8 so every handler sees an aligned message. Each connection has a
// bounded send queue; send() writes directly when the queue is empty and
// returns kAgain when the queue is full (the PML retries after progress).
// progress() is one epoll_wait with zero timeout: it never blocks.
//
// Processes of other jobs (dynamic processes, btl::add_peer): the Hello
// names the connecting process by its job's namespace hash and its rank in
// that job, so a listener maps a connection from a foreign process to the
// local id it gave that process (rte::proc_id). A Hello from a foreign
// process not learned yet (its card arrived there first) waits, parked,
// until add_peer() names it. Simultaneous connects are settled by the order
// of (job hash, rank). The transport may also be opened for such peers only
// (open_tcp_dynamic): it then listens and connects to foreign ids alone.
//
// Striping: to a peer on another node reachable over several interface
// pairs, the winner of the ordered connection opens one more connection per
// further pair. The links are the peer's rails 1.. (btl.h): the pml spreads
// fragments over them and the ordered connection, weighted by link speed
// (rail_weight); everything else stays on the ordered connection.
#include "btl/tcp/tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "base/status.h"
#include "btl/tcp/internal.h"
#include "rte/rte.h"

namespace axon::btl {

namespace tcp {

// ---- settings and counters (internal.h says why they are all here) ------------------

IntParam port_min_param{"AXON_BTL_TCP_PORT_MIN", 0,
                        "Lowest TCP port the transport listens on (0: any port the kernel picks)"};
IntParam port_range_param{"AXON_BTL_TCP_PORT_RANGE", 256,
                          "Number of ports tried from AXON_BTL_TCP_PORT_MIN upwards"};
SizeParam eager_limit_param{"AXON_BTL_TCP_EAGER_LIMIT", 64 * 1024,
                            "Largest payload (bytes) in one TCP message; larger messages travel as "
                            "fragments of this size after the receiver matched them. Must be the "
                            "same on every rank"};
SizeParam queue_limit_param{"AXON_BTL_TCP_QUEUE_LIMIT", 1024 * 1024,
                            "Bytes a connection may hold queued for the kernel before sends to that "
                            "peer are refused until it drains"};
IntParam lost_grace_param{"AXON_BTL_TCP_LOST_PEER_GRACE", 5,
                          "Seconds a message to a peer whose connection broke waits before it fails (the "
                          "launcher usually ends the job first and names the rank that died); messages that "
                          "were already queued to it end the job then"};
SizeParam sndbuf_param{"AXON_BTL_TCP_SNDBUF", 0, "Socket send buffer size (0: system default)"};
SizeParam rcvbuf_param{"AXON_BTL_TCP_RCVBUF", 0, "Socket receive buffer size (0: system default)"};
BoolParam striping_param{"AXON_BTL_TCP_STRIPING", true,
                         "Spread the fragments of large messages to a rank on another node over one "
                         "connection per pair of interfaces on a common subnet, when both ranks have "
                         "several"};
BoolParam stripe_local_param{"AXON_BTL_TCP_STRIPE_LOCAL", false,
                             "Stripe to ranks of this node too, over every address they listen on "
                             "(lets striping be tested on one machine)"};
IntParam handshake_timeout_param{"AXON_BTL_TCP_HANDSHAKE_TIMEOUT", 5,
                                 "Seconds a TCP connection has to complete its handshake: an incoming one "
                                 "that has not sent a valid handshake by then is closed, an outgoing one that "
                                 "got no answer is closed and tried again"};
IntParam connect_timeout_param{"AXON_BTL_TCP_CONNECT_TIMEOUT", 30,
                               "Seconds a rank keeps trying to connect to a peer (each attempt limited by "
                               "AXON_BTL_TCP_HANDSHAKE_TIMEOUT) before it ends the job with an error naming "
                               "the peer"};
StringParam if_include_param{"AXON_BTL_TCP_IF_INCLUDE", "",
                             "Comma-separated interfaces (names, shell patterns such as eth*, or "
                             "CIDR subnets such as 10.0.0.0/8) the TCP transport may use; exclusive "
                             "with AXON_BTL_TCP_IF_EXCLUDE"};
StringParam if_exclude_param{"AXON_BTL_TCP_IF_EXCLUDE", "",
                             "Comma-separated interfaces (names, patterns or CIDR subnets) the TCP "
                             "transport must not use (default: docker*, virbr*; interfaces that are "
                             "down are never used)"};

Counter messages_sent{"axon_btl_tcp_messages_sent", Counter::Class::Counter,
                      "Messages this rank handed to TCP connections (eager messages, fragments, "
                      "protocol replies)"};
Counter bytes_sent{"axon_btl_tcp_bytes_sent", Counter::Class::Counter,
                   "Bytes (protocol headers included, framing excluded) this rank sent over TCP"};
Counter messages_received{"axon_btl_tcp_messages_received", Counter::Class::Counter,
                          "Messages this rank received over TCP and handed to their handler"};
Counter bytes_received{"axon_btl_tcp_bytes_received", Counter::Class::Counter,
                       "Bytes (protocol headers included, framing excluded) received over TCP"};
Counter queue_full{"axon_btl_tcp_queue_full", Counter::Class::Counter,
                   "Sends refused because the connection's send queue was full"};
Counter striped{"axon_btl_tcp_striped_messages", Counter::Class::Counter,
                "Fragments sent over a peer's additional connections (striping)"};
Counter rejected{"axon_btl_tcp_rejected_connections", Counter::Class::Counter,
                 "Incoming connections closed before they were authenticated: a wrong handshake (garbage, "
                 "wrong secret or job, malformed header), none within the deadline, or none while too many "
                 "others waited"};
Counter retried{"axon_btl_tcp_connect_retries", Counter::Class::Counter,
                "Connections to a peer tried again after an attempt failed before the peer answered"};

namespace {

// The PMIx key of the card: "axon.btl.tcp.<n>", n counting the openings
// that publish one (the runtime may be started again, sessions: a key of
// its own each time, since PMIx may answer a key it has read before from
// its cache, and the ports change). Every rank opens it as often.
constexpr const char* kCardKey = "axon.btl.tcp";
int openings = 0;

uint64_t hash_job(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string ip_text(uint32_t addr_net, uint16_t port_net) {
  char buf[INET_ADDRSTRLEN] = "?";
  in_addr a{addr_net};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(port_net));
}

int TcpTransport::open(bool publish) {
  const rte::Job& job = rte::job();
  me_ = job.rank;
  job_hash_ = hash_job(job.nspace);
  size_t eager = static_cast<size_t>(std::max<int64_t>(1024, eager_limit_param.get()));
  caps_.eager_limit = eager;
  caps_.can_get = false;
  caps_.latency_ns = 20000;  // far above sm: local peers stay on shared memory
  caps_.bandwidth_mbs = 1000;
  max_frame_ = eager + kMaxPmlHeader;
  queue_limit_ = static_cast<size_t>(std::max<int64_t>(0, queue_limit_param.get()));
  lost_grace_ns_ = static_cast<uint64_t>(std::max<int64_t>(0, lost_grace_param.get())) * 1000000000ull;
  read_handshake_params();

  std::vector<Interface> usable;
  if (int err = choose_interfaces(&usable)) return err;
  if (getrandom(token_, sizeof token_, 0) != static_cast<ssize_t>(sizeof token_)) {
    log::error("tcp: cannot draw a random connection token: %s", strerror(errno));
    return 1;
  }
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (epoll_.get() < 0) {
    log::error("tcp: epoll_create1 failed: %s", strerror(errno));
    return 1;
  }
  for (const Interface& i : usable)
    if (int err = listen_on(i)) return err;

  std::vector<CardEntry> entries;
  for (const auto& l : listeners_)
    entries.push_back({l->iface.addr, l->iface.mask, l->port, static_cast<uint8_t>(l->iface.loopback), 0,
                       l->iface.speed_mbs});
  card_ = make_card(token_, entries);
  if (!publish) {
    init_own_peers();  // nobody of this job: they never exchanged cards with us
    return 0;
  }
  card_key_ = std::string(kCardKey) + "." + std::to_string(openings++);
  return rte::publish(card_key_.c_str(), card_.data(), card_.size());
}

bool TcpTransport::add_peer(int id, const std::vector<uint8_t>& card) {
  const rte::Proc* proc = rte::foreign(id);
  if (!proc) return false;
  if (peers_.size() <= size_t(id)) peers_.resize(size_t(id) + 1);
  Peer& p = peers_[id];
  p.job = hash_job(proc->nspace);
  p.rank = proc->rank;
  if (!p.reachable) choose_address(id, card);
  if (!p.reachable) return false;
  // Connections that process opened before we knew it.
  std::vector<Conn*> waiting;
  for (auto& c : conns_)
    if (c->parked && c->state == ConnState::AwaitHello && c->parked_job == p.job && c->parked_rank == p.rank)
      waiting.push_back(c.get());
  for (Conn* c : waiting) {
    c->parked = false;
    accept_hello(c, id, c->parked_link);
  }
  return true;
}

void TcpTransport::init_own_peers() {
  const rte::Job& job = rte::job();
  if (peers_.size() < size_t(job.size)) peers_.resize(job.size);
  for (int r = 0; r < job.size; ++r) {
    peers_[r].job = job_hash_;
    peers_[r].rank = r;
  }
}

int TcpTransport::connect_peers() {
  const rte::Job& job = rte::job();
  init_own_peers();
  for (int r = 0; r < job.size; ++r) {
    if (r == me_) continue;
    std::vector<uint8_t> card;
    if (rte::lookup(r, card_key_.c_str(), &card) != 0) continue;  // that rank runs without tcp
    choose_address(r, card);
  }
  return 0;
}

int TcpTransport::progress() {
  if (in_progress_) return 0;
  in_progress_ = true;
  int handled = poll_once(false);
  run_timers_if_due();
  in_progress_ = false;
  reap();
  return handled;
}

// ---- the progress loop ------------------------------------------------------------

int TcpTransport::poll_once(bool discard) {
  epoll_event events[32];
  int n = epoll_wait(epoll_.get(), events, 32, 0);
  int handled = 0;
  for (int k = 0; k < n; ++k) {
    auto* item = static_cast<Pollable*>(events[k].data.ptr);
    if (item->is_listener) {
      accept_some(static_cast<Listener*>(item));
      continue;
    }
    auto* c = static_cast<Conn*>(item);
    if (c->state == ConnState::Closed) continue;  // closed earlier in this round
    if (c->state == ConnState::Connecting && (events[k].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
      finish_connect(c);
      if (c->state == ConnState::Closed) continue;
    }
    if ((events[k].events & EPOLLOUT) && !flush(c)) continue;
    if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) handled += read_ready(c, discard);
  }
  return handled;
}

void TcpTransport::reap() {
  std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return c->state == ConnState::Closed; });
}

// MPI_Finalize: everything queued must still leave (a peer may be waiting
// for our last barrier message), then each connection ends with a Bye so
// the peer knows the close is orderly, not a crash.
void TcpTransport::shutdown_all() {
  if (epoll_.get() < 0) return;
  finalizing_ = true;
  for (auto& c : conns_)
    if (c->state == ConnState::Open) {
      FrameHeader fh{0, 0, kFlagBye, kFrameMagic};
      std::vector<uint8_t> b(sizeof fh);
      std::memcpy(b.data(), &fh, sizeof fh);
      c->out_bytes += b.size();
      c->out.push_back(std::move(b));
      flush(c.get());
    }
  uint64_t deadline = now_ns() + 10ull * 1000000000ull;
  Backoff backoff(0);
  for (;;) {
    bool busy = false;
    for (auto& c : conns_) {
      if (c->link > 0 && c->state != ConnState::Open) continue;  // carries nothing yet
      if (c->state != ConnState::Closed && c->state != ConnState::AwaitHello && !c->out.empty()) busy = true;
    }
    for (const Peer& p : peers_)
      if (!p.early.empty() && !p.failed) busy = true;  // a connection is still being set up
    if (!busy || now_ns() > deadline) break;
    int n = poll_once(true);
    run_timers_if_due();  // retries of connections still being set up
    if (n == 0) backoff.idle();
  }
  // Our data is out: half-close, then read (and drop) until the peer has
  // closed too, so no reset destroys bytes it has not read yet.
  for (auto& c : conns_)
    if (c->state == ConnState::Open) ::shutdown(c->fd.get(), SHUT_WR);
  deadline = now_ns() + 2ull * 1000000000ull;
  for (;;) {
    bool open = false;
    for (auto& c : conns_)
      if (c->state == ConnState::Open) open = true;
    if (!open || now_ns() > deadline) break;
    if (poll_once(true) == 0) backoff.idle();
  }
  report_refusals(now_ns(), true);
  for (auto& c : conns_) close_conn(c.get());
  conns_.clear();
  pending_.clear();
  listeners_.clear();
  epoll_.reset();
}

}  // namespace tcp

std::unique_ptr<Transport> open_tcp(int* error) {
  *error = 0;
  if (rte::job().size < 2) return nullptr;
  auto t = std::make_unique<tcp::TcpTransport>();
  if ((*error = t->open()) != 0) return nullptr;
  return t;
}

std::unique_ptr<Transport> open_tcp_dynamic(int* error) {
  *error = 0;
  auto t = std::make_unique<tcp::TcpTransport>();
  if ((*error = t->open(false)) != 0) return nullptr;
  return t;
}

}  // namespace axon::btl
