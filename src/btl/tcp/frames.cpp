// btl/tcp: messages on open connections (docs/tcp.md, "Framing and flow
// control", "Striping"). A message is an 8-byte FrameHeader, the PML's
// header and payload, and zeros up to a multiple of 8 (wire.h). send()
// writes straight to the kernel while a connection's queue is empty and
// queues the rest, up to AXON_BTL_TCP_QUEUE_LIMIT bytes (then kAgain);
// flush() drains the queue when epoll says the socket is writable. Received
// bytes collect in the connection's buffer and consume() hands each whole
// frame to its handler in place. Striping links are rails (btl.h): the pml
// chooses which fragment goes on which (send_on).
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/status.h"
#include "btl/tcp/internal.h"

namespace axon::btl::tcp {

int TcpTransport::send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
                       size_t payload_len) {
  return send_frame(peer, nullptr, am_id, header, header_len, payload, payload_len);
}

// Rail k > 0 is striping link k; the pml puts only fragments there. A link
// that closed since the pml chose it (rail_weight 0 now) hands the message
// to the ordered connection instead.
int TcpTransport::send_on(int rail, int peer, int am_id, const void* header, size_t header_len,
                          const void* payload, size_t payload_len) {
  Conn* link = open_link_of(peers_[peer], rail);
  if (link) striped.add();
  return send_frame(peer, link, am_id, header, header_len, payload, payload_len);
}

int TcpTransport::rails(int peer) const {
  if (peer < 0 || size_t(peer) >= peers_.size()) return 1;
  return 1 + static_cast<int>(std::min<size_t>(peers_[peer].links.size(), kMaxRails - 1));
}

// The ordered connection's weight, or link k's (0 while it is not open).
// Links the peer opened may outnumber the pairs we found ourselves.
uint32_t TcpTransport::rail_weight(int peer, int rail) const {
  if (peer < 0 || size_t(peer) >= peers_.size()) return rail == 0 ? 1 : 0;
  const Peer& p = peers_[peer];
  if (rail == 0) return std::max<uint32_t>(1, p.weight);
  if (!open_link_of(p, rail)) return 0;
  size_t k = static_cast<size_t>(rail) - 1;
  return std::max<uint32_t>(1, k < p.extra.size() ? p.extra[k].weight : kDefaultWeight);
}

Conn* TcpTransport::open_link_of(const Peer& p, int rail) {
  if (rail <= 0 || size_t(rail) > p.links.size() || !p.open) return nullptr;
  Conn* c = p.links[static_cast<size_t>(rail) - 1];
  return c && c->state == ConnState::Open ? c : nullptr;
}

// `link`: an open striping link to carry the message; nullptr: the ordered
// connection (or the queue of messages waiting for it).
int TcpTransport::send_frame(int peer, Conn* link, int am_id, const void* header, size_t header_len,
                             const void* payload, size_t payload_len) {
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
  Conn* c = link ? link : p.open;
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

std::vector<uint8_t> TcpTransport::frame_bytes(const FrameHeader& fh, const void* header, size_t header_len,
                                               const void* payload, size_t payload_len, size_t skip) {
  std::vector<uint8_t> b(sizeof fh + padded(fh.length), 0);
  std::memcpy(b.data(), &fh, sizeof fh);
  if (header_len) std::memcpy(b.data() + sizeof fh, header, header_len);
  if (payload_len) std::memcpy(b.data() + sizeof fh + header_len, payload, payload_len);
  if (skip) b.erase(b.begin(), b.begin() + static_cast<ptrdiff_t>(skip));
  return b;
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

}  // namespace axon::btl::tcp
