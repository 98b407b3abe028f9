// btl/tcp: active messages over TCP sockets, for peers on other nodes.
//
// Start-up: every rank opens one listening socket per usable IPv4 interface
// address and publishes a business card (the addresses, their netmasks and
// ports, and a random 128-bit token) through rte. Nothing connects then:
// the first send() to a peer opens one connection, so a job whose ranks talk
// to a few neighbours holds a few sockets, not size-1.
//
// Handshake (handshake.cpp): the connecting rank sends a Hello carrying the
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
// further pair; fragments the PML marks order-insensitive (btl::is_unordered)
// are spread over all of them by a stride scheduler weighted by link speed.
#include "btl/tcp/tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

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

namespace {

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

int TcpTransport::send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
                       size_t payload_len) {
  Peer& p = peers_[peer];
  if (p.failed) {
    // A peer whose connection broke without a Bye has most likely died,
    // and its launcher is about to end the job naming it. Failing the
    // caller now would end this rank first with a secondary error that
    // hides the cause, so the message waits for the grace period.
    if (p.lost_at_ns && now_ns() - p.lost_at_ns < lost_grace_ns_) return kAgain;
    return kIoError;
  }
  size_t len = header_len + payload_len;
  FrameHeader fh{static_cast<uint32_t>(len), static_cast<uint8_t>(am_id), 0, kFrameMagic};
  Conn* c = p.open;
  if (c && !p.links.empty() && is_unordered(am_id)) c = pick_link(p);
  if (!c) {
    if (p.early_bytes >= queue_limit_ && !p.early.empty()) {
      queue_full.add();
      return kAgain;
    }
    // A failed attempt is tried again when its back-off ends (run_timers).
    if (!p.connecting && !p.waiting_for_peer && !p.retry_at_ns && !start_connect(peer)) return kIoError;
    p.early.push_back(frame_bytes(fh, header, header_len, payload, payload_len, 0));
    p.early_bytes += p.early.back().size();
  } else {
    if (c->out_bytes >= queue_limit_ && !c->out.empty()) {
      queue_full.add();
      return kAgain;
    }
    size_t written = 0;
    if (c->out.empty()) {
      // Straight to the kernel: no copy unless the socket buffer is full.
      static const uint8_t zeros[8] = {};
      iovec iov[4] = {{&fh, sizeof fh},
                      {const_cast<void*>(header), header_len},
                      {const_cast<void*>(payload), payload_len},
                      {const_cast<uint8_t*>(zeros), padded(len) - len}};
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = 4;
      ssize_t n = sendmsg(c->fd.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        lost(c, errno);
        return kIoError;
      }
      written = n > 0 ? static_cast<size_t>(n) : 0;
    }
    size_t total = sizeof fh + padded(len);
    if (written < total) {
      c->out.push_back(frame_bytes(fh, header, header_len, payload, payload_len, written));
      c->out_bytes += c->out.back().size();
      want_write(c, true);
    }
  }
  messages_sent.add();
  bytes_sent.add(len);
  return kOk;
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

// ---- set-up ---------------------------------------------------------------------

int TcpTransport::listen_on(const Interface& i) {
  int64_t first = port_min_param.get(), range = std::max<int64_t>(1, port_range_param.get());
  if (first < 0 || first > 65535) {
    log::error("tcp: AXON_BTL_TCP_PORT_MIN=%lld is not a port number", static_cast<long long>(first));
    return 1;
  }
  if (first == 0) range = 1;
  int last_error = 0;
  for (int64_t port = first; port < first + range && port <= 65535; ++port) {
    Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
      log::error("tcp: socket() failed: %s", strerror(errno));
      return 1;
    }
    // Connections of an earlier job to this port (refused strangers
    // included) may linger in TIME_WAIT; they must not keep us from it.
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = i.addr;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      last_error = errno;
      if (errno == EADDRINUSE || errno == EACCES) continue;
      break;
    }
    if (listen(fd.get(), SOMAXCONN) != 0) {
      last_error = errno;
      continue;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &sl);
    auto l = std::make_unique<Listener>();
    l->is_listener = true;
    l->iface = i;
    l->port = sa.sin_port;
    l->fd = std::move(fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = static_cast<Pollable*>(l.get());
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, l->fd.get(), &ev);
    log::debug(2, "tcp: listening on %s (%s)", ip_text(i.addr, l->port).c_str(), i.name.c_str());
    listeners_.push_back(std::move(l));
    return 0;
  }
  log::error("tcp: cannot listen on %s (%s) at any port in %lld..%lld: %s", ip_text(i.addr, 0).c_str(),
             i.name.c_str(), static_cast<long long>(first), static_cast<long long>(first + range - 1),
             strerror(last_error));
  return 1;
}

// ---- connections ------------------------------------------------------------------

Conn* TcpTransport::new_conn(int fd, bool outgoing, std::string where) {
  auto c = std::make_unique<Conn>();
  c->fd.reset(fd);
  c->outgoing = outgoing;
  c->where = std::move(where);
  c->since_ns = now_ns();
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (int64_t v = sndbuf_param.get(); v > 0) {
    int b = static_cast<int>(v);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
  }
  if (int64_t v = rcvbuf_param.get(); v > 0) {
    int b = static_cast<int>(v);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
  }
  // Until it is authenticated a connection needs room for a handshake only
  // (strangers may open many); the frame buffer comes with make_open().
  c->in.resize(sizeof(Hello));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = static_cast<Pollable*>(c.get());
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
  conns_.push_back(std::move(c));
  return conns_.back().get();
}

void TcpTransport::want_write(Conn* c, bool on) {
  if (c->want_write == on || c->state == ConnState::Closed) return;
  c->want_write = on;
  epoll_event ev{};
  ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
  ev.data.ptr = static_cast<Pollable*>(c);
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
}

// Opens a non-blocking connection to addr:port for `peer` as its link
// `link` (0: the ordered connection) and queues our Hello, which leaves as
// soon as the socket is writable. nullptr, with the reason in `why`, when
// the socket or the connect fails at once.
Conn* TcpTransport::dial(int peer, uint32_t link, uint32_t addr, uint16_t port, std::string* why) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket() failed: ") + strerror(errno);
    return nullptr;
  }
  Conn* c = new_conn(fd, true, ip_text(addr, port));
  c->peer = peer;
  c->link = link;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  sa.sin_port = port;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  if (rc != 0 && errno != EINPROGRESS) {
    *why = c->where + ": " + strerror(errno);
    c->peer = -1;  // never this peer's connection
    close_conn(c);
    return nullptr;
  }
  c->state = rc == 0 ? ConnState::AwaitAccept : ConnState::Connecting;
  queue_hello(c, kHello, peer, peers_[peer].token, link);
  want_write(c, true);
  arm_timer(c->since_ns + handshake_timeout_ns_);
  return c;
}

// `to`: the peer's id here; the Hello names it by its rank in its own job.
void TcpTransport::queue_hello(Conn* c, HelloKind kind, int to, const uint8_t* token, uint32_t link) {
  int32_t to_rank = to >= 0 && size_t(to) < peers_.size() && peers_[to].rank >= 0 ? peers_[to].rank : to;
  Hello h{kHelloMagic, kVersion, kind, kHelloBody, me_, to_rank, link, job_hash_, {}};
  if (token) std::memcpy(h.token, token, kTokenBytes);
  std::vector<uint8_t> bytes(sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  c->out.push_front(std::move(bytes));  // ahead of any frame
  c->out_bytes += sizeof h;
}

void TcpTransport::close_conn(Conn* c) {
  if (c->state == ConnState::Closed && c->fd.get() < 0) return;
  if (c->fd.get() >= 0) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
  c->fd.reset();
  c->state = ConnState::Closed;
  c->out.clear();
  c->out_bytes = 0;
  drop_pending(c);
  if (c->peer >= 0) {
    Peer& p = peers_[c->peer];
    if (p.open == c) p.open = nullptr;
    if (p.connecting == c) p.connecting = nullptr;
    if (c->link > 0 && c->link <= p.links.size() && p.links[c->link - 1] == c) p.links[c->link - 1] = nullptr;
  }
}

// A connection that carried (or was about to carry) a peer's messages
// ended: EOF, reset or a write error. Logged once per peer unless the peer
// said Bye first or we are finalizing. Our own connection that ends before
// its answer came carried nothing yet: it is tried again.
void TcpTransport::lost(Conn* c, int err) {
  int peer = c->peer;
  if (peer >= 0 && c->outgoing && c->link == 0 && peers_[peer].connecting == c &&
      (c->state == ConnState::Connecting || c->state == ConnState::AwaitAccept)) {
    handshake_failed(c, err ? strerror(err) : "closed by the other end before it answered");
    return;
  }
  // A striping link that never opened carried nothing: its end loses nothing.
  bool mine = peer >= 0 && (peers_[peer].open == c || peers_[peer].connecting == c ||
                            (c->link > 0 && c->state == ConnState::Open));
  bool was_open = c->state == ConnState::Open;
  bool orderly = c->bye || finalizing_;
  std::string where = c->where;
  size_t unsent = c->out_bytes;
  close_conn(c);
  if (!mine) return;
  Peer& p = peers_[peer];
  p.failed = true;
  if (orderly) {
    log::debug(2, "tcp: rank %d closed its connection after finishing", peer);
    return;
  }
  if (!p.lost_at_ns) p.lost_at_ns = now_ns();
  // Messages the PML counts as sent that can no longer leave: if the
  // launcher does not end the job for the peer's death within the grace
  // period, this rank does (run_timers), rather than wait for replies forever.
  p.undelivered += unsent + p.early_bytes;
  if (p.undelivered) arm_timer(p.lost_at_ns + lost_grace_ns_);
  if (p.lost_logged) return;
  p.lost_logged = true;
  log::warn("tcp: connection to rank %d (%s) %s%s%s; messages to it will fail in %llu s", peer, where.c_str(),
            was_open ? "lost" : "closed during the handshake", err ? ": " : " (closed by the peer)",
            err ? strerror(err) : "", static_cast<unsigned long long>(lost_grace_ns_ / 1000000000ull));
}

// Sends what c has queued; false when the connection broke.
bool TcpTransport::flush(Conn* c) {
  while (!c->out.empty()) {
    iovec iov[16];
    int n = 0;
    for (auto it = c->out.begin(); it != c->out.end() && n < 16; ++it, ++n) {
      size_t skip = n == 0 ? c->out_offset : 0;
      iov[n] = {it->data() + skip, it->size() - skip};
    }
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(c->fd.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      lost(c, errno);
      return false;
    }
    size_t left = static_cast<size_t>(w);
    c->out_bytes -= left;
    while (left > 0) {
      size_t rest = c->out.front().size() - c->out_offset;
      if (left >= rest) {
        left -= rest;
        c->out.pop_front();
        c->out_offset = 0;
      } else {
        c->out_offset += left;
        left = 0;
      }
    }
  }
  want_write(c, !c->out.empty());
  return true;
}

// c now carries the messages to its peer: whatever was sent before goes first.
void TcpTransport::make_open(Conn* c) {
  Peer& p = peers_[c->peer];
  c->state = ConnState::Open;
  c->in.resize(2 * (sizeof(FrameHeader) + padded(max_frame_)));
  p.open = c;
  p.waiting_for_peer = false;
  p.attempts = 0;
  p.first_attempt_ns = 0;
  p.retry_at_ns = 0;
  for (auto& f : p.early) {
    c->out_bytes += f.size();
    c->out.push_back(std::move(f));
  }
  p.early.clear();
  p.early_bytes = 0;
  log::debug(2, "tcp: connected to rank %d (%s, %s)", c->peer, c->where.c_str(), c->outgoing ? "ours" : "theirs");
  int peer = c->peer;
  bool ours = c->outgoing;
  flush(c);
  // The rank whose ordered connection won opens the striping links, so
  // they never cross.
  if (ours)
    for (uint32_t k = 1; k <= peers_[peer].extra.size(); ++k) start_link(peer, k);
}

// Consumes received bytes; returns the number of messages handled.
int TcpTransport::consume(Conn* c, bool discard) {
  int handled = 0;
  size_t pos = 0;
  while (c->state != ConnState::Closed) {
    bool handshake = c->state == ConnState::AwaitHello || c->state == ConnState::AwaitAccept;
    if (!handshake && c->state != ConnState::Open) break;
    const uint8_t* p = c->in.data() + pos;
    Parsed next = parse_next(handshake, p, c->in_len - pos, max_frame_, kMaxAmIds);
    if (next.kind == Parsed::NeedMore) break;
    if (next.kind == Parsed::Bad) {
      if (c->state == ConnState::AwaitHello) {
        refuse(c, Refusal::BadHandshake, next.why);
      } else if (handshake) {
        handshake_failed(c, std::string("its answer is no handshake: ") + next.why);
      } else {
        log::error("tcp: malformed message header from rank %d (length %u, id %u); closing the connection",
                   c->peer, next.frame.length, next.frame.am_id);
        lost(c, 0);
      }
      break;
    }
    pos += next.consumed;
    if (next.kind == Parsed::Handshake) {
      if (c->state == ConnState::AwaitHello) on_hello(c, next.hello);
      else on_answer(c, next.hello);
      ++handled;
      continue;
    }
    const FrameHeader& fh = next.frame;
    if (fh.flags & kFlagBye) {
      c->bye = true;
      continue;
    }
    if (!discard) {
      messages_received.add();
      bytes_received.add(fh.length);
      handler(fh.am_id)(c->peer, p + sizeof fh, fh.length);
    }
    ++handled;
  }
  if (c->state == ConnState::Closed) {
    c->in_len = 0;
  } else if (pos > 0) {
    std::memmove(c->in.data(), c->in.data() + pos, c->in_len - pos);
    c->in_len -= pos;
  }
  return handled;
}

int TcpTransport::read_ready(Conn* c, bool discard) {
  int handled = 0;
  for (int rounds = 0; rounds < 16 && c->state != ConnState::Closed; ++rounds) {
    // A connection still in its handshake reads no further than its
    // handshake record: what follows is read into the frame buffer.
    size_t room = c->in.size() - c->in_len;
    if (c->state == ConnState::AwaitHello || c->state == ConnState::AwaitAccept)
      room = sizeof(Hello) > c->in_len ? sizeof(Hello) - c->in_len : 0;
    if (room == 0) break;
    ssize_t n = recv(c->fd.get(), c->in.data() + c->in_len, room, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      if (c->state == ConnState::AwaitHello) {
        log::debug(2, "tcp: %s closed before its handshake", c->where.c_str());
        close_conn(c);
      } else {
        lost(c, err);
      }
      break;
    }
    c->got_bytes = true;
    c->in_len += static_cast<size_t>(n);
    handled += consume(c, discard);
  }
  return handled;
}

void TcpTransport::finish_connect(Conn* c) {
  int err = 0;
  socklen_t sl = sizeof err;
  getsockopt(c->fd.get(), SOL_SOCKET, SO_ERROR, &err, &sl);
  if (err && c->link > 0) {  // a striping link: the ordered connection carries on alone
    log::debug(1, "tcp: no striping link %u to rank %d at %s: %s", c->link, c->peer, c->where.c_str(),
               strerror(err));
    close_conn(c);
    return;
  }
  if (err) {
    handshake_failed(c, strerror(err));
    return;
  }
  c->state = ConnState::AwaitAccept;
}

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

std::vector<uint8_t> TcpTransport::frame_bytes(const FrameHeader& fh, const void* header, size_t header_len,
                                               const void* payload, size_t payload_len, size_t skip) {
  std::vector<uint8_t> b(sizeof fh + padded(fh.length), 0);
  std::memcpy(b.data(), &fh, sizeof fh);
  if (header_len) std::memcpy(b.data() + sizeof fh, header, header_len);
  if (payload_len) std::memcpy(b.data() + sizeof fh + header_len, payload, payload_len);
  if (skip) b.erase(b.begin(), b.begin() + static_cast<ptrdiff_t>(skip));
  return b;
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
