// btl/verbs internals: what the files of this folder share. The interface
// of the transport to the rest of Axon is verbs.h; nothing outside
// src/btl/verbs includes this header.
//
// Who does what:
//   verbs.cpp      parameters, counters, open_verbs(), VerbsTransport::open/close/progress
//   device.cpp     devices, ports, GIDs and IP addresses, choosing the port(s)
//   memory.cpp     registrations: page buffers, the registration cache, expose()
//   rdmacm.cpp     the connection manager: QPs, connect / accept, tie-breaks
//   eager.cpp      SEND/RECV: credits, send buffers, inline sends, the send CQ
//   rdma.cpp       rendezvous get()/put(): one RDMA READ/WRITE per piece
//   rma.cpp        RMA windows: put_nb/get_nb/atomic_nb/flush_test
//   multirail.cpp  two rails behind one Transport
#pragma once

#include "axon_config.h"
#include "base/param.h"

namespace axon::btl::verbs {

// Declared in verbs.cpp in every build, so `axon_info --params` lists the
// same set whether or not this build has the transport.
extern StringParam device_param;
extern SizeParam eager_param;
extern IntParam credits_param;
extern IntParam send_buffers_param;
extern SizeParam inline_param;
extern IntParam timeout_param;
extern StringParam rndv_param;
extern SizeParam chunk_param;
extern IntParam depth_param;
extern IntParam signal_param;
extern SizeParam segment_param;
extern IntParam rails_param;
extern IntParam gid_param;

}  // namespace axon::btl::verbs

#ifdef AXON_HAVE_VERBS

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/counter.h"
#include "btl/btl.h"
#include "rcache/rcache.h"

namespace axon::btl::verbs {

// ---- counters (verbs.cpp) ----------------------------------------------------------
extern Counter messages_sent, inline_sent, credit_stalls, credit_writes;
extern Counter read_bytes, write_bytes, rdma_chunks, registrations, registered_bytes;
Counter* rail_bytes(int rail);  // rail 0 and 1 have a counter; others nullptr

// ---- wire formats ------------------------------------------------------------------
constexpr uint32_t kCardMagic = 0x41585642;   // "AXVB"
constexpr uint32_t kHelloMagic = 0x41584f48;  // "AXOH"
constexpr uint32_t kBusyMagic = 0x41584f42;   // "AXOB": rejected, my own request to you is on its way
constexpr size_t kMaxUpperHeader = 64;        // largest PML header in front of a payload
inline const char* const kCardKey = "btl.verbs";

// Business card: where our connection manager listens.
struct Card {
  uint32_t magic;
  uint16_t family;  // AF_INET / AF_INET6
  uint16_t port;    // network byte order
  uint8_t addr[16];
  char device[24];
};

// Private data of connect requests and accepts.
struct Hello {
  uint32_t magic;
  int32_t rank;
  uint32_t credits;       // receive buffers posted for the other side
  uint32_t mailbox_rkey;  // where the other side writes credit returns
  uint64_t mailbox_addr;  // base of our mailbox array, indexed by the writer's world rank
  uint64_t job;           // hash of the namespace: refuse strangers
};
static_assert(sizeof(Hello) <= 56, "rdma_connect private data is at most 56 bytes");

// Our header in front of every SEND.
struct WireHeader {
  uint16_t am_id;
  uint16_t reserved;
  uint32_t length;   // bytes after this header
  uint64_t freed;    // cumulative count of the receiver's messages we have consumed
};

// ---- work request ids --------------------------------------------------------------
// Kinds of send work requests, in the top byte of wr_id; the low 32 bits
// hold a slot (send buffer, rendezvous piece, RMA operation).
enum WrKind : uint64_t { kWrSendBuffer = 1, kWrInline, kWrCredit, kWrRdma, kWrRma };
inline uint64_t make_wr(WrKind k, uint64_t v) { return (uint64_t(k) << 56) | v; }
inline WrKind wr_kind(uint64_t id) { return static_cast<WrKind>(id >> 56); }
inline uint64_t wr_value(uint64_t id) { return id & ((1ull << 56) - 1); }
// Selective signalling: most inline SENDs are posted unsignalled (no
// completion entry, no CQ poll); the next signalled work request of the QP
// records in bits 32..47 of its wr_id how many send-queue entries its
// completion releases (itself and the unsignalled ones before it: an RC send
// queue completes in order). 0 there (e.g. RMA work requests) means 1.
constexpr uint64_t kCoverShift = 32;
inline uint64_t with_cover(uint64_t id, uint32_t covered) {
  return id | (uint64_t(covered & 0xffff) << kCoverShift);
}
inline uint32_t wr_cover(uint64_t id) {
  return std::max<uint32_t>(1, static_cast<uint32_t>((id >> kCoverShift) & 0xffff));
}
inline uint32_t wr_slot(uint64_t id) { return static_cast<uint32_t>(id); }
// Unsignalled inline SENDs carry this kind: only a failure (flush) reports them.
constexpr WrKind kWrUnsignaled = static_cast<WrKind>(15);
constexpr uint32_t kSignalEvery = 64;  // at most this many SENDs per signalled one

// ---- messages for the user (memory.cpp) ---------------------------------------------
std::string memlock_text();
// What to do about a failed memory registration (errno `err`).
std::string reg_hint(int err);
const char* wc_hint(ibv_wc_status s);

// ---- memory (memory.cpp) -------------------------------------------------------------
struct MrDeleter {
  void operator()(ibv_mr* mr) const {
    if (mr) ibv_dereg_mr(mr);
  }
};
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;

struct PageBuffer {  // page-aligned heap memory for registration
  void* p = nullptr;
  size_t size = 0;
  int allocate(size_t n);
  PageBuffer() = default;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  ~PageBuffer() { free(p); }
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
};

// The registration cache of one protection domain: Ops that call
// ibv_reg_mr / ibv_dereg_mr on `pd` and count them.
std::unique_ptr<rcache::Cache> make_cache(ibv_pd* pd, const char* name);
inline ibv_mr* mr_of(const rcache::Handle& h) { return static_cast<ibv_mr*>(h.get()); }

// ---- devices and ports (device.cpp) -------------------------------------------------
struct PortChoice {
  ibv_context* ctx = nullptr;
  std::string device;
  int port = 0;
  ibv_port_attr attr{};
  sockaddr_storage addr{};
  int gid_index = -1;
  const char* gid_kind = "";
};

std::string ip_text(const sockaddr_storage& ss);
// The usable ports (ACTIVE, with an IP address for the connection manager)
// that AXON_BTL_VERBS_DEVICE admits, rail 0 first; `seen` lists every port
// looked at, for the error message.
std::vector<PortChoice> discover_ports(ibv_context** devices, int n, std::string* seen);
// A port's signalling rate in units of 0.25 Gb/s (active speed x width).
uint32_t port_rate(const ibv_port_attr& a);

uint64_t hash_string(const std::string& s);

// ---- connections ---------------------------------------------------------------------
// One RC queue pair and the receive buffers posted on it.
struct Conn {
  rdma_cm_id* id = nullptr;
  ibv_qp* qp = nullptr;
  int peer = -1;
  bool active = false;      // we initiated it
  bool superseded = false;  // lost the simultaneous-connect tie-break: destroy when possible
  bool established = false;
  bool disconnected = false;
  PageBuffer recv_mem;
  MrPtr recv_mr;
  uint32_t slot_size = 0;
  uint32_t max_inline = 0;
  // flow control
  uint32_t peer_credits = 0;   // receive buffers the peer posted for us
  uint64_t sent = 0;           // SENDs we posted to the peer
  uint64_t peer_freed = 0;     // how many of them the peer has consumed (piggy-backed)
  uint64_t freed = 0;          // the peer's messages we have consumed and re-posted
  uint64_t freed_reported = 0; // last count we told the peer
  uint64_t mailbox_addr = 0;
  uint32_t mailbox_rkey = 0;
  uint32_t outstanding = 0;    // send work requests not yet completed
  uint32_t unsignaled = 0;     // of those, unsignalled ones no signalled request covers yet
  uint64_t deadline_ns = 0;
};

struct Endpoint {
  Conn* conn = nullptr;  // the QP messages go through once established
  bool has_card = false;
  bool failed = false;
  uint64_t await_deadline = 0;  // the peer said it is connecting to us: wait for it until then
  Card card{};
};

// ---- one rail -----------------------------------------------------------------------------
// Per port used (a rail): one protection domain, one send and one receive
// completion queue, one registration cache, one connection-manager listener,
// one RC QP per peer.
class VerbsTransport final : public Transport {
 public:
  ~VerbsTransport() override { close(); }

  // Opens one rail: the port `pc` (found by discover_ports), number `rail`
  // (0: the one eager messages use). Rail 0 owns the device list. Returns 0,
  // >0 (an error reported: start-up fails) or <0 (not usable, said why).
  int open(bool required, int rail, const PortChoice& pc, ibv_context** devices);  // verbs.cpp

  const char* name() const override { return "verbs"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override {
    return r >= 0 && size_t(r) < endpoints_.size() && endpoints_[r].has_card && !endpoints_[r].failed;
  }
  int connect_peers() override;  // rdmacm.cpp
  int progress() override;       // verbs.cpp

  // eager.cpp
  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override;
  int send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len, PackFn pack,
                  void* context) override;

  // memory.cpp
  uint64_t expose(int peer, const void* addr, size_t len) override;
  uint64_t expose_writable(int peer, void* addr, size_t len) override;
  void unexpose(int peer, uint64_t key) override;

  // rdma.cpp
  int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) override;
  int put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
          RdmaOp* op) override;

  // rma.cpp
  uint64_t expose_window(void* addr, size_t len) override;
  void unexpose_window(uint64_t key) override;
  int put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) override;
  int get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) override;
  int atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
                void* result) override;
  int flush_test(int peer) override;

  // ---- for MultiRail ----
  int rail() const { return rail_; }
  uint32_t rate() const { return port_rate(port_.attr); }
  // An established queue pair to `peer` (RDMA operations need one).
  bool connected(int peer) const {
    return size_t(peer) < endpoints_.size() && endpoints_[peer].conn && endpoints_[peer].conn->established &&
           !endpoints_[peer].failed;
  }
  // Starts connecting to `peer` if nothing is on its way (rdmacm.cpp).
  void connect_ahead(int peer);

 private:
  // ---- verbs.cpp ----
  int absent(const std::string& why);
  int fail(const std::string& why);
  void close();
  bool events_due();

  // ---- rdmacm.cpp ----
  // The established connection to `peer` in *out: kOk, kAgain while it is
  // being set up (started here on first use), kUnreachable when it failed.
  int established(int peer, Conn** out);
  bool connecting_to(int peer) const;
  Conn* new_conn(int peer, bool active);
  int start_connect(int peer);
  int setup_qp(Conn* c);
  int post_recv(Conn* c, uint32_t slot);
  Hello hello() const;
  void conn_params(rdma_conn_param* p, const Hello* h) const;
  void take_hello(Conn* c, const Hello& h);
  int poll_events();
  void on_event(Conn* c, rdma_cm_event_type type, int status, const Hello* h);
  bool has_conn(int peer) const;
  void mark_established(Conn* c);
  bool has_accepted(int peer) const;
  void on_connect_request(rdma_cm_event* ev);
  void drop_active(Conn* c);
  void drop(Conn* c);
  void peer_failed(int peer, const std::string& why);

  // ---- eager.cpp ----
  // send() and send_packed(): the payload is `payload`, or made by `pack`.
  int post_send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
                size_t payload_len, PackFn pack, void* context);
  int poll_recv_cq();
  uint64_t peer_freed(Conn* c);
  uint64_t* credit_source(int peer);
  bool write_credits(Conn* c);
  void return_credits(bool received);
  // Polls the send CQ: releases queue entries and send buffers, hands RMA
  // and rendezvous completions on. Runs no RdmaOp callback (they are queued
  // in done_ for progress()), so get()/put() may call it. Returns how many.
  int poll_send_cq();
  // Room for one more work request on `c` and in the send CQ (polling once).
  bool has_room(Conn* c);

  // ---- rdma.cpp ----
  // One RDMA READ (write false) or WRITE of [local, local+len) against the
  // peer's memory; `op` completes from poll_send_cq: queued in done_ (run by
  // progress()), or at once when `immediate` (rma.cpp's blocking transfers,
  // which poll the CQ themselves).
  int post_piece(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
                 RdmaOp* op, bool immediate);
  void piece_completed(const ibv_wc& wc);
  // The local registrations a piece needs (two when the cache caches and
  // the piece starts inside a page: see rdma.cpp); false on failure (said).
  bool register_piece(int peer, bool write, uint8_t* local, size_t len, rcache::Handle* mr, ibv_sge* sge);

  // ---- rma.cpp ----
  void rma_caps();
  int rma_ready(int peer, Conn** out);
  int rma_slot(uint32_t* slot);
  uint8_t* rma_slot_mem(uint32_t slot) { return rma_mem_.bytes() + size_t(slot) * kRmaSlot; }
  int rma_post(Conn* c, int peer, ibv_send_wr& wr, ibv_sge& sge, uint32_t slot, void* dest, size_t len);
  void rma_completed(const ibv_wc& wc);
  // Operations larger than a staging slot: pieces of the pipeline chunk,
  // waited for here (put_nb's buffer is free on return, as for small ones).
  int rma_transfer(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t key, size_t len);

  // ---- state ----
  bool required_ = false;
  bool closing_ = false;
  int rail_ = 0;
  std::string card_key_;
  ibv_context** devices_ = nullptr;
  ibv_context* ctx_ = nullptr;
  PortChoice port_;
  ibv_device_attr dev_attr_{};
  ibv_pd* pd_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  int send_cq_size_ = 0, recv_cq_size_ = 0, send_cq_used_ = 0;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listener_ = nullptr;
  Caps caps_;
  uint32_t credits_ = 0, slot_size_ = 0, max_send_wr_ = 0;
  uint32_t signal_every_ = 1;  // inline SENDs per signalled one (selective signalling)
  uint64_t job_hash_ = 0;
  PageBuffer send_mem_, mailbox_mem_;
  MrPtr send_mr_, mailbox_mr_;
  std::vector<uint32_t> free_send_;
  std::vector<uint8_t> inline_pack_;  // send_packed() of an inline message
  std::vector<Endpoint> endpoints_;
  std::vector<std::unique_ptr<Conn>> pending_;  // every connection we own
  std::map<rdma_cm_id*, Conn*> conns_;
  std::unordered_map<uint32_t, Conn*> by_qpn_;
  std::vector<Conn*> live_;  // established, in use
  int connecting_ = 0;
  uint64_t calls_ = 0;
  static constexpr uint64_t kEventsEvery = 64;         // progress calls between polls of the event channel
  static constexpr uint64_t kEventsTicks = 1ull << 21;  // ... and time stamp counter ticks (~1 ms)
  uint64_t events_tsc_ = 0;
  bool credits_owed_ = false;

  // Registrations: the cache of this rail's PD (memory.cpp), the buffers
  // exposed to peers (by exposure number, the key's high 32 bits) and the
  // windows (registered for their lifetime, outside the cache).
  std::string cache_name_;
  std::unique_ptr<rcache::Cache> cache_;
  std::unordered_map<uint64_t, rcache::Handle> exposed_;
  std::unordered_map<uint64_t, MrPtr> windows_;
  uint64_t exposure_serial_ = 0;

  // Rendezvous pieces in flight (rdma.cpp), by slot (wr_id's low bits).
  struct Piece {
    rcache::Handle mr;  // the local registration, released on completion
    RdmaOp* op = nullptr;
    size_t len = 0;
    int peer = -1;
    bool write = false;
    bool immediate = false;
  };
  std::vector<Piece> pieces_;
  std::vector<uint32_t> free_pieces_;
  DoneQueue done_;  // completed pieces, their callbacks run by progress()
  size_t pipe_chunk_ = 1 << 20;
  int pipe_depth_ = 4;

  // RMA windows (rma.cpp).
  static constexpr size_t kRmaSlot = 16384;   // bytes per staging slot
  static constexpr uint32_t kRmaSlots = 64;    // 1 MiB registered, at first use
  static constexpr uint32_t kNoSlot = ~0u;
  struct RmaOp {            // an operation in flight, by index in rma_ops_
    int peer = -1;
    uint32_t slot = kNoSlot;
    void* dest = nullptr;   // reads / atomics: where the data goes on completion
    size_t len = 0;
  };
  struct RmaPeer {
    int pending = 0;        // posted, not completed
    bool failed = false;    // one failed since the last flush_test
  };
  PageBuffer rma_mem_;
  MrPtr rma_mr_;
  std::vector<uint32_t> rma_free_slots_;
  std::vector<RmaOp> rma_ops_;
  std::vector<uint32_t> rma_free_ops_;
  std::vector<RmaPeer> rma_peer_;
};

// Two rails behind one transport (multirail.cpp); `rails` holds at least two.
std::unique_ptr<Transport> make_multirail(std::vector<std::unique_ptr<VerbsTransport>> rails);

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
