// btl/verbs: devices and ports. Which RDMA ports are usable (ACTIVE, with an
// IP address the connection manager can bind: RoCE through a GID, InfiniBand
// through IPoIB), which the user admits (AXON_BTL_VERBS_DEVICE), which is
// nearest our cores (hwloc), and how fast each is (for multi-rail weights).
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include <arpa/inet.h>
#include <dirent.h>
#include <hwloc.h>
#include <ifaddrs.h>
#include <netinet/in.h>

namespace axon::btl::verbs {

std::string ip_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  return buf;
}

namespace {

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

}  // namespace

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

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
