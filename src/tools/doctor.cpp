// axon_info --doctor: is this node ready for RDMA and for GPU buffers?
//
// Prints what the verbs transport depends on, each with a verdict: the RDMA
// devices and their ports (state, link layer, active MTU), the GID table with
// each entry's RoCE version and network device, the locked-memory limit
// (memory registration pins pages against it), huge pages, and how far (NUMA
// distance) each device is from the cores this process may run on, and
// whether the registration cache is on (src/rcache) or why not. Reads
// sysfs for everything it can, so it also works in a build without verbs;
// libibverbs adds the port attributes sysfs lacks (active MTU). The GPU part
// asks the CUDA driver (dlopen'ed, as Axon does) for each GPU, peer access
// and dma-buf support, looks for nvidia_peermem and MPS, says whether the
// job's ranks would share a GPU, and prints the PCIe/NUMA distance from
// each GPU to each RDMA NIC, warning when a GPU has no NIC on its NUMA node.
#include "tools/doctor.h"

#include <dirent.h>
#include <dlfcn.h>
#include <mpi.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "axon_config.h"
#include "rcache/rcache.h"  // describe() only: the state comes from the library through MPI_T
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

// ---- GPUs: what a CUDA-aware job on this node gets ------------------------
// The driver is dlopen'ed as Axon does (AXON_ACCEL_CUDA_LIBRARY, default
// libcuda.so.1; no cuda.h here: the few types and attribute numbers are the
// driver ABI's). sysfs and /proc are read under AXON_DOCTOR_ROOT (default:
// the real ones), so that tests can describe a machine.

std::string root_path(const std::string& path) {
  const char* root = std::getenv("AXON_DOCTOR_ROOT");
  return (root ? std::string(root) : std::string()) + path;
}

// The driver entry points the report uses; any may be missing.
struct CudaApi {
  using Result = int;
  Result (*init)(unsigned) = nullptr;
  Result (*driver_version)(int*) = nullptr;
  Result (*count)(int*) = nullptr;
  Result (*get)(int*, int) = nullptr;
  Result (*name)(char*, int, int) = nullptr;
  Result (*uuid)(unsigned char*, int) = nullptr;
  Result (*total_mem)(size_t*, int) = nullptr;
  Result (*pci_bus_id)(char*, int, int) = nullptr;
  Result (*attribute)(int*, int, int) = nullptr;
  Result (*can_access_peer)(int*, int, int) = nullptr;
};
enum : int {
  kAttrComputeMode = 20,
  kAttrUnifiedAddressing = 41,
  kAttrCcMajor = 75,
  kAttrCcMinor = 76,
  kAttrGpuDirectRdma = 116,
  kAttrDmaBuf = 124,
};

struct Gpu {
  std::string name, uuid, pci, sysfs;  // sysfs: the PCI device's real path ("" when not found)
  int numa = -1;
  size_t memory = 0;
  int cc_major = -1, cc_minor = -1, compute_mode = -1, dma_buf = -1, gdr = -1, uva = -1;
};

struct Nic {
  std::string name, sysfs;
  int numa = -1;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The real path of a sysfs entry, "" when it does not exist.
std::string real_path(const std::string& p) {
  char* r = realpath(p.c_str(), nullptr);
  std::string out = r ? r : "";
  std::free(r);
  return out;
}

int numa_of(const std::string& pci_dir) {
  std::string n = read_line(pci_dir + "/numa_node");
  return n.empty() ? -1 : std::atoi(n.c_str());
}

// The PCI devices on the way from the host bridge to `dev` (both ends
// included), from its real sysfs path: .../devices/pci0000:10/0000:10:01.0/0000:11:00.0.
std::vector<std::string> pci_chain(const std::string& dev) {
  std::vector<std::string> chain;
  size_t at = dev.find("/devices/pci");
  if (at == std::string::npos) return chain;
  std::string rest = dev.substr(at + std::strlen("/devices/"));
  for (size_t pos = 0; pos <= rest.size();) {
    size_t end = rest.find('/', pos);
    if (end == std::string::npos) end = rest.size();
    if (end > pos) chain.push_back(rest.substr(pos, end - pos));
    pos = end + 1;
  }
  return chain;
}

// How a GPU and a NIC reach each other, in nvidia-smi topo -m's terms:
// PIX through at most one PCIe switch, PXB through several switches, PHB
// through a PCIe host bridge (the CPU), NODE across host bridges of one
// NUMA node, SYS across NUMA nodes (the inter-socket link).
std::string pci_distance(const std::string& a, int numa_a, const std::string& b, int numa_b) {
  std::vector<std::string> ca = pci_chain(a), cb = pci_chain(b);
  if (ca.size() < 2 || cb.size() < 2) return "?";
  if (ca[0] != cb[0]) return numa_a >= 0 && numa_b >= 0 && numa_a != numa_b ? "SYS" : "NODE";
  // Bridges between the host bridge and each endpoint, and those shared.
  size_t common = 0;
  while (common + 2 < ca.size() && common + 2 < cb.size() && ca[common + 1] == cb[common + 1]) ++common;
  if (common == 0) return "PHB";
  return ca.size() - 2 - common <= 1 && cb.size() - 2 - common <= 1 ? "PIX" : "PXB";
}

bool load_cuda(CudaApi* cu, std::string* why) {
  const char* env = std::getenv("AXON_ACCEL_CUDA_LIBRARY");
  std::string lib = env && *env ? env : "libcuda.so.1";
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *why = "no CUDA driver (" + lib + " cannot be loaded): no GPU buffers on this node";
    return false;
  }
  auto sym = [h](auto* slot, const char* name) { *reinterpret_cast<void**>(slot) = dlsym(h, name); };
  sym(&cu->init, "cuInit");
  sym(&cu->driver_version, "cuDriverGetVersion");
  sym(&cu->count, "cuDeviceGetCount");
  sym(&cu->get, "cuDeviceGet");
  sym(&cu->name, "cuDeviceGetName");
  sym(&cu->uuid, "cuDeviceGetUuid_v2");
  if (!cu->uuid) sym(&cu->uuid, "cuDeviceGetUuid");
  sym(&cu->total_mem, "cuDeviceTotalMem_v2");
  sym(&cu->pci_bus_id, "cuDeviceGetPCIBusId");
  sym(&cu->attribute, "cuDeviceGetAttribute");
  sym(&cu->can_access_peer, "cuDeviceCanAccessPeer");
  if (!cu->init || !cu->count || !cu->get) {
    *why = "the CUDA driver " + lib + " lacks cuInit/cuDeviceGetCount";
    return false;
  }
  if (int rc = cu->init(0); rc != 0) {
    *why = "cuInit failed (error " + std::to_string(rc) + "): no usable GPU";
    return false;
  }
  return true;
}

std::string uuid_text(const unsigned char* u) {
  char s[64];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return s;
}

std::vector<Nic> rdma_nics() {
  std::vector<Nic> nics;
  const std::string base = root_path("/sys/class/infiniband");
  for (const std::string& name : list_dir(base)) {
    Nic n;
    n.name = name;
    n.sysfs = real_path(base + "/" + name + "/device");
    n.numa = n.sysfs.empty() ? -1 : numa_of(n.sysfs);
    nics.push_back(n);
  }
  return nics;
}

// How many ranks of this job run on this node, when a launcher says.
int local_ranks(const char** from) {
  for (const char* var : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 0) {
      *from = var;
      return std::atoi(v);
    }
  }
  return 0;
}

void gpu_report(int* problems) {
  std::printf("  GPUs (CUDA):\n");
  CudaApi cu;
  std::string why;
  int count = 0;
  if (!load_cuda(&cu, &why) || cu.count(&count) != 0 || count <= 0) {
    std::printf("    %s\n", why.empty() ? "the CUDA driver reports no device: no GPU buffers on this node" : why.c_str());
    return;
  }
  int version = 0;
  if (cu.driver_version) cu.driver_version(&version);
  std::printf("    driver: CUDA %d.%d (driver API %d), %d GPU%s\n", version / 1000, version % 1000 / 10, version, count,
              count == 1 ? "" : "s");
  std::vector<Gpu> gpus(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Gpu& g = gpus[static_cast<size_t>(i)];
    int dev = 0;
    if (cu.get(&dev, i) != 0) continue;
    char buf[256] = {};
    if (cu.name && cu.name(buf, sizeof buf, dev) == 0) g.name = buf;
    unsigned char u[16] = {};
    if (cu.uuid && cu.uuid(u, dev) == 0) g.uuid = uuid_text(u);
    if (cu.total_mem) cu.total_mem(&g.memory, dev);
    if (cu.pci_bus_id && cu.pci_bus_id(buf, sizeof buf, dev) == 0) g.pci = lower(buf);
    auto attr = [&](int a) {
      int v = -1;
      return cu.attribute && cu.attribute(&v, a, dev) == 0 ? v : -1;
    };
    g.cc_major = attr(kAttrCcMajor), g.cc_minor = attr(kAttrCcMinor), g.compute_mode = attr(kAttrComputeMode);
    g.dma_buf = attr(kAttrDmaBuf), g.gdr = attr(kAttrGpuDirectRdma), g.uva = attr(kAttrUnifiedAddressing);
    // The driver's domain may have 8 digits; sysfs names have 4.
    std::string pci = g.pci.size() > 12 ? g.pci.substr(g.pci.size() - 12) : g.pci;
    g.sysfs = pci.empty() ? "" : real_path(root_path("/sys/bus/pci/devices/" + pci));
    g.numa = g.sysfs.empty() ? -1 : numa_of(g.sysfs);
    auto yes_no = [](int v) { return v < 0 ? "?" : v ? "yes" : "no"; };
    const char* mode = g.compute_mode == 0 ? "default" : g.compute_mode == 2 ? "prohibited"
                       : g.compute_mode == 3 ? "exclusive-process" : "?";
    std::printf("    GPU %d: %s, %zu GiB, compute %d.%d, PCI %s, NUMA node %d, %s\n", i,
                g.name.empty() ? "?" : g.name.c_str(), g.memory >> 30, g.cc_major, g.cc_minor,
                g.pci.empty() ? "?" : g.pci.c_str(), g.numa, g.uuid.empty() ? "UUID ?" : g.uuid.c_str());
    std::printf("      unified addressing %s, dma-buf %s, GPUDirect RDMA %s, compute mode %s%s\n", yes_no(g.uva),
                yes_no(g.dma_buf), yes_no(g.gdr), mode,
                g.compute_mode == 3 ? "  [WARN] one process per GPU: ranks cannot share it" : "");
    *problems += g.compute_mode == 3 || g.compute_mode == 2;
    if (g.uva == 0) {
      std::printf("      [WARN] no unified addressing: Axon cannot tell device pointers from host pointers\n");
      ++*problems;
    }
  }
  if (count > 1 && cu.can_access_peer) {
    for (int a = 0; a < count; ++a)
      for (int b = a + 1; b < count; ++b) {
        int ab = -1, ba = -1;
        cu.can_access_peer(&ab, a, b);
        cu.can_access_peer(&ba, b, a);
        std::printf("    peer access GPU %d <-> GPU %d: %s\n", a, b,
                    ab > 0 && ba > 0 ? "yes" : ab < 0 || ba < 0 ? "?" : "no (IPC copies between them go through the host)");
      }
  }
  // GPUDirect RDMA: the NIC's driver maps GPU memory through nvidia_peermem
  // (the peer-memory interface) or through dma-buf (open kernel modules).
  std::string modules;
  {
    std::ifstream f(root_path("/proc/modules"));
    std::string line;
    while (std::getline(f, line)) modules += line.substr(0, line.find(' ')) + " ";
  }
  bool peermem = access(root_path("/sys/module/nvidia_peermem").c_str(), F_OK) == 0 ||
                 modules.find("nvidia_peermem ") != std::string::npos;
  bool any_dmabuf = std::any_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return g.dma_buf > 0; });
  std::printf("    nvidia_peermem: %s\n",
              peermem ? "loaded (GPUDirect RDMA through the peer-memory interface)"
              : any_dmabuf ? "not loaded (GPUDirect RDMA can use dma-buf instead: the GPUs support it)"
                           : "not loaded, and no dma-buf support: NICs cannot reach GPU memory (modprobe nvidia_peermem)");
  // Ranks sharing one GPU take turns on it (time-sliced contexts) unless
  // MPS merges them: the leading (not yet confirmed) explanation of the
  // ~150 us device round trip measured between two ranks on one H200
  // (docs/cuda.md; contrib/gpu/diagnose.sh measures it).
  const char* pipe_env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::string pipe = pipe_env && *pipe_env ? pipe_env : "/tmp/nvidia-mps";
  bool mps = access(root_path(pipe + "/control").c_str(), F_OK) == 0;
  std::printf("    MPS: %s\n", mps ? ("control daemon found (" + pipe + "/control): ranks sharing a GPU run concurrently").c_str()
                                   : "not running: ranks sharing a GPU take turns on it (time-sliced contexts)");
  const char* from = nullptr;
  int ranks = local_ranks(&from);
  if (ranks > 0) {
    bool share = ranks > count;
    std::printf("    ranks per GPU: %d local ranks (%s) on %d GPU%s%s\n", ranks, from, count, count == 1 ? "" : "s",
                !share ? ": one GPU each when each rank picks local rank % GPUs"
                : mps  ? ": ranks share a GPU (MPS runs them concurrently)"
                       : "  [WARN] ranks share a GPU without MPS: their contexts take turns (device messages between "
                         "two such ranks took ~150 us on an H200); start nvidia-cuda-mps-control -d, or run one rank "
                         "per GPU");
    *problems += share && !mps;
  } else {
    std::printf("    ranks per GPU: more than %d rank%s of a job on this node share a GPU%s\n", count,
                count == 1 ? "" : "s", mps ? " (MPS runs them concurrently)" : ", taking turns on it without MPS");
  }
  std::vector<Nic> nics = rdma_nics();
  if (nics.empty()) {
    std::printf("    GPU-NIC topology: no RDMA NIC\n");
    return;
  }
  std::printf("    GPU-NIC topology (as nvidia-smi topo -m: PIX one PCIe switch, PXB several, PHB a host bridge, "
              "NODE one NUMA node, SYS across NUMA nodes):\n      %-8s", "");
  for (const Nic& n : nics) std::printf(" %-8s", n.name.c_str());
  std::printf("\n");
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::printf("      GPU %-4zu", i);
    for (const Nic& n : nics) std::printf(" %-8s", pci_distance(gpus[i].sysfs, gpus[i].numa, n.sysfs, n.numa).c_str());
    std::printf("\n");
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    const Gpu& g = gpus[i];
    if (g.numa < 0) continue;
    const Nic* near = nullptr;
    for (const Nic& n : nics)
      if (n.numa == g.numa) near = &n;
    if (near) continue;
    std::string others;
    for (const Nic& n : nics) others += (others.empty() ? "" : ", ") + n.name + " on node " + std::to_string(n.numa);
    std::printf("    [WARN] GPU %zu is on NUMA node %d and no RDMA NIC is (%s): a rank using it reaches the network "
                "across NUMA nodes; bind it to node %d and prefer GPUs near a NIC\n",
                i, g.numa, others.c_str(), g.numa);
    ++*problems;
  }
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

// The registration cache's state as the library has it in this process:
// the MPI_T variable axon_rcache_state, whose reading installs the memory
// hooks as an MPI job's first cache would (same libc, same environment).
std::string registration_cache_state() {
  int provided = 0, index = -1, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "unknown (MPI_T_init_thread failed)";
  unsigned long long state = ~0ull;
  MPI_T_pvar_session session;
  MPI_T_pvar_handle handle;
  bool read = false;
  if (MPI_T_pvar_get_index("axon_rcache_state", MPI_T_PVAR_CLASS_LEVEL, &index) == MPI_SUCCESS &&
      MPI_T_pvar_session_create(&session) == MPI_SUCCESS) {
    if (MPI_T_pvar_handle_alloc(session, index, nullptr, &handle, &count) == MPI_SUCCESS) {
      read = MPI_T_pvar_read(session, handle, &state) == MPI_SUCCESS;
      MPI_T_pvar_handle_free(session, &handle);
    }
    MPI_T_pvar_session_free(&session);
  }
  MPI_T_finalize();
  return read ? axon::rcache::describe(state) : "unknown (no axon_rcache_state variable)";
}

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
  std::printf("Axon doctor: RDMA and GPU readiness of this node\n");

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
#else
  std::printf("  verbs transport: NOT built (configure found no libibverbs/librdmacm development files)\n");
#endif
  // Caching registrations is sound only with the memory hooks (src/rcache):
  // without them every transfer registers and deregisters its buffers.
  const std::string rcache = registration_cache_state();
  std::printf("  registration cache: %s%s\n", rcache.c_str(),
              rcache.rfind("on:", 0) == 0 ? "" : "; each transfer registers the buffers it moves and deregisters them");
  gpu_report(&problems);
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
