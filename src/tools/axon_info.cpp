// axon_info: what this Axon installation is and how it can be tuned.
//   axon_info            version, ABI, transports
//   axon_info --params   every AXON_* parameter with its default and meaning
//   axon_info --counters every performance counter (MPI_T performance variable)
#include <mpi.h>

#include <sys/stat.h>

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

void summary() {
  int major = 0, minor = 0, abi_major = 0, abi_minor = 0;
  MPI_Get_version(&major, &minor);
  MPI_Abi_get_version(&abi_major, &abi_minor);
  std::printf("Axon MPI %s\n", PACKAGE_VERSION);
  std::printf("  MPI standard:      %d.%d\n", major, minor);
  std::printf("  MPI ABI:           %d.%d (include/mpi.h is the standard ABI header)\n", abi_major, abi_minor);
  std::printf("  transports (btl):  self, sm (shared memory, CMA single copy)\n");
  std::printf("  wire-up:           PMIx (mpirun, srun --mpi=pmix), singleton without a launcher\n");
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
