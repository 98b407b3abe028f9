// btl/verbs: RDMA verbs transport (InfiniBand, RoCE, soft-RoCE): its
// parameters and counters, opening it (open_verbs: one VerbsTransport per
// rail, MultiRail over two), each rail's set-up and tear-down, and its
// progress loop. internal.h says which file holds the rest; docs/verbs.md
// describes the design.
#include "btl/verbs/verbs.h"

#include "btl/verbs/internal.h"

// The parameters exist in every build, so `axon_info --params` lists the same
// set whether or not this one could build the transport.
namespace axon::btl::verbs {

StringParam device_param{"AXON_BTL_VERBS_DEVICE", "",
                         "RDMA device (and port) for the verbs transport, e.g. mlx5_0 or rxe0:1; "
                         "empty: the active port nearest this rank's cores"};
SizeParam eager_param{"AXON_BTL_VERBS_EAGER_LIMIT", 8192,
                      "Largest payload (bytes) the verbs transport SENDs eagerly; larger messages are "
                      "read by the receiver with RDMA READ"};
IntParam credits_param{"AXON_BTL_VERBS_CREDITS", 32,
                       "Receive buffers each rank posts per connected peer (the sender's credits)"};
IntParam send_buffers_param{"AXON_BTL_VERBS_SEND_BUFFERS", 256,
                            "Registered send buffers shared by all peers of the verbs transport"};
SizeParam inline_param{"AXON_BTL_VERBS_INLINE", 128,
                       "Messages up to this size (bytes, headers included) are sent inline "
                       "(IBV_SEND_INLINE) when the device allows"};
IntParam timeout_param{"AXON_BTL_VERBS_CONNECT_TIMEOUT", 30,
                       "Seconds to wait for address resolution and a connection to a peer"};
StringParam rndv_param{"AXON_BTL_VERBS_RNDV", "auto",
                       "Rendezvous of large messages: get (the receiver RDMA READs the sender's buffer), "
                       "put (the sender RDMA WRITEs into the receiver's buffer), auto (get unless the "
                       "device cannot READ)"};
SizeParam chunk_param{"AXON_BTL_VERBS_PIPELINE_CHUNK", 1 << 20,
                      "Rendezvous pipeline: bytes registered and moved per RDMA READ/WRITE (the largest "
                      "get/put piece, Caps::max_rdma)"};
IntParam depth_param{"AXON_BTL_VERBS_PIPELINE_DEPTH", 4,
                     "Rendezvous pipeline: RDMA READs/WRITEs (pieces) in flight at once per transfer and rail"};
IntParam signal_param{"AXON_BTL_VERBS_SIGNAL_EVERY", 1,
                      "Inline SENDs per signalled one (selective signalling: the others write no completion "
                      "entry; e.g. 16); at most a quarter of the send queue; 1 (default): every SEND signalled"};
SizeParam segment_param{"AXON_BTL_VERBS_EXPOSE_SEGMENT", 4 << 20,
                        "Rendezvous: a buffer larger than two of these (the sender's for RDMA READ, the "
                        "receiver's for RDMA WRITE) is registered for the peer this many bytes at a time (two "
                        "segments at once, the next as the peer finishes one; rounded up to whole pipeline "
                        "chunks); 0: the whole buffer at once. Unset, it applies only where the registration "
                        "cache is off (with the cache a whole buffer is registered once and reused)"};
IntParam rails_param{"AXON_BTL_VERBS_RAILS", 2,
                     "Most RDMA ports (rails) the verbs transport uses: several ACTIVE ports share the "
                     "rendezvous pieces of large messages weighted by port rate (at most 2; 1: only the "
                     "nearest port)"};
IntParam gid_param{"AXON_BTL_VERBS_GID_INDEX", -1,
                   "RoCE: GID table index whose IP address the connection manager binds (-1: the "
                   "first RoCE v2 IPv4 GID)"};

}  // namespace axon::btl::verbs

#ifdef AXON_HAVE_VERBS

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <cerrno>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/status.h"
#include "rte/rte.h"

namespace axon::btl::verbs {

Counter messages_sent{"axon_btl_verbs_messages_sent", Counter::Class::Counter,
                      "SENDs this rank posted through the verbs transport"};
Counter inline_sent{"axon_btl_verbs_inline_sends", Counter::Class::Counter,
                    "SENDs posted inline (IBV_SEND_INLINE)"};
Counter credit_stalls{"axon_btl_verbs_credit_stalls", Counter::Class::Counter,
                      "Sends refused because the peer had no free receive buffer (no credit)"};
Counter credit_writes{"axon_btl_verbs_credit_writes", Counter::Class::Counter,
                      "Explicit credit returns (RDMA WRITE into the peer's mailbox)"};
Counter read_bytes{"axon_btl_verbs_read_bytes", Counter::Class::Counter,
                   "Bytes this rank read from peers with RDMA READ (rendezvous)"};
Counter write_bytes{"axon_btl_verbs_write_bytes", Counter::Class::Counter,
                    "Bytes this rank wrote into peers' memory with RDMA WRITE (rendezvous put)"};
Counter rdma_chunks{"axon_btl_verbs_rdma_chunks", Counter::Class::Counter,
                    "RDMA READs/WRITEs posted for rendezvous pieces (one per get()/put(), at most one pipeline "
                    "chunk each)"};
Counter registrations{"axon_btl_verbs_registrations", Counter::Class::Counter,
                      "Memory registrations (ibv_reg_mr) of application memory: rendezvous buffers and pieces "
                      "(the registration cache's misses, or every use without it)"};
Counter registered_bytes{"axon_btl_verbs_registered_bytes", Counter::Class::Counter,
                         "Bytes of application memory registered (ibv_reg_mr, whole pages)"};
Counter rail0_bytes{"axon_btl_verbs_rail0_bytes", Counter::Class::Counter,
                    "Rendezvous bytes this rank moved (RDMA READ/WRITE) on rail 0 (the eager rail)"};
Counter rail1_bytes{"axon_btl_verbs_rail1_bytes", Counter::Class::Counter,
                    "Rendezvous bytes this rank moved (RDMA READ/WRITE) on rail 1 (multi-rail striping)"};
Counter* rail_bytes(int rail) { return rail == 0 ? &rail0_bytes : rail == 1 ? &rail1_bytes : nullptr; }

int VerbsTransport::open(bool required, int rail, const PortChoice& pc, ibv_context** devices) {
  required_ = required;
  rail_ = rail;
  devices_ = devices;
  card_key_ = rail == 0 ? std::string(kCardKey) : std::string(kCardKey) + "." + std::to_string(rail);
  const rte::Job& job = rte::job();
  port_ = pc;
  ctx_ = port_.ctx;
  ibv_query_device(ctx_, &dev_attr_);

  size_t eager = static_cast<size_t>(std::max<int64_t>(256, eager_param.get()));
  credits_ = static_cast<uint32_t>(std::clamp<int64_t>(credits_param.get(), 2, 4096));
  slot_size_ = static_cast<uint32_t>((sizeof(WireHeader) + kMaxUpperHeader + eager + 63) / 64 * 64);
  if (slot_size_ > port_.attr.max_msg_sz) slot_size_ = port_.attr.max_msg_sz;
  caps_.eager_limit = slot_size_ - sizeof(WireHeader) - kMaxUpperHeader;
  // RDMA READ needs outstanding-read resources on both sides of a QP.
  bool can_read = dev_attr_.max_qp_rd_atom > 0 && dev_attr_.max_qp_init_rd_atom > 0;
  const std::string& rndv = rndv_param.get();
  if (rndv != "auto" && rndv != "get" && rndv != "put")
    log::warn("verbs: AXON_BTL_VERBS_RNDV=%s is not auto, get or put; using auto", rndv.c_str());
  if (rndv == "get" && !can_read)
    log::warn("verbs: AXON_BTL_VERBS_RNDV=get, but %s cannot serve RDMA READ (max_qp_rd_atom %d); using put",
              port_.device.c_str(), dev_attr_.max_qp_rd_atom);
  caps_.can_get = can_read && rndv != "put";
  caps_.can_put = true;
  rma_caps();  // RMA windows (rma.cpp)
  pipe_chunk_ = std::clamp<size_t>(static_cast<size_t>(std::max<int64_t>(4096, chunk_param.get())), 4096,
                                   std::min<size_t>(port_.attr.max_msg_sz, 1u << 30));
  pipe_depth_ = static_cast<int>(std::clamp<int64_t>(depth_param.get(), 1, 64));
  // The PML splits rendezvous transfers into pieces of one chunk and keeps
  // `depth` of them in flight; each get()/put() is one RDMA READ/WRITE.
  caps_.max_rdma = pipe_chunk_;
  caps_.rdma_depth = pipe_depth_;
  caps_.registers = true;
  caps_.memory = kMemoryHost;
  caps_.pack_send = true;  // send_packed() packs into the registered send buffer
  caps_.latency_ns = 3000;
  caps_.bandwidth_mbs = 5000;
  max_send_wr_ = std::min<uint32_t>(2 * credits_ + 16, static_cast<uint32_t>(dev_attr_.max_qp_wr));
  signal_every_ = static_cast<uint32_t>(
      std::clamp<int64_t>(signal_param.get(), 1, std::max<uint32_t>(1, std::min(max_send_wr_ / 4, kSignalEvery))));

  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) return fail("ibv_alloc_pd on " + port_.device + " failed: " + strerror(errno));
  cache_name_ = "verbs rail " + std::to_string(rail_) + " (" + port_.device + ")";
  cache_ = make_cache(pd_, cache_name_.c_str());
  // Pieces cut at page boundaries share no page, so caching them never
  // merges one piece's registration into the next (rdma.cpp).
  if (cache_->caching()) caps_.rdma_align = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Segments: whole chunks per segment, so that segments split no chunk.
  // They hide the registration of a large buffer behind its transfer; with
  // the cache caching, a buffer sent again is registered already, and
  // exposing consecutive segments of one buffer would make each merge with
  // the cached ones before it (re-registering them), so by default a
  // caching rail exposes whole buffers; a segment size the user sets holds.
  if (int64_t seg = segment_param.get(); seg > 0 && (!cache_->caching() || segment_param.is_set()))
    caps_.expose_segment = (static_cast<size_t>(seg) + pipe_chunk_ - 1) / pipe_chunk_ * pipe_chunk_;
  int cqe_cap = dev_attr_.max_cqe;
  send_cq_size_ = std::min<int>(cqe_cap, static_cast<int>(max_send_wr_) * std::max(1, job.size) + 64);
  recv_cq_size_ = std::min<int>(cqe_cap, static_cast<int>(credits_) * std::max(1, job.size) + 64);
  send_cq_ = ibv_create_cq(ctx_, send_cq_size_, nullptr, nullptr, 0);
  recv_cq_ = send_cq_ ? ibv_create_cq(ctx_, recv_cq_size_, nullptr, nullptr, 0) : nullptr;
  if (!send_cq_ || !recv_cq_)
    return fail("cannot create completion queues on " + port_.device + ": " + strerror(errno) +
                (errno == ENOMEM ? "; " + reg_hint(ENOMEM) : std::string()));

  // Send buffers, the credit mailbox (peers write into it) and the source
  // words of our own credit writes.
  uint32_t nbuf = static_cast<uint32_t>(std::clamp<int64_t>(send_buffers_param.get(), 4, 65536));
  if (int err = send_mem_.allocate(size_t(nbuf) * slot_size_)) return fail(strerror(err));
  send_mr_.reset(ibv_reg_mr(pd_, send_mem_.p, send_mem_.size, IBV_ACCESS_LOCAL_WRITE));
  if (!send_mr_)
    return fail("cannot register " + std::to_string(send_mem_.size) + " bytes of send buffers: " + reg_hint(errno));
  for (uint32_t i = nbuf; i > 0; --i) free_send_.push_back(i - 1);
  if (int err = mailbox_mem_.allocate(2 * sizeof(uint64_t) * std::max(1, job.size))) return fail(strerror(err));
  mailbox_mr_.reset(ibv_reg_mr(pd_, mailbox_mem_.p, mailbox_mem_.size,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  if (!mailbox_mr_) return fail("cannot register the credit mailbox: " + reg_hint(errno));

  // The connection manager: a listener on the port's IP address.
  channel_ = rdma_create_event_channel();
  if (!channel_) return absent(std::string("rdma_create_event_channel failed: ") + strerror(errno) +
                               " (is /dev/infiniband/rdma_cm there? modprobe rdma_ucm)");
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  if (rdma_create_id(channel_, &listener_, nullptr, RDMA_PS_TCP) != 0)
    return fail(std::string("rdma_create_id failed: ") + strerror(errno));
  sockaddr_storage bind_addr = port_.addr;
  if (rdma_bind_addr(listener_, reinterpret_cast<sockaddr*>(&bind_addr)) != 0)
    return absent("cannot bind the connection manager to " + ip_text(port_.addr) + " (" + port_.device +
                  "): " + strerror(errno));
  if (rdma_listen(listener_, 1024) != 0) return fail(std::string("rdma_listen failed: ") + strerror(errno));

  Card card{};
  card.magic = kCardMagic;
  card.family = port_.addr.ss_family;
  card.port = rdma_get_src_port(listener_);
  if (port_.addr.ss_family == AF_INET)
    std::memcpy(card.addr, &reinterpret_cast<sockaddr_in&>(port_.addr).sin_addr, 4);
  else
    std::memcpy(card.addr, &reinterpret_cast<sockaddr_in6&>(port_.addr).sin6_addr, 16);
  std::snprintf(card.device, sizeof card.device, "%s", port_.device.c_str());
  if (rte::publish(card_key_.c_str(), &card, sizeof card) != 0)
    return fail("cannot publish the verbs business card");
  job_hash_ = hash_string(job.nspace);
  log::debug(1, "verbs: rail %d: %s port %d (%s, %s, GID %d, %s), active MTU %d, rate %u, eager limit %zu, "
             "%u credits per peer, registration cache %s", rail_, port_.device.c_str(), port_.port,
             port_.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
             ip_text(port_.addr).c_str(), port_.gid_index, port_.gid_kind,
             128 << port_.attr.active_mtu, rate(), caps_.eager_limit, credits_,
             cache_->caching() ? "on" : rcache::status().c_str());
  return 0;
}

int VerbsTransport::progress() {
  // Connection-manager events cost system calls (librdmacm writes a
  // command to its device for every poll, and the timeout check reads the
  // clock, itself a system call in a VM without a usable vDSO clock):
  // polled every 64 calls they cost several per message. While none of
  // our connections is being set up, the channel is polled at most every
  // 64 progress calls and at least ~1 ms (kEventsTicks of the CPU's time
  // stamp counter, read without a system call) apart, so a peer's
  // connect request still waits at most about a millisecond.
  int handled = 0;
  if (connecting_ > 0 || (++calls_ >= kEventsEvery && events_due())) {
    calls_ = 0;
    handled += poll_events();
  }
  if (send_cq_used_ > 0) poll_send_cq();
  // Completed rendezvous pieces: their callbacks may post the next ones.
  handled += done_.run();
  handled += poll_recv_cq();
  return handled;
}

// Whether kEventsTicks passed since the last poll (always true without a
// time stamp counter: then the call count alone paces the polls).
bool VerbsTransport::events_due() {
#if defined(__x86_64__) || defined(__i386__)
  uint64_t t = __rdtsc();
  if (t - events_tsc_ < kEventsTicks) return false;
  events_tsc_ = t;
#endif
  return true;
}

int VerbsTransport::absent(const std::string& why) {
  if (required_) {
    log::error("AXON_BTL asks for verbs, but %s", why.c_str());
    return 1;
  }
  log::debug(1, "verbs: not used: %s", why.c_str());
  return -1;
}

int VerbsTransport::fail(const std::string& why) {
  if (required_) {
    log::error("verbs: %s", why.c_str());
    return 1;
  }
  log::warn("verbs transport disabled: %s", why.c_str());
  return -1;
}

void VerbsTransport::close() {
  closing_ = true;  // failures of a peer that is shutting down too are expected now
  // Let our last messages reach the peers (a SEND completes when the peer's
  // HCA acknowledged it) before the queue pairs go.
  // Unsignalled SENDs complete with the next signalled request of their QP:
  // post one (a credit return, harmless) where some are not covered yet.
  uint64_t deadline = now_ns() + 10ull * 1000000000ull;
  Backoff backoff(0);
  auto cover = [this] {
    bool all = true;
    for (Conn* c : live_) {
      if (c->unsignaled == 0 || !c->qp || c->disconnected || !c->established) continue;
      if (c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) {
        all = false;  // no room yet: after the next completions
        continue;
      }
      // A QP that refuses the post is in the error state (the peer
      // disconnected first): its requests are flushed, nothing to wait for.
      if (!write_credits(c)) c->unsignaled = 0;
    }
    return all;
  };
  bool covered = cover();
  while (send_cq_ && (send_cq_used_ > 0 || !covered) && now_ns() < deadline) {
    if (poll_send_cq() == 0) backoff.idle();
    if (!covered) covered = cover();
  }
  for (auto& c : pending_) {
    if (c->established && !c->disconnected) rdma_disconnect(c->id);
  }
  for (auto& c : pending_) {
    if (c->qp) rdma_destroy_qp(c->id);
    if (c->id) rdma_destroy_id(c->id);
    c->qp = nullptr;
    c->id = nullptr;
  }
  pending_.clear();
  conns_.clear();
  by_qpn_.clear();
  live_.clear();
  // Registrations before the cache, the cache before the PD.
  exposed_.clear();
  windows_.clear();
  pieces_.clear();
  free_pieces_.clear();
  cache_.reset();
  if (listener_) rdma_destroy_id(listener_);
  listener_ = nullptr;
  if (channel_) rdma_destroy_event_channel(channel_);
  channel_ = nullptr;
  send_mr_.reset();
  mailbox_mr_.reset();
  rma_mr_.reset();  // RMA staging area (before the PD goes)
  if (send_cq_) ibv_destroy_cq(send_cq_);
  if (recv_cq_) ibv_destroy_cq(recv_cq_);
  send_cq_ = recv_cq_ = nullptr;
  if (pd_) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (devices_) rdma_free_devices(devices_);
  devices_ = nullptr;
}

}  // namespace axon::btl::verbs

namespace axon::btl {

std::unique_ptr<Transport> open_verbs(bool required, int* error) {
  *error = 0;
  // Not usable: an error when the user asked for verbs, else only a debug note.
  auto absent = [&](const std::string& why) -> std::unique_ptr<Transport> {
    if (required) {
      log::error("AXON_BTL asks for verbs, but %s", why.c_str());
      *error = 1;
    } else {
      log::debug(1, "verbs: not used: %s", why.c_str());
    }
    return nullptr;
  };
  int n = 0;
  ibv_context** devices = rdma_get_devices(&n);
  if (!devices || n == 0) {
    if (devices) rdma_free_devices(devices);
    return absent("no RDMA devices found (no /sys/class/infiniband entries, or the rdma_ucm/ib_uverbs "
                  "kernel modules are not loaded); `axon_info --doctor` shows what is there");
  }
  std::string seen;
  std::vector<verbs::PortChoice> ports = verbs::discover_ports(devices, n, &seen);
  if (ports.empty()) {
    rdma_free_devices(devices);
    if (seen.empty()) return absent("no RDMA device matches AXON_BTL_VERBS_DEVICE=" + verbs::device_param.get());
    return absent("no usable RDMA port (" + seen +
                  "); a port must be ACTIVE and have an IP address (RoCE: on its netdev; InfiniBand: IPoIB)");
  }
  size_t max_rails = static_cast<size_t>(std::clamp<int64_t>(verbs::rails_param.get(), 1, 2));
  std::vector<std::unique_ptr<verbs::VerbsTransport>> rails;
  for (size_t i = 0; i < ports.size() && i < max_rails; ++i) {
    auto t = std::make_unique<verbs::VerbsTransport>();
    // Rail 0 owns the device list from here on (freed when it closes).
    int rc = t->open(required, static_cast<int>(i), ports[i], i == 0 ? devices : nullptr);
    if (rc != 0) {
      if (i == 0) {
        if (rc > 0) *error = rc;
        return nullptr;
      }
      log::warn("verbs: rail %zu (%s:%d) not used (see above); rail 0 carries everything", i,
                ports[i].device.c_str(), ports[i].port);
      break;
    }
    rails.push_back(std::move(t));
  }
  if (rails.size() == 1) return std::move(rails[0]);
  return verbs::make_multirail(std::move(rails));
}

}  // namespace axon::btl

#endif  // AXON_HAVE_VERBS

