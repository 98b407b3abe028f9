// btl/tcp: a connection's life, from the socket to its close (docs/tcp.md,
// "Connections and the handshake", "End of the job and lost peers",
// docs/security.md).
//
// A connection is dialled by us (dial: non-blocking connect, our Hello
// queued ahead of everything) or accepted; it carries nothing of a peer's
// until its handshake is done, then make_open() puts it in the peer's place
// and sends what waited for it. It ends orderly (the peer's Bye, our
// finalize) or is lost (lost(): logged once, messages to the peer fail
// after the grace period).
//
// Listening side, before a connection is authenticated. Anyone who can
// reach a port can connect, so nothing a stranger does may cost a real peer
// its connection:
// * a newly accepted connection is read at once: a peer's Hello is almost
//   always there by then, and it is settled before anything else is accepted;
// * unauthenticated connections are capped (in all and per source address);
//   a newcomer that finds the cap reached may push out only a connection
//   that has sent nothing at all for a while (an idle one, the kind a port
//   scan or flood holds), never one whose handshake is under way; when
//   there is none the newcomer goes;
// * each must complete its handshake within AXON_BTL_TCP_HANDSHAKE_TIMEOUT;
// * at most a few accepts per progress call, so a flood cannot hold a rank
//   in its progress engine;
// * refused connections are reported at a bounded rate.
// Connecting side: our own connection that ends, fails or stays unanswered
// before the answer came carried nothing but our Hello, so it is tried
// again after a back-off; a peer that cannot be reached for
// AXON_BTL_TCP_CONNECT_TIMEOUT ends the job with a message that names it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "btl/tcp/internal.h"
#include "diag/events.h"
#include "rte/rte.h"

namespace axon::btl::tcp {

namespace {

constexpr size_t kMaxPending = 64;           // unauthenticated incoming connections kept at once ...
constexpr size_t kMaxPendingPerSource = 32;  // ... and from one address
constexpr uint64_t kIdleEvictNs = 100ull * 1000000;  // an idle connection this old may make room
constexpr int kAcceptsPerCall = 16;          // per listener and progress call
constexpr int kShownLines = 5;               // refusals logged one by one after a quiet window
constexpr uint64_t kReportWindowNs = 5ull * 1000000000;
constexpr uint64_t kMaxBackoffNs = 500ull * 1000000;

const char* const kRefusalNames[] = {"a bad handshake", "no handshake while too many others waited",
                                     "no handshake in time"};

}  // namespace

// ---- a connection -----------------------------------------------------------------

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
  if (diag::events::subscribed(diag::events::Event::ConnectionSetup))
    diag::events::raise_connection_setup(c->peer, diag::events::Transport::Tcp);
  int peer = c->peer;
  bool ours = c->outgoing;
  flush(c);
  // The rank whose ordered connection won opens the striping links, so
  // they never cross.
  if (ours)
    for (uint32_t k = 1; k <= peers_[peer].extra.size(); ++k) start_link(peer, k);
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

void TcpTransport::read_handshake_params() {
  handshake_timeout_ns_ = static_cast<uint64_t>(std::max<int64_t>(1, handshake_timeout_param.get())) * 1000000000ull;
  connect_timeout_ns_ = static_cast<uint64_t>(std::max<int64_t>(1, connect_timeout_param.get())) * 1000000000ull;
}

// ---- listening side ---------------------------------------------------------------

void TcpTransport::accept_some(Listener* l) {
  for (int k = 0; k < kAcceptsPerCall; ++k) {
    sockaddr_in sa{};
    socklen_t sl = sizeof sa;
    int fd = accept4(l->fd.get(), reinterpret_cast<sockaddr*>(&sa), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) log::debug(1, "tcp: accept failed: %s", strerror(errno));
      return;
    }
    Conn* c = new_conn(fd, false, ip_text(sa.sin_addr.s_addr, sa.sin_port));
    c->state = ConnState::AwaitHello;
    c->src_addr = sa.sin_addr.s_addr;
    c->pending = true;
    pending_.push_back(c);
    log::debug(3, "tcp: accepted a connection from %s", c->where.c_str());
    // A peer sends its Hello as soon as its connect completes: settle it now.
    read_ready(c, false);
    if (!c->pending) continue;  // authenticated, refused or closed
    make_room(c);
    if (c->pending) arm_timer(c->since_ns + handshake_timeout_ns_);
  }
}

// Keeps the unauthenticated connections within their caps after `newcomer`
// came: the oldest connection of the crowded source (or of the source with
// the most, when the total cap is reached) that has sent nothing for a
// while goes; if there is none, the newcomer does.
void TcpTransport::make_room(Conn* newcomer) {
  size_t from_source = 0;
  for (Conn* c : pending_) from_source += c->src_addr == newcomer->src_addr;
  uint32_t crowded;
  if (from_source > kMaxPendingPerSource) {
    crowded = newcomer->src_addr;
  } else if (pending_.size() > kMaxPending) {
    size_t most = 0;
    crowded = newcomer->src_addr;
    for (Conn* a : pending_) {
      size_t n = 0;
      for (Conn* b : pending_) n += b->src_addr == a->src_addr;
      if (n > most) {
        most = n;
        crowded = a->src_addr;
      }
    }
  } else {
    return;
  }
  uint64_t now = now_ns();
  Conn* victim = newcomer;
  for (Conn* c : pending_)
    if (c != newcomer && c->src_addr == crowded && !c->got_bytes && now - c->since_ns >= kIdleEvictNs) {
      victim = c;
      break;
    }
  refuse(victim, Refusal::Crowded, "it sent no handshake while too many connections waited for one");
}

void TcpTransport::drop_pending(Conn* c) {
  if (!c->pending) return;
  c->pending = false;
  std::erase(pending_, c);
}

void TcpTransport::refuse(Conn* c, Refusal kind, const char* why) {
  rejected.add();
  uint64_t now = now_ns();
  report_refusals(now, false);
  RefusalReport& r = refusals_;
  if (!r.window_end) r.window_end = now + kReportWindowNs;
  if (r.shown < kShownLines) {
    ++r.shown;
    log::warn("tcp: rejected a connection from %s: %s", c->where.c_str(), why);
  } else {
    ++r.counts[static_cast<int>(kind)];
    r.latest = c->where;
    arm_timer(r.window_end);
  }
  close_conn(c);
}

// At the end of a window: one line for the refusals not shown. A window
// with none ends the busy period: the next refusals are shown again.
void TcpTransport::report_refusals(uint64_t now, bool final) {
  RefusalReport& r = refusals_;
  if (!r.window_end || (now < r.window_end && !final)) return;
  uint64_t total = r.counts[0] + r.counts[1] + r.counts[2];
  if (total == 0) {
    r.window_end = 0;
    r.shown = 0;
    return;
  }
  std::string what;
  for (int k = 0; k < 3; ++k)
    if (r.counts[k]) {
      if (!what.empty()) what += ", ";
      what += std::to_string(r.counts[k]) + " for " + kRefusalNames[k];
    }
  log::warn("tcp: refused %llu more connection(s) not shown in the last %llu s (%s; the latest from %s); "
            "somebody scans or floods this rank's port",
            static_cast<unsigned long long>(total),
            static_cast<unsigned long long>((now - (r.window_end - kReportWindowNs)) / 1000000000ull + 1),
            what.c_str(), r.latest.c_str());
  for (uint64_t& n : r.counts) n = 0;
  r.window_end = now + kReportWindowNs;
  arm_timer(r.window_end);
}

// The listener side of the handshake. `h` is complete and its length right.
void TcpTransport::on_hello(Conn* c, const Hello& h) {
  const rte::Job& job = rte::job();
  if (h.kind != kHello) return refuse(c, Refusal::BadHandshake, "the first message is not a connection request");
  if (!same_token(h.token, token_)) return refuse(c, Refusal::BadHandshake, "wrong secret");
  if (h.to_rank != me_ || h.from_rank < 0) return refuse(c, Refusal::BadHandshake, "it names ranks outside this job");
  drop_pending(c);  // authenticated: no deadline, no cap
  int from = -1;
  if (h.job == job_hash_) {
    if (h.from_rank >= job.size || h.from_rank == me_)
      return refuse(c, Refusal::BadHandshake, "it names ranks outside this job");
    from = h.from_rank;
    // (It connects again: a connection closed before its answer is retried.)
    if (size_t(from) >= peers_.size())
      return refuse(c, Refusal::BadHandshake, "it came before this rank read the business cards");
  } else {
    // A process of another job: the one we gave an id, or one whose card
    // has not reached us yet (it waits for add_peer).
    for (size_t id = job.size; id < peers_.size() && from < 0; ++id)
      if (peers_[id].job == h.job && peers_[id].rank == h.from_rank && peers_[id].reachable) from = int(id);
    if (from < 0) {
      c->parked = true;
      c->parked_job = h.job;
      c->parked_rank = h.from_rank;
      c->parked_link = h.link;
      log::debug(2, "tcp: a process of another job (rank %d) connected before we learned it", h.from_rank);
      return;
    }
  }
  accept_hello(c, from, h.link);
}

// The listener side, the connecting process known as `from`.
void TcpTransport::accept_hello(Conn* c, int from, uint32_t link) {
  Peer& p = peers_[from];
  if (link > 0) {  // a striping link: the ordered connection must be open
    bool taken = link <= p.links.size() && p.links[link - 1];
    if (!p.open || link >= kMaxLinks || taken) {
      log::debug(2, "tcp: declined striping link %u from rank %d", link, from);
      queue_hello(c, kReject, from, nullptr, link);
      flush(c);
      close_conn(c);
      return;
    }
    c->peer = from;
    c->link = link;
    c->in.resize(2 * (sizeof(FrameHeader) + padded(max_frame_)));
    queue_hello(c, kAccept, from, p.token, link);
    open_link(c);
    return;
  }
  c->peer = from;
  // Both ranks connected at once: the lower rank's connection wins on both
  // sides, so we turn the higher rank's down while ours is pending (it will
  // accept ours), and drop ours for the lower rank's.
  bool duplicate = p.open != nullptr || (p.connecting && !peer_is_lower(p));
  if (duplicate || !p.reachable) {
    log::debug(2, "tcp: declined rank %d's connection (%s)", from,
               !p.reachable ? "unreachable" : p.open ? "one is open already" : "ours wins");
    c->peer = -1;  // not this peer's connection: its end is not the peer's loss
    queue_hello(c, kReject, from, nullptr, 0);
    flush(c);
    close_conn(c);
    return;
  }
  if (p.connecting) close_conn(p.connecting);  // the lower rank's connection wins
  queue_hello(c, kAccept, from, p.token, 0);
  make_open(c);
}

// ---- connecting side --------------------------------------------------------------

// The listener's answer.
void TcpTransport::on_answer(Conn* c, const Hello& h) {
  Peer& p = peers_[c->peer];
  if (c->link > 0) {
    if (h.kind == kAccept && h.job == p.job && h.from_rank == p.rank && h.to_rank == me_ && h.link == c->link &&
        same_token(h.token, token_)) {
      c->in.resize(2 * (sizeof(FrameHeader) + padded(max_frame_)));
      open_link(c);
    } else {
      log::debug(1, "tcp: rank %d did not accept striping link %u", c->peer, c->link);
      close_conn(c);
    }
    return;
  }
  if (h.kind == kReject && h.from_rank == p.rank) {
    log::debug(2, "tcp: rank %d declined our connection; it connects to us", c->peer);
    p.connecting = nullptr;
    p.waiting_for_peer = true;
    p.waiting_since_ns = now_ns();
    p.attempts = 0;
    p.first_attempt_ns = 0;
    // Should its connection not come (it failed for good), we try again.
    arm_timer(p.waiting_since_ns + 2 * handshake_timeout_ns_);
    close_conn(c);
    return;
  }
  if (h.kind != kAccept || h.job != p.job || h.from_rank != p.rank || h.to_rank != me_ ||
      !same_token(h.token, token_)) {
    log::warn("tcp: the answer of %s (rank %d) failed authentication; closing", c->where.c_str(), c->peer);
    rejected.add();
    handshake_failed(c, "its answer failed authentication");
    return;
  }
  p.connecting = nullptr;
  make_open(c);
}

bool TcpTransport::start_connect(int peer) {
  Peer& p = peers_[peer];
  p.retry_at_ns = 0;
  p.waiting_for_peer = false;
  if (!p.first_attempt_ns) p.first_attempt_ns = now_ns();
  std::string why;
  Conn* c = dial(peer, 0, p.addr, p.port, &why);
  if (!c) {
    attempt_failed(peer, why);
    return !p.failed;
  }
  p.connecting = c;
  log::debug(2, "tcp: connecting to rank %d at %s%s", peer, c->where.c_str(), p.attempts ? " (again)" : "");
  return true;
}

// Our connection `c` ended before the peer answered.
void TcpTransport::handshake_failed(Conn* c, const std::string& why) {
  int peer = c->peer;
  bool ours = peer >= 0 && c->link == 0 && peers_[peer].connecting == c;
  if (!ours) {
    if (c->link > 0) log::debug(1, "tcp: no striping link %u to rank %d: %s", c->link, peer, why.c_str());
    close_conn(c);
    return;
  }
  std::string where = c->where;
  close_conn(c);
  attempt_failed(peer, where + ": " + why);
}

// Schedules the next attempt to connect to `peer`, or gives up.
void TcpTransport::attempt_failed(int peer, const std::string& why) {
  Peer& p = peers_[peer];
  uint64_t now = now_ns();
  p.last_error = why;
  if (!p.first_attempt_ns) p.first_attempt_ns = now;
  if (now - p.first_attempt_ns >= connect_timeout_ns_) return give_up(peer, why);
  uint64_t delay = std::min<uint64_t>(kMaxBackoffNs, 2000000ull << std::min(p.attempts, 8));
  delay += (now ^ (uint64_t(peer) * 0x9e3779b97f4a7c15ull)) % (delay / 2 + 1);  // no lockstep with others
  ++p.attempts;
  retried.add();
  p.retry_at_ns = now + delay;
  arm_timer(p.retry_at_ns);
  log::debug(1, "tcp: connection to rank %d failed before it was accepted (%s); trying again in %llu ms", peer,
             why.c_str(), static_cast<unsigned long long>(delay / 1000000));
}

void TcpTransport::give_up(int peer, const std::string& why) {
  Peer& p = peers_[peer];
  p.failed = true;
  p.retry_at_ns = 0;
  size_t queued = p.early_bytes;
  p.early.clear();
  p.early_bytes = 0;
  unsigned long long tried = (now_ns() - p.first_attempt_ns) / 1000000000ull;
  if (finalizing_) {
    log::warn("tcp: could not connect to rank %d to deliver %zu bytes before finalizing: %s", peer, queued,
              why.c_str());
    return;
  }
  char message[512];
  std::snprintf(message, sizeof message,
                "tcp: cannot connect to rank %d (%s, tried for %llu s, %d attempts); %zu bytes of messages to it "
                "cannot be delivered",
                peer, why.c_str(), tried, p.attempts + 1, queued);
  log::error("%s; ending the job", message);
  rte::abort_job(1, message);
}

// ---- striping links ----------------------------------------------------------------

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
  c->state = ConnState::Open;
  log::debug(2, "tcp: striping link %u to rank %d open (%s)", c->link, c->peer, c->where.c_str());
  flush(c);
}

// ---- deadlines --------------------------------------------------------------------

void TcpTransport::run_timers_if_due() {
  if (!next_timer_ns_) return;
  uint64_t now = now_ns();
  if (now >= next_timer_ns_) run_timers(now);
}

void TcpTransport::run_timers(uint64_t now) {
  next_timer_ns_ = 0;
  // Handshakes past their deadline, ours and strangers'. (Collected
  // first: closing changes pending_ and the retries add connections.)
  std::vector<Conn*> late;
  for (auto& c : conns_) {
    bool waiting = c->pending || (c->outgoing && (c->state == ConnState::Connecting ||
                                                  c->state == ConnState::AwaitAccept));
    if (!waiting) continue;
    uint64_t deadline = c->since_ns + handshake_timeout_ns_;
    if (now >= deadline) late.push_back(c.get());
    else arm_timer(deadline);
  }
  for (Conn* c : late) {
    if (c->state == ConnState::Closed) continue;
    if (c->pending) refuse(c, Refusal::TimedOut, "no handshake within the deadline");
    else handshake_failed(c, "no answer within " + std::to_string(handshake_timeout_ns_ / 1000000000ull) + " s");
  }
  for (size_t id = 0; id < peers_.size(); ++id) {
    Peer& p = peers_[id];
    int peer = static_cast<int>(id);
    if (p.retry_at_ns) {
      if (now >= p.retry_at_ns) start_connect(peer);
      else arm_timer(p.retry_at_ns);
    }
    if (p.waiting_for_peer && !p.open) {
      uint64_t give = p.waiting_since_ns + 2 * handshake_timeout_ns_;
      if (now < give) {
        arm_timer(give);
      } else if (!p.early.empty()) {
        log::debug(1, "tcp: rank %d did not connect to us after declining ours; connecting again", peer);
        start_connect(peer);
      } else {
        p.waiting_for_peer = false;
      }
    }
    if (p.undelivered && p.lost_at_ns && !finalizing_) {
      uint64_t end = p.lost_at_ns + lost_grace_ns_;
      if (now < end) {
        arm_timer(end);
        continue;
      }
      char message[256];
      std::snprintf(message, sizeof message,
                    "tcp: the connection to rank %d broke %llu s ago with %zu bytes of messages to it not "
                    "delivered",
                    peer, static_cast<unsigned long long>((now - p.lost_at_ns) / 1000000000ull), p.undelivered);
      log::error("%s; ending the job", message);
      rte::abort_job(1, message);
    }
  }
  report_refusals(now, false);
}

}  // namespace axon::btl::tcp
