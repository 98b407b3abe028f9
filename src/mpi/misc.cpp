// Small calls without a home of their own: memory allocation for MPI
// (MPI_Alloc_mem / MPI_Free_mem), the profiling control hook MPI_Pcontrol,
// and the ABI description MPI_Abi_get_info.
#include <cstdlib>
#include <string>

#include "mpi/api.h"
#include "mpi/info.h"

using namespace axon::mpi;

namespace {
// Memory from MPI_Alloc_mem is cache-line aligned: it is typically used for
// communication buffers and windows, where a split line costs a transfer.
constexpr size_t kAllocAlignment = 64;
}  // namespace

// Info hints (e.g. "mpi_minimum_memory_alignment") are accepted; alignments
// up to kAllocAlignment are always met.
AXON_API(int, MPI_Alloc_mem, (MPI_Aint size, MPI_Info info, void* baseptr)) {
  const char* fn = "MPI_Alloc_mem";
  if (size < 0) return raise_self(MPI_ERR_ARG, fn, "negative size");
  if (!baseptr) return raise_self(MPI_ERR_ARG, fn, "baseptr is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  size_t alignment = kAllocAlignment;
  if (Info* hints = info_from_handle(info)) {
    long long wanted = info_get_int(hints, "mpi_minimum_memory_alignment", 0);
    if (wanted > 0 && (wanted & (wanted - 1)) == 0 && static_cast<size_t>(wanted) > alignment)
      alignment = static_cast<size_t>(wanted);
  }
  void* memory = nullptr;
  if (posix_memalign(&memory, alignment, size > 0 ? static_cast<size_t>(size) : 1) != 0)
    return raise_self(MPI_ERR_NO_MEM, fn, "out of memory");
  *static_cast<void**>(baseptr) = memory;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Free_mem, (void* base)) {
  free(base);
  return MPI_SUCCESS;
}

// Profiling libraries interpose MPI_Pcontrol; the library itself does nothing.
AXON_API(int, MPI_Pcontrol, (const int level, ...)) {
  (void)level;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Abi_get_info, (MPI_Info * info)) {
  if (!info) return raise_self(MPI_ERR_ARG, "MPI_Abi_get_info", "info is NULL");
  Info* made = info_new();
  made->set("mpi_aint_size", std::to_string(sizeof(MPI_Aint)));
  made->set("mpi_count_size", std::to_string(sizeof(MPI_Count)));
  made->set("mpi_offset_size", std::to_string(sizeof(MPI_Offset)));
  *info = info_handle(made);
  return MPI_SUCCESS;
}
