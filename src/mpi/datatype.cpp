// Datatype queries and lifetime: size/extent (int, _x, _c), names,
// envelope/contents, commit/dup/free, match_size, get_value_index, and the
// address helpers. Constructors are in type_create.cpp, packing in pack.cpp.
// Datatype calls have no communicator: errors are raised on MPI_COMM_SELF.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "mpi/api.h"
#include "mpi/attributes.h"

using namespace axon;
using namespace axon::mpi;

namespace {
int type_or_raise(MPI_Datatype handle, Datatype** out, const char* fn) {
  Datatype* t = datatype_from_handle(handle);
  if (!t) return raise_self(MPI_ERR_TYPE, fn, "invalid datatype");
  *out = t;
  return MPI_SUCCESS;
}

template <typename T>
int size_of(const char* fn, MPI_Datatype datatype, T* size) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, fn)) return rc;
  if (!size) return raise_self(MPI_ERR_ARG, fn, "size is NULL");
  if constexpr (sizeof(T) == sizeof(int))
    *size = t->size > static_cast<size_t>(INT32_MAX) ? MPI_UNDEFINED : static_cast<int>(t->size);
  else
    *size = static_cast<T>(t->size);
  return MPI_SUCCESS;
}

template <typename T>
int extent_of(const char* fn, MPI_Datatype datatype, T* lb, T* extent, bool true_bounds) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, fn)) return rc;
  if (!lb || !extent) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  *lb = static_cast<T>(true_bounds ? t->true_lb : t->lb);
  *extent = static_cast<T>(true_bounds ? t->true_extent : t->extent);
  return MPI_SUCCESS;
}

// The envelope of a type: (integers, addresses, large counts, types, combiner).
struct Envelope {
  MPI_Count ints = 0, addresses = 0, large_counts = 0, types = 0;
  int combiner = MPI_COMBINER_NAMED;
};
Envelope envelope_of(const Datatype& t) {
  Envelope e;
  if (const TypeContents* c = type_contents(t)) {
    e.ints = static_cast<MPI_Count>(c->ints.size());
    e.addresses = static_cast<MPI_Count>(c->addresses.size());
    e.large_counts = static_cast<MPI_Count>(c->large_counts.size());
    e.types = static_cast<MPI_Count>(c->types.size());
    e.combiner = c->combiner;
  }
  return e;
}

int contents_of(const char* fn, MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                MPI_Count max_large_counts, MPI_Count max_datatypes, int* integers, MPI_Aint* addresses,
                MPI_Count* large_counts, MPI_Datatype* datatypes, bool large_binding) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, fn)) return rc;
  const TypeContents* c = type_contents(*t);
  if (!c) return raise_self(MPI_ERR_TYPE, fn, "a predefined datatype has no contents");
  if (!large_binding && !c->large_counts.empty())
    return raise_self(MPI_ERR_TYPE, fn, "made by a large-count constructor: use MPI_Type_get_contents_c");
  if (max_integers < static_cast<MPI_Count>(c->ints.size()) ||
      max_addresses < static_cast<MPI_Count>(c->addresses.size()) ||
      max_large_counts < static_cast<MPI_Count>(c->large_counts.size()) ||
      max_datatypes < static_cast<MPI_Count>(c->types.size()))
    return raise_self(MPI_ERR_ARG, fn, "an output array is smaller than the envelope says");
  if ((!c->ints.empty() && !integers) || (!c->addresses.empty() && !addresses) ||
      (!c->large_counts.empty() && !large_counts) || (!c->types.empty() && !datatypes))
    return raise_self(MPI_ERR_ARG, fn, "NULL output array");
  std::copy(c->ints.begin(), c->ints.end(), integers);
  std::copy(c->addresses.begin(), c->addresses.end(), addresses);
  std::copy(c->large_counts.begin(), c->large_counts.end(), large_counts);
  // Derived types come back as new references the caller frees (MPI-4.1 5.1.13).
  for (size_t i = 0; i < c->types.size(); ++i) {
    datatype_retain(c->types[i]);
    datatypes[i] = to_handle(c->types[i]);
  }
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Type_size, (MPI_Datatype datatype, int* size)) {
  return size_of("MPI_Type_size", datatype, size);
}
AXON_API(int, MPI_Type_size_c, (MPI_Datatype datatype, MPI_Count* size)) {
  return size_of("MPI_Type_size_c", datatype, size);
}
AXON_API(int, MPI_Type_size_x, (MPI_Datatype datatype, MPI_Count* size)) {
  return size_of("MPI_Type_size_x", datatype, size);
}

AXON_API(int, MPI_Type_get_extent, (MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent)) {
  return extent_of("MPI_Type_get_extent", datatype, lb, extent, false);
}
AXON_API(int, MPI_Type_get_extent_c, (MPI_Datatype datatype, MPI_Count* lb, MPI_Count* extent)) {
  return extent_of("MPI_Type_get_extent_c", datatype, lb, extent, false);
}
AXON_API(int, MPI_Type_get_extent_x, (MPI_Datatype datatype, MPI_Count* lb, MPI_Count* extent)) {
  return extent_of("MPI_Type_get_extent_x", datatype, lb, extent, false);
}
AXON_API(int, MPI_Type_get_true_extent, (MPI_Datatype datatype, MPI_Aint* true_lb, MPI_Aint* true_extent)) {
  return extent_of("MPI_Type_get_true_extent", datatype, true_lb, true_extent, true);
}
AXON_API(int, MPI_Type_get_true_extent_c, (MPI_Datatype datatype, MPI_Count* true_lb, MPI_Count* true_extent)) {
  return extent_of("MPI_Type_get_true_extent_c", datatype, true_lb, true_extent, true);
}
AXON_API(int, MPI_Type_get_true_extent_x, (MPI_Datatype datatype, MPI_Count* true_lb, MPI_Count* true_extent)) {
  return extent_of("MPI_Type_get_true_extent_x", datatype, true_lb, true_extent, true);
}

// MPI-1's names, removed in MPI-3.0 and kept for old codes (mpi.h). Without
// MPI_LB / MPI_UB markers the bounds they report are the type's lb and ub.
AXON_API(int, MPI_Type_extent, (MPI_Datatype datatype, MPI_Aint* extent)) {
  MPI_Aint lb = 0;
  return extent_of("MPI_Type_extent", datatype, &lb, extent, false);
}
AXON_API(int, MPI_Type_lb, (MPI_Datatype datatype, MPI_Aint* displacement)) {
  MPI_Aint extent = 0;
  return extent_of("MPI_Type_lb", datatype, displacement, &extent, false);
}
AXON_API(int, MPI_Type_ub, (MPI_Datatype datatype, MPI_Aint* displacement)) {
  MPI_Aint lb = 0;
  int rc = extent_of("MPI_Type_ub", datatype, &lb, displacement, false);
  if (rc == MPI_SUCCESS) *displacement += lb;
  return rc;
}

AXON_API(int, MPI_Type_get_name, (MPI_Datatype datatype, char* type_name, int* resultlen)) {
  // MPI-4.1 7.8: the null handle is allowed, and named after itself.
  Datatype* t = nullptr;
  if (datatype != MPI_DATATYPE_NULL)
    if (int rc = type_or_raise(datatype, &t, "MPI_Type_get_name")) return rc;
  if (!type_name || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Type_get_name", "NULL argument");
  const char* name = t ? t->name : "MPI_DATATYPE_NULL";
  size_t n = strnlen(name, MPI_MAX_OBJECT_NAME - 1);
  std::memcpy(type_name, name, n);
  type_name[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_set_name, (MPI_Datatype datatype, const char* type_name)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_set_name")) return rc;
  if (!type_name) return raise_self(MPI_ERR_ARG, "MPI_Type_set_name", "type_name is NULL");
  // Longer names are truncated to MPI_MAX_OBJECT_NAME - 1 characters.
  size_t n = strnlen(type_name, MPI_MAX_OBJECT_NAME - 1);
  std::memcpy(t->name_buffer, type_name, n);
  t->name_buffer[n] = '\0';
  t->name = t->name_buffer;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_commit, (MPI_Datatype * datatype)) {
  if (!datatype) return raise_self(MPI_ERR_ARG, "MPI_Type_commit", "datatype is NULL");
  Datatype* t = nullptr;
  if (int rc = type_or_raise(*datatype, &t, "MPI_Type_commit")) return rc;
  t->committed = true;
  return MPI_SUCCESS;
}

namespace {
bool is_f90_type(const Datatype* t);  // below, with MPI_Type_create_f90_*
}

AXON_API(int, MPI_Type_free, (MPI_Datatype * datatype)) {
  const char* fn = "MPI_Type_free";
  if (!datatype) return raise_self(MPI_ERR_ARG, fn, "datatype is NULL");
  Datatype* t = nullptr;
  if (int rc = type_or_raise(*datatype, &t, fn)) return rc;
  if (t->predefined) return raise_self(MPI_ERR_TYPE, fn, "predefined datatypes cannot be freed");
  if (is_f90_type(t))
    return raise_self(MPI_ERR_TYPE, fn, "types from MPI_Type_create_f90_* are predefined and cannot be freed");
  // Attributes go while the handle is valid; the object itself lives on
  // while types built from it or pending operations still hold references.
  if (int rc = type_attributes_delete_all(*datatype)) return raise_self(rc, fn, "an attribute delete callback failed");
  datatype_release(t);
  *datatype = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_dup, (MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  const char* fn = "MPI_Type_dup";
  Datatype* t = nullptr;
  if (int rc = type_or_raise(oldtype, &t, fn)) return rc;
  if (!newtype) return raise_self(MPI_ERR_ARG, fn, "newtype is NULL");
  *newtype = MPI_DATATYPE_NULL;  // what a failed call leaves behind (as MPICH)
  Datatype* made = nullptr;
  if (int rc = type_dup(t, &made)) return raise_self(rc, fn);
  made->committed = t->committed;  // a duplicate of a committed type is committed
  MPI_Datatype handle = to_handle(made);
  if (int rc = type_attributes_copy(oldtype, handle)) {
    datatype_release(made);
    return raise_self(rc, fn, "an attribute copy callback failed");
  }
  *newtype = handle;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_envelope, (MPI_Datatype datatype, int* num_integers, int* num_addresses,
                                      int* num_datatypes, int* combiner)) {
  const char* fn = "MPI_Type_get_envelope";
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, fn)) return rc;
  if (!num_integers || !num_addresses || !num_datatypes || !combiner) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  Envelope e = envelope_of(*t);
  if (e.large_counts > 0)
    return raise_self(MPI_ERR_TYPE, fn, "made by a large-count constructor: use MPI_Type_get_envelope_c");
  *num_integers = static_cast<int>(e.ints);
  *num_addresses = static_cast<int>(e.addresses);
  *num_datatypes = static_cast<int>(e.types);
  *combiner = e.combiner;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_envelope_c, (MPI_Datatype datatype, MPI_Count* num_integers, MPI_Count* num_addresses,
                                        MPI_Count* num_large_counts, MPI_Count* num_datatypes, int* combiner)) {
  const char* fn = "MPI_Type_get_envelope_c";
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, fn)) return rc;
  if (!num_integers || !num_addresses || !num_large_counts || !num_datatypes || !combiner)
    return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  Envelope e = envelope_of(*t);
  *num_integers = e.ints;
  *num_addresses = e.addresses;
  *num_large_counts = e.large_counts;
  *num_datatypes = e.types;
  *combiner = e.combiner;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_contents, (MPI_Datatype datatype, int max_integers, int max_addresses,
                                      int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[],
                                      MPI_Datatype array_of_datatypes[])) {
  return contents_of("MPI_Type_get_contents", datatype, max_integers, max_addresses, 0, max_datatypes,
                     array_of_integers, array_of_addresses, nullptr, array_of_datatypes, false);
}

AXON_API(int, MPI_Type_get_contents_c, (MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                        MPI_Count max_large_counts, MPI_Count max_datatypes,
                                        int array_of_integers[], MPI_Aint array_of_addresses[],
                                        MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[])) {
  return contents_of("MPI_Type_get_contents_c", datatype, max_integers, max_addresses, max_large_counts,
                     max_datatypes, array_of_integers, array_of_addresses, array_of_large_counts,
                     array_of_datatypes, true);
}

AXON_API(int, MPI_Type_match_size, (int typeclass, int size, MPI_Datatype* datatype)) {
  const char* fn = "MPI_Type_match_size";
  if (!datatype) return raise_self(MPI_ERR_ARG, fn, "datatype is NULL");
  Datatype* t = type_match_size(typeclass, size);
  if (!t) return raise_self(MPI_ERR_ARG, fn, "no predefined type of this class and size");
  *datatype = to_handle(t);
  return MPI_SUCCESS;
}

// ---- MPI_Type_create_f90_integer / _real / _complex -----------------------------
// The standard (MPI-4.1 19.3.5) makes these return predefined-like types: the
// same (combiner, p, r) gives the same handle, which is never freed, and
// MPI_Type_get_envelope reports MPI_COMBINER_F90_* with the values asked for.
// The choice follows Fortran's SELECTED_REAL_KIND / SELECTED_INT_KIND for
// gfortran on x86-64: the smallest kind whose decimal precision and exponent
// range both suffice.
namespace {

struct F90Kind {
  int precision;  // decimal digits (integers: unused)
  int range;      // decimal exponent range (integers: digits)
  MPI_Datatype type;
};
const F90Kind kF90Reals[] = {{6, 37, MPI_REAL4}, {15, 307, MPI_REAL8}, {33, 4931, MPI_REAL16}};
const F90Kind kF90Complexes[] = {{6, 37, MPI_COMPLEX8}, {15, 307, MPI_COMPLEX16}, {33, 4931, MPI_COMPLEX32}};
const F90Kind kF90Integers[] = {{0, 2, MPI_INTEGER1}, {0, 4, MPI_INTEGER2}, {0, 9, MPI_INTEGER4},
                                    {0, 18, MPI_INTEGER8}, {0, 38, MPI_INTEGER16}};

std::mutex f90_mutex;
// (combiner, p, r) -> the type handed out; each holds its reference forever.
std::map<std::tuple<int, int, int>, Datatype*>& f90_cache() {
  static auto* cache = new std::map<std::tuple<int, int, int>, Datatype*>;  // outlives static destructors
  return *cache;
}

bool is_f90_type(const Datatype* t) {
  std::lock_guard<std::mutex> lock(f90_mutex);
  for (const auto& [key, made] : f90_cache())
    if (made == t) return true;
  return false;
}

template <size_t N>
int f90_type(const char* fn, const F90Kind (&kinds)[N], int combiner, int p, int r, MPI_Datatype* newtype) {
  if (!newtype) return raise_self(MPI_ERR_ARG, fn, "newtype is NULL");
  const bool is_integer = combiner == MPI_COMBINER_F90_INTEGER;
  if (!is_integer && p == MPI_UNDEFINED && r == MPI_UNDEFINED)
    return raise_self(MPI_ERR_ARG, fn, "at least one of p and r must be given (both are MPI_UNDEFINED)");
  const int want_p = p == MPI_UNDEFINED ? 0 : p;
  const int want_r = r == MPI_UNDEFINED ? 0 : r;
  const F90Kind* chosen = nullptr;
  for (const F90Kind& k : kinds) {
    if (want_p <= k.precision && want_r <= k.range) {
      chosen = &k;
      break;
    }
  }
  if (!chosen) {
    *newtype = MPI_DATATYPE_NULL;
    char why[128];
    if (is_integer)
      std::snprintf(why, sizeof why, "no Fortran integer kind has a range of %d digits", r);
    else
      std::snprintf(why, sizeof why, "no Fortran kind has precision %d and range %d", p, r);
    return raise_self(MPI_ERR_ARG, fn, why);
  }
  std::lock_guard<std::mutex> lock(f90_mutex);
  auto key = std::make_tuple(combiner, is_integer ? 0 : p, r);
  auto& cache = f90_cache();
  auto found = cache.find(key);
  if (found == cache.end()) {
    Datatype* made = nullptr;
    const int params[] = {p, r};
    std::span<const int> recorded = is_integer ? std::span<const int>(params + 1, 1) : std::span<const int>(params, 2);
    if (int rc = type_f90(datatype_from_handle(chosen->type), combiner, recorded, &made)) return raise_self(rc, fn);
    found = cache.emplace(key, made).first;
  }
  *newtype = to_handle(found->second);
  return MPI_SUCCESS;
}

}  // namespace

AXON_API(int, MPI_Type_create_f90_real, (int p, int r, MPI_Datatype* newtype)) {
  return f90_type("MPI_Type_create_f90_real", kF90Reals, MPI_COMBINER_F90_REAL, p, r, newtype);
}
AXON_API(int, MPI_Type_create_f90_complex, (int p, int r, MPI_Datatype* newtype)) {
  return f90_type("MPI_Type_create_f90_complex", kF90Complexes, MPI_COMBINER_F90_COMPLEX, p, r, newtype);
}
AXON_API(int, MPI_Type_create_f90_integer, (int r, MPI_Datatype* newtype)) {
  return f90_type("MPI_Type_create_f90_integer", kF90Integers, MPI_COMBINER_F90_INTEGER, 0, r, newtype);
}

AXON_API(int, MPI_Type_get_value_index, (MPI_Datatype value_type, MPI_Datatype index_type,
                                         MPI_Datatype* pair_type)) {
  const char* fn = "MPI_Type_get_value_index";
  Datatype *value = nullptr, *index = nullptr;
  if (int rc = type_or_raise(value_type, &value, fn)) return rc;
  if (int rc = type_or_raise(index_type, &index, fn)) return rc;
  if (!pair_type) return raise_self(MPI_ERR_ARG, fn, "pair_type is NULL");
  *pair_type = to_handle(type_value_index(*value, *index));  // MPI_DATATYPE_NULL when none
  return MPI_SUCCESS;
}

namespace {
int address_of(const char* fn, const void* location, MPI_Aint* address) {
  if (!address) return raise_self(MPI_ERR_ARG, fn, "address is NULL");
  *address = static_cast<MPI_Aint>(reinterpret_cast<uintptr_t>(location));
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Get_address, (const void* location, MPI_Aint* address)) {
  return address_of("MPI_Get_address", location, address);
}
// MPI-1's name, removed in MPI-3.0 and kept for old codes (mpi.h).
AXON_API(int, MPI_Address, (void* location, MPI_Aint* address)) {
  return address_of("MPI_Address", location, address);
}

// Absolute addresses are plain byte addresses on Linux, so these are integer
// arithmetic (wrapping, as address arithmetic does).
AXON_API(MPI_Aint, MPI_Aint_add, (MPI_Aint base, MPI_Aint disp)) {
  return static_cast<MPI_Aint>(static_cast<uintptr_t>(base) + static_cast<uintptr_t>(disp));
}
AXON_API(MPI_Aint, MPI_Aint_diff, (MPI_Aint addr1, MPI_Aint addr2)) {
  return static_cast<MPI_Aint>(static_cast<uintptr_t>(addr1) - static_cast<uintptr_t>(addr2));
}
