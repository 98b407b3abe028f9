// Fortran entry points that the generator does not write (docs/fortran.md):
// MPI_Init without argc/argv, callbacks written in Fortran (reduction ops,
// attribute copy/delete functions, error handlers, generalized requests),
// attribute values (INTEGER(KIND=MPI_ADDRESS_KIND) in Fortran, void * in C),
// spawn argv from CHARACTER arrays, MPI_Info_get_string's buffer length,
// MPI_Pcontrol, and the predefined MPI_COMM_DUP_FN etc. as Fortran procedures.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fortran/attr_box.h"
#include "fortran/fortran_util.h"

namespace {

using Fint = MPI_Fint;

// ---- predefined attribute callbacks, callable from Fortran ----------------
using FCopyFn = void (*)(Fint*, Fint*, MPI_Aint*, MPI_Aint*, MPI_Aint*, Fint*, Fint*);
using FDeleteFn = void (*)(Fint*, Fint*, MPI_Aint*, MPI_Aint*, Fint*);

}  // namespace

extern "C" {
#define AXON_F_PREDEFINED_CALLBACKS(lower)                                                              \
  AXON_F_API void mpi_##lower##_null_copy_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint*, MPI_Aint*, Fint* flag, \
                                              Fint* ierror) {                                           \
    *flag = AXON_F_FALSE;                                                                               \
    *ierror = MPI_SUCCESS;                                                                              \
  }                                                                                                     \
  AXON_F_API void mpi_##lower##_dup_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint* in, MPI_Aint* out, Fint* flag, \
                                        Fint* ierror) {                                                 \
    *out = *in;                                                                                         \
    *flag = AXON_F_TRUE;                                                                                \
    *ierror = MPI_SUCCESS;                                                                              \
  }                                                                                                     \
  AXON_F_API void mpi_##lower##_null_delete_fn_(Fint*, Fint*, MPI_Aint*, MPI_Aint*, Fint* ierror) {     \
    *ierror = MPI_SUCCESS;                                                                              \
  }
// MPI_CONVERSION_FN_NULL as a Fortran procedure (MPI_Register_datarep maps it to the C constant).
AXON_F_API void mpi_conversion_fn_null_(void*, Fint*, Fint*, void*, MPI_Offset*, MPI_Aint*, Fint* ierror) {
  *ierror = MPI_SUCCESS;
}
AXON_F_PREDEFINED_CALLBACKS(comm)
AXON_F_PREDEFINED_CALLBACKS(type)
AXON_F_PREDEFINED_CALLBACKS(win)
#undef AXON_F_PREDEFINED_CALLBACKS
}

namespace {

// ---- attribute keyvals: the Fortran callbacks of each keyval ---------------
struct FortranKeyval {
  FCopyFn copy = nullptr;
  FDeleteFn del = nullptr;
};
std::mutex keyval_lock;
std::map<int, FortranKeyval> keyvals[3];  // comm, type, win
enum { kCommKv, kTypeKv, kWinKv };

FortranKeyval lookup(int kind, int keyval) {
  std::lock_guard<std::mutex> lock(keyval_lock);
  auto it = keyvals[kind].find(keyval);
  return it == keyvals[kind].end() ? FortranKeyval{} : it->second;
}

template <int Kind, typename Handle, Fint (*ToInt)(Handle)>
int copy_trampoline(Handle h, int keyval, void* extra_state, void* in, void* out, int* flag) {
  FortranKeyval kv = lookup(Kind, keyval);
  if (!kv.copy) return MPI_ERR_INTERN;
  Fint fh = ToInt(h), fk = keyval, fflag = AXON_F_FALSE, ierr = MPI_SUCCESS;
  MPI_Aint extra = reinterpret_cast<MPI_Aint>(extra_state), vin = axon::fortran::attr_box_value(in), vout = 0;
  kv.copy(&fh, &fk, &extra, &vin, &vout, &fflag, &ierr);
  *flag = fflag != 0;
  if (fflag) *static_cast<void**>(out) = axon::fortran::attr_box(vout);  // a value set by Fortran code
  return ierr;
}

template <int Kind, typename Handle, Fint (*ToInt)(Handle)>
int delete_trampoline(Handle h, int keyval, void* value, void* extra_state) {
  FortranKeyval kv = lookup(Kind, keyval);
  if (!kv.del) return MPI_ERR_INTERN;
  Fint fh = ToInt(h), fk = keyval, ierr = MPI_SUCCESS;
  MPI_Aint extra = reinterpret_cast<MPI_Aint>(extra_state), v = axon::fortran::attr_box_value(value);
  kv.del(&fh, &fk, &v, &extra, &ierr);
  axon::fortran::attr_box_unref(value);
  return ierr;
}

// The predefined callbacks become the C behaviour (no copy; the same word),
// with the reference counts of boxed values (attr_box.h) kept.
template <int Kind, typename CopyC, typename DeleteC, typename Handle, Fint (*ToInt)(Handle), typename Create>
void create_keyval(Create create, FCopyFn fcopy, FDeleteFn fdel, FCopyFn null_copy, FCopyFn dup, FDeleteFn null_del,
                   CopyC* c_null_copy, Fint* keyval, MPI_Aint* extra, Fint* ierror) {
  CopyC* c_copy = fcopy == null_copy ? c_null_copy
                  : fcopy == dup     ? &axon::fortran::attr_box_dup<Handle>
                                     : &copy_trampoline<Kind, Handle, ToInt>;
  DeleteC* c_del =
      fdel == null_del ? &axon::fortran::attr_box_delete<Handle> : &delete_trampoline<Kind, Handle, ToInt>;
  int kv = MPI_KEYVAL_INVALID;
  *ierror = create(c_copy, c_del, &kv, reinterpret_cast<void*>(*extra));
  if (*ierror != MPI_SUCCESS) return;
  {
    std::lock_guard<std::mutex> lock(keyval_lock);
    keyvals[Kind][kv] = FortranKeyval{fcopy, fdel};
  }
  *keyval = kv;
}

// The value a Fortran program sees for an attribute: predefined attributes
// hold a pointer to the value in C (MPI_WIN_BASE the address itself); a
// value set from Fortran is boxed (attr_box.h); one set from C is the
// pointer itself.
MPI_Aint attribute_to_fortran(int keyval, void* v, bool win) {
  if (win) {
    if (keyval == MPI_WIN_BASE) return reinterpret_cast<MPI_Aint>(v);
    if (keyval == MPI_WIN_SIZE) return *static_cast<MPI_Aint*>(v);
    if (keyval == MPI_WIN_DISP_UNIT || keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL)
      return *static_cast<int*>(v);
  } else if (keyval == MPI_TAG_UB || keyval == MPI_IO || keyval == MPI_HOST || keyval == MPI_WTIME_IS_GLOBAL ||
             keyval == MPI_UNIVERSE_SIZE || keyval == MPI_APPNUM || keyval == MPI_LASTUSEDCODE) {
    return *static_cast<int*>(v);
  }
  return axon::fortran::attr_box_value(v);
}

// ---- callbacks without user state: one C trampoline per slot ---------------
constexpr int kSlots = 64;
std::mutex slot_lock;

template <typename F>
struct Slots {
  std::array<F, kSlots> fns{};
  // The slot of FN (the same function always gets the same slot); -1 when full.
  int take(F fn) {
    std::lock_guard<std::mutex> lock(slot_lock);
    for (int i = 0; i < kSlots; ++i)
      if (fns[i] == fn) return i;
    for (int i = 0; i < kSlots; ++i)
      if (!fns[i]) {
        fns[i] = fn;
        return i;
      }
    return -1;
  }
  F get(int i) {
    std::lock_guard<std::mutex> lock(slot_lock);
    return fns[i];
  }
};

using FUserFn = void (*)(void*, void*, Fint*, Fint*);
Slots<FUserFn> op_slots;
template <int I>
void op_trampoline(void* in, void* inout, int* len, MPI_Datatype* type) {
  Fint flen = *len, ftype = MPI_Type_toint(*type);
  op_slots.get(I)(in, inout, &flen, &ftype);
}

using FErrFn = void (*)(Fint*, Fint*);
Slots<FErrFn> err_slots[4];  // comm, win, file, session

template <int Kind, typename Handle, Fint (*ToInt)(Handle), int I>
void err_trampoline(Handle* h, int* code, ...) {
  Fint fh = ToInt(*h), fcode = *code;
  err_slots[Kind].get(I)(&fh, &fcode);
}

template <typename Fn, typename Make, std::size_t... I>
std::array<Fn, kSlots> table(Make, std::index_sequence<I...>) {
  return {Make::template make<static_cast<int>(I)>()...};
}
struct OpMake {
  template <int I>
  static MPI_User_function* make() { return &op_trampoline<I>; }
};
template <int Kind, typename Handle, Fint (*ToInt)(Handle), typename CFn>
struct ErrMake {
  template <int I>
  static CFn* make() { return &err_trampoline<Kind, Handle, ToInt, I>; }
};

const auto op_table = table<MPI_User_function*>(OpMake{}, std::make_index_sequence<kSlots>{});
const auto comm_err_table = table<MPI_Comm_errhandler_function*>(
    ErrMake<0, MPI_Comm, MPI_Comm_toint, MPI_Comm_errhandler_function>{}, std::make_index_sequence<kSlots>{});
const auto win_err_table = table<MPI_Win_errhandler_function*>(
    ErrMake<1, MPI_Win, MPI_Win_toint, MPI_Win_errhandler_function>{}, std::make_index_sequence<kSlots>{});
const auto file_err_table = table<MPI_File_errhandler_function*>(
    ErrMake<2, MPI_File, MPI_File_toint, MPI_File_errhandler_function>{}, std::make_index_sequence<kSlots>{});
const auto session_err_table = table<MPI_Session_errhandler_function*>(
    ErrMake<3, MPI_Session, MPI_Session_toint, MPI_Session_errhandler_function>{}, std::make_index_sequence<kSlots>{});

// ---- generalized requests: the Fortran callbacks travel in the extra state --
// The callbacks get the program's own EXTRA_STATE variable (not a copy), as
// with MPICH: a free function that updates it updates the caller's variable.
using FQueryFn = void (*)(MPI_Aint*, Fint*, Fint*);
using FFreeFn = void (*)(MPI_Aint*, Fint*);
using FCancelFn = void (*)(MPI_Aint*, Fint*, Fint*);
struct FortranGrequest {
  FQueryFn query;
  FFreeFn free;
  FCancelFn cancel;
  MPI_Aint* extra;
};
int grequest_query(void* state, MPI_Status* status) {
  auto* g = static_cast<FortranGrequest*>(state);
  Fint ierr = MPI_SUCCESS;
  g->query(g->extra, reinterpret_cast<Fint*>(status), &ierr);
  return ierr;
}
int grequest_free(void* state) {
  auto* g = static_cast<FortranGrequest*>(state);
  Fint ierr = MPI_SUCCESS;
  g->free(g->extra, &ierr);
  delete g;
  return ierr;
}
int grequest_cancel(void* state, int complete) {
  auto* g = static_cast<FortranGrequest*>(state);
  Fint ierr = MPI_SUCCESS, fcomplete = complete ? AXON_F_TRUE : AXON_F_FALSE;
  g->cancel(g->extra, &fcomplete, &ierr);
  return ierr;
}

// ---- data representations: the Fortran callbacks travel in the extra state --
// SUBROUTINE CONV(USERBUF, DATATYPE, COUNT, FILEBUF, POSITION, EXTRA_STATE, IERROR)
using FConversionFn = void (*)(void*, Fint*, Fint*, void*, MPI_Offset*, MPI_Aint*, Fint*);
// SUBROUTINE EXTENT(DATATYPE, EXTENT, EXTRA_STATE, IERROR)
using FExtentFn = void (*)(Fint*, MPI_Aint*, MPI_Aint*, Fint*);
struct FortranDatarep {  // lives as long as the registration: to the end of the process
  FConversionFn read;
  FConversionFn write;
  FExtentFn extent;
  MPI_Aint extra;
};
// Keeps every registration's callbacks (a data representation cannot be
// unregistered); never destroyed, so conversions after static destructors
// still find them.
void registered_datareps(std::unique_ptr<FortranDatarep> d) {
  static std::mutex lock;
  static auto* kept = new std::vector<std::unique_ptr<FortranDatarep>>;
  std::lock_guard<std::mutex> guard(lock);
  kept->push_back(std::move(d));
}
int datarep_convert(FConversionFn fn, void* userbuf, MPI_Datatype type, int count, void* filebuf,
                    MPI_Offset position, FortranDatarep* d) {
  Fint ftype = MPI_Type_toint(type), fcount = count, ierr = MPI_SUCCESS;
  MPI_Offset fposition = position;
  fn(userbuf, &ftype, &fcount, filebuf, &fposition, &d->extra, &ierr);
  return ierr;
}
int datarep_read(void* userbuf, MPI_Datatype type, int count, void* filebuf, MPI_Offset position, void* state) {
  auto* d = static_cast<FortranDatarep*>(state);
  return datarep_convert(d->read, userbuf, type, count, filebuf, position, d);
}
int datarep_write(void* userbuf, MPI_Datatype type, int count, void* filebuf, MPI_Offset position, void* state) {
  auto* d = static_cast<FortranDatarep*>(state);
  return datarep_convert(d->write, userbuf, type, count, filebuf, position, d);
}
int datarep_extent(MPI_Datatype type, MPI_Aint* extent, void* state) {
  auto* d = static_cast<FortranDatarep*>(state);
  Fint ftype = MPI_Type_toint(type), ierr = MPI_SUCCESS;
  MPI_Aint fextent = 0;
  d->extent(&ftype, &fextent, &d->extra, &ierr);
  *extent = fextent;
  return ierr;
}

// ---- spawn: argv from a CHARACTER array ended by a blank entry -------------
std::string trimmed(const char* f, size_t len) {
  while (len > 0 && f[len - 1] == ' ') --len;
  size_t start = 0;
  while (start < len && f[start] == ' ') ++start;
  return std::string(f + start, len - start);
}

// Strings of one argv: entries at f + (first + k * stride) * len for k = 0, 1, ...
std::vector<std::string> fortran_argv(const char* f, size_t len, size_t first, size_t stride) {
  std::vector<std::string> out;
  if (len == 0) return out;
  for (size_t k = 0;; ++k) {
    std::string s = trimmed(f + (first + k * stride) * len, len);
    if (s.empty()) break;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& s : args) v.push_back(s.data());
  v.push_back(nullptr);
  return v;
}

bool is_root(MPI_Comm comm, int root) {
  int rank = -1;
  return MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == root;
}

}  // namespace

extern "C" {

AXON_F_ENTRY(mpi_init_, (Fint* ierror)) { *ierror = MPI_Init(nullptr, nullptr); }

AXON_F_ENTRY(mpi_init_thread_, (Fint* required, Fint* provided, Fint* ierror)) {
  *ierror = MPI_Init_thread(nullptr, nullptr, *required, provided);
}

AXON_F_ENTRY(mpi_pcontrol_, (Fint* level)) { MPI_Pcontrol(*level); }

AXON_F_ENTRY(mpi_op_create_, (FUserFn fn, Fint* commute, Fint* op, Fint* ierror)) {
  int slot = op_slots.take(fn);
  if (slot < 0) {
    *ierror = MPI_ERR_INTERN;
    return;
  }
  MPI_Op c_op = MPI_OP_NULL;
  *ierror = MPI_Op_create(op_table[slot], *commute != 0, &c_op);
  if (*ierror == MPI_SUCCESS) *op = MPI_Op_toint(c_op);
}

AXON_F_ENTRY(mpi_comm_create_keyval_, (FCopyFn copy, FDeleteFn del, Fint* keyval, MPI_Aint* extra, Fint* ierror)) {
  create_keyval<kCommKv, MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function, MPI_Comm, MPI_Comm_toint>(
      MPI_Comm_create_keyval, copy, del, mpi_comm_null_copy_fn_, mpi_comm_dup_fn_, mpi_comm_null_delete_fn_,
      MPI_COMM_NULL_COPY_FN, keyval, extra, ierror);
}
AXON_F_ENTRY(mpi_type_create_keyval_, (FCopyFn copy, FDeleteFn del, Fint* keyval, MPI_Aint* extra, Fint* ierror)) {
  create_keyval<kTypeKv, MPI_Type_copy_attr_function, MPI_Type_delete_attr_function, MPI_Datatype, MPI_Type_toint>(
      MPI_Type_create_keyval, copy, del, mpi_type_null_copy_fn_, mpi_type_dup_fn_, mpi_type_null_delete_fn_,
      MPI_TYPE_NULL_COPY_FN, keyval, extra, ierror);
}
AXON_F_ENTRY(mpi_win_create_keyval_, (FCopyFn copy, FDeleteFn del, Fint* keyval, MPI_Aint* extra, Fint* ierror)) {
  create_keyval<kWinKv, MPI_Win_copy_attr_function, MPI_Win_delete_attr_function, MPI_Win, MPI_Win_toint>(
      MPI_Win_create_keyval, copy, del, mpi_win_null_copy_fn_, mpi_win_dup_fn_, mpi_win_null_delete_fn_,
      MPI_WIN_NULL_COPY_FN, keyval, extra, ierror);
}

AXON_F_ENTRY(mpi_comm_set_attr_, (Fint* comm, Fint* keyval, MPI_Aint* value, Fint* ierror)) {
  void* box = axon::fortran::attr_box(*value);
  *ierror = MPI_Comm_set_attr(MPI_Comm_fromint(*comm), *keyval, box);
  if (*ierror != MPI_SUCCESS) axon::fortran::attr_box_unref(box);
}
AXON_F_ENTRY(mpi_type_set_attr_, (Fint* type, Fint* keyval, MPI_Aint* value, Fint* ierror)) {
  void* box = axon::fortran::attr_box(*value);
  *ierror = MPI_Type_set_attr(MPI_Type_fromint(*type), *keyval, box);
  if (*ierror != MPI_SUCCESS) axon::fortran::attr_box_unref(box);
}
AXON_F_ENTRY(mpi_win_set_attr_, (Fint* win, Fint* keyval, MPI_Aint* value, Fint* ierror)) {
  void* box = axon::fortran::attr_box(*value);
  *ierror = MPI_Win_set_attr(MPI_Win_fromint(*win), *keyval, box);
  if (*ierror != MPI_SUCCESS) axon::fortran::attr_box_unref(box);
}

AXON_F_ENTRY(mpi_comm_get_attr_, (Fint* comm, Fint* keyval, MPI_Aint* value, Fint* flag, Fint* ierror)) {
  void* v = nullptr;
  int found = 0;
  *ierror = MPI_Comm_get_attr(MPI_Comm_fromint(*comm), *keyval, &v, &found);
  *flag = (*ierror == MPI_SUCCESS && found) ? AXON_F_TRUE : AXON_F_FALSE;
  if (*flag) *value = attribute_to_fortran(*keyval, v, false);
}
AXON_F_ENTRY(mpi_type_get_attr_, (Fint* type, Fint* keyval, MPI_Aint* value, Fint* flag, Fint* ierror)) {
  void* v = nullptr;
  int found = 0;
  *ierror = MPI_Type_get_attr(MPI_Type_fromint(*type), *keyval, &v, &found);
  *flag = (*ierror == MPI_SUCCESS && found) ? AXON_F_TRUE : AXON_F_FALSE;
  if (*flag) *value = axon::fortran::attr_box_value(v);
}
AXON_F_ENTRY(mpi_win_get_attr_, (Fint* win, Fint* keyval, MPI_Aint* value, Fint* flag, Fint* ierror)) {
  void* v = nullptr;
  int found = 0;
  *ierror = MPI_Win_get_attr(MPI_Win_fromint(*win), *keyval, &v, &found);
  *flag = (*ierror == MPI_SUCCESS && found) ? AXON_F_TRUE : AXON_F_FALSE;
  if (*flag) *value = attribute_to_fortran(*keyval, v, true);
}

#define AXON_F_CREATE_ERRHANDLER(lower, Upper, kind, tbl)                                   \
  AXON_F_ENTRY(mpi_##lower##_create_errhandler_, (FErrFn fn, Fint* errhandler, Fint* ierror)) { \
    int slot = err_slots[kind].take(fn);                                                   \
    if (slot < 0) {                                                                        \
      *ierror = MPI_ERR_INTERN;                                                            \
      return;                                                                              \
    }                                                                                      \
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;                                               \
    *ierror = MPI_##Upper##_create_errhandler(tbl[slot], &eh);                             \
    if (*ierror == MPI_SUCCESS) *errhandler = MPI_Errhandler_toint(eh);                    \
  }
AXON_F_CREATE_ERRHANDLER(comm, Comm, 0, comm_err_table)
AXON_F_CREATE_ERRHANDLER(win, Win, 1, win_err_table)
AXON_F_CREATE_ERRHANDLER(file, File, 2, file_err_table)
AXON_F_CREATE_ERRHANDLER(session, Session, 3, session_err_table)
#undef AXON_F_CREATE_ERRHANDLER

AXON_F_ENTRY(mpi_grequest_start_, (FQueryFn query, FFreeFn free_fn, FCancelFn cancel, MPI_Aint* extra,
                                    Fint* request, Fint* ierror)) {
  auto* g = new FortranGrequest{query, free_fn, cancel, extra};
  MPI_Request r = MPI_REQUEST_NULL;
  *ierror = MPI_Grequest_start(grequest_query, grequest_free, grequest_cancel, g, &r);
  if (*ierror != MPI_SUCCESS) {
    delete g;
    return;
  }
  *request = MPI_Request_toint(r);
}

AXON_F_ENTRY(mpi_info_get_string_, (Fint* info, char* key, Fint* buflen, char* value, Fint* flag, Fint* ierror,
                                     size_t key_len, size_t value_len)) {
  char* c_key = axon_f_str_in(key, key_len);
  // In Fortran, BUFLEN counts no terminator: the C buffer is one longer.
  // VALUE gets at most min(BUFLEN, LEN(VALUE)) characters, blank-padded.
  size_t room = *buflen > 0 ? std::min(static_cast<size_t>(*buflen), value_len) : 0;
  int c_buflen = *buflen > 0 ? static_cast<int>(room) + 1 : 0;
  std::vector<char> c_value(static_cast<size_t>(c_buflen) + 1, '\0');
  int found = 0;
  *ierror = MPI_Info_get_string(MPI_Info_fromint(*info), c_key, &c_buflen, c_value.data(), &found);
  free(c_key);
  *flag = (*ierror == MPI_SUCCESS && found) ? AXON_F_TRUE : AXON_F_FALSE;
  if (!*flag) return;
  if (*buflen > 0) axon_f_str_out(c_value.data(), value, value_len);
  *buflen = c_buflen > 0 ? c_buflen - 1 : 0;
}

// MPI_REGISTER_DATAREP(DATAREP, READ_CONVERSION_FN, WRITE_CONVERSION_FN, DTYPE_FILE_EXTENT_FN,
//                      EXTRA_STATE, IERROR): MPI_CONVERSION_FN_NULL becomes the C constant.
AXON_F_ENTRY(mpi_register_datarep_, (char* datarep, FConversionFn read_fn, FConversionFn write_fn,
                                      FExtentFn extent_fn, MPI_Aint* extra, Fint* ierror, size_t datarep_len)) {
  char* c_name = axon_f_str_in(datarep, datarep_len);
  FConversionFn null_fn = mpi_conversion_fn_null_;
  bool null_read = read_fn == null_fn, null_write = write_fn == null_fn;
  auto d = std::make_unique<FortranDatarep>(FortranDatarep{read_fn, write_fn, extent_fn, *extra});
  *ierror = MPI_Register_datarep(c_name, null_read ? MPI_CONVERSION_FN_NULL : datarep_read,
                                 null_write ? MPI_CONVERSION_FN_NULL : datarep_write,
                                 extent_fn ? datarep_extent : nullptr, d.get());
  free(c_name);
  if (*ierror == MPI_SUCCESS) registered_datareps(std::move(d));
}

// MPI_SESSION_GET_NTH_PSET(SESSION, INFO, N, PSET_LEN, PSET_NAME, IERROR): with
// PSET_LEN = 0 it returns the length of the name (no terminator: the length a
// CHARACTER needs); otherwise PSET_NAME gets the first min(PSET_LEN,
// LEN(PSET_NAME)) characters of the name, blank-padded, and PSET_LEN is left.
AXON_F_ENTRY(mpi_session_get_nth_pset_, (Fint* session, Fint* info, Fint* n, Fint* pset_len, char* pset_name,
                                          Fint* ierror, size_t pset_name_len)) {
  MPI_Session c_session = MPI_Session_fromint(*session);
  MPI_Info c_info = MPI_Info_fromint(*info);
  int need = *pset_len < 0 ? *pset_len : 0;  // a negative length: the C function raises MPI_ERR_ARG
  *ierror = MPI_Session_get_nth_pset(c_session, c_info, *n, &need, nullptr);
  if (*ierror != MPI_SUCCESS) return;
  if (*pset_len == 0) {
    *pset_len = need > 0 ? need - 1 : 0;
    return;
  }
  std::vector<char> name(static_cast<size_t>(need) + 1, '\0');
  *ierror = MPI_Session_get_nth_pset(c_session, c_info, *n, &need, name.data());
  if (*ierror != MPI_SUCCESS) return;
  size_t room = std::min(pset_name_len, static_cast<size_t>(*pset_len));
  size_t copy = std::min(room, std::strlen(name.data()));
  std::memcpy(pset_name, name.data(), copy);
  std::memset(pset_name + copy, ' ', pset_name_len - copy);
}

AXON_F_ENTRY(mpi_comm_spawn_, (char* command, char* argv, Fint* maxprocs, Fint* info, Fint* root, Fint* comm,
                                Fint* intercomm, Fint* errcodes, Fint* ierror, size_t command_len, size_t argv_len)) {
  MPI_Comm c_comm = MPI_Comm_fromint(*comm);
  std::string c_command = trimmed(command, command_len);
  std::vector<std::string> args;
  bool null_argv = argv == &mpi_fortran_argv_null_ || !is_root(c_comm, *root);
  if (!null_argv) args = fortran_argv(argv, argv_len, 0, 1);
  std::vector<char*> c_args = c_argv(args);
  MPI_Comm c_inter = MPI_COMM_NULL;
  *ierror = MPI_Comm_spawn(c_command.c_str(), null_argv ? MPI_ARGV_NULL : c_args.data(), *maxprocs,
                           MPI_Info_fromint(*info), *root, c_comm, &c_inter, axon_f_ints(errcodes));
  *intercomm = MPI_Comm_toint(c_inter);
}

AXON_F_ENTRY(mpi_comm_spawn_multiple_, (Fint* count, char* commands, char* argvs, Fint* maxprocs, Fint* infos,
                                         Fint* root, Fint* comm, Fint* intercomm, Fint* errcodes, Fint* ierror,
                                         size_t commands_len, size_t argvs_len)) {
  MPI_Comm c_comm = MPI_Comm_fromint(*comm);
  bool root_here = is_root(c_comm, *root);
  int n = root_here && *count > 0 ? *count : 0;
  std::vector<std::string> c_commands;
  std::vector<std::vector<std::string>> args(static_cast<size_t>(n));
  std::vector<std::vector<char*>> c_args(static_cast<size_t>(n));
  std::vector<char**> c_argvs;
  std::vector<char*> c_command_ptrs;
  std::vector<MPI_Info> c_infos;
  bool null_argvs = argvs == &mpi_fortran_argvs_null_;
  for (int i = 0; i < n; ++i) {
    c_commands.push_back(trimmed(commands + static_cast<size_t>(i) * commands_len, commands_len));
    c_infos.push_back(MPI_Info_fromint(infos[i]));
    if (!null_argvs) {
      // array_of_argv(count, *): argument j of command i is element (i, j).
      args[i] = fortran_argv(argvs, argvs_len, static_cast<size_t>(i), static_cast<size_t>(n));
      c_args[i] = c_argv(args[i]);
      c_argvs.push_back(c_args[i].data());
    }
  }
  for (auto& s : c_commands) c_command_ptrs.push_back(s.data());
  MPI_Comm c_inter = MPI_COMM_NULL;
  *ierror = MPI_Comm_spawn_multiple(*count, c_command_ptrs.data(),
                                    (null_argvs || !root_here) ? MPI_ARGVS_NULL : c_argvs.data(), maxprocs,
                                    c_infos.data(), *root, c_comm, &c_inter, axon_f_ints(errcodes));
  *intercomm = MPI_Comm_toint(c_inter);
}

}  // extern "C"
