// axon_info: what this Axon installation is and how it can be tuned.
//   axon_info            version, ABI, transports
//   axon_info --params   every AXON_* parameter with its default and meaning
//   axon_info --counters every performance counter (MPI_T performance variable)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "axon_config.h"
#include "tools/doctor.h"

namespace {

void usage() {
  std::printf(
      "usage: axon_info [--params] [--counters] [--doctor] [--version] [--help]\n"
      "  --params    list every AXON_* environment parameter, its default and meaning\n"
      "  --counters  list the performance counters a running job keeps (MPI_T pvars)\n"
      "  --doctor    check this node for RDMA: devices, ports, GIDs, MTU, ulimit -l, NUMA\n"
      "  --version   print the version\n");
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
    const char* kind = type == MPI_CHAR ? "string" : type == MPI_INT ? "boolean" : "integer";
    std::printf("%s (%s)\n    %s\n", name, kind, desc);
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

void summary() {
  int major = 0, minor = 0, abi_major = 0, abi_minor = 0;
  MPI_Get_version(&major, &minor);
  MPI_Abi_get_version(&abi_major, &abi_minor);
  std::printf("Axon MPI %s\n", PACKAGE_VERSION);
  std::printf("  MPI standard:      %d.%d\n", major, minor);
  std::printf("  MPI ABI:           %d.%d (include/mpi.h is the standard ABI header)\n", abi_major, abi_minor);
  std::printf("  transports (btl):  self, sm (shared memory, CMA single copy)\n");
  std::printf("  wire-up:           PMIx (mpirun, srun --mpi=pmix), singleton without a launcher\n");
  std::printf("  parameters:        axon_info --params\n");
  std::printf("  counters:          axon_info --counters\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--params")) return list_params();
    if (!std::strcmp(argv[i], "--counters")) return list_counters();
    if (!std::strcmp(argv[i], "--doctor")) return run_doctor();
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
