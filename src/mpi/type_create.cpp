// The datatype constructors: MPI_Type_contiguous ... MPI_Type_create_darray,
// create_resized and dup, in their int and large-count (_c) bindings. The
// entry points check handles and pointers and convert arguments to
// MPI_Count; the engine (src/datatype/derived.cpp) checks counts and builds.
// Errors are raised on MPI_COMM_SELF (datatype calls have no communicator).
#include <vector>

#include "mpi/api.h"

using namespace axon;
using namespace axon::mpi;

namespace {

// The old type of a constructor: any valid handle, committed or not.
int old_type(MPI_Datatype handle, Datatype** out) {
  Datatype* t = datatype_from_handle(handle);
  if (!t) return MPI_ERR_TYPE;
  *out = t;
  return MPI_SUCCESS;
}

template <typename T>
std::vector<MPI_Count> widen(const T* values, MPI_Count n) {
  std::vector<MPI_Count> out(static_cast<size_t>(n > 0 ? n : 0));
  for (MPI_Count i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<MPI_Count>(values[i]);
  return out;
}

// Hands the made type to the user, or raises the engine's error. `made` is
// taken by reference: callers pass the constructor call and its output in
// one argument list, whose evaluation order C++ leaves unspecified.
int deliver(const char* fn, int rc, Datatype* const& made, MPI_Datatype* newtype) {
  if (rc != MPI_SUCCESS) return raise_self(rc, fn);
  *newtype = to_handle(made);
  return MPI_SUCCESS;
}

#define AXON_TYPE_ARGS(fn, newtype, oldtype, old)                                     \
  if (!(newtype)) return raise_self(MPI_ERR_ARG, fn, "newtype is NULL");               \
  Datatype* old = nullptr;                                                              \
  if (old_type(oldtype, &old)) return raise_self(MPI_ERR_TYPE, fn, "invalid oldtype")

// An array argument may be NULL only when it has no entries.
#define AXON_ARRAY_ARG(fn, array, n) \
  if ((n) > 0 && !(array)) return raise_self(MPI_ERR_ARG, fn, #array " is NULL")

int contiguous(const char* fn, MPI_Count count, MPI_Datatype oldtype, MPI_Datatype* newtype, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  Datatype* made = nullptr;
  return deliver(fn, type_contiguous(count, old, large, &made), made, newtype);
}

int vector(const char* fn, MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
           MPI_Datatype* newtype, bool bytes, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  Datatype* made = nullptr;
  int rc = bytes ? type_hvector(count, blocklength, stride, old, large, &made)
                 : type_vector(count, blocklength, stride, old, large, &made);
  return deliver(fn, rc, made, newtype);
}

template <typename B, typename D>
int indexed(const char* fn, MPI_Count count, const B* blocklengths, const D* displacements, MPI_Datatype oldtype,
            MPI_Datatype* newtype, bool bytes, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  if (count < 0) return raise_self(MPI_ERR_COUNT, fn, "negative count");
  AXON_ARRAY_ARG(fn, blocklengths, count);
  AXON_ARRAY_ARG(fn, displacements, count);
  std::vector<MPI_Count> b = widen(blocklengths, count), d = widen(displacements, count);
  Datatype* made = nullptr;
  int rc = bytes ? type_hindexed(count, b.data(), d.data(), old, large, &made)
                 : type_indexed(count, b.data(), d.data(), old, large, &made);
  return deliver(fn, rc, made, newtype);
}

template <typename D>
int indexed_block(const char* fn, MPI_Count count, MPI_Count blocklength, const D* displacements,
                  MPI_Datatype oldtype, MPI_Datatype* newtype, bool bytes, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  if (count < 0) return raise_self(MPI_ERR_COUNT, fn, "negative count");
  AXON_ARRAY_ARG(fn, displacements, count);
  std::vector<MPI_Count> d = widen(displacements, count);
  Datatype* made = nullptr;
  int rc = bytes ? type_hindexed_block(count, blocklength, d.data(), old, large, &made)
                 : type_indexed_block(count, blocklength, d.data(), old, large, &made);
  return deliver(fn, rc, made, newtype);
}

template <typename B, typename D>
int structure(const char* fn, MPI_Count count, const B* blocklengths, const D* displacements,
              const MPI_Datatype* types, MPI_Datatype* newtype, bool large) {
  if (!newtype) return raise_self(MPI_ERR_ARG, fn, "newtype is NULL");
  if (count < 0) return raise_self(MPI_ERR_COUNT, fn, "negative count");
  AXON_ARRAY_ARG(fn, blocklengths, count);
  AXON_ARRAY_ARG(fn, displacements, count);
  AXON_ARRAY_ARG(fn, types, count);
  std::vector<Datatype*> olds(static_cast<size_t>(count));
  for (MPI_Count i = 0; i < count; ++i)
    if (old_type(types[i], &olds[static_cast<size_t>(i)])) return raise_self(MPI_ERR_TYPE, fn, "invalid type");
  std::vector<MPI_Count> b = widen(blocklengths, count), d = widen(displacements, count);
  Datatype* made = nullptr;
  return deliver(fn, type_struct(count, b.data(), d.data(), olds.data(), large, &made), made, newtype);
}

template <typename S>
int subarray(const char* fn, int ndims, const S* sizes, const S* subsizes, const S* starts, int order,
             MPI_Datatype oldtype, MPI_Datatype* newtype, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  if (ndims <= 0) return raise_self(MPI_ERR_ARG, fn, "ndims must be positive");
  if (!sizes || !subsizes || !starts) return raise_self(MPI_ERR_ARG, fn, "NULL array");
  std::vector<MPI_Count> n = widen(sizes, ndims), s = widen(subsizes, ndims), st = widen(starts, ndims);
  Datatype* made = nullptr;
  return deliver(fn, type_subarray(ndims, n.data(), s.data(), st.data(), order, old, large, &made), made, newtype);
}

template <typename G>
int darray(const char* fn, int size, int rank, int ndims, const G* gsizes, const int* distribs, const int* dargs,
           const int* psizes, int order, MPI_Datatype oldtype, MPI_Datatype* newtype, bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  if (ndims <= 0) return raise_self(MPI_ERR_ARG, fn, "ndims must be positive");
  if (!gsizes || !distribs || !dargs || !psizes) return raise_self(MPI_ERR_ARG, fn, "NULL array");
  std::vector<MPI_Count> g = widen(gsizes, ndims);
  Datatype* made = nullptr;
  int rc = type_darray(size, rank, ndims, g.data(), distribs, dargs, psizes, order, old, large, &made);
  return deliver(fn, rc, made, newtype);
}

int resized(const char* fn, MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent, MPI_Datatype* newtype,
            bool large) {
  AXON_TYPE_ARGS(fn, newtype, oldtype, old);
  Datatype* made = nullptr;
  return deliver(fn, type_resized(old, lb, extent, large, &made), made, newtype);
}

}  // namespace

AXON_API(int, MPI_Type_contiguous, (int count, MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return contiguous("MPI_Type_contiguous", count, oldtype, newtype, false);
}
AXON_API(int, MPI_Type_contiguous_c, (MPI_Count count, MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return contiguous("MPI_Type_contiguous_c", count, oldtype, newtype, true);
}

AXON_API(int, MPI_Type_vector, (int count, int blocklength, int stride, MPI_Datatype oldtype,
                                MPI_Datatype* newtype)) {
  return vector("MPI_Type_vector", count, blocklength, stride, oldtype, newtype, false, false);
}
AXON_API(int, MPI_Type_vector_c, (MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
                                  MPI_Datatype* newtype)) {
  return vector("MPI_Type_vector_c", count, blocklength, stride, oldtype, newtype, false, true);
}
AXON_API(int, MPI_Type_create_hvector, (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                        MPI_Datatype* newtype)) {
  return vector("MPI_Type_create_hvector", count, blocklength, stride, oldtype, newtype, true, false);
}
AXON_API(int, MPI_Type_create_hvector_c, (MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                          MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return vector("MPI_Type_create_hvector_c", count, blocklength, stride, oldtype, newtype, true, true);
}
// MPI-1's name, removed in MPI-3.0 and kept for old codes (mpi.h).
AXON_API(int, MPI_Type_hvector, (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                 MPI_Datatype* newtype)) {
  return vector("MPI_Type_hvector", count, blocklength, stride, oldtype, newtype, true, false);
}

AXON_API(int, MPI_Type_indexed, (int count, const int array_of_blocklengths[], const int array_of_displacements[],
                                 MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return indexed("MPI_Type_indexed", count, array_of_blocklengths, array_of_displacements, oldtype, newtype, false,
                 false);
}
AXON_API(int, MPI_Type_indexed_c, (MPI_Count count, const MPI_Count array_of_blocklengths[],
                                   const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                   MPI_Datatype* newtype)) {
  return indexed("MPI_Type_indexed_c", count, array_of_blocklengths, array_of_displacements, oldtype, newtype,
                 false, true);
}
AXON_API(int, MPI_Type_create_hindexed, (int count, const int array_of_blocklengths[],
                                         const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                         MPI_Datatype* newtype)) {
  return indexed("MPI_Type_create_hindexed", count, array_of_blocklengths, array_of_displacements, oldtype, newtype,
                 true, false);
}
AXON_API(int, MPI_Type_create_hindexed_c, (MPI_Count count, const MPI_Count array_of_blocklengths[],
                                           const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                           MPI_Datatype* newtype)) {
  return indexed("MPI_Type_create_hindexed_c", count, array_of_blocklengths, array_of_displacements, oldtype,
                 newtype, true, true);
}
// MPI-1's name, removed in MPI-3.0 and kept for old codes (mpi.h).
AXON_API(int, MPI_Type_hindexed, (int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return indexed("MPI_Type_hindexed", count, array_of_blocklengths, array_of_displacements, oldtype, newtype, true,
                 false);
}

AXON_API(int, MPI_Type_create_indexed_block, (int count, int blocklength, const int array_of_displacements[],
                                              MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return indexed_block("MPI_Type_create_indexed_block", count, blocklength, array_of_displacements, oldtype,
                       newtype, false, false);
}
AXON_API(int, MPI_Type_create_indexed_block_c, (MPI_Count count, MPI_Count blocklength,
                                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                                MPI_Datatype* newtype)) {
  return indexed_block("MPI_Type_create_indexed_block_c", count, blocklength, array_of_displacements, oldtype,
                       newtype, false, true);
}
AXON_API(int, MPI_Type_create_hindexed_block, (int count, int blocklength, const MPI_Aint array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return indexed_block("MPI_Type_create_hindexed_block", count, blocklength, array_of_displacements, oldtype,
                       newtype, true, false);
}
AXON_API(int, MPI_Type_create_hindexed_block_c, (MPI_Count count, MPI_Count blocklength,
                                                 const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                                 MPI_Datatype* newtype)) {
  return indexed_block("MPI_Type_create_hindexed_block_c", count, blocklength, array_of_displacements, oldtype,
                       newtype, true, true);
}

AXON_API(int, MPI_Type_create_struct, (int count, const int array_of_blocklengths[],
                                       const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[],
                                       MPI_Datatype* newtype)) {
  return structure("MPI_Type_create_struct", count, array_of_blocklengths, array_of_displacements, array_of_types,
                   newtype, false);
}
AXON_API(int, MPI_Type_create_struct_c, (MPI_Count count, const MPI_Count array_of_blocklengths[],
                                         const MPI_Count array_of_displacements[],
                                         const MPI_Datatype array_of_types[], MPI_Datatype* newtype)) {
  return structure("MPI_Type_create_struct_c", count, array_of_blocklengths, array_of_displacements,
                   array_of_types, newtype, true);
}
// MPI-1's name, removed in MPI-3.0 and kept for old codes (mpi.h).
AXON_API(int, MPI_Type_struct, (int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                                MPI_Datatype array_of_types[], MPI_Datatype* newtype)) {
  return structure("MPI_Type_struct", count, array_of_blocklengths, array_of_displacements, array_of_types, newtype,
                   false);
}

AXON_API(int, MPI_Type_create_subarray, (int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                         const int array_of_starts[], int order, MPI_Datatype oldtype,
                                         MPI_Datatype* newtype)) {
  return subarray("MPI_Type_create_subarray", ndims, array_of_sizes, array_of_subsizes, array_of_starts, order,
                  oldtype, newtype, false);
}
AXON_API(int, MPI_Type_create_subarray_c, (int ndims, const MPI_Count array_of_sizes[],
                                           const MPI_Count array_of_subsizes[], const MPI_Count array_of_starts[],
                                           int order, MPI_Datatype oldtype, MPI_Datatype* newtype)) {
  return subarray("MPI_Type_create_subarray_c", ndims, array_of_sizes, array_of_subsizes, array_of_starts, order,
                  oldtype, newtype, true);
}

AXON_API(int, MPI_Type_create_darray, (int size, int rank, int ndims, const int array_of_gsizes[],
                                       const int array_of_distribs[], const int array_of_dargs[],
                                       const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                       MPI_Datatype* newtype)) {
  return darray("MPI_Type_create_darray", size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                array_of_psizes, order, oldtype, newtype, false);
}
AXON_API(int, MPI_Type_create_darray_c, (int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                                         const int array_of_distribs[], const int array_of_dargs[],
                                         const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                         MPI_Datatype* newtype)) {
  return darray("MPI_Type_create_darray_c", size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                array_of_psizes, order, oldtype, newtype, true);
}

AXON_API(int, MPI_Type_create_resized, (MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                        MPI_Datatype* newtype)) {
  return resized("MPI_Type_create_resized", oldtype, lb, extent, newtype, false);
}
AXON_API(int, MPI_Type_create_resized_c, (MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                                          MPI_Datatype* newtype)) {
  return resized("MPI_Type_create_resized_c", oldtype, lb, extent, newtype, true);
}
