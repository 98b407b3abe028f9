// axon_info: what this Axon installation is, what this node offers, and how
// it can be tuned.
//   axon_info            version, ABI, transports (built, and usable here),
//                        CUDA, PMIx and hwloc versions, Fortran bindings
//   axon_info --params   every AXON_* parameter with its default and meaning
//   axon_info --counters every performance counter (MPI_T performance variable)
//   axon_info --doctor   RDMA and GPU readiness of this node (doctor.cpp)
//   axon_info --explain  the point-to-point paths of this node (explain.cpp)
// The usage text is also the man page (src/tools/gen-man.sh).
#include <mpi.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pmix.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "axon_config.h"
#include "tools/doctor.h"
#include "tools/explain.h"

namespace {

void usage() {
  std::printf(
      "Usage: axon_info [--params] [--counters] [--doctor] [--explain [N]] [--version] [--help]\n"
      "\n"
      "Without an option, prints what this Axon MPI build has and what this node\n"
      "offers: the MPI standard and ABI versions; the transports built and whether\n"
      "each can work here (shared memory and its single-copy path, the network\n"
      "interfaces, the RDMA ports); CUDA support and whether the CUDA driver loads\n"
      "here; the PMIx and hwloc versions built with and loaded; the Fortran bindings.\n"
      "\n"
      "Options:\n"
      "  --params      list every AXON_* environment parameter: its default, meaning, allowed values\n"
      "                and whether a program may change it through MPI_T (MPI_T_cvar_write)\n"
      "  --counters    list the performance counters a running job keeps (MPI_T pvars)\n"
      "  --doctor      check this node for RDMA (devices, ports, GIDs, MTU, ulimit -l, NUMA) and GPUs\n"
      "                (driver, devices, peer access, dma-buf, nvidia_peermem, MPS, GPU-NIC distances)\n"
      "  --explain [N] print which transport and protocol a point-to-point message takes to itself,\n"
      "                to a rank on this node and to one on another node, by size and memory kind,\n"
      "                and why (what AXON_EXPLAIN=1 prints in a job); N: ranks per node (default:\n"
      "                the online CPUs)\n"
      "  --version     print the version\n"
      "  -h, --help    print this text\n"
      "\n"
      "See also: mpirun(1), mpicc(1), mpifort(1), axon_info --params for the parameters, docs/performance.md for measured figures.\n");
}

int list_params() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "axon_info: MPI_T_init_thread failed\n");
    return 1;
  }
  int n = 0;
  MPI_T_cvar_get_num(&n);
  for (int i = 0; i < n; ++i) {
    char name[256], desc[2048];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind, &scope) !=
        MPI_SUCCESS)
      continue;
    // (Enumerations and booleans are both MPI_INT; only the former have an MPI_T enumeration.)
    const char* kind = type == MPI_CHAR                ? "string"
                       : enumtype != MPI_T_ENUM_NULL   ? "enum"
                       : type == MPI_INT               ? "boolean"
                                                       : "integer";
    // MPI_T_SCOPE_ALL_EQ: writable, with the same value on every rank.
    const char* access = scope == MPI_T_SCOPE_ALL_EQ ? ", MPI_T writable: same value on every rank" : "";
    std::printf("%s (%s%s)\n    %s\n", name, kind, access, desc);
  }
  MPI_T_finalize();
  return 0;
}

int list_counters() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "axon_info: MPI_T_init_thread failed\n");
    return 1;
  }
  int n = 0;
  MPI_T_pvar_get_num(&n);
  for (int i = 0; i < n; ++i) {
    char name[256], desc[2048];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly, continuous, atomic;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype, desc, &desc_len, &bind,
                            &readonly, &continuous, &atomic) != MPI_SUCCESS)
      continue;
    std::printf("%s (%s)\n    %s\n", name, var_class == MPI_T_PVAR_CLASS_LEVEL ? "level" : "counter", desc);
  }
  MPI_T_finalize();
  return 0;
}

// The Fortran bindings: src/fortran/Makefile.inc defines AXON_INFO_FC (the
// compiler configure found), AXON_INFO_FC_ID (compiler-version, the module
// directory's name), AXON_INFO_FMODDIR and AXON_INFO_INCLUDEDIR when they are built.
#if defined(AXON_INFO_FC)
bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}
#endif

void fortran_summary() {
#if defined(AXON_INFO_FC)
  std::string fc_id = AXON_INFO_FC_ID, version = fc_id.substr(fc_id.rfind('-') + 1);
  std::string moddir = AXON_INFO_FMODDIR, mpif_h = std::string(AXON_INFO_INCLUDEDIR) + "/mpif.h";
  std::printf("  Fortran:           yes: %s %s (libmpifort_abi; mpifort, mpif90, mpif77)\n", AXON_INFO_FC,
              version.c_str());
  std::printf("    mpif.h:          yes, %s%s\n", mpif_h.c_str(), exists(mpif_h) ? "" : " (not installed)");
  std::printf("    use mpi:         yes, module directory %s%s\n", moddir.c_str(),
              exists(moddir + "/mpi.mod") ? "" : " (not installed)");
  std::printf("    use mpi_f08:     yes, module directory %s%s\n", moddir.c_str(),
              exists(moddir + "/mpi_f08.mod") ? "" : " (not installed)");
#else
  std::printf("  Fortran:           no (not built: configure found no Fortran compiler, or --disable-fortran)\n");
#endif
}

// ---- the summary's lines ------------------------------------------------------

// sm: segments live in /dev/shm; large messages are copied once with
// process_vm_readv (CMA) when the kernel allows it. The probe does what a rank
// does: allow any process of ours to read our memory (src/rte/rte.cpp; Yama's
// ptrace_scope=1 forbids it otherwise), then a child reads a word of ours.
std::string sm_here() {
  if (access("/dev/shm", W_OK | X_OK) != 0)
    return std::string("not usable here: /dev/shm is not writable (") + std::strerror(errno) + ")";
  bool ok = false;
  return "usable here: /dev/shm writable; single copy (CMA): " + cma_probe(&ok);
}

}  // namespace

std::string cma_probe(bool* ok) {
  *ok = false;
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  static volatile uint64_t word = 0x61786f6e636d6121ull;
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    uint64_t got = 0;
    iovec local{&got, sizeof got};
    iovec remote{const_cast<uint64_t*>(&word), sizeof word};
    ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
    _exit(n == static_cast<ssize_t>(sizeof got) && got == word ? 0 : n < 0 ? (errno > 0 && errno < 255 ? errno : 254) : 255);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return "not probed";
  if (WEXITSTATUS(status) == 0) {
    *ok = true;
    return "yes";
  }
  if (WEXITSTATUS(status) == 255) return "no (read the wrong data)";
  return std::string("no: ") + std::strerror(WEXITSTATUS(status)) +
         " (ptrace restrictions or a container's seccomp policy; large messages go through the rings)";
}

namespace {

// tcp: the IPv4 interfaces that are up (before AXON_BTL_TCP_IF_INCLUDE /
// _EXCLUDE filter them); loopback alone serves ranks of one node only.
std::string tcp_here() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::string("unknown: getifaddrs failed: ") + std::strerror(errno);
  std::string up;
  bool loopback = false;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING)) continue;
    if (i->ifa_flags & IFF_LOOPBACK) {
      loopback = true;
      continue;
    }
    char buf[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    up += (up.empty() ? "" : ", ") + std::string(i->ifa_name) + " " + buf;
  }
  freeifaddrs(list);
  if (!up.empty()) return "usable here: IPv4 interfaces up: " + up;
  return loopback ? "usable here between ranks of this node only: no IPv4 interface up but loopback"
                  : "not usable here: no IPv4 interface is up";
}

void transports_summary() {
  // self, sm and tcp are always built; verbs when configure found libibverbs
  // and librdmacm (AXON_HAVE_VERBS in axon_config.h).
#ifdef AXON_HAVE_VERBS
  std::printf("  transports (btl):  self, sm, tcp, verbs\n");
#else
  std::printf("  transports (btl):  self, sm, tcp\n");
#endif
  std::printf("    self:            usable here (a rank's messages to itself)\n");
  std::printf("    sm:              %s\n", sm_here().c_str());
  std::printf("    tcp:             %s\n", tcp_here().c_str());
#ifdef AXON_HAVE_VERBS
  bool usable = false;
  std::string ports = verbs_here(&usable);
  std::printf("    verbs:           %s: %s%s\n", usable ? "usable here" : "not usable here", ports.c_str(),
              usable ? "" : "; axon_info --doctor tells more");
#else
  std::printf("    verbs:           not built (configure found no libibverbs/librdmacm development files)\n");
#endif
}

// CUDA: built when configure found cuda.h (AXON_HAVE_CUDA); the driver is
// dlopen'ed at run time, so one build runs with and without GPUs. The probe
// loads the library a job would load (AXON_ACCEL_CUDA_LIBRARY) the same way.
void cuda_summary() {
#ifdef AXON_HAVE_CUDA
#ifdef AXON_HAVE_CUDA_KERNELS
  std::printf("  CUDA:              built (CUDA-aware buffers; GPU kernels built in)\n");
#else
  std::printf("  CUDA:              built (CUDA-aware buffers; no GPU kernels: reductions and packing on the host)\n");
#endif
#else
  std::printf("  CUDA:              not built (configure found no cuda.h; --with-cuda=DIR)\n");
#endif
  const char* env = std::getenv("AXON_ACCEL_CUDA_LIBRARY");
  std::string lib = env && *env ? env : "libcuda.so.1";
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    std::printf("    driver here:     not found (%s)\n", why ? why : lib.c_str());
    return;
  }
  using InitFn = int (*)(unsigned);
  using IntFn = int (*)(int*);
  auto cu_init = reinterpret_cast<InitFn>(dlsym(h, "cuInit"));
  auto cu_version = reinterpret_cast<IntFn>(dlsym(h, "cuDriverGetVersion"));
  auto cu_count = reinterpret_cast<IntFn>(dlsym(h, "cuDeviceGetCount"));
  if (!cu_init || !cu_version || !cu_count) {
    std::printf("    driver here:     %s loaded, but it lacks cuInit/cuDriverGetVersion/cuDeviceGetCount\n", lib.c_str());
    return;
  }
  int version = 0, count = 0;
  cu_version(&version);
  int rc = cu_init(0);
  if (rc == 0) rc = cu_count(&count);
  const char* off = std::getenv("AXON_ACCEL");
  bool disabled = off && (!std::strcmp(off, "0") || !strcasecmp(off, "no") || !strcasecmp(off, "false") ||
                          !strcasecmp(off, "off"));
  if (rc != 0)
    std::printf("    driver here:     %s, CUDA %d.%d, but cuInit failed (CUDA error %d: no usable GPU)\n", lib.c_str(),
                version / 1000, version % 1000 / 10, rc);
  else
    std::printf("    driver here:     %s, CUDA %d.%d, %d device%s%s\n", lib.c_str(), version / 1000,
                version % 1000 / 10, count, count == 1 ? "" : "s", disabled ? " (AXON_ACCEL turns CUDA support off)" : "");
  // Never dlclose'd: the CUDA driver does not support being unloaded.
}

// PMIx and hwloc: the versions of the headers this build used, and of the
// libraries loaded now (a different library can be found at run time).
void versions_summary() {
  std::printf("  PMIx:              %ld.%ld.%ld at build time (pmix_version.h); loaded: %s\n",
              static_cast<long>(PMIX_VERSION_MAJOR), static_cast<long>(PMIX_VERSION_MINOR),
              static_cast<long>(PMIX_VERSION_RELEASE), PMIx_Get_version());
  unsigned built = HWLOC_API_VERSION, loaded = hwloc_get_api_version();
  std::printf("  hwloc:             API %u.%u.%u at build time (hwloc.h); loaded: API %u.%u.%u%s\n", built >> 16,
              (built >> 8) & 0xff, built & 0xff, loaded >> 16, (loaded >> 8) & 0xff, loaded & 0xff,
              (built >> 16) != (loaded >> 16) ? "  [WARN] another major version than Axon was built with" : "");
}

void summary() {
  int major = 0, minor = 0, abi_major = 0, abi_minor = 0;
  MPI_Get_version(&major, &minor);
  MPI_Abi_get_version(&abi_major, &abi_minor);
  std::printf("Axon MPI %s\n", PACKAGE_VERSION);
  std::printf("  MPI standard:      %d.%d\n", major, minor);
  std::printf("  MPI ABI:           %d.%d (include/mpi.h is the standard ABI header)\n", abi_major, abi_minor);
  transports_summary();
  cuda_summary();
  std::printf("  wire-up:           PMIx (mpirun, srun --mpi=pmix), singleton without a launcher\n");
  versions_summary();
  fortran_summary();
  std::printf("  parameters:        axon_info --params\n");
  std::printf("  counters:          axon_info --counters\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--params")) return list_params();
    if (!std::strcmp(argv[i], "--counters")) return list_counters();
    if (!std::strcmp(argv[i], "--doctor")) return run_doctor();
    if (!std::strcmp(argv[i], "--explain")) {
      // An optional count of ranks per node (the sm eager limit depends on it).
      int ranks = 0;
      if (i + 1 < argc && std::isdigit(static_cast<unsigned char>(argv[i + 1][0]))) ranks = std::atoi(argv[++i]);
      return run_explain(ranks);
    }
    if (!std::strcmp(argv[i], "--version")) {
      std::printf("axon_info (Axon MPI) %s\n", PACKAGE_VERSION);
      return 0;
    }
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage();
      return 0;
    }
    std::fprintf(stderr, "axon_info: unknown option '%s'\n", argv[i]);
    usage();
    return 1;
  }
  summary();
  return 0;
}
