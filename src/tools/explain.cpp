// axon_info --explain: the table AXON_EXPLAIN=1 prints line by line in a
// job, for this node, from the parameters in the environment (read through
// MPI_T, as a job reads them) and the probes axon_info runs. The words and
// rules are the library's own (src/diag/path.cpp, compiled into axon_info).
#include "tools/explain.h"

#include <mpi-ext.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "axon_config.h"
#include "btl/sm/layout.h"
#include "diag/path.h"
#include "tools/doctor.h"

namespace {

using axon::diag::PeerClass;
using axon::diag::TransportFacts;

// A parameter's value as a job would see it, read through MPI_T: its bytes
// (room for `count` items of its datatype) and datatype; false if unknown.
bool read_cvar(const char* name, std::vector<char>* value, MPI_Datatype* type) {
  int index = -1;
  if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return false;
  char name_buf[256], desc[2048];
  int name_len = sizeof name_buf, desc_len = sizeof desc, verbosity, bind, scope;
  MPI_T_enum enumtype;
  if (MPI_T_cvar_get_info(index, name_buf, &name_len, &verbosity, type, &enumtype, desc, &desc_len, &bind,
                          &scope) != MPI_SUCCESS)
    return false;
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return false;
  value->assign(static_cast<size_t>(std::max(count, 1)) * sizeof(MPI_Count) + 1, '\0');
  bool ok = MPI_T_cvar_read(handle, value->data()) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  return ok;
}

// A numeric parameter; `fallback` if unknown.
long long read_size(const char* name, long long fallback) {
  std::vector<char> value;
  MPI_Datatype type;
  if (!read_cvar(name, &value, &type) || type == MPI_CHAR) return fallback;
  if (type == MPI_INT) {
    int v;
    std::memcpy(&v, value.data(), sizeof v);
    return v;
  }
  MPI_Count v;
  std::memcpy(&v, value.data(), sizeof v);
  return static_cast<long long>(v);
}

// A string parameter; "" if unknown.
std::string read_string(const char* name) {
  std::vector<char> value;
  MPI_Datatype type;
  if (!read_cvar(name, &value, &type) || type != MPI_CHAR) return "";
  return value.data();
}

void print_row(PeerClass peer, const TransportFacts& t, size_t length, bool device) {
  axon::diag::Message m;
  m.length = length;
  m.device = device;
  const axon::diag::PathExplained e = axon::diag::explain_path(t, m);
  const bool eager = axon::diag::size_class(t, m) == axon::diag::SizeClass::Eager;
  const size_t limit = device ? t.device_eager_limit : t.eager_limit;
  std::string sizes = device && limit == 0 ? "every size"
                      : eager               ? "up to " + axon::diag::size_text(limit)
                                            : "above " + axon::diag::size_text(limit);
  std::printf("  %-22s %-6s %-4s %-14s %s: %s\n", axon::diag::peer_class_name(peer), t.name.c_str(),
              device ? "GPU" : "host", sizes.c_str(), e.protocol.c_str(), e.why.c_str());
}

void print_rows(PeerClass peer, const TransportFacts& t, bool gpu) {
  print_row(peer, t, t.eager_limit, false);
  print_row(peer, t, t.eager_limit + 1, false);
  if (!gpu) return;
  if (t.device_eager_limit) print_row(peer, t, t.device_eager_limit, true);
  print_row(peer, t, t.device_eager_limit + 1, true);
}

}  // namespace

int run_explain(int ranks_per_node) {
  if (ranks_per_node <= 0) ranks_per_node = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "axon_info: MPI_T_init_thread failed\n");
    return 1;
  }
  const bool gpu = MPIX_Query_cuda_support() == 1;
  const size_t device_eager = static_cast<size_t>(read_size("AXON_ACCEL_EAGER_LIMIT", 8192));
  const bool ipc = read_size("AXON_ACCEL_IPC", 1) != 0;
  std::printf("Point-to-point paths on this node, for %d ranks per node (axon_info --explain N for another "
              "count), with the AXON_* parameters of this environment:\n",
              ranks_per_node);
  std::printf("  %-22s %-6s %-4s %-14s protocol: why\n", "peer", "btl", "mem", "sizes");

  TransportFacts self;
  self.name = "self";
  self.eager_limit = 16 * 1024;  // src/btl/self/self.cpp
  self.can_get = true;
  print_rows(PeerClass::Self, self, gpu);

  TransportFacts sm;
  sm.name = "sm";
  long long sm_limit = read_size("AXON_BTL_SM_EAGER_LIMIT", 0);
  sm.eager_limit = sm_limit > 0 ? static_cast<size_t>(sm_limit) : axon::btl::sm::default_eager_limit(ranks_per_node);
  bool cma = false;
  std::string cma_why = cma_probe(&cma);
  sm.can_get = cma && read_size("AXON_BTL_SM_CMA", 1) != 0;
  sm.device_eager_limit = ipc ? 0 : std::min(sm.eager_limit, device_eager);
  sm.device_ipc = ipc;
  const bool sm_off = access("/dev/shm", W_OK | X_OK) != 0;
  TransportFacts tcp;
  tcp.name = "tcp";
  tcp.eager_limit = static_cast<size_t>(std::max(1024LL, read_size("AXON_BTL_TCP_EAGER_LIMIT", 65536)));
  tcp.device_eager_limit = std::min(tcp.eager_limit, device_eager);
  if (ranks_per_node > 1) print_rows(PeerClass::SameNode, sm_off ? tcp : sm, gpu);
  if (!sm_off && !cma) std::printf("    (sm single copy: %s)\n", cma_why.c_str());

  TransportFacts remote = tcp;
#ifdef AXON_HAVE_VERBS
  bool verbs_usable = false;
  verbs_here(&verbs_usable);
  if (verbs_usable) {
    remote = TransportFacts{};
    remote.name = "verbs";
    remote.eager_limit = static_cast<size_t>(read_size("AXON_BTL_VERBS_EAGER_LIMIT", 8192));
    const std::string rndv = read_string("AXON_BTL_VERBS_RNDV");
    remote.can_get = rndv != "put";
    remote.can_put = true;
    remote.registers = true;
    remote.device_eager_limit = std::min(remote.eager_limit, device_eager);
  }
#endif
  print_rows(PeerClass::OtherNode, remote, gpu);
  if (!gpu)
    std::printf("GPU memory: no usable CUDA driver and device here (axon_info --doctor); with one, large GPU "
                "messages go by CUDA IPC on a node and staged through pinned host memory between nodes.\n");
  MPI_T_finalize();
  return 0;
}
