// Small calls without a home of their own: memory allocation for MPI
// (MPI_Alloc_mem / MPI_Free_mem), the profiling control hook MPI_Pcontrol,
// and the ABI description MPI_Abi_get_info.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "datatype/datatype.h"
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

// ---- the Fortran side of the ABI (MPI 5.0 "Fortran Type Registration") -----
// Axon's datatype table is built for gfortran on x86-64 (INTEGER, REAL and
// LOGICAL of 4 bytes, DOUBLE PRECISION of 8, .TRUE. = 1 and .FALSE. = 0,
// which is also how the logical reduction kernels read and write them), so
// the implementation already knows these properties: the getters report
// them and the setters answer MPI_ERR_ABI, as the standard says for values
// that are already set. Logical sizes the table has no type for (32 bytes
// and up) can be registered once.
namespace {

bool is_power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

// Logical sizes with a predefined MPI_LOGICALn type.
bool known_logical_size(int size) { return size == 1 || size == 2 || size == 4 || size == 8 || size == 16; }

std::mutex fortran_booleans_mutex;
struct Booleans {
  std::vector<unsigned char> true_value, false_value;
};
std::map<int, Booleans>& registered_booleans() {
  static auto* map = new std::map<int, Booleans>;  // outlives static destructors
  return *map;
}

std::string type_size_text(MPI_Datatype handle) {
  const axon::Datatype* t = axon::datatype_from_handle(handle);
  return std::to_string(t ? t->size : 0);
}
const char* supported_text(MPI_Datatype handle) {
  const axon::Datatype* t = axon::datatype_from_handle(handle);
  return t && t->size > 0 ? "true" : "false";
}

}  // namespace

AXON_API(int, MPI_Abi_get_fortran_info, (MPI_Info * info)) {
  if (!info) return raise_self(MPI_ERR_ARG, "MPI_Abi_get_fortran_info", "info is NULL");
  Info* made = info_new();
  made->set("mpi_logical_size", type_size_text(MPI_LOGICAL));
  made->set("mpi_integer_size", type_size_text(MPI_INTEGER));
  made->set("mpi_real_size", type_size_text(MPI_REAL));
  made->set("mpi_double_precision_size", type_size_text(MPI_DOUBLE_PRECISION));
  const struct {
    const char* key;
    MPI_Datatype type;
  } optional[] = {
      {"mpi_logical1_supported", MPI_LOGICAL1},   {"mpi_logical2_supported", MPI_LOGICAL2},
      {"mpi_logical4_supported", MPI_LOGICAL4},   {"mpi_logical8_supported", MPI_LOGICAL8},
      {"mpi_logical16_supported", MPI_LOGICAL16}, {"mpi_integer1_supported", MPI_INTEGER1},
      {"mpi_integer2_supported", MPI_INTEGER2},   {"mpi_integer4_supported", MPI_INTEGER4},
      {"mpi_integer8_supported", MPI_INTEGER8},   {"mpi_integer16_supported", MPI_INTEGER16},
      {"mpi_real2_supported", MPI_REAL2},         {"mpi_real4_supported", MPI_REAL4},
      {"mpi_real8_supported", MPI_REAL8},         {"mpi_real16_supported", MPI_REAL16},
      {"mpi_complex4_supported", MPI_COMPLEX4},   {"mpi_complex8_supported", MPI_COMPLEX8},
      {"mpi_complex16_supported", MPI_COMPLEX16}, {"mpi_complex32_supported", MPI_COMPLEX32},
      {"mpi_double_complex_supported", MPI_DOUBLE_COMPLEX},
  };
  for (const auto& o : optional) made->set(o.key, supported_text(o.type));
  *info = info_handle(made);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Abi_set_fortran_info, (MPI_Info info)) {
  const char* fn = "MPI_Abi_set_fortran_info";
  if (!info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  return raise_self(MPI_ERR_ABI, fn,
                    "the Fortran type sizes are already set (Axon is built for gfortran on x86-64); "
                    "MPI_Abi_get_fortran_info shows them");
}

AXON_API(int, MPI_Abi_get_fortran_booleans, (int logical_size, void* logical_true, void* logical_false,
                                             int* is_set)) {
  const char* fn = "MPI_Abi_get_fortran_booleans";
  if (!is_power_of_two(logical_size)) return raise_self(MPI_ERR_ARG, fn, "logical_size is not a power of two");
  if (!logical_true || !logical_false || !is_set) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  const size_t n = static_cast<size_t>(logical_size);
  if (known_logical_size(logical_size)) {
    // Little-endian 1 and 0 of the logical's width.
    std::memset(logical_true, 0, n);
    std::memset(logical_false, 0, n);
    static_cast<unsigned char*>(logical_true)[0] = 1;
    *is_set = 1;
    return MPI_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(fortran_booleans_mutex);
  auto found = registered_booleans().find(logical_size);
  *is_set = found != registered_booleans().end();
  if (*is_set) {
    std::memcpy(logical_true, found->second.true_value.data(), n);
    std::memcpy(logical_false, found->second.false_value.data(), n);
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Abi_set_fortran_booleans, (int logical_size, void* logical_true, void* logical_false)) {
  const char* fn = "MPI_Abi_set_fortran_booleans";
  if (!is_power_of_two(logical_size)) return raise_self(MPI_ERR_ARG, fn, "logical_size is not a power of two");
  if (!logical_true || !logical_false) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  if (known_logical_size(logical_size))
    return raise_self(MPI_ERR_ABI, fn, "the booleans of this logical size are already set (.TRUE. = 1, .FALSE. = 0)");
  const size_t n = static_cast<size_t>(logical_size);
  std::lock_guard<std::mutex> lock(fortran_booleans_mutex);
  auto& map = registered_booleans();
  if (map.count(logical_size)) return raise_self(MPI_ERR_ABI, fn, "the booleans of this logical size were set before");
  const auto* t = static_cast<const unsigned char*>(logical_true);
  const auto* f = static_cast<const unsigned char*>(logical_false);
  map[logical_size] = Booleans{{t, t + n}, {f, f + n}};
  return MPI_SUCCESS;
}
