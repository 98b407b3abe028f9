// The MPI-1 routines that legacy Fortran codes still call, with the default
// INTEGER arguments their Fortran forms have (docs/fortran.md, "MPI-1
// routines"): MPI_KEYVAL_CREATE, MPI_ATTR_PUT / _GET (deprecated since
// MPI-2.0; INTEGER attribute values and extra state, and their callbacks
// MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, MPI_DUP_FN), MPI_ADDRESS,
// MPI_TYPE_EXTENT / _LB / _UB, MPI_TYPE_HINDEXED / _STRUCT and
// MPI_ERRHANDLER_CREATE (removed in MPI-3.0; MPICH still has them).
// MPI_ATTR_DELETE, MPI_KEYVAL_FREE and MPI_TYPE_HVECTOR are generated.
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "fortran/attr_box.h"
#include "fortran/fortran_util.h"

namespace {
using Fint = MPI_Fint;

// SUBROUTINE COPY_FUNCTION(OLDCOMM, KEYVAL, EXTRA_STATE, ATTRIBUTE_VAL_IN,
//                          ATTRIBUTE_VAL_OUT, FLAG, IERR), all INTEGER but FLAG.
using FCopyFn = void (*)(Fint*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);
// SUBROUTINE DELETE_FUNCTION(COMM, KEYVAL, ATTRIBUTE_VAL, EXTRA_STATE, IERR)
using FDeleteFn = void (*)(Fint*, Fint*, Fint*, Fint*, Fint*);
using FErrFn = void (*)(Fint*, Fint*);

// An INTEGER attribute value is boxed sign-extended, as MPI_COMM_SET_ATTR
// boxes an INTEGER(KIND=MPI_ADDRESS_KIND) one (attr_box.h): both families of
// routines see the same number, C a pointer to it.
void* to_attribute(Fint v) { return axon::fortran::attr_box(static_cast<MPI_Aint>(v)); }
Fint from_attribute(void* v) { return static_cast<Fint>(axon::fortran::attr_box_value(v)); }

struct Mpi1Keyval {
  FCopyFn copy = nullptr;
  FDeleteFn del = nullptr;
};
std::mutex keyval_lock;
std::map<int, Mpi1Keyval> keyvals;

Mpi1Keyval lookup(int keyval) {
  std::lock_guard<std::mutex> lock(keyval_lock);
  auto it = keyvals.find(keyval);
  return it == keyvals.end() ? Mpi1Keyval{} : it->second;
}

int copy_trampoline(MPI_Comm comm, int keyval, void* extra_state, void* in, void* out, int* flag) {
  Mpi1Keyval kv = lookup(keyval);
  if (!kv.copy) return MPI_ERR_INTERN;
  Fint fc = MPI_Comm_toint(comm), fk = keyval, vin = from_attribute(in);
  Fint extra = static_cast<Fint>(reinterpret_cast<MPI_Aint>(extra_state));
  Fint vout = 0, fflag = AXON_F_FALSE, ierr = MPI_SUCCESS;
  kv.copy(&fc, &fk, &extra, &vin, &vout, &fflag, &ierr);
  *flag = fflag != 0;
  if (fflag) *static_cast<void**>(out) = to_attribute(vout);
  return ierr;
}

int delete_trampoline(MPI_Comm comm, int keyval, void* value, void* extra_state) {
  Mpi1Keyval kv = lookup(keyval);
  if (!kv.del) return MPI_ERR_INTERN;
  Fint fc = MPI_Comm_toint(comm), fk = keyval, v = from_attribute(value);
  Fint extra = static_cast<Fint>(reinterpret_cast<MPI_Aint>(extra_state)), ierr = MPI_SUCCESS;
  kv.del(&fc, &fk, &v, &extra, &ierr);
  axon::fortran::attr_box_unref(value);
  return ierr;
}

// An MPI_Aint result that an INTEGER must hold, or MPI_ERR_ARG.
int to_fint(MPI_Aint v, Fint* out) {
  if (v < std::numeric_limits<Fint>::min() || v > std::numeric_limits<Fint>::max())
    return MPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_ARG), MPI_ERR_ARG;
  *out = static_cast<Fint>(v);
  return MPI_SUCCESS;
}
}  // namespace

extern "C" {
// Defined in special.cpp and mpi_fortran_gen.c.
AXON_F_API void pmpi_comm_create_errhandler_(FErrFn fn, Fint* errhandler, Fint* ierror);
AXON_F_API void pmpi_comm_get_attr_(Fint* comm, Fint* keyval, MPI_Aint* value, Fint* flag, Fint* ierror);
AXON_F_API void mpi_comm_null_copy_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint*, MPI_Aint*, Fint*, Fint*);
AXON_F_API void mpi_comm_dup_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint*, MPI_Aint*, Fint*, Fint*);
AXON_F_API void mpi_comm_null_delete_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint*, Fint*);

// The predefined callbacks of MPI_KEYVAL_CREATE, callable from Fortran.
AXON_F_API void mpi_null_copy_fn_(Fint*, Fint*, Fint*, Fint*, Fint*, Fint* flag, Fint* ierror) {
  *flag = AXON_F_FALSE;
  *ierror = MPI_SUCCESS;
}
AXON_F_API void mpi_dup_fn_(Fint*, Fint*, Fint*, Fint* in, Fint* out, Fint* flag, Fint* ierror) {
  *out = *in;
  *flag = AXON_F_TRUE;
  *ierror = MPI_SUCCESS;
}
AXON_F_API void mpi_null_delete_fn_(Fint*, Fint*, Fint*, Fint*, Fint* ierror) { *ierror = MPI_SUCCESS; }

// The predefined callbacks (of either family: programs pass
// MPI_COMM_NULL_COPY_FN to MPI_KEYVAL_CREATE too) become the C constants.
AXON_F_ENTRY(mpi_keyval_create_, (FCopyFn copy, FDeleteFn del, Fint* keyval, Fint* extra, Fint* ierror)) {
  auto copy_addr = reinterpret_cast<void (*)()>(copy), del_addr = reinterpret_cast<void (*)()>(del);
  MPI_Comm_copy_attr_function* c_copy = &copy_trampoline;
  if (copy_addr == reinterpret_cast<void (*)()>(mpi_null_copy_fn_) ||
      copy_addr == reinterpret_cast<void (*)()>(mpi_comm_null_copy_fn_))
    c_copy = MPI_COMM_NULL_COPY_FN;
  else if (copy_addr == reinterpret_cast<void (*)()>(mpi_dup_fn_) ||
           copy_addr == reinterpret_cast<void (*)()>(mpi_comm_dup_fn_))
    c_copy = &axon::fortran::attr_box_dup<MPI_Comm>;
  MPI_Comm_delete_attr_function* c_del = &delete_trampoline;
  if (del_addr == reinterpret_cast<void (*)()>(mpi_null_delete_fn_) ||
      del_addr == reinterpret_cast<void (*)()>(mpi_comm_null_delete_fn_))
    c_del = &axon::fortran::attr_box_delete<MPI_Comm>;
  int kv = MPI_KEYVAL_INVALID;
  // EXTRA_STATE is a plain integer (never read by C): not boxed.
  *ierror = MPI_Comm_create_keyval(c_copy, c_del, &kv, reinterpret_cast<void*>(static_cast<MPI_Aint>(*extra)));
  if (*ierror != MPI_SUCCESS) return;
  {
    std::lock_guard<std::mutex> lock(keyval_lock);
    keyvals[kv] = Mpi1Keyval{copy, del};
  }
  *keyval = kv;
}

AXON_F_ENTRY(mpi_attr_put_, (Fint* comm, Fint* keyval, Fint* value, Fint* ierror)) {
  void* box = to_attribute(*value);
  *ierror = MPI_Comm_set_attr(MPI_Comm_fromint(*comm), *keyval, box);
  if (*ierror != MPI_SUCCESS) axon::fortran::attr_box_unref(box);
}

// The value as MPI_COMM_GET_ATTR gives it (predefined attributes: their
// number), cut to an INTEGER.
AXON_F_ENTRY(mpi_attr_get_, (Fint* comm, Fint* keyval, Fint* value, Fint* flag, Fint* ierror)) {
  MPI_Aint v = 0;
  pmpi_comm_get_attr_(comm, keyval, &v, flag, ierror);
  if (*ierror == MPI_SUCCESS && *flag) *value = static_cast<Fint>(v);
}

// An INTEGER address: the low 32 bits of the address. Differences of two of
// them (what MPI-1 programs compute for MPI_TYPE_STRUCT) are right as long as
// the two variables lie within 2 GiB of each other; absolute addresses
// relative to MPI_BOTTOM need MPI_GET_ADDRESS.
AXON_F_ENTRY(mpi_address_, (void* location, Fint* address, Fint* ierror)) {
  MPI_Aint a = 0;
  *ierror = MPI_Get_address(axon_f_buf(location), &a);
  if (*ierror == MPI_SUCCESS) *address = static_cast<Fint>(static_cast<uint32_t>(a));
}

AXON_F_ENTRY(mpi_type_extent_, (Fint* type, Fint* extent, Fint* ierror)) {
  MPI_Aint lb = 0, ext = 0;
  *ierror = MPI_Type_get_extent(MPI_Type_fromint(*type), &lb, &ext);
  if (*ierror == MPI_SUCCESS) *ierror = to_fint(ext, extent);
}
AXON_F_ENTRY(mpi_type_lb_, (Fint* type, Fint* displacement, Fint* ierror)) {
  MPI_Aint lb = 0, ext = 0;
  *ierror = MPI_Type_get_extent(MPI_Type_fromint(*type), &lb, &ext);
  if (*ierror == MPI_SUCCESS) *ierror = to_fint(lb, displacement);
}
AXON_F_ENTRY(mpi_type_ub_, (Fint* type, Fint* displacement, Fint* ierror)) {
  MPI_Aint lb = 0, ext = 0;
  *ierror = MPI_Type_get_extent(MPI_Type_fromint(*type), &lb, &ext);
  if (*ierror == MPI_SUCCESS) *ierror = to_fint(lb + ext, displacement);
}

AXON_F_ENTRY(mpi_type_hindexed_, (Fint* count, Fint* blocklengths, Fint* displacements, Fint* oldtype,
                                  Fint* newtype, Fint* ierror)) {
  int n = *count > 0 ? *count : 0;
  std::vector<MPI_Aint> displs(displacements, displacements + n);
  MPI_Datatype t = MPI_DATATYPE_NULL;
  *ierror = MPI_Type_create_hindexed(*count, blocklengths, displs.data(), MPI_Type_fromint(*oldtype), &t);
  if (*ierror == MPI_SUCCESS) *newtype = MPI_Type_toint(t);
}

AXON_F_ENTRY(mpi_type_struct_, (Fint* count, Fint* blocklengths, Fint* displacements, Fint* types, Fint* newtype,
                                Fint* ierror)) {
  int n = *count > 0 ? *count : 0;
  std::vector<MPI_Aint> displs(displacements, displacements + n);
  std::vector<MPI_Datatype> c_types(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) c_types[static_cast<size_t>(i)] = MPI_Type_fromint(types[i]);
  MPI_Datatype t = MPI_DATATYPE_NULL;
  *ierror = MPI_Type_create_struct(*count, blocklengths, displs.data(), c_types.data(), &t);
  if (*ierror == MPI_SUCCESS) *newtype = MPI_Type_toint(t);
}

// MPI_ERRHANDLER_CREATE(FUNCTION, ERRHANDLER, IERROR) is MPI_COMM_CREATE_ERRHANDLER.
AXON_F_ENTRY(mpi_errhandler_create_, (FErrFn fn, Fint* errhandler, Fint* ierror)) {
  pmpi_comm_create_errhandler_(fn, errhandler, ierror);
}
}  // extern "C"
