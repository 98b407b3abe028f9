// btl/tcp inside: the transport object and what its files share.
//   tcp.cpp         the Transport: opening, the business card, peers,
//                   progress, shutdown; the settings and counters
//   interfaces.cpp  which interfaces to listen on, the listening sockets,
//                   which of a peer's addresses to use (and which further
//                   pairs to stripe over)
//   connection.cpp  a connection's life: dialling, accepting, the handshake
//                   of both sides, deadlines, retries, the cap on
//                   unauthenticated connections, the rate-limited report
//                   of refused connections, lost peers, striping links
//   frames.cpp      messages on an open connection: framing, the send
//                   queues and their flushing, the receive buffer, the
//                   choice of striping link
//   wire.{h,cpp}    the bytes on the wire and their parsers (pure, so that
//                   test/fuzz builds them alone)
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/param.h"
#include "base/unique_fd.h"
#include "btl/btl.h"
#include "btl/tcp/wire.h"

namespace axon::btl::tcp {

constexpr size_t kMaxPmlHeader = 256;      // room for the PML's headers in front of a payload
constexpr uint32_t kMaxLinks = 8;          // connections per peer: the ordered one and 7 for striping
constexpr uint32_t kDefaultWeight = 1000;  // Mb/s assumed for a link of unknown speed

// The transport's settings and counters. They are defined together, in
// tcp.cpp, so that they register in one fixed order: the order in which
// axon_info --params / --counters and MPI_T list them.
extern IntParam port_min_param;
extern IntParam port_range_param;
extern SizeParam eager_limit_param;
extern SizeParam queue_limit_param;
extern IntParam lost_grace_param;
extern SizeParam sndbuf_param;
extern SizeParam rcvbuf_param;
extern BoolParam striping_param;
extern BoolParam stripe_local_param;
extern IntParam handshake_timeout_param;
extern IntParam connect_timeout_param;
extern StringParam if_include_param;
extern StringParam if_exclude_param;

extern Counter messages_sent;
extern Counter bytes_sent;
extern Counter messages_received;
extern Counter bytes_received;
extern Counter queue_full;
extern Counter striped;
extern Counter rejected;
extern Counter retried;

// "a.b.c.d:port" of an address and port in network order, for messages.
std::string ip_text(uint32_t addr_net, uint16_t port_net);

// ---- interfaces (interfaces.cpp) ----

struct Interface {
  std::string name;
  uint32_t addr = 0;  // network order
  uint32_t mask = 0;  // network order
  bool loopback = false;
  uint32_t speed_mbs = 0;
};
// The interfaces AXON_BTL_TCP_IF_INCLUDE / _EXCLUDE let us use; non-zero
// (the reason logged) when the settings are wrong or leave none.
int choose_interfaces(std::vector<Interface>* usable);
std::string describe(const std::vector<Interface>& list);

// ---- connections (connection.cpp, frames.cpp) ----

struct Pollable {
  bool is_listener = false;
};

struct Listener : Pollable {
  UniqueFd fd;
  Interface iface;
  uint16_t port = 0;  // network order
};

enum class ConnState { Connecting, AwaitAccept, AwaitHello, Open, Closed };

struct Conn : Pollable {
  UniqueFd fd;
  ConnState state = ConnState::Closed;
  bool outgoing = false;
  int peer = -1;             // world rank; for incoming connections known after the Hello
  uint32_t link = 0;         // 0: the peer's ordered connection; k > 0: striping link k
  bool want_write = false;   // EPOLLOUT registered
  bool bye = false;          // the peer announced an orderly close
  bool parked = false;       // a foreign process's Hello, waiting for add_peer()
  bool pending = false;      // in TcpTransport::pending_ (unauthenticated, incoming)
  bool got_bytes = false;    // something arrived (a handshake under way)
  uint64_t parked_job = 0;
  int32_t parked_rank = -1;
  uint32_t parked_link = 0;
  uint32_t src_addr = 0;     // incoming: the other end's address (network order)
  uint64_t since_ns = 0;     // accepted or dialled: its handshake deadline counts from here
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
  uint64_t waiting_since_ns = 0;
  bool failed = false;         // unreachable or lost: sends fail
  uint64_t lost_at_ns = 0;     // when its connection broke without a Bye (0: never)
  bool lost_logged = false;
  size_t undelivered = 0;      // bytes lost with a broken connection (the job ends after the grace)
  // Connecting: attempts that failed before an answer, when the first began,
  // when the next one is due (0: none scheduled), why the last one failed.
  int attempts = 0;
  uint64_t first_attempt_ns = 0;
  uint64_t retry_at_ns = 0;
  std::string last_error;
  std::deque<std::vector<uint8_t>> early;  // frames sent before any connection was accepted
  size_t early_bytes = 0;
  // Striping: further address pairs (link k uses extra[k-1]) and the open
  // striping connections: rails 1.. of this peer (btl.h), weighted by link
  // speed; the pml chooses the rail of each fragment.
  struct Address {
    uint32_t addr;
    uint16_t port;
    uint32_t weight;
  };
  std::vector<Address> extra;
  std::vector<Conn*> links;    // by k-1; nullptr until open
  uint32_t weight = kDefaultWeight;
};

// Connections refused before they were authenticated, reported at a bounded
// rate: the first few one line each, then one count per window while they
// keep coming (a port scan or a flood would otherwise write thousands).
enum class Refusal { BadHandshake, Crowded, TimedOut };
struct RefusalReport {
  uint64_t window_end = 0;  // end of the current window (0: quiet)
  int shown = 0;            // lines of their own since it was last quiet
  uint64_t counts[3] = {};  // not shown in this window, by Refusal
  std::string latest;       // where the last one not shown came from
};

class TcpTransport final : public Transport {
 public:
  ~TcpTransport() override { shutdown_all(); }

  int open(bool publish = true);
  bool card(std::vector<uint8_t>* out) const override {
    *out = card_;
    return !card_.empty();
  }
  bool add_peer(int id, const std::vector<uint8_t>& card) override;
  int connect_peers() override;
  const char* name() const override { return "tcp"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override { return r != me_ && r >= 0 && size_t(r) < peers_.size() && peers_[r].reachable; }
  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override;
  int rails(int peer) const override;
  uint32_t rail_weight(int peer, int rail) const override;
  int send_on(int rail, int peer, int am_id, const void* header, size_t header_len, const void* payload,
              size_t payload_len) override;
  int progress() override;

 private:
  // ---- tcp.cpp: set-up, the progress loop, shutdown ----
  void init_own_peers();
  int poll_once(bool discard);
  void reap();
  void shutdown_all();

  // ---- interfaces.cpp: listening sockets, a peer's addresses ----
  int listen_on(const Interface& i);
  void choose_address(int r, const std::vector<uint8_t>& card);
  static bool same_node(int id);
  static uint32_t weight_of(uint32_t a, uint32_t b);

  // ---- connection.cpp: a connection from dialling to its end ----
  Conn* new_conn(int fd, bool outgoing, std::string where);
  void want_write(Conn* c, bool on);
  Conn* dial(int peer, uint32_t link, uint32_t addr, uint16_t port, std::string* why);
  void queue_hello(Conn* c, HelloKind kind, int to, const uint8_t* token, uint32_t link);
  void finish_connect(Conn* c);
  void make_open(Conn* c);
  void close_conn(Conn* c);
  void lost(Conn* c, int err);
  bool peer_is_lower(const Peer& p) const { return p.job != job_hash_ ? p.job < job_hash_ : p.rank < me_; }
  void start_link(int peer, uint32_t k);
  void open_link(Conn* c);
  void read_handshake_params();
  void accept_some(Listener* l);
  void make_room(Conn* newcomer);
  void drop_pending(Conn* c);
  void refuse(Conn* c, Refusal kind, const char* why);
  void report_refusals(uint64_t now, bool final);
  void on_hello(Conn* c, const Hello& h);
  void accept_hello(Conn* c, int from, uint32_t link);
  void on_answer(Conn* c, const Hello& h);
  bool start_connect(int peer);
  void handshake_failed(Conn* c, const std::string& why);
  void attempt_failed(int peer, const std::string& why);
  void give_up(int peer, const std::string& why);
  void arm_timer(uint64_t at) {
    if (!next_timer_ns_ || at < next_timer_ns_) next_timer_ns_ = at;
  }
  void run_timers_if_due();
  void run_timers(uint64_t now);

  // ---- frames.cpp: messages on open connections (send() too) ----
  int send_frame(int peer, Conn* link, int am_id, const void* header, size_t header_len, const void* payload,
                 size_t payload_len);
  static Conn* open_link_of(const Peer& p, int rail);
  bool flush(Conn* c);
  int consume(Conn* c, bool discard);
  int read_ready(Conn* c, bool discard);
  std::vector<uint8_t> frame_bytes(const FrameHeader& fh, const void* header, size_t header_len, const void* payload,
                                   size_t payload_len, size_t skip);

  Caps caps_;
  int me_ = 0;
  uint64_t job_hash_ = 0;
  uint8_t token_[kTokenBytes] = {};
  size_t max_frame_ = 0;
  size_t queue_limit_ = 0;
  uint64_t lost_grace_ns_ = 0;
  uint64_t handshake_timeout_ns_ = 0;
  uint64_t connect_timeout_ns_ = 0;
  uint64_t next_timer_ns_ = 0;  // when run_timers has something to do (0: nothing)
  bool in_progress_ = false;
  bool finalizing_ = false;
  UniqueFd epoll_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> pending_;  // incoming, not authenticated yet (parked ones excluded), oldest first
  std::vector<Peer> peers_;     // by world rank, then foreign ids (rte::foreign)
  std::vector<uint8_t> card_;
  std::string card_key_;  // its PMIx key (tcp.cpp)
  RefusalReport refusals_;
};

}  // namespace axon::btl::tcp
