// axon_info --doctor: is this node ready for RDMA?
//
// Prints what the verbs transport depends on, each with a verdict: the RDMA
// devices and their ports (state, link layer, active MTU), the GID table with
// each entry's RoCE version and network device, the locked-memory limit
// (memory registration pins pages against it), huge pages, and how far (NUMA
// distance) each device is from the cores this process may run on. Reads
// sysfs for everything it can, so it also works in a build without verbs;
// libibverbs adds the port attributes sysfs lacks (active MTU).
#include "tools/doctor.h"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "axon_config.h"
#ifdef AXON_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (f) std::getline(f, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

// "0-3,8" -> {0,1,2,3,8}
std::set<int> parse_cpulist(const std::string& text) {
  std::set<int> cpus;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    int a = 0, b = 0;
    if (std::sscanf(item.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b; ++c) cpus.insert(c);
    } else if (std::sscanf(item.c_str(), "%d", &a) == 1) {
      cpus.insert(a);
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return cpus;
}

std::string cpus_text(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int a = *it, b = a;
    while (++it != cpus.end() && *it == b + 1) b = *it;
    if (!out.empty()) out += ",";
    out += a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b);
  }
  return out;
}

// NUMA nodes holding the cores this process may run on.
std::set<int> my_numa_nodes(std::set<int>* my_cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) my_cpus->insert(c);
  std::set<int> nodes;
  for (const std::string& n : list_dir("/sys/devices/system/node")) {
    int id = -1;
    if (std::sscanf(n.c_str(), "node%d", &id) != 1) continue;
    for (int c : parse_cpulist(read_line("/sys/devices/system/node/" + n + "/cpulist")))
      if (my_cpus->count(c)) nodes.insert(id);
  }
  return nodes;
}

int numa_distance(int from, int to) {
  std::string d = read_line("/sys/devices/system/node/node" + std::to_string(from) + "/distance");
  int i = 0, value = -1;
  for (char* p = d.data(); *p;) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    if (i++ == to) value = static_cast<int>(v);
    p = end;
  }
  return value;
}

std::string memlock() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur / 1024) + " KiB";
}

#ifdef AXON_HAVE_VERBS
// Active/max MTU and speed from libibverbs, by device name and port.
std::map<std::pair<std::string, int>, ibv_port_attr> verbs_ports() {
  std::map<std::pair<std::string, int>, ibv_port_attr> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return out;
  for (int i = 0; i < n; ++i) {
    ibv_context* ctx = ibv_open_device(list[i]);
    if (!ctx) continue;
    ibv_device_attr da{};
    if (ibv_query_device(ctx, &da) == 0)
      for (int p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, p, &pa) == 0) out[{ibv_get_device_name(list[i]), p}] = pa;
      }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return out;
}
#endif

}  // namespace

#ifdef AXON_HAVE_VERBS
std::string verbs_here(bool* usable) {
  *usable = false;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    return "no RDMA devices (none in /sys/class/infiniband, or the ib_uverbs module is not loaded)";
  }
  std::string active, idle;
  for (int i = 0; i < n; ++i) {
    std::string dev = ibv_get_device_name(list[i]);
    ibv_context* ctx = ibv_open_device(list[i]);
    if (!ctx) {
      idle += (idle.empty() ? "" : ", ") + dev + " (cannot be opened)";
      continue;
    }
    ibv_device_attr da{};
    if (ibv_query_device(ctx, &da) == 0)
      for (int p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, p, &pa) != 0) continue;
        std::string port = dev + ":" + std::to_string(p);
        if (pa.state == IBV_PORT_ACTIVE)
          active += (active.empty() ? "" : ", ") + port +
                    (pa.link_layer == IBV_LINK_LAYER_ETHERNET ? " (RoCE)" : " (InfiniBand)");
        else
          idle += (idle.empty() ? "" : ", ") + port + " " + ibv_port_state_str(pa.state);
      }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  *usable = !active.empty();
  if (active.empty()) return "no ACTIVE port (" + idle + ")";
  return "ACTIVE ports " + active + (idle.empty() ? "" : "; not active: " + idle);
}
#else
std::string verbs_here(bool* usable) {
  *usable = false;
  return "not built";
}
#endif

int run_doctor() {
  int problems = 0;
  std::printf("Axon doctor: RDMA readiness of this node\n");

  // Locked memory: every registered buffer is pinned against RLIMIT_MEMLOCK.
  rlimit rl{};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  // root (CAP_IPC_LOCK) may pin memory beyond the limit.
  bool root = geteuid() == 0;
  bool low = rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (64ull << 20) && !root;
  std::printf("  locked memory (ulimit -l): %s%s\n", memlock().c_str(),
              low ? "  [WARN] below 64 MiB: registering large buffers will fail; set `ulimit -l unlimited` "
                    "(memlock in /etc/security/limits.conf, LimitMEMLOCK=infinity for systemd)"
                  : rl.rlim_cur == RLIM_INFINITY ? "  [ok]"
                  : root ? "  [ok: root is not bound by it; other users are]" : "  [ok]");
  problems += low;

  // Huge pages.
  std::string hp_total, hp_free, hp_size;
  {
    std::ifstream f("/proc/meminfo");
    std::string line;
    while (std::getline(f, line)) {
      auto value = [&](const char* key) { return line.rfind(key, 0) == 0 ? line.substr(std::strlen(key)) : std::string(); };
      if (auto v = value("HugePages_Total:"); !v.empty()) hp_total = v;
      if (auto v = value("HugePages_Free:"); !v.empty()) hp_free = v;
      if (auto v = value("Hugepagesize:"); !v.empty()) hp_size = v;
    }
    auto trim = [](std::string& s) { s.erase(0, s.find_first_not_of(' ')); };
    trim(hp_total), trim(hp_free), trim(hp_size);
  }
  std::string thp = read_line("/sys/kernel/mm/transparent_hugepage/enabled");
  std::printf("  huge pages: %s total, %s free, %s each; transparent huge pages: %s\n",
              hp_total.empty() ? "?" : hp_total.c_str(), hp_free.empty() ? "?" : hp_free.c_str(),
              hp_size.empty() ? "?" : hp_size.c_str(), thp.empty() ? "unknown" : thp.c_str());

  std::set<int> my_cpus;
  std::set<int> my_nodes = my_numa_nodes(&my_cpus);
  std::string nodes_text;
  for (int n : my_nodes) nodes_text += (nodes_text.empty() ? "" : ",") + std::to_string(n);
  std::printf("  this process's cores: %s (NUMA node %s)\n", cpus_text(my_cpus).c_str(),
              nodes_text.empty() ? "?" : nodes_text.c_str());

#ifdef AXON_HAVE_VERBS
  auto ports = verbs_ports();
  std::printf("  verbs transport: built in\n");
  // Nothing tells Axon soundly when a registered buffer is unmapped (glibc's
  // free() calls munmap internally, past any symbol interposition), so a
  // cached registration could serve a buffer's old pages: not cached.
  std::printf("  registration cache: off (no sound invalidation of freed memory): each rendezvous "
              "registers the buffers it moves and deregisters them when done\n");
#else
  std::printf("  verbs transport: NOT built (configure found no libibverbs/librdmacm development files)\n");
#endif
  const std::string base = "/sys/class/infiniband";
  std::vector<std::string> devices = list_dir(base);
  if (devices.empty()) {
    std::printf("  RDMA devices: no RDMA devices (nothing in %s). Load the driver of your NIC (or, for "
                "testing, soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0), and "
                "rdma_ucm/ib_uverbs for user space.\n",
                base.c_str());
    return 0;
  }
  if (access("/dev/infiniband/rdma_cm", R_OK | W_OK) != 0) {
    std::printf("  [WARN] /dev/infiniband/rdma_cm is missing or not accessible: modprobe rdma_ucm\n");
    ++problems;
  }
  for (const std::string& dev : devices) {
    std::string d = base + "/" + dev;
    std::string numa = read_line(d + "/device/numa_node");
    std::printf("  device %s: node GUID %s, firmware %s\n", dev.c_str(), read_line(d + "/node_guid").c_str(),
                read_line(d + "/fw_ver").empty() ? "-" : read_line(d + "/fw_ver").c_str());
    int dev_node = numa.empty() ? -1 : std::atoi(numa.c_str());
    if (dev_node < 0) {
      std::printf("    NUMA: the device reports no NUMA node (single-node machine or virtual device)\n");
    } else {
      for (int n : my_nodes)
        std::printf("    NUMA: device on node %d, distance %d from this process's node %d%s\n", dev_node,
                    numa_distance(n, dev_node), n, n == dev_node ? " (local)" : " (remote: bind ranks near it)");
    }
    for (const std::string& port : list_dir(d + "/ports")) {
      std::string p = d + "/ports/" + port;
      std::string state = read_line(p + "/state");           // "4: ACTIVE"
      std::string phys = read_line(p + "/phys_state");       // "5: LinkUp"
      std::string link = read_line(p + "/link_layer");       // "Ethernet" / "InfiniBand"
      auto strip = [](const std::string& s) { auto c = s.find(": "); return c == std::string::npos ? s : s.substr(c + 2); };
      bool active = strip(state) == "ACTIVE";
      std::printf("    port %s: %s, physical %s, link layer %s, rate %s%s\n", port.c_str(), strip(state).c_str(),
                  strip(phys).c_str(), link.c_str(), read_line(p + "/rate").c_str(),
                  active ? "" : "  [WARN] not ACTIVE: Axon cannot use it");
      problems += !active;
#ifdef AXON_HAVE_VERBS
      if (auto it = ports.find({dev, std::atoi(port.c_str())}); it != ports.end())
        std::printf("      active MTU %d, max MTU %d, max message %u bytes\n", 128 << it->second.active_mtu,
                    128 << it->second.max_mtu, it->second.max_msg_sz);
#endif
      std::vector<std::string> ndevs;
      int shown = 0;
      bool v2 = false;
      for (const std::string& g : list_dir(p + "/gids")) {
        std::string gid = read_line(p + "/gids/" + g);
        if (gid.empty() || gid == "0000:0000:0000:0000:0000:0000:0000:0000") continue;
        std::string type = read_line(p + "/gid_attrs/types/" + g);
        std::string ndev = read_line(p + "/gid_attrs/ndevs/" + g);
        if (type.find("v2") != std::string::npos) v2 = true;
        if (link == "Ethernet" && type.find("v2") != std::string::npos) type = "RoCE v2";
        std::printf("      GID %s: %s  %s%s%s\n", g.c_str(), gid.c_str(), type.empty() ? "" : type.c_str(),
                    ndev.empty() ? "" : "  netdev ", ndev.c_str());
        ++shown;
      }
      if (!shown) std::printf("      GID table: empty%s\n", link == "Ethernet" ? " [WARN] the netdev has no IP address" : "");
      if (link == "Ethernet" && shown && !v2)
        std::printf("      [WARN] no RoCE v2 GID: Axon's connections need an IP-based GID\n");
    }
  }
  std::printf("  %s\n", problems ? "problems found: see [WARN] lines" : "no problems found");
  return 0;
}
