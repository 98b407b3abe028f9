// btl/tcp: active messages over TCP sockets, for peers on other nodes.
//
// Start-up: every rank opens one listening socket per usable IPv4 interface
// address and publishes a business card (the addresses, their netmasks and
// ports, and a random 128-bit token) through rte. Nothing connects then:
// the first send() to a peer opens one connection, so a job whose ranks talk
// to a few neighbours holds a few sockets, not size-1.
//
// Handshake: the connecting rank sends a Hello carrying the listener's token
// (which it can only have learned from the listener's card, through PMIx),
// the job's namespace hash and both ranks; the listener answers Accept with
// the connector's own token (mutual proof) or Reject. Anything else — garbage,
// a wrong token, a wrong job, a wrong length — closes the connection with a
// warning; no byte of an unauthenticated connection reaches a handler.
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
#include <fcntl.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "base/status.h"
#include "rte/rte.h"

namespace axon::btl {

namespace {

StringParam if_include_param{"AXON_BTL_TCP_IF_INCLUDE", "",
                             "Comma-separated interfaces (names, shell patterns such as eth*, or "
                             "CIDR subnets such as 10.0.0.0/8) the TCP transport may use; exclusive "
                             "with AXON_BTL_TCP_IF_EXCLUDE"};
StringParam if_exclude_param{"AXON_BTL_TCP_IF_EXCLUDE", "",
                             "Comma-separated interfaces (names, patterns or CIDR subnets) the TCP "
                             "transport must not use (default: docker*, virbr*; interfaces that are "
                             "down are never used)"};
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
                          "launcher usually ends the job first and names the rank that died)"};
BoolParam striping_param{"AXON_BTL_TCP_STRIPING", true,
                         "Spread the fragments of large messages to a rank on another node over one "
                         "connection per pair of interfaces on a common subnet, when both ranks have "
                         "several"};
BoolParam stripe_local_param{"AXON_BTL_TCP_STRIPE_LOCAL", false,
                             "Stripe to ranks of this node too, over every address they listen on "
                             "(lets striping be tested on one machine)"};
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
Counter striped{"axon_btl_tcp_striped_messages", Counter::Class::Counter,
                "Fragments sent over a peer's additional connections (striping)"};
Counter rejected{"axon_btl_tcp_rejected_connections", Counter::Class::Counter,
                 "Incoming connections closed because their handshake was wrong (garbage, wrong "
                 "secret or job, malformed header)"};

constexpr const char* kCardKey = "axon.btl.tcp";
constexpr uint32_t kCardMagic = 0x41584354;   // "AXCT"
constexpr uint32_t kHelloMagic = 0x41584853;  // "AXHS"
constexpr uint16_t kVersion = 1;
constexpr uint16_t kFrameMagic = 0xA7C5;
constexpr size_t kMaxPmlHeader = 256;     // room for the PML's headers in front of a payload
constexpr size_t kMaxPendingAccepts = 32;  // unauthenticated connections kept at once
constexpr int kTokenBytes = 16;
constexpr uint32_t kMaxLinks = 8;           // connections per peer: the ordered one and 7 for striping
constexpr uint32_t kDefaultWeight = 1000;  // Mb/s assumed for a link of unknown speed

enum HelloKind : uint16_t { kHello = 1, kAccept = 2, kReject = 3 };

// The first bytes on every connection, in both directions. All integers in
// host order: the job runs on one architecture (the card says so implicitly:
// a peer of another byte order fails the magic check and is rejected).
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  uint32_t length;     // bytes after this field: sizeof(Hello) - 12
  int32_t from_rank;
  int32_t to_rank;
  uint32_t link;       // 0: the ordered connection; k > 0: striping connection k
  uint64_t job;        // hash of the PMIx namespace
  uint8_t token[kTokenBytes];  // Hello: the listener's; Accept: the connector's
};
static_assert(sizeof(Hello) == 48);
constexpr uint32_t kHelloBody = sizeof(Hello) - 12;

struct FrameHeader {
  uint32_t length;  // message bytes, without this header and the padding
  uint8_t am_id;
  uint8_t flags;    // kFlagBye: the sender is finalizing, a close will follow
  uint16_t magic;
};
static_assert(sizeof(FrameHeader) == 8);
constexpr uint8_t kFlagBye = 1;

struct CardHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t count;
  uint8_t token[kTokenBytes];
};
struct CardEntry {
  uint32_t addr;  // network order
  uint32_t mask;  // network order
  uint16_t port;  // network order
  uint8_t loopback;
  uint8_t pad;
  uint32_t speed_mbs;  // 0 when unknown
};
static_assert(sizeof(CardHeader) == 24 && sizeof(CardEntry) == 16);

size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

uint64_t hash_job(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool same_token(const uint8_t* a, const uint8_t* b) {
  unsigned diff = 0;  // no early exit: the time taken says nothing about the token
  for (int i = 0; i < kTokenBytes; ++i) diff |= unsigned(a[i] ^ b[i]);
  return diff == 0;
}

std::string ip_text(uint32_t addr_net, uint16_t port_net) {
  char buf[INET_ADDRSTRLEN] = "?";
  in_addr a{addr_net};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(port_net));
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// ---- interfaces ------------------------------------------------------------------

struct Interface {
  std::string name;
  uint32_t addr = 0;  // network order
  uint32_t mask = 0;  // network order
  bool loopback = false;
  uint32_t speed_mbs = 0;
};

struct Pattern {
  std::string name;  // a name or shell pattern, or empty for a subnet
  uint32_t net = 0, mask = 0;  // network order
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// Parses "eth0", "eth*" or "10.1.0.0/16". False (and *why) on a malformed subnet.
bool parse_patterns(const std::string& text, std::vector<Pattern>* out, std::string* why) {
  for (const std::string& item : split_list(text)) {
    Pattern p;
    size_t slash = item.find('/');
    if (slash == std::string::npos) {
      p.name = item;
    } else {
      in_addr a{};
      char* end = nullptr;
      long bits = strtol(item.c_str() + slash + 1, &end, 10);
      if (inet_pton(AF_INET, item.substr(0, slash).c_str(), &a) != 1 || *end || end == item.c_str() + slash + 1 ||
          bits < 0 || bits > 32) {
        *why = "\"" + item + "\" is neither an interface name nor an IPv4 subnet such as 10.0.0.0/8";
        return false;
      }
      p.mask = htonl(bits == 0 ? 0 : ~uint32_t(0) << (32 - bits));
      p.net = a.s_addr & p.mask;
    }
    out->push_back(p);
  }
  return true;
}

bool matches(const std::vector<Pattern>& patterns, const Interface& i) {
  for (const Pattern& p : patterns) {
    if (!p.name.empty() ? fnmatch(p.name.c_str(), i.name.c_str(), 0) == 0 : (i.addr & p.mask) == p.net)
      return true;
  }
  return false;
}

uint32_t link_speed(const std::string& name) {
  std::ifstream f("/sys/class/net/" + name + "/speed");
  long v = 0;
  if (f >> v && v > 0) return static_cast<uint32_t>(v);
  return 0;
}

// Every IPv4 address of an interface that is up, before any filtering.
std::vector<Interface> list_interfaces() {
  std::vector<Interface> all;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return all;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING)) continue;
    Interface it;
    it.name = i->ifa_name;
    it.addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    it.mask = i->ifa_netmask ? reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr : 0xffffffffu;
    it.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    it.speed_mbs = it.loopback ? 0 : link_speed(it.name);
    all.push_back(it);
  }
  freeifaddrs(list);
  return all;
}

std::string describe(const std::vector<Interface>& list) {
  std::string s;
  for (const Interface& i : list) {
    if (!s.empty()) s += ", ";
    char buf[INET_ADDRSTRLEN] = "?";
    in_addr a{i.addr};
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    s += i.name + " " + buf;
  }
  return s.empty() ? "none" : s;
}

// ---- connections -----------------------------------------------------------------

struct Pollable {
  bool is_listener = false;
};

struct Listener : Pollable {
  Fd fd;
  Interface iface;
  uint16_t port = 0;  // network order
};

enum class ConnState { Connecting, AwaitAccept, AwaitHello, Open, Closed };

struct Conn : Pollable {
  Fd fd;
  ConnState state = ConnState::Closed;
  bool outgoing = false;
  int peer = -1;             // world rank; for incoming connections known after the Hello
  uint32_t link = 0;         // 0: the peer's ordered connection; k > 0: striping link k
  bool want_write = false;   // EPOLLOUT registered
  bool bye = false;          // the peer announced an orderly close
  bool parked = false;       // a foreign process's Hello, waiting for add_peer()
  uint64_t parked_job = 0;
  int32_t parked_rank = -1;
  uint32_t parked_link = 0;
  std::string where;         // "addr:port" of the other end, for messages
  std::vector<uint8_t> in;   // received bytes not yet consumed
  size_t in_len = 0;
  std::deque<std::vector<uint8_t>> out;  // queued bytes, in order
  size_t out_offset = 0;     // bytes of out.front() already written
  size_t out_bytes = 0;      // queued bytes not yet written
};

struct Peer {
  bool reachable = false;
  uint64_t job = 0;   // namespace hash and rank in that job (foreign ids: another job's)
  int32_t rank = -1;
  uint8_t token[kTokenBytes] = {};
  uint32_t addr = 0;  // chosen address (network order)
  uint16_t port = 0;
  Conn* open = nullptr;        // the connection messages travel on
  Conn* connecting = nullptr;  // ours, until accepted or rejected
  bool waiting_for_peer = false;  // ours was rejected: the peer's own connection is coming
  bool failed = false;         // unreachable or lost: sends fail
  uint64_t lost_at_ns = 0;     // when its connection broke without a Bye (0: never)
  bool lost_logged = false;
  std::deque<std::vector<uint8_t>> early;  // frames sent before any connection was accepted
  size_t early_bytes = 0;
  // Striping: further address pairs (link k uses extra[k-1]), the open
  // striping connections, and a stride scheduler over the ordered connection
  // (index 0) and the links, weighted by link speed.
  struct Address {
    uint32_t addr;
    uint16_t port;
    uint32_t weight;
  };
  std::vector<Address> extra;
  std::vector<Conn*> links;    // by k-1; nullptr until open
  std::vector<uint64_t> pass;  // by index 0..links.size()
  uint32_t weight = kDefaultWeight;
};

class TcpTransport final : public Transport {
 public:
  ~TcpTransport() override { shutdown_all(); }

  int open(bool publish = true) {
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

    std::vector<uint8_t> card(sizeof(CardHeader) + listeners_.size() * sizeof(CardEntry));
    CardHeader h{kCardMagic, kVersion, static_cast<uint16_t>(listeners_.size()), {}};
    std::memcpy(h.token, token_, sizeof token_);
    std::memcpy(card.data(), &h, sizeof h);
    for (size_t k = 0; k < listeners_.size(); ++k) {
      const Listener& l = *listeners_[k];
      CardEntry e{l.iface.addr, l.iface.mask, l.port, static_cast<uint8_t>(l.iface.loopback), 0, l.iface.speed_mbs};
      std::memcpy(card.data() + sizeof h + k * sizeof e, &e, sizeof e);
    }
    card_ = card;
    if (!publish) {
      init_own_peers();  // nobody of this job: they never exchanged cards with us
      return 0;
    }
    return rte::publish(kCardKey, card.data(), card.size());
  }

  bool card(std::vector<uint8_t>* out) const override {
    *out = card_;
    return !card_.empty();
  }

  bool add_peer(int id, const std::vector<uint8_t>& card) override {
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

  void init_own_peers() {
    const rte::Job& job = rte::job();
    if (peers_.size() < size_t(job.size)) peers_.resize(job.size);
    for (int r = 0; r < job.size; ++r) {
      peers_[r].job = job_hash_;
      peers_[r].rank = r;
    }
  }

  int connect_peers() override {
    const rte::Job& job = rte::job();
    init_own_peers();
    for (int r = 0; r < job.size; ++r) {
      if (r == me_) continue;
      std::vector<uint8_t> card;
      if (rte::lookup(r, kCardKey, &card) != 0) continue;  // that rank runs without tcp
      choose_address(r, card);
    }
    return 0;
  }

  const char* name() const override { return "tcp"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override { return r != me_ && r >= 0 && size_t(r) < peers_.size() && peers_[r].reachable; }

  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override {
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
    if (c && !p.links.empty() && is_unordered(am_id)) {
      c = pick_link(p);
      if (c != p.open) striped.add();
    }
    if (!c) {
      if (p.early_bytes >= queue_limit_ && !p.early.empty()) {
        queue_full.add();
        return kAgain;
      }
      if (!p.connecting && !p.waiting_for_peer && !start_connect(peer)) return kIoError;
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

  int progress() override {
    if (in_progress_) return 0;
    in_progress_ = true;
    int handled = poll_once(false);
    in_progress_ = false;
    reap();
    return handled;
  }

 private:
  // ---- set-up ---------------------------------------------------------------------

  int choose_interfaces(std::vector<Interface>* usable) {
    const std::string& inc = if_include_param.get();
    const std::string& exc = if_exclude_param.get();
    if (!inc.empty() && !exc.empty()) {
      log::error("tcp: AXON_BTL_TCP_IF_INCLUDE and AXON_BTL_TCP_IF_EXCLUDE are both set; set only one of them");
      return 1;
    }
    std::vector<Pattern> patterns;
    std::string why;
    if (!parse_patterns(inc.empty() ? (exc.empty() ? "docker*,virbr*" : exc) : inc, &patterns, &why)) {
      log::error("tcp: %s: %s", inc.empty() ? "AXON_BTL_TCP_IF_EXCLUDE" : "AXON_BTL_TCP_IF_INCLUDE", why.c_str());
      return 1;
    }
    std::vector<Interface> all = list_interfaces();
    for (const Interface& i : all)
      if (matches(patterns, i) == !inc.empty()) usable->push_back(i);
    if (usable->empty()) {
      if (!inc.empty())
        log::error("tcp: AXON_BTL_TCP_IF_INCLUDE=%s matches no interface that is up (interfaces: %s)", inc.c_str(),
                   describe(all).c_str());
      else
        log::error("tcp: no usable network interface (AXON_BTL_TCP_IF_EXCLUDE=%s; interfaces: %s)",
                   exc.empty() ? "docker*,virbr* (default)" : exc.c_str(), describe(all).c_str());
      return 1;
    }
    log::debug(1, "tcp: listening on %s", describe(*usable).c_str());
    return 0;
  }

  int listen_on(const Interface& i) {
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

  // Picks the peer's address: its loopback one when it shares our node (ranks
  // of one node share a network namespace), else one on a subnet one of our
  // interfaces is on, else any non-loopback one (routed).
  void choose_address(int r, const std::vector<uint8_t>& card) {
    CardHeader h;
    if (card.size() < sizeof h) return;
    std::memcpy(&h, card.data(), sizeof h);
    if (h.magic != kCardMagic || h.version != kVersion || card.size() != sizeof h + h.count * sizeof(CardEntry)) {
      log::warn("tcp: rank %d published a business card this version cannot read", r);
      return;
    }
    std::vector<CardEntry> entries(h.count);
    if (h.count) std::memcpy(entries.data(), card.data() + sizeof h, h.count * sizeof(CardEntry));
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
    std::memcpy(p.token, h.token, sizeof p.token);
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
  static bool same_node(int id) {
    if (const rte::Proc* p = rte::foreign(id)) return p->hostname == rte::job().hostname;
    return rte::is_local(id);
  }

  // Orders the ends of a connection between two processes: (job hash, rank).
  bool peer_is_lower(const Peer& p) const {
    return p.job != job_hash_ ? p.job < job_hash_ : p.rank < me_;
  }

  static uint32_t weight_of(uint32_t a, uint32_t b) {
    if (a && b) return std::min(a, b);
    return a ? a : b ? b : kDefaultWeight;
  }

  // The connection for an order-insensitive message: the least loaded by
  // stride scheduling among the ordered connection and the open links whose
  // queue has room.
  Conn* pick_link(Peer& p) {
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
    // Links the peer opened may outnumber the pairs we found ourselves.
    uint32_t w = best_index == 0                  ? p.weight
                 : best_index - 1 < p.extra.size() ? p.extra[best_index - 1].weight
                                                   : kDefaultWeight;
    p.pass[best_index] += 1000000000ull / std::max<uint32_t>(1, w);
    return best;
  }

  // A striping connection from us; it carries nothing until accepted.
  void start_link(int peer, uint32_t k) {
    Peer& p = peers_[peer];
    const Peer::Address& a = p.extra[k - 1];
    std::string why;
    if (!dial(peer, k, a.addr, a.port, &why))
      log::debug(1, "tcp: no striping link %u to rank %d: %s", k, peer, why.c_str());
  }

  void open_link(Conn* c) {
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

  // ---- connections ------------------------------------------------------------------

  Conn* new_conn(int fd, bool outgoing, std::string where) {
    auto c = std::make_unique<Conn>();
    c->fd.reset(fd);
    c->outgoing = outgoing;
    c->where = std::move(where);
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
    c->in.resize(2 * (sizeof(FrameHeader) + padded(max_frame_)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = static_cast<Pollable*>(c.get());
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
    conns_.push_back(std::move(c));
    return conns_.back().get();
  }

  void want_write(Conn* c, bool on) {
    if (c->want_write == on || c->state == ConnState::Closed) return;
    c->want_write = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.ptr = static_cast<Pollable*>(c);
    epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
  }

  bool start_connect(int peer) {
    Peer& p = peers_[peer];
    std::string why;
    Conn* c = dial(peer, 0, p.addr, p.port, &why);
    if (!c) {
      log::error("tcp: cannot connect to rank %d: %s", peer, why.c_str());
      p.failed = true;
      return false;
    }
    p.connecting = c;
    log::debug(2, "tcp: connecting to rank %d at %s", peer, c->where.c_str());
    return true;
  }

  // Opens a non-blocking connection to addr:port for `peer` as its link
  // `link` (0: the ordered connection) and queues our Hello, which leaves as
  // soon as the socket is writable. nullptr, with the reason in `why`, when
  // the socket or the connect fails at once.
  Conn* dial(int peer, uint32_t link, uint32_t addr, uint16_t port, std::string* why) {
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
      close_conn(c);
      return nullptr;
    }
    c->state = rc == 0 ? ConnState::AwaitAccept : ConnState::Connecting;
    queue_hello(c, kHello, peer, peers_[peer].token, link);
    want_write(c, true);
    return c;
  }

  // `to`: the peer's id here; the Hello names it by its rank in its own job.
  void queue_hello(Conn* c, HelloKind kind, int to, const uint8_t* token, uint32_t link) {
    int32_t to_rank = to >= 0 && size_t(to) < peers_.size() && peers_[to].rank >= 0 ? peers_[to].rank : to;
    Hello h{kHelloMagic, kVersion, kind, kHelloBody, me_, to_rank, link, job_hash_, {}};
    if (token) std::memcpy(h.token, token, kTokenBytes);
    std::vector<uint8_t> bytes(sizeof h);
    std::memcpy(bytes.data(), &h, sizeof h);
    c->out.push_front(std::move(bytes));  // ahead of any frame
    c->out_bytes += sizeof h;
  }

  void close_conn(Conn* c) {
    if (c->state == ConnState::Closed && c->fd.get() < 0) return;
    if (c->fd.get() >= 0) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
    c->fd.reset();
    c->state = ConnState::Closed;
    c->out.clear();
    c->out_bytes = 0;
    if (c->peer >= 0) {
      Peer& p = peers_[c->peer];
      if (p.open == c) p.open = nullptr;
      if (p.connecting == c) p.connecting = nullptr;
      if (c->link > 0 && c->link <= p.links.size() && p.links[c->link - 1] == c) p.links[c->link - 1] = nullptr;
    }
  }

  // A connection that carried (or was about to carry) a peer's messages
  // ended: EOF, reset or a write error. Logged once per peer unless the peer
  // said Bye first or we are finalizing.
  void lost(Conn* c, int err) {
    int peer = c->peer;
    // A striping link that never opened carried nothing: its end loses nothing.
    bool mine = peer >= 0 && (peers_[peer].open == c || peers_[peer].connecting == c ||
                              (c->link > 0 && c->state == ConnState::Open));
    bool was_open = c->state == ConnState::Open;
    bool orderly = c->bye || finalizing_;
    std::string where = c->where;
    close_conn(c);
    if (!mine) return;
    Peer& p = peers_[peer];
    p.failed = true;
    if (orderly) {
      log::debug(2, "tcp: rank %d closed its connection after finishing", peer);
      return;
    }
    if (!p.lost_at_ns) p.lost_at_ns = now_ns();
    if (p.lost_logged) return;
    p.lost_logged = true;
    log::warn("tcp: connection to rank %d (%s) %s%s%s; messages to it will fail in %llu s", peer, where.c_str(),
              was_open ? "lost" : "closed during the handshake", err ? ": " : " (closed by the peer)",
              err ? strerror(err) : "", static_cast<unsigned long long>(lost_grace_ns_ / 1000000000ull));
  }

  void reject(Conn* c, const char* why) {
    rejected.add();
    log::warn("tcp: rejected a connection from %s: %s", c->where.c_str(), why);
    close_conn(c);
  }

  void accept_all(Listener* l) {
    for (;;) {
      sockaddr_in sa{};
      socklen_t sl = sizeof sa;
      int fd = accept4(l->fd.get(), reinterpret_cast<sockaddr*>(&sa), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) log::debug(1, "tcp: accept failed: %s", strerror(errno));
        return;
      }
      // Unauthenticated connections are capped: the oldest makes room.
      size_t pending = 0;
      Conn* oldest = nullptr;
      for (auto& c : conns_)
        if (c->state == ConnState::AwaitHello) {
          ++pending;
          if (!oldest) oldest = c.get();
        }
      if (pending >= kMaxPendingAccepts && oldest) reject(oldest, "too many connections waiting for a handshake");
      Conn* c = new_conn(fd, false, ip_text(sa.sin_addr.s_addr, sa.sin_port));
      c->state = ConnState::AwaitHello;
      log::debug(2, "tcp: accepted a connection from %s", c->where.c_str());
    }
  }

  // Sends what c has queued; false when the connection broke.
  bool flush(Conn* c) {
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
  void make_open(Conn* c) {
    Peer& p = peers_[c->peer];
    c->state = ConnState::Open;
    p.open = c;
    p.waiting_for_peer = false;
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

  // The listener side of the handshake. `h` is complete and its length right.
  void on_hello(Conn* c, const Hello& h) {
    const rte::Job& job = rte::job();
    if (h.kind != kHello) return reject(c, "the first message is not a connection request");
    if (!same_token(h.token, token_)) return reject(c, "wrong secret");
    if (h.to_rank != me_ || h.from_rank < 0) return reject(c, "it names ranks outside this job");
    int from = -1;
    if (h.job == job_hash_) {
      if (h.from_rank >= job.size || h.from_rank == me_) return reject(c, "it names ranks outside this job");
      from = h.from_rank;
      if (size_t(from) >= peers_.size()) return reject(c, "it came before this rank read the business cards");
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
  void accept_hello(Conn* c, int from, uint32_t link) {
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

  // The connecting side: the listener's answer.
  void on_answer(Conn* c, const Hello& h) {
    Peer& p = peers_[c->peer];
    if (c->link > 0) {
      if (h.kind == kAccept && h.job == p.job && h.from_rank == p.rank && h.to_rank == me_ &&
          h.link == c->link && same_token(h.token, token_)) {
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
      close_conn(c);
      return;
    }
    if (h.kind != kAccept || h.job != p.job || h.from_rank != p.rank || h.to_rank != me_ ||
        !same_token(h.token, token_)) {
      log::warn("tcp: the answer of %s (rank %d) failed authentication; closing", c->where.c_str(), c->peer);
      rejected.add();
      int peer = c->peer;
      close_conn(c);
      peers_[peer].failed = true;
      return;
    }
    p.connecting = nullptr;
    make_open(c);
  }

  // Consumes received bytes; returns the number of messages handled.
  int consume(Conn* c, bool discard) {
    int handled = 0;
    size_t pos = 0;
    while (c->state != ConnState::Closed) {
      size_t avail = c->in_len - pos;
      const uint8_t* p = c->in.data() + pos;
      if (c->state == ConnState::AwaitHello || c->state == ConnState::AwaitAccept) {
        // Check the magic and the length as soon as they arrive, so garbage is
        // turned away at once rather than when 48 bytes have come.
        uint32_t magic = 0;
        if (avail >= 4) std::memcpy(&magic, p, 4);
        if (avail >= 4 && magic != kHelloMagic) {
          if (c->state == ConnState::AwaitHello) reject(c, "not an Axon connection (garbage instead of a handshake)");
          else lost(c, 0);
          break;
        }
        if (avail >= 12) {
          uint16_t version;
          uint32_t length;
          std::memcpy(&version, p + 4, 2);
          std::memcpy(&length, p + 8, 4);
          if (version != kVersion || length != kHelloBody) {
            if (c->state == ConnState::AwaitHello)
              reject(c, version != kVersion      ? "handshake of another version"
                        : length > kHelloBody ? "oversized handshake (length too large)"
                                              : "malformed handshake (length too small)");
            else lost(c, 0);
            break;
          }
        }
        if (avail < sizeof(Hello)) break;
        Hello h;
        std::memcpy(&h, p, sizeof h);
        pos += sizeof h;
        if (c->state == ConnState::AwaitHello) on_hello(c, h);
        else on_answer(c, h);
        ++handled;
        continue;
      }
      if (c->state != ConnState::Open || avail < sizeof(FrameHeader)) break;
      FrameHeader fh;
      std::memcpy(&fh, p, sizeof fh);
      if (fh.magic != kFrameMagic || fh.am_id >= kMaxAmIds || fh.length > max_frame_ || (fh.flags & ~kFlagBye)) {
        log::error("tcp: malformed message header from rank %d (length %u, id %u); closing the connection",
                   c->peer, fh.length, fh.am_id);
        lost(c, 0);
        break;
      }
      size_t need = sizeof fh + padded(fh.length);
      if (avail < need) break;
      pos += need;
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

  int read_ready(Conn* c, bool discard) {
    int handled = 0;
    for (int rounds = 0; rounds < 16 && c->state != ConnState::Closed; ++rounds) {
      ssize_t n = recv(c->fd.get(), c->in.data() + c->in_len, c->in.size() - c->in_len, MSG_DONTWAIT);
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
      c->in_len += static_cast<size_t>(n);
      handled += consume(c, discard);
    }
    return handled;
  }

  void finish_connect(Conn* c) {
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
      int peer = c->peer;
      log::error("tcp: cannot connect to rank %d at %s: %s", peer, c->where.c_str(), strerror(err));
      close_conn(c);
      peers_[peer].failed = true;
      return;
    }
    c->state = ConnState::AwaitAccept;
  }

  int poll_once(bool discard) {
    epoll_event events[32];
    int n = epoll_wait(epoll_.get(), events, 32, 0);
    int handled = 0;
    for (int k = 0; k < n; ++k) {
      auto* item = static_cast<Pollable*>(events[k].data.ptr);
      if (item->is_listener) {
        accept_all(static_cast<Listener*>(item));
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

  void reap() {
    std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return c->state == ConnState::Closed; });
  }

  std::vector<uint8_t> frame_bytes(const FrameHeader& fh, const void* header, size_t header_len,
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
  void shutdown_all() {
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
      if (poll_once(true) == 0) backoff.idle();
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
    for (auto& c : conns_) close_conn(c.get());
    conns_.clear();
    listeners_.clear();
    epoll_.reset();
  }

  Caps caps_;
  int me_ = 0;
  uint64_t job_hash_ = 0;
  uint8_t token_[kTokenBytes] = {};
  size_t max_frame_ = 0;
  size_t queue_limit_ = 0;
  uint64_t lost_grace_ns_ = 0;
  bool in_progress_ = false;
  bool finalizing_ = false;
  Fd epoll_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Peer> peers_;  // by world rank, then foreign ids (rte::foreign)
  std::vector<uint8_t> card_;
};

}  // namespace

std::unique_ptr<Transport> open_tcp(int* error) {
  *error = 0;
  if (rte::job().size < 2) return nullptr;
  auto t = std::make_unique<TcpTransport>();
  if ((*error = t->open()) != 0) return nullptr;
  return t;
}

std::unique_ptr<Transport> open_tcp_dynamic(int* error) {
  *error = 0;
  auto t = std::make_unique<TcpTransport>();
  if ((*error = t->open(false)) != 0) return nullptr;
  return t;
}

}  // namespace axon::btl
