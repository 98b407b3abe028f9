// btl/verbs: RDMA verbs transport (InfiniBand, RoCE, soft-RoCE).
//
// Per port used (a rail: the active port nearest our cores, plus a second
// one for striping when there is one, see MultiRail at the end), one
// protection domain, one send and one receive completion queue. Each peer
// gets one reliable-connected QP, created the first time we send to it
// (lazily: a job where ranks talk to few peers sets up few QPs), through
// librdmacm using the IP address and port published in our business card.
// Both sides may connect at once; the connection initiated by the lower rank
// wins (see on_connect_request) so a pair always ends with exactly one QP.
//
// Eager messages are SENDs into receive buffers the peer posted for us. A
// sender holds one credit per buffer the receiver has posted and never sends
// without one. The receiver counts the buffers it has consumed and re-posted
// and returns that count to the sender: piggy-backed in the header of every
// message it sends back, and when it owes many (half the buffers), by an RDMA
// WRITE of the cumulative count into the sender's credit mailbox, which costs
// the sender no receive buffer (a credit message SENT would itself need a
// credit). Messages small enough go inline (IBV_SEND_INLINE: copied into the
// work request, no send buffer, no DMA read).
//
// Rendezvous: expose() registers the sender's buffer for remote read and
// returns its rkey; the receiver's get() registers its own buffer and RDMA
// READs the data (one copy, no CPU on the sender), waiting for the
// completions on the send CQ before returning. Where READ is unavailable
// (the device offers no outstanding reads) or AXON_BTL_VERBS_RNDV=put, the
// PML uses RPUT instead: the receiver's expose_writable() registers its
// buffer for remote write and the sender's put() RDMA WRITEs into it.
// get() and put() are pipelined: the local buffer is registered chunk by
// chunk (AXON_BTL_VERBS_PIPELINE_CHUNK), chunk k+1 while the RDMA operations
// of the earlier chunks are in flight, at most AXON_BTL_VERBS_PIPELINE_DEPTH
// of them at once, each deregistered when its completion arrives.
#include "btl/verbs/verbs.h"

#include "axon_config.h"
#include "base/param.h"

// The parameters exist in every build, so `axon_info --params` lists the same
// set whether or not this one could build the transport.
namespace axon::btl {
namespace {
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
                      "Rendezvous pipeline: bytes registered and moved per RDMA READ/WRITE"};
IntParam depth_param{"AXON_BTL_VERBS_PIPELINE_DEPTH", 4,
                     "Rendezvous pipeline: RDMA READs/WRITEs (chunks) in flight at once per transfer"};
IntParam signal_param{"AXON_BTL_VERBS_SIGNAL_EVERY", 1,
                      "Inline SENDs per signalled one (selective signalling: the others write no completion "
                      "entry; e.g. 16); at most a quarter of the send queue; 1 (default): every SEND signalled"};
SizeParam segment_param{"AXON_BTL_VERBS_EXPOSE_SEGMENT", 4 << 20,
                        "Rendezvous: a buffer larger than two of these (the sender's for RDMA READ, the "
                        "receiver's for RDMA WRITE) is registered for the peer this many bytes at a time (two "
                        "segments at once, the next as the peer finishes one; rounded up to whole pipeline "
                        "chunks); 0: the whole buffer at once"};
IntParam rails_param{"AXON_BTL_VERBS_RAILS", 2,
                     "Most RDMA ports (rails) the verbs transport uses: several ACTIVE ports stripe large "
                     "messages weighted by port rate (at most 2; 1: only the nearest port)"};
SizeParam stripe_param{"AXON_BTL_VERBS_STRIPE_MIN", 256 << 10,
                       "Smallest rendezvous (bytes) striped over two rails; smaller ones use rail 0 only"};
IntParam gid_param{"AXON_BTL_VERBS_GID_INDEX", -1,
                   "RoCE: GID table index whose IP address the connection manager binds (-1: the "
                   "first RoCE v2 IPv4 GID)"};
}  // namespace
}  // namespace axon::btl

#ifdef AXON_HAVE_VERBS

#include <arpa/inet.h>
#include <fcntl.h>
#include <hwloc.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <map>
#include <string>
#include <unordered_map>
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
                    "Rendezvous pipeline chunks (one registration and one RDMA READ/WRITE each)"};
Counter rail0_bytes{"axon_btl_verbs_rail0_bytes", Counter::Class::Counter,
                    "Rendezvous bytes this rank moved (RDMA READ/WRITE) on rail 0 (the eager rail)"};
Counter rail1_bytes{"axon_btl_verbs_rail1_bytes", Counter::Class::Counter,
                    "Rendezvous bytes this rank moved (RDMA READ/WRITE) on rail 1 (multi-rail striping)"};
Counter* rail_bytes(int rail) { return rail == 0 ? &rail0_bytes : rail == 1 ? &rail1_bytes : nullptr; }

constexpr uint32_t kCardMagic = 0x41585642;   // "AXVB"
constexpr uint32_t kHelloMagic = 0x41584f48;  // "AXOH"
constexpr uint32_t kBusyMagic = 0x41584f42;   // "AXOB": rejected, my own request to you is on its way
constexpr size_t kMaxUpperHeader = 64;        // largest PML header in front of a payload
const char* const kCardKey = "btl.verbs";

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

// Kinds of send work requests, in the top byte of wr_id.
enum WrKind : uint64_t { kWrSendBuffer = 1, kWrInline, kWrCredit, kWrRdma, kWrRma /* RMA windows, see below */ };
uint64_t make_wr(WrKind k, uint64_t v) { return (uint64_t(k) << 56) | v; }
WrKind wr_kind(uint64_t id) { return static_cast<WrKind>(id >> 56); }
uint64_t wr_value(uint64_t id) { return id & ((1ull << 56) - 1); }
// Selective signalling: most inline SENDs are posted unsignalled (no
// completion entry, no CQ poll); the next signalled work request of the QP
// records in bits 32..47 of its wr_id how many send-queue entries its
// completion releases (itself and the unsignalled ones before it: an RC send
// queue completes in order). 0 there (e.g. RMA work requests) means 1.
constexpr uint64_t kCoverShift = 32;
uint64_t with_cover(uint64_t id, uint32_t covered) { return id | (uint64_t(covered & 0xffff) << kCoverShift); }
uint32_t wr_cover(uint64_t id) { return std::max<uint32_t>(1, static_cast<uint32_t>((id >> kCoverShift) & 0xffff)); }
uint32_t wr_slot(uint64_t id) { return static_cast<uint32_t>(id); }
// Unsignalled inline SENDs carry this kind: only a failure (flush) reports them.
constexpr WrKind kWrUnsignaled = static_cast<WrKind>(15);
constexpr uint32_t kSignalEvery = 64;  // at most this many SENDs per signalled one

uint64_t hash_string(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string memlock_text() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur / 1024) + " KiB";
}

// What to do about a failed memory registration.
std::string reg_hint(int err) {
  if (err == ENOMEM || err == EPERM || err == EAGAIN)
    return "the locked-memory limit (ulimit -l) is " + memlock_text() +
           "; raise it (ulimit -l unlimited, or memlock in /etc/security/limits.conf; "
           "LimitMEMLOCK=infinity for systemd services)";
  return std::string(strerror(err));
}

const char* wc_hint(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer did not answer: it died, or the link/route between the nodes is broken "
             "(check `axon_info --doctor` on both nodes: port state, GID, RoCE version, MTU)";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the peer had no receive buffer posted (flow-control bug: please report it)";
    case IBV_WC_REM_ACCESS_ERR:
      return "the peer refused access to its memory (its registration was released too early "
             "or the key is wrong)";
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
      return "a local buffer was not registered as expected";
    default:
      return "see ibv_poll_cq(3)";
  }
}

// ---- RAII wrappers -------------------------------------------------------------

struct MrDeleter {
  void operator()(ibv_mr* mr) const { if (mr) ibv_dereg_mr(mr); }
};
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;

struct PageBuffer {  // page-aligned heap memory for registration
  void* p = nullptr;
  size_t size = 0;
  int allocate(size_t n) {
    size = (n + 4095) / 4096 * 4096;
    if (posix_memalign(&p, 4096, size) != 0) return ENOMEM;
    std::memset(p, 0, size);
    return 0;
  }
  ~PageBuffer() { free(p); }
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
};

// ---- device and port discovery ---------------------------------------------------

struct PortChoice {
  ibv_context* ctx = nullptr;
  std::string device;
  int port = 0;
  ibv_port_attr attr{};
  sockaddr_storage addr{};
  int gid_index = -1;
  const char* gid_kind = "";
};

std::string ip_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  return buf;
}

// RoCE: the IP address of a RoCE v2 GID (IPv4-mapped preferred), or of the
// GID the user chose. Returns false when the port has no IP-based GID.
bool roce_address(PortChoice& pc) {
  int wanted = static_cast<int>(gid_param.get());
  int best_score = -1;
  for (int i = 0; i < pc.attr.gid_tbl_len; ++i) {
    if (wanted >= 0 && i != wanted) continue;
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(pc.ctx, pc.port, i, &e, 0) != 0) continue;
    const uint8_t* g = e.gid.raw;
    bool zero = std::all_of(g, g + 16, [](uint8_t b) { return b == 0; });
    if (zero) continue;
    bool v4 = std::all_of(g, g + 10, [](uint8_t b) { return b == 0; }) && g[10] == 0xff && g[11] == 0xff;
    bool link_local = g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
    bool v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
    int score = (v2 ? 4 : 0) + (v4 ? 2 : 0) + (link_local ? 0 : 1);
    if (score <= best_score) continue;
    best_score = score;
    pc.gid_index = i;
    pc.gid_kind = v2 ? "RoCE v2" : "RoCE v1";
    std::memset(&pc.addr, 0, sizeof pc.addr);
    if (v4) {
      auto& sin = reinterpret_cast<sockaddr_in&>(pc.addr);
      sin.sin_family = AF_INET;
      std::memcpy(&sin.sin_addr, g + 12, 4);
    } else {
      auto& sin6 = reinterpret_cast<sockaddr_in6&>(pc.addr);
      sin6.sin6_family = AF_INET6;
      std::memcpy(&sin6.sin6_addr, g, 16);
      if (link_local) sin6.sin6_scope_id = e.ndev_ifindex;
    }
  }
  return best_score >= 0;
}

// InfiniBand: the connection manager needs an IPoIB address of this device.
bool ipoib_address(PortChoice& pc) {
  std::string dir = "/sys/class/infiniband/" + pc.device + "/device/net";
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* de = readdir(d))
      if (de->d_name[0] != '.') names.push_back(de->d_name);
    closedir(d);
  }
  ifaddrs* list = nullptr;
  if (names.empty() || getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next)
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
        std::find(names.begin(), names.end(), a->ifa_name) != names.end()) {
      std::memcpy(&pc.addr, a->ifa_addr, sizeof(sockaddr_in));
      pc.gid_kind = "IPoIB";
      found = true;
    }
  freeifaddrs(list);
  return found;
}

// When several ports qualify: prefer one whose device is attached near the
// cores this process may run on (hwloc's I/O topology).
int nearest(const std::vector<PortChoice>& ports) {
  if (ports.size() < 2) return 0;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return 0;
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  int chosen = 0;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0) {
      for (size_t i = 0; i < ports.size(); ++i) {
        for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
          if (!os->name || ports[i].device != os->name) continue;
          hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
          if (anc && anc->cpuset && hwloc_bitmap_isincluded(mine, anc->cpuset)) {
            chosen = static_cast<int>(i);
            i = ports.size();
          }
          break;
        }
      }
    }
    hwloc_bitmap_free(mine);
  }
  hwloc_topology_destroy(topo);
  return chosen;
}

// The usable ports (ACTIVE, with an IP address for the connection manager)
// that AXON_BTL_VERBS_DEVICE admits: empty (all), or a comma list of
// `device` or `device:port`, in the order the user gave. Without a list,
// the port nearest our cores comes first (rail 0 carries eager messages).
// `seen` lists every port looked at, for the error message.
std::vector<PortChoice> discover_ports(ibv_context** devices, int n, std::string* seen) {
  struct Want {
    std::string dev, port;
  };
  std::vector<Want> wants;
  const std::string& list = device_param.get();
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    std::string item = list.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    Want w{item, ""};
    if (auto colon = item.find(':'); colon != std::string::npos) w = {item.substr(0, colon), item.substr(colon + 1)};
    wants.push_back(w);
  }
  auto rank_of = [&](const std::string& dev, int port) -> int {
    if (wants.empty()) return 0;
    for (size_t k = 0; k < wants.size(); ++k)
      if (wants[k].dev == dev && (wants[k].port.empty() || wants[k].port == std::to_string(port)))
        return static_cast<int>(k);
    return -1;
  };
  std::vector<std::pair<int, PortChoice>> found;
  for (int i = 0; i < n; ++i) {
    ibv_device_attr da{};
    if (ibv_query_device(devices[i], &da) != 0) continue;
    std::string name = ibv_get_device_name(devices[i]->device);
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      int order = rank_of(name, p);
      if (order < 0) continue;
      PortChoice pc;
      pc.ctx = devices[i];
      pc.device = name;
      pc.port = p;
      if (ibv_query_port(pc.ctx, p, &pc.attr) != 0) continue;
      *seen += (seen->empty() ? "" : ", ") + name + ":" + std::to_string(p) + " " +
               ibv_port_state_str(pc.attr.state);
      if (pc.attr.state != IBV_PORT_ACTIVE) continue;
      bool ok = pc.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? roce_address(pc) : ipoib_address(pc);
      if (!ok) {
        *seen += " (no IP address for the connection manager)";
        continue;
      }
      found.emplace_back(order, pc);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PortChoice> ports;
  for (auto& f : found) ports.push_back(f.second);
  if (wants.empty() && ports.size() > 1) {
    auto k = static_cast<ptrdiff_t>(nearest(ports));
    std::rotate(ports.begin(), ports.begin() + k, ports.begin() + k + 1);
  }
  return ports;
}

// A port's signalling rate in units of 0.25 Gb/s (active_speed x width),
// for weighting the stripes of a message over several rails.
uint32_t port_rate(const ibv_port_attr& a) {
  uint32_t lanes;
  switch (a.active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: lanes = 1; break;
  }
  uint32_t lane_rate;  // per lane, 0.25 Gb/s
  switch (a.active_speed) {
    case 1: lane_rate = 10; break;    // SDR 2.5
    case 2: lane_rate = 20; break;    // DDR 5
    case 4: case 8: lane_rate = 40; break;  // QDR, FDR10: 10
    case 16: lane_rate = 56; break;   // FDR 14
    case 32: lane_rate = 100; break;  // EDR 25
    case 64: lane_rate = 200; break;  // HDR 50
    case 128: lane_rate = 400; break; // NDR 100
    default: lane_rate = 10; break;
  }
  return lanes * lane_rate;
}

// ---- the transport ----------------------------------------------------------------

class VerbsTransport;

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

class VerbsTransport final : public Transport {
 public:
  ~VerbsTransport() override { close(); }

  // Opens one rail: the port `pc` (found by discover_ports), number `rail`
  // (0: the one eager messages use). Rail 0 owns the device list.
  int open(bool required, int rail, const PortChoice& pc, ibv_context** devices) {
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
    rma_caps();  // RMA windows (section below)
    pipe_chunk_ = std::clamp<size_t>(static_cast<size_t>(std::max<int64_t>(4096, chunk_param.get())), 4096,
                                     std::min<size_t>(port_.attr.max_msg_sz, 1u << 30));
    pipe_depth_ = static_cast<int>(std::clamp<int64_t>(depth_param.get(), 1, 64));
    // Whole chunks per segment, so that segments split no chunk.
    if (int64_t seg = segment_param.get(); seg > 0)
      caps_.expose_segment = (static_cast<size_t>(seg) + pipe_chunk_ - 1) / pipe_chunk_ * pipe_chunk_;
    caps_.latency_ns = 3000;
    caps_.bandwidth_mbs = 5000;
    max_send_wr_ = std::min<uint32_t>(2 * credits_ + 16, static_cast<uint32_t>(dev_attr_.max_qp_wr));
    signal_every_ = static_cast<uint32_t>(
        std::clamp<int64_t>(signal_param.get(), 1, std::max<uint32_t>(1, std::min(max_send_wr_ / 4, kSignalEvery))));

    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return fail("ibv_alloc_pd on " + port_.device + " failed: " + strerror(errno));
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
    if (!send_mr_) return fail("cannot register " + std::to_string(send_mem_.size) + " bytes of send buffers: " + reg_hint(errno));
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
    if (rte::publish(card_key_.c_str(), &card, sizeof card) != 0) return fail("cannot publish the verbs business card");
    job_hash_ = hash_string(job.nspace);
    log::debug(1, "verbs: rail %d: %s port %d (%s, %s, GID %d, %s), active MTU %d, rate %u, eager limit %zu, "
               "%u credits per peer", rail_, port_.device.c_str(), port_.port,
               port_.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
               ip_text(port_.addr).c_str(), port_.gid_index, port_.gid_kind,
               128 << port_.attr.active_mtu, rate(), caps_.eager_limit, credits_);
    return 0;
  }

  int connect_peers() override {
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

  const char* name() const override { return "verbs"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override {
    return r >= 0 && size_t(r) < endpoints_.size() && endpoints_[r].has_card && !endpoints_[r].failed;
  }

  // The established connection to `peer` in *out: kOk, kAgain while it is
  // being set up (started here on first use), kUnreachable when it failed.
  int established(int peer, Conn** out) {
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

  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override {
    Conn* c = nullptr;
    if (int rc = established(peer, &c); rc != kOk) return rc;
    if (c->sent - peer_freed(c) >= c->peer_credits) {
      credit_stalls.add();
      return kAgain;
    }
    if (c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) {
      poll_send_cq();
      if (c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) return kAgain;
    }
    WireHeader wh{static_cast<uint16_t>(am_id), 0, static_cast<uint32_t>(header_len + payload_len), c->freed};
    size_t total = sizeof wh + header_len + payload_len;
    ibv_sge sge[3];
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = sge;
    if (total <= c->max_inline) {
      // Inline: the data is copied into the work request when posted. Only
      // every signal_every_-th one asks for a completion (see with_cover).
      int n = 0;
      sge[n++] = {reinterpret_cast<uint64_t>(&wh), sizeof wh, 0};
      if (header_len) sge[n++] = {reinterpret_cast<uint64_t>(header), static_cast<uint32_t>(header_len), 0};
      if (payload_len) sge[n++] = {reinterpret_cast<uint64_t>(payload), static_cast<uint32_t>(payload_len), 0};
      wr.num_sge = n;
      wr.send_flags |= IBV_SEND_INLINE;
      if (c->unsignaled + 1 < signal_every_) {
        wr.send_flags &= ~IBV_SEND_SIGNALED;
        wr.wr_id = make_wr(kWrUnsignaled, 0);
      } else {
        wr.wr_id = make_wr(kWrInline, 0);
      }
    } else {
      if (free_send_.empty()) poll_send_cq();
      if (free_send_.empty()) return kAgain;
      uint32_t slot = free_send_.back();
      free_send_.pop_back();
      uint8_t* buf = send_mem_.bytes() + size_t(slot) * slot_size_;
      std::memcpy(buf, &wh, sizeof wh);
      if (header_len) std::memcpy(buf + sizeof wh, header, header_len);
      if (payload_len) std::memcpy(buf + sizeof wh + header_len, payload, payload_len);
      sge[0] = {reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(total), send_mr_->lkey};
      wr.num_sge = 1;
      wr.wr_id = make_wr(kWrSendBuffer, slot);
    }
    bool signaled = wr.send_flags & IBV_SEND_SIGNALED;
    if (signaled) wr.wr_id = with_cover(wr.wr_id, c->unsignaled + 1);
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(c->qp, &wr, &bad)) {
      if (wr_kind(wr.wr_id) == kWrSendBuffer) free_send_.push_back(wr_slot(wr.wr_id));
      log::error("verbs: ibv_post_send to rank %d failed: %s", peer, strerror(err));
      return kIoError;
    }
    if (wr.send_flags & IBV_SEND_INLINE) inline_sent.add();
    messages_sent.add();
    c->freed_reported = c->freed;
    ++c->sent;
    ++c->outstanding;
    if (signaled) {
      c->unsignaled = 0;
      ++send_cq_used_;
    } else {
      ++c->unsignaled;
    }
    return kOk;
  }

  uint64_t expose(int peer, const void* addr, size_t len) override {
    ibv_mr* mr = ibv_reg_mr(pd_, const_cast<void*>(addr), len, IBV_ACCESS_REMOTE_READ);
    if (!mr) {
      log::error("verbs: cannot register %zu bytes for rank %d to read: %s", len, peer, reg_hint(errno).c_str());
      return 0;
    }
    uint64_t id = ++exposure_serial_;
    exposed_.emplace(id, MrPtr(mr));
    return (id << 32) | mr->rkey;
  }

  void unexpose(int, uint64_t key) override { exposed_.erase(key >> 32); }

  uint64_t expose_writable(int peer, void* addr, size_t len) override {
    ibv_mr* mr = ibv_reg_mr(pd_, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) {
      log::error("verbs: cannot register %zu bytes for rank %d to write: %s", len, peer, reg_hint(errno).c_str());
      return 0;
    }
    uint64_t id = ++exposure_serial_;
    exposed_.emplace(id, MrPtr(mr));
    return (id << 32) | mr->rkey;
  }

  int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) override {
    int rc = transfer(peer, false, static_cast<uint8_t*>(local), remote_addr, remote_key, len);
    if (rc == kOk) read_bytes.add(len);
    done_.push(op, rc);
    return kOk;
  }

  int put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
          RdmaOp* op) override {
    int rc = transfer(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, remote_key, len);
    if (rc == kOk) write_bytes.add(len);
    done_.push(op, rc);
    return kOk;
  }
  DoneQueue done_;

  // ==== RMA windows (src/osc/rdma.cpp) ==========================================
  // A window's memory is registered once for its lifetime (expose_window:
  // remote read, write and, where the device has them, atomics). Put, Get and
  // the 8-byte atomics are posted without waiting (put_nb, get_nb,
  // atomic_nb); rma_test tells when every one posted to a peer completed, so
  // the osc layer waits only at flush / unlock / fence / complete. Small
  // writes go inline; other small operations use a slot of a registered
  // staging area (writes are copied in, so the caller's buffer is free at
  // once; reads and atomic results are copied out on completion). Operations
  // larger than a slot use the pipelined transfer() above, which completes
  // before returning.
  void rma_caps() {
    caps_.rma = true;
    caps_.atomics = dev_attr_.atomic_cap != IBV_ATOMIC_NONE && dev_attr_.max_qp_rd_atom > 0 &&
                    dev_attr_.max_qp_init_rd_atom > 0;
    caps_.atomics_glob = caps_.atomics && dev_attr_.atomic_cap == IBV_ATOMIC_GLOB;
  }

  uint64_t expose_window(void* addr, size_t len) override {
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (caps_.atomics) access |= IBV_ACCESS_REMOTE_ATOMIC;
    ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access);
    if (!mr) {
      log::debug(1, "verbs: cannot register a window of %zu bytes: %s", len, reg_hint(errno).c_str());
      return 0;
    }
    uint64_t id = ++exposure_serial_;
    exposed_.emplace(id, MrPtr(mr));
    return (id << 32) | mr->rkey;
  }

  void unexpose_window(uint64_t key) override { exposed_.erase(key >> 32); }

  int put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    Conn* c = nullptr;
    if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
    if (len > kRmaSlot) {
      int rc = transfer(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, key, len);
      if (rc == kOk) write_bytes.add(len);
      return rc;
    }
    ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(len), 0};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    uint32_t slot = kNoSlot;
    if (len <= c->max_inline) {
      wr.send_flags |= IBV_SEND_INLINE;  // copied into the work request by the post
    } else {
      if (int rc = rma_slot(&slot); rc != kOk) return rc;
      std::memcpy(rma_slot_mem(slot), local, len);
      sge = {reinterpret_cast<uint64_t>(rma_slot_mem(slot)), static_cast<uint32_t>(len), rma_mr_->lkey};
    }
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = static_cast<uint32_t>(key);
    int rc = rma_post(c, peer, wr, sge, slot, nullptr, 0);
    if (rc == kOk) write_bytes.add(len);
    return rc;
  }

  int get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    Conn* c = nullptr;
    if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
    if (len > kRmaSlot) {
      int rc = transfer(peer, false, static_cast<uint8_t*>(local), remote_addr, key, len);
      if (rc == kOk) read_bytes.add(len);
      return rc;
    }
    uint32_t slot = kNoSlot;
    if (int rc = rma_slot(&slot); rc != kOk) return rc;
    ibv_sge sge{reinterpret_cast<uint64_t>(rma_slot_mem(slot)), static_cast<uint32_t>(len), rma_mr_->lkey};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = static_cast<uint32_t>(key);
    int rc = rma_post(c, peer, wr, sge, slot, local, len);
    if (rc == kOk) read_bytes.add(len);
    return rc;
  }

  int atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
                void* result) override {
    if (!caps_.atomics || remote_addr % 8) return kUnsupported;
    Conn* c = nullptr;
    if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
    uint32_t slot = kNoSlot;
    if (int rc = rma_slot(&slot); rc != kOk) return rc;
    ibv_sge sge{reinterpret_cast<uint64_t>(rma_slot_mem(slot)), 8, rma_mr_->lkey};
    ibv_send_wr wr{};
    wr.opcode = cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = remote_addr;
    wr.wr.atomic.rkey = static_cast<uint32_t>(key);
    wr.wr.atomic.compare_add = cas ? compare : value;
    wr.wr.atomic.swap = cas ? value : 0;
    return rma_post(c, peer, wr, sge, slot, result, result ? 8 : 0);
  }

  int rma_test(int peer) override {
    if (size_t(peer) >= rma_peer_.size()) return 1;
    if (rma_peer_[peer].pending > 0) poll_send_cq();
    RmaPeer& p = rma_peer_[peer];
    if (p.pending > 0) return 0;
    if (p.failed) {
      p.failed = false;
      return kIoError;
    }
    return 1;
  }

 private:
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
    bool failed = false;    // one failed since the last rma_test
  };

  // The established connection to `peer`, starting it if needed (kAgain
  // until it is up), with room in its send queue and in the send CQ.
  int rma_ready(int peer, Conn** out) {
    Conn* c = nullptr;
    if (int rc = established(peer, &c); rc != kOk) return rc;
    if (c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) {
      poll_send_cq();
      if (c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) return kAgain;
    }
    *out = c;
    return kOk;
  }

  // A free staging slot (registering the area the first time); kAgain when
  // all are in flight.
  int rma_slot(uint32_t* slot) {
    if (!rma_mr_) {
      if (rma_mem_.allocate(kRmaSlot * kRmaSlots) != 0) return kNoMemory;
      rma_mr_.reset(ibv_reg_mr(pd_, rma_mem_.p, rma_mem_.size, IBV_ACCESS_LOCAL_WRITE));
      if (!rma_mr_) {
        log::error("verbs: cannot register %zu bytes of RMA staging buffers: %s", rma_mem_.size,
                   reg_hint(errno).c_str());
        return kNoMemory;
      }
      for (uint32_t i = kRmaSlots; i > 0; --i) rma_free_slots_.push_back(i - 1);
    }
    if (rma_free_slots_.empty()) poll_send_cq();
    if (rma_free_slots_.empty()) return kAgain;
    *slot = rma_free_slots_.back();
    rma_free_slots_.pop_back();
    return kOk;
  }
  uint8_t* rma_slot_mem(uint32_t slot) { return rma_mem_.bytes() + size_t(slot) * kRmaSlot; }

  int rma_post(Conn* c, int peer, ibv_send_wr& wr, ibv_sge& sge, uint32_t slot, void* dest, size_t len) {
    uint32_t op;
    if (!rma_free_ops_.empty()) {
      op = rma_free_ops_.back();
      rma_free_ops_.pop_back();
    } else {
      op = static_cast<uint32_t>(rma_ops_.size());
      rma_ops_.emplace_back();
    }
    rma_ops_[op] = RmaOp{peer, slot, dest, len};
    wr.wr_id = make_wr(kWrRma, op);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(c->qp, &wr, &bad)) {
      log::error("verbs: posting an RMA operation to rank %d failed: %s", peer, strerror(err));
      if (slot != kNoSlot) rma_free_slots_.push_back(slot);
      rma_free_ops_.push_back(op);
      return kIoError;
    }
    if (rma_peer_.size() <= size_t(peer)) rma_peer_.resize(endpoints_.size());
    ++rma_peer_[peer].pending;
    ++c->outstanding;
    ++send_cq_used_;
    return kOk;
  }

  // From poll_send_cq (send CQ and QP counts already released).
  void rma_completed(const ibv_wc& wc) {
    uint32_t op = static_cast<uint32_t>(wr_value(wc.wr_id));
    if (op >= rma_ops_.size()) return;
    RmaOp& o = rma_ops_[op];
    if (wc.status == IBV_WC_SUCCESS) {
      if (o.dest && o.len) std::memcpy(o.dest, rma_slot_mem(o.slot), o.len);
    } else {
      if (!closing_)
        log::error("verbs: RMA operation on rank %d failed: %s; %s", o.peer, ibv_wc_status_str(wc.status),
                   wc_hint(wc.status));
      if (size_t(o.peer) < rma_peer_.size()) rma_peer_[o.peer].failed = true;
    }
    if (size_t(o.peer) < rma_peer_.size()) --rma_peer_[o.peer].pending;
    if (o.slot != kNoSlot) rma_free_slots_.push_back(o.slot);
    rma_free_ops_.push_back(op);
  }

  PageBuffer rma_mem_;
  MrPtr rma_mr_;
  std::vector<uint32_t> rma_free_slots_;
  std::vector<RmaOp> rma_ops_;
  std::vector<uint32_t> rma_free_ops_;
  std::vector<RmaPeer> rma_peer_;

 public:
  // ==== end of RMA windows =========================================================

  // ---- for MultiRail ----
  int rail() const { return rail_; }
  uint32_t rate() const { return port_rate(port_.attr); }
  // An established queue pair to `peer` (RDMA operations need one).
  bool connected(int peer) const {
    return size_t(peer) < endpoints_.size() && endpoints_[peer].conn && endpoints_[peer].conn->established &&
           !endpoints_[peer].failed;
  }
  // Starts connecting to `peer` if nothing is on its way: secondary rails
  // connect when rail 0 first sends to a peer, so they are up by the time
  // large messages come.
  void connect_ahead(int peer) {
    if (!reaches(peer)) return;
    Endpoint& ep = endpoints_[peer];
    if (ep.conn || ep.await_deadline || has_conn(peer)) return;
    start_connect(peer);
  }

  // RDMA READ (write=false: remote -> local) or WRITE (local -> remote) of
  // `len` bytes, pipelined: each chunk of the local buffer is registered
  // just before its operation is posted, so registering chunk k+1 overlaps
  // moving chunk k, and deregistered as soon as its completion arrives. At
  // most pipe_depth_ chunks are in flight (bounded pinned memory and send
  // queue use). Returns when every operation completed (the BTL contract);
  // receive completions are left for progress(), so no handler runs here.
  int transfer(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t remote_key, size_t len) {
    int rc = transfer_begin(peer, write, local, remote_addr, remote_key, len);
    if (rc != kOk) return rc;
    Backoff backoff(rte::job().oversubscribed ? 0 : 1000);
    for (;;) {
      int step = transfer_step();
      if (step < 0) break;
      if (step > 0) backoff.reset();
      else backoff.idle();
    }
    return transfer_end();
  }

  // The same in three steps, so that MultiRail drives several rails at once.
  int transfer_begin(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t remote_key, size_t len) {
    const char* what = write ? "RDMA WRITE to" : "RDMA READ from";
    Conn* c = endpoints_[peer].conn;
    if (!c || !c->qp) {
      log::error("verbs: %s rank %d without a connection", what, peer);
      return kIoError;
    }
    if ((remote_key >> 32) == 0) {
      log::error("verbs: rank %d could not register its buffer for the rendezvous (see its error)", peer);
      return kIoError;
    }
    rdma_slots_.resize(static_cast<size_t>(pipe_depth_));
    for (RdmaSlot& sl : rdma_slots_) sl = RdmaSlot{};
    rdma_pending_ = 0;
    rdma_failed_ = false;
    rdma_write_ = write;
    xfer_ = Transfer{c, peer, local, remote_addr, static_cast<uint32_t>(remote_key), len, 0};
    return kOk;
  }

  // Posts what the pipeline allows and polls completions. Returns -1 when
  // every operation completed (or failed and drained), else how much
  // happened (0: nothing, back off).
  int transfer_step() {
    Transfer& x = xfer_;
    Conn* c = x.conn;
    const char* what = rdma_write_ ? "RDMA WRITE to" : "RDMA READ from";
    int progressed = 0;
    for (size_t k = 0; k < rdma_slots_.size(); ++k) {
      RdmaSlot& sl = rdma_slots_[k];
      if (sl.busy && sl.done) {
        sl.mr.reset();
        sl.busy = sl.done = false;
        ++progressed;
      }
      if (sl.busy || x.posted >= x.len || rdma_failed_ || c->outstanding >= max_send_wr_ ||
          send_cq_used_ >= send_cq_size_)
        continue;
      size_t n = std::min(pipe_chunk_, x.len - x.posted);
      sl.mr.reset(ibv_reg_mr(pd_, x.local + x.posted, n, rdma_write_ ? 0 : IBV_ACCESS_LOCAL_WRITE));
      if (!sl.mr) {
        log::error("verbs: cannot register %zu bytes for an %s rank %d: %s", n, what, x.peer, reg_hint(errno).c_str());
        rdma_failed_ = true;
        break;
      }
      ibv_sge sge{reinterpret_cast<uint64_t>(x.local + x.posted), static_cast<uint32_t>(n), sl.mr->lkey};
      ibv_send_wr wr{};
      wr.wr_id = with_cover(make_wr(kWrRdma, k), c->unsignaled + 1);
      wr.opcode = rdma_write_ ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.wr.rdma.remote_addr = x.remote_addr + x.posted;
      wr.wr.rdma.rkey = x.rkey;
      ibv_send_wr* bad = nullptr;
      if (int err = ibv_post_send(c->qp, &wr, &bad)) {
        log::error("verbs: posting an %s rank %d failed: %s", what, x.peer, strerror(err));
        sl.mr.reset();
        rdma_failed_ = true;
        break;
      }
      sl.busy = true;
      x.posted += n;
      ++rdma_pending_;
      ++c->outstanding;
      c->unsignaled = 0;
      ++send_cq_used_;
      rdma_chunks.add();
      ++progressed;
    }
    if (rdma_failed_) x.posted = x.len;  // stop posting; drain what is in flight
    if (x.posted >= x.len && rdma_pending_ == 0) return -1;
    return progressed + poll_send_cq();
  }

  int transfer_end() {
    for (RdmaSlot& sl : rdma_slots_) sl = RdmaSlot{};
    if (rdma_failed_) return kIoError;
    if (Counter* rc = rail_bytes(rail_)) rc->add(xfer_.len);
    return kOk;
  }

  int progress() override {
    int handled = done_.run();
    // Connection-manager events cost system calls (librdmacm writes a
    // command to its device for every poll, and the timeout check reads the
    // clock, itself a system call in a VM without a usable vDSO clock):
    // polled every 64 calls they cost several per message. While none of
    // our connections is being set up, the channel is polled at most every
    // 64 progress calls and at least ~1 ms (kEventsTicks of the CPU's time
    // stamp counter, read without a system call) apart, so a peer's
    // connect request still waits at most about a millisecond.
    if (connecting_ > 0 || (++calls_ >= kEventsEvery && events_due())) {
      calls_ = 0;
      handled += poll_events();
    }
    if (send_cq_used_ > 0) poll_send_cq();
    ibv_wc wc[16];
    int n = ibv_poll_cq(recv_cq_, 16, wc);
    for (int i = 0; i < n; ++i) {
      auto it = by_qpn_.find(wc[i].qp_num);
      if (it == by_qpn_.end()) continue;  // a QP we destroyed
      Conn* c = it->second;
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (wc[i].status != IBV_WC_WR_FLUSH_ERR && !closing_ && !c->disconnected && !c->superseded)
          log::error("verbs: receive from rank %d failed: %s; %s", c->peer, ibv_wc_status_str(wc[i].status),
                     wc_hint(wc[i].status));
        continue;
      }
      // The peer sends only once its side is established, and an accepted QP is
      // ready to send as soon as rdma_accept returns: a message may come before
      // our ESTABLISHED event.
      if (!c->established && !c->superseded) mark_established(c);
      uint32_t slot = static_cast<uint32_t>(wc[i].wr_id);
      uint8_t* buf = c->recv_mem.bytes() + size_t(slot) * c->slot_size;
      WireHeader wh;
      std::memcpy(&wh, buf, sizeof wh);
      if (wh.freed > c->peer_freed) c->peer_freed = wh.freed;
      handler(wh.am_id)(c->peer, buf + sizeof wh, wh.length);
      ++handled;
      post_recv(c, slot);
      ++c->freed;
    }
    // Return credits the peer is waiting for (or will soon). A write the send
    // queue had no room for is retried on the next call.
    if (n > 0 || credits_owed_) {
      credits_owed_ = false;
      for (Conn* c : live_)
        if (c->freed - c->freed_reported >= std::max<uint32_t>(1, credits_ / 2) && !write_credits(c))
          credits_owed_ = true;
    }
    return handled;
  }

 private:
  int absent(const std::string& why) {
    if (required_) {
      log::error("AXON_BTL asks for verbs, but %s", why.c_str());
      return 1;
    }
    log::debug(1, "verbs: not used: %s", why.c_str());
    return -1;
  }
  int fail(const std::string& why) {
    if (required_) {
      log::error("verbs: %s", why.c_str());
      return 1;
    }
    log::warn("verbs transport disabled: %s", why.c_str());
    return -1;
  }

  uint64_t peer_freed(Conn* c) {
    uint64_t mailbox =
        __atomic_load_n(reinterpret_cast<uint64_t*>(mailbox_mem_.bytes()) + c->peer, __ATOMIC_ACQUIRE);
    if (mailbox > c->peer_freed) c->peer_freed = mailbox;
    return c->peer_freed;
  }

  uint64_t* credit_source(int peer) {
    return reinterpret_cast<uint64_t*>(mailbox_mem_.bytes()) + rte::job().size + peer;
  }

  bool write_credits(Conn* c) {
    if (!c->established || c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) return false;
    uint64_t* src = credit_source(c->peer);
    *src = c->freed;
    ibv_sge sge{reinterpret_cast<uint64_t>(src), sizeof(uint64_t), mailbox_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = with_cover(make_wr(kWrCredit, 0), c->unsignaled + 1);
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | (c->max_inline >= sizeof(uint64_t) ? IBV_SEND_INLINE : 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = c->mailbox_addr + sizeof(uint64_t) * static_cast<uint64_t>(rte::job().rank);
    wr.wr.rdma.rkey = c->mailbox_rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(c->qp, &wr, &bad) != 0) return false;
    c->freed_reported = c->freed;
    ++c->outstanding;
    c->unsignaled = 0;
    ++send_cq_used_;
    credit_writes.add();
    return true;
  }

  int poll_send_cq() {
    ibv_wc wc[32];
    int n = ibv_poll_cq(send_cq_, 32, wc);
    for (int i = 0; i < n; ++i) {
      auto it = by_qpn_.find(wc[i].qp_num);
      Conn* c = it == by_qpn_.end() ? nullptr : it->second;
      WrKind kind = wr_kind(wc[i].wr_id);
      // An unsignalled SEND shows up only when it failed or was flushed; its
      // queue entry is released by the signalled request that covers it.
      if (kind != kWrUnsignaled) {
        --send_cq_used_;
        if (c) c->outstanding -= std::min(c->outstanding, wr_cover(wc[i].wr_id));
      }
      if (kind == kWrSendBuffer) free_send_.push_back(wr_slot(wc[i].wr_id));
      if (kind == kWrRma) {  // RMA windows (section below)
        rma_completed(wc[i]);
        continue;
      }
      if (kind == kWrRdma) {
        --rdma_pending_;
        size_t slot = wr_slot(wc[i].wr_id);
        if (slot < rdma_slots_.size()) rdma_slots_[slot].done = true;
      }
      if (wc[i].status == IBV_WC_SUCCESS) continue;
      if (kind == kWrRdma) rdma_failed_ = true;
      // Credit returns may fail harmlessly while the peer is shutting down.
      bool quiet = wc[i].status == IBV_WC_WR_FLUSH_ERR || closing_ || !c || c->disconnected || kind == kWrCredit;
      if (!quiet) {
        log::error("verbs: %s rank %d failed: %s; %s", kind != kWrRdma ? "SEND to" : rdma_write_ ? "RDMA WRITE to" : "RDMA READ from", c->peer,
                   ibv_wc_status_str(wc[i].status), wc_hint(wc[i].status));
        if (kind != kWrRdma) endpoints_[c->peer].failed = true;
      }
    }
    return n;
  }

  bool connecting_to(int peer) const {
    for (const auto& [id, c] : conns_)
      if (c->peer == peer && c->active && !c->superseded) return true;
    return false;
  }

  Conn* new_conn(int peer, bool active) {
    auto c = std::make_unique<Conn>();
    c->peer = peer;
    c->active = active;
    c->deadline_ns = now_ns() + static_cast<uint64_t>(std::max<int64_t>(1, timeout_param.get())) * 1000000000ull;
    Conn* raw = c.get();
    pending_.push_back(std::move(c));
    return raw;
  }

  int start_connect(int peer) {
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
  int setup_qp(Conn* c) {
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

  int post_recv(Conn* c, uint32_t slot) {
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

  Hello hello() const {
    return Hello{kHelloMagic, rte::job().rank, credits_, mailbox_mr_->rkey,
                 reinterpret_cast<uint64_t>(mailbox_mem_.p), job_hash_};
  }

  void conn_params(rdma_conn_param* p, const Hello* h) const {
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

  void take_hello(Conn* c, const Hello& h) {
    c->peer_credits = h.credits;
    c->mailbox_addr = h.mailbox_addr;
    c->mailbox_rkey = h.mailbox_rkey;
  }

  // Handles the connection manager's events; returns how many.
  int poll_events() {
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

  void on_event(Conn* c, rdma_cm_event_type type, int status, const Hello* h) {
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
  bool has_conn(int peer) const {
    for (const auto& [id, c] : conns_)
      if (c->peer == peer && !c->superseded) return true;
    return false;
  }

  void mark_established(Conn* c) {
    c->established = true;
    if (c->superseded) return;
    endpoints_[c->peer].conn = c;
    live_.push_back(c);
    log::debug(2, "verbs: connected to rank %d (%s)", c->peer, c->active ? "we asked" : "it asked");
  }

  bool has_accepted(int peer) const {
    for (const auto& [id, c] : conns_)
      if (c->peer == peer && !c->active) return true;
    return false;
  }

  void on_connect_request(rdma_cm_event* ev) {
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

  void drop_active(Conn* c) {
    --connecting_;
    drop(c);
  }

  // Destroys a connection that lost or failed (never one in use).
  void drop(Conn* c) {
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

  void peer_failed(int peer, const std::string& why) {
    Endpoint& ep = endpoints_[peer];
    if (ep.failed) return;
    ep.failed = true;
    // A secondary rail only adds bandwidth: without it rail 0 carries all.
    (rail_ == 0 ? log::error : log::warn)("verbs: rail %d: cannot connect to rank %d (%s via %s): %s", rail_, peer,
               ep.card.family == AF_INET ? inet_ntoa(*reinterpret_cast<const in_addr*>(ep.card.addr)) : "IPv6",
               ep.card.device, why.c_str());
  }

  void close() {
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
    exposed_.clear();
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
  std::vector<Endpoint> endpoints_;
  std::vector<std::unique_ptr<Conn>> pending_;  // every connection we own
  std::map<rdma_cm_id*, Conn*> conns_;
  std::unordered_map<uint32_t, Conn*> by_qpn_;
  std::vector<Conn*> live_;  // established, in use
  std::unordered_map<uint64_t, MrPtr> exposed_;
  uint64_t exposure_serial_ = 0;
  int connecting_ = 0;
  uint64_t calls_ = 0;
  static constexpr uint64_t kEventsEvery = 64;         // progress calls between polls of the event channel
  static constexpr uint64_t kEventsTicks = 1ull << 21;  // ... and time stamp counter ticks (~1 ms)
  uint64_t events_tsc_ = 0;
  // Whether kEventsTicks passed since the last poll (always true without a
  // time stamp counter: then the call count alone paces the polls).
  bool events_due() {
#if defined(__x86_64__) || defined(__i386__)
    uint64_t t = __rdtsc();
    if (t - events_tsc_ < kEventsTicks) return false;
    events_tsc_ = t;
#endif
    return true;
  }
  bool credits_owed_ = false;
  // The rendezvous pipeline (transfer()): one slot per chunk in flight.
  struct RdmaSlot {
    MrPtr mr;          // the chunk's local registration, released on completion
    bool busy = false;
    bool done = false;
  };
  std::vector<RdmaSlot> rdma_slots_;
  size_t pipe_chunk_ = 1 << 20;
  int pipe_depth_ = 4;
  int rdma_pending_ = 0;
  bool rdma_failed_ = false;
  bool rdma_write_ = false;
  struct Transfer {
    Conn* conn = nullptr;
    int peer = -1;
    uint8_t* local = nullptr;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    size_t len = 0;
    size_t posted = 0;
  };
  Transfer xfer_;
};

// Several rails (ports or devices): each is a VerbsTransport of its own (own
// PD, CQs, listener, business card "btl.verbs.N", one QP per peer). Eager
// messages and all control traffic go over rail 0 (the nearest port), so
// ordering is rail 0's. A rendezvous buffer is registered on both rails and
// its key carries both rkeys (rail 0's in the low, rail 1's in the high 32
// bits: striping is limited to two rails by the 64-bit key); get() and put()
// of AXON_BTL_VERBS_STRIPE_MIN bytes or more split the range by the rails'
// port rates and drive both pipelines at once.
class MultiRail final : public Transport {
 public:
  explicit MultiRail(std::vector<std::unique_ptr<VerbsTransport>> rails) : rails_(std::move(rails)) {
    caps_ = rails_[0]->caps();
    for (auto& r : rails_) caps_.can_get = caps_.can_get && r->caps().can_get;
  }
  ~MultiRail() override {
    exposures_.clear();
    while (!rails_.empty()) rails_.pop_back();  // rail 0, which owns the device list, last
  }

  const char* name() const override { return "verbs"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override { return rails_[0]->reaches(r); }

  int connect_peers() override {
    for (auto& r : rails_)
      if (int rc = r->connect_peers()) return rc;
    kicked_.assign(static_cast<size_t>(rte::job().size), false);
    return 0;
  }

  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override {
    if (size_t(peer) < kicked_.size() && !kicked_[peer]) {
      kicked_[peer] = true;
      for (size_t i = 1; i < rails_.size(); ++i) rails_[i]->connect_ahead(peer);
    }
    return rails_[0]->send(peer, am_id, header, header_len, payload, payload_len);
  }

  uint64_t expose(int peer, const void* addr, size_t len) override {
    return expose_both(peer, const_cast<void*>(addr), len, false);
  }
  uint64_t expose_writable(int peer, void* addr, size_t len) override { return expose_both(peer, addr, len, true); }

  void unexpose(int peer, uint64_t key) override {
    auto it = exposures_.find(key);
    if (it == exposures_.end()) return;
    rails_[0]->unexpose(peer, it->second.first);
    if (it->second.second) rails_[1]->unexpose(peer, it->second.second);
    exposures_.erase(it);
  }

  int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) override {
    int rc = stripe(peer, false, static_cast<uint8_t*>(local), remote_addr, remote_key, len);
    if (rc == kOk) read_bytes.add(len);
    done_.push(op, rc);
    return kOk;
  }
  int put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
          RdmaOp* op) override {
    int rc = stripe(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, remote_key, len);
    if (rc == kOk) write_bytes.add(len);
    done_.push(op, rc);
    return kOk;
  }

  // RMA windows: rail 0 alone (one registration, one key, in order with its
  // active messages).
  uint64_t expose_window(void* addr, size_t len) override { return rails_[0]->expose_window(addr, len); }
  void unexpose_window(uint64_t key) override { rails_[0]->unexpose_window(key); }
  int put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    return rails_[0]->put_nb(peer, local, len, remote_addr, key);
  }
  int get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    return rails_[0]->get_nb(peer, local, len, remote_addr, key);
  }
  int atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
                void* result) override {
    return rails_[0]->atomic_nb(peer, cas, remote_addr, key, value, compare, result);
  }
  int rma_test(int peer) override { return rails_[0]->rma_test(peer); }

  int progress() override {
    int n = done_.run();
    for (auto& r : rails_) n += r->progress();
    return n;
  }

 private:
  // Registers on rail 0 and, where it reaches the peer, rail 1; the key
  // holds both rkeys. A rail-1 failure only disables striping for it.
  uint64_t expose_both(int peer, void* addr, size_t len, bool writable) {
    uint64_t k0 = writable ? rails_[0]->expose_writable(peer, addr, len) : rails_[0]->expose(peer, addr, len);
    if (!k0) return 0;
    uint64_t k1 = 0;
    if (rails_[1]->reaches(peer))
      k1 = writable ? rails_[1]->expose_writable(peer, addr, len) : rails_[1]->expose(peer, addr, len);
    uint64_t key = ((k1 & 0xffffffffu) << 32) | (k0 & 0xffffffffu);
    if (key == 0) {  // an rkey of 0 on rail 0 alone would read as "failed": very unlikely, but be exact
      rails_[0]->unexpose(peer, k0);
      return 0;
    }
    exposures_[key] = {k0, k1};
    return key;
  }

  // Rails' own key format: an exposure number (non-zero) above the rkey.
  static uint64_t rail_key(uint32_t rkey) { return (uint64_t(1) << 32) | rkey; }

  int stripe(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t key, size_t len) {
    uint32_t rk0 = static_cast<uint32_t>(key), rk1 = static_cast<uint32_t>(key >> 32);
    VerbsTransport& a = *rails_[0];
    VerbsTransport& b = *rails_[1];
    size_t min = static_cast<size_t>(std::max<int64_t>(0, stripe_param.get()));
    if (rk1 == 0 || len < min || len < 2 * 4096 || !b.connected(peer))
      return a.transfer(peer, write, local, remote_addr, rail_key(rk0), len);
    uint64_t wa = a.rate(), wb = b.rate();
    size_t part = static_cast<size_t>(static_cast<unsigned __int128>(len) * wa / (wa + wb)) / 4096 * 4096;
    part = std::clamp<size_t>(part, 4096, len - 4096);
    int rc = a.transfer_begin(peer, write, local, remote_addr, rail_key(rk0), part);
    if (rc != kOk) return rc;
    rc = b.transfer_begin(peer, write, local + part, remote_addr + part, rail_key(rk1), len - part);
    if (rc != kOk) {  // rail 1 unusable now: rail 0 takes the rest too
      while (a.transfer_step() >= 0) {
      }
      int rc0 = a.transfer_end();
      if (rc0 != kOk) return rc0;
      return a.transfer(peer, write, local + part, remote_addr + part, rail_key(rk0), len - part);
    }
    Backoff backoff(rte::job().oversubscribed ? 0 : 1000);
    bool done_a = false, done_b = false;
    while (!done_a || !done_b) {
      int sa = done_a ? 0 : a.transfer_step();
      int sb = done_b ? 0 : b.transfer_step();
      done_a = done_a || sa < 0;
      done_b = done_b || sb < 0;
      if (sa > 0 || sb > 0) backoff.reset();
      else backoff.idle();
    }
    int ra = a.transfer_end(), rb = b.transfer_end();
    return ra != kOk ? ra : rb;
  }

  std::vector<std::unique_ptr<VerbsTransport>> rails_;
  Caps caps_;
  std::vector<bool> kicked_;  // by peer: secondary rails asked to connect
  DoneQueue done_;
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> exposures_;  // key -> rails' keys
};

}  // namespace

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
  std::vector<PortChoice> ports = discover_ports(devices, n, &seen);
  if (ports.empty()) {
    rdma_free_devices(devices);
    if (seen.empty()) return absent("no RDMA device matches AXON_BTL_VERBS_DEVICE=" + device_param.get());
    return absent("no usable RDMA port (" + seen +
                  "); a port must be ACTIVE and have an IP address (RoCE: on its netdev; InfiniBand: IPoIB)");
  }
  size_t max_rails = static_cast<size_t>(std::clamp<int64_t>(rails_param.get(), 1, 2));
  std::vector<std::unique_ptr<VerbsTransport>> rails;
  for (size_t i = 0; i < ports.size() && i < max_rails; ++i) {
    auto t = std::make_unique<VerbsTransport>();
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
  return std::make_unique<MultiRail>(std::move(rails));
}

}  // namespace axon::btl

#endif  // AXON_HAVE_VERBS
