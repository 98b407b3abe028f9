// One-sided communication entry points (MPI-4.1 chapter 12): window
// creation and destruction, RMA operations, synchronization, and the
// window's name, info, group, attributes and error handler. The work is done
// by src/osc (osc.h); this file checks handles and arguments and raises
// errors through the window's error handler.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "mpi/api.h"
#include "mpi/attributes.h"
#include "mpi/communicator.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "op/op.h"
#include "osc/osc.h"

namespace axon::mpi {

namespace {

constexpr uint32_t kWinMagic = 0x57494e44u;  // "WIND"

struct Win {
  uint32_t magic = kWinMagic;
  osc::Window* w = nullptr;
  Comm* comm = nullptr;  // private copy of the user's communicator (its coll context carries the window's collectives)
  Errhandler* errhandler = nullptr;
  std::string name;
  AttributeSet* attributes = nullptr;
  InfoPtr hints;
  // Storage of the predefined attributes (the attribute values point here).
  MPI_Aint size = 0;
  int disp_unit = 1;
  int flavor = MPI_WIN_FLAVOR_CREATE;
  int model = MPI_WIN_UNIFIED;
  // Serializes the synchronization calls of several threads on this window
  // (MPI_THREAD_MULTIPLE): the epoch state is not otherwise locked.
  // Operations do not take it: they only read the epoch state.
  std::mutex sync;
  MPI_Win handle() { return reinterpret_cast<MPI_Win>(this); }
};

Win* win_of(MPI_Win h) {
  if (!may_be_object<Win>(h)) return nullptr;
  auto* w = reinterpret_cast<Win*>(h);
  return w->magic == kWinMagic ? w : nullptr;
}

AttrHost host_of(Win* win) { return AttrHost{AttrObject::Win, win->handle(), &win->attributes}; }

// Raises `code` on the window's error handler (MPI-4.1 9.3: errors of
// window calls go to the window's handler).
int win_raise(Win* win, int code, const char* fn, const char* detail = nullptr) {
  if (code == MPI_SUCCESS) return code;
  Errhandler* e = win->errhandler;
  switch (e->kind) {
    case Errhandler::Kind::Return:
      return code;
    case Errhandler::Kind::User: {
      MPI_Win h = win->handle();
      int c = code;
      errhandler_retain(e);  // the handler may replace and free itself
      reinterpret_cast<MPI_Win_errhandler_function*>(e->comm_fn)(&h, &c);
      errhandler_release(e);
      return c;  // what the handler left in its code argument (as raise() and MPICH do)
    }
    case Errhandler::Kind::Fatal:
      // As MPICH does: a fatal window handler defers to MPI_COMM_SELF's
      // handler, or MPI_COMM_WORLD's when only that one was changed (a
      // program that set MPI_ERRORS_RETURN on WORLD gets its error back);
      // an untouched program still ends.
      return raise_self(code, fn, detail);
    default:
      return raise(nullptr, code, fn, detail);  // MPI_ERRORS_ABORT: no communicator, ends the job
  }
}

#define AXON_WIN_OR_RAISE(var, handle, fn) \
  Win* var = win_of(handle);               \
  if (!var) return raise_self(MPI_ERR_WIN, fn, "invalid window")

#define WIN_TRY(win, fn, expr)                                     \
  do {                                                             \
    int rc_ = (expr);                                              \
    if (rc_ != MPI_SUCCESS) return win_raise(win, rc_, fn);        \
  } while (0)

// ---- creation --------------------------------------------------------------------

int check_create_args(Comm* c, MPI_Info info, MPI_Win* out, const char* fn) {
  if (c->inter) return raise(c, MPI_ERR_COMM, fn, "intercommunicator");
  if (!out) return raise(c, MPI_ERR_ARG, fn, "win is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise(c, MPI_ERR_INFO, fn, "invalid info");
  return MPI_SUCCESS;
}

// Makes the window object: the private communicator, the osc window (made
// by `make`), hints and predefined attributes.
template <class Make>
int create_window(Comm* c, MPI_Info info, int flavor, MPI_Win* out, const char* fn, Make make) {
  Comm* dup = nullptr;
  int rc = comm_split(c, 0, c->rank(), &dup);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn, "cannot create the window's communicator");
  osc::Window* w = nullptr;
  rc = make(&dup->coll, &w);
  if (rc != MPI_SUCCESS) {
    comm_free(dup);
    const char* why = rc == MPI_ERR_RMA_SHARED ? "ranks are not all on one node" : nullptr;
    return raise(c, rc, fn, why);
  }
  auto* win = new Win;
  win->w = w;
  win->comm = dup;
  win->errhandler = errhandler_from_handle(MPI_ERRORS_ARE_FATAL);
  win->hints.reset(info_dup(info_from_handle(info)));
  win->size = static_cast<MPI_Aint>(w->bytes);
  win->disp_unit = w->disp_unit;
  win->flavor = flavor;
  AttrHost host = host_of(win);
  attr_set_builtin(host, MPI_WIN_BASE, w->base);
  attr_set_builtin(host, MPI_WIN_SIZE, &win->size);
  attr_set_builtin(host, MPI_WIN_DISP_UNIT, &win->disp_unit);
  attr_set_builtin(host, MPI_WIN_CREATE_FLAVOR, &win->flavor);
  attr_set_builtin(host, MPI_WIN_MODEL, &win->model);
  *out = win->handle();
  return MPI_SUCCESS;
}

int win_create(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win,
               const char* fn) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  AXON_TRY(c, fn, check_create_args(c, info, win, fn));
  if (size < 0) return raise(c, MPI_ERR_SIZE, fn, "negative size");
  if (disp_unit <= 0 || disp_unit > INT32_MAX) return raise(c, MPI_ERR_DISP, fn, "disp_unit must be positive");
  if (!base && size > 0) return raise(c, MPI_ERR_BASE, fn, "base is NULL");
  return create_window(c, info, MPI_WIN_FLAVOR_CREATE, win, fn, [&](pml::Context* ctx, osc::Window** w) {
    return osc::create(ctx, base, static_cast<uint64_t>(size), static_cast<int>(disp_unit), w);
  });
}

int win_allocate(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr, MPI_Win* win,
                 bool shared, const char* fn) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  AXON_TRY(c, fn, check_create_args(c, info, win, fn));
  if (size < 0) return raise(c, MPI_ERR_SIZE, fn, "negative size");
  if (disp_unit <= 0 || disp_unit > INT32_MAX) return raise(c, MPI_ERR_DISP, fn, "disp_unit must be positive");
  if (!baseptr) return raise(c, MPI_ERR_ARG, fn, "baseptr is NULL");
  bool noncontig = shared && info_get_bool(info_from_handle(info), "alloc_shared_noncontig", false);
  int rc = create_window(c, info, shared ? MPI_WIN_FLAVOR_SHARED : MPI_WIN_FLAVOR_ALLOCATE, win, fn,
                         [&](pml::Context* ctx, osc::Window** w) {
                           return osc::allocate(ctx, static_cast<uint64_t>(size), static_cast<int>(disp_unit),
                                                shared, noncontig, w);
                         });
  if (rc == MPI_SUCCESS) *static_cast<void**>(baseptr) = win_of(*win)->w->base;
  return rc;
}

// ---- operation arguments ------------------------------------------------------------

int check_rank(Win* win, int rank) {
  return rank == MPI_PROC_NULL || (rank >= 0 && rank < win->w->size) ? MPI_SUCCESS : MPI_ERR_RANK;
}

// Checks of one side (origin, result or target) of an operation.
int check_side(const void* buf, MPI_Count count, MPI_Datatype handle, Datatype** type, bool need_buf) {
  if (count < 0) return MPI_ERR_COUNT;
  int rc = check_datatype(handle, type);
  if (rc != MPI_SUCCESS) return rc;
  return need_buf ? check_buffer(buf, count, *type) : MPI_SUCCESS;
}

// Target checks shared by every operation, then the epoch. Sets *skip for
// MPI_PROC_NULL (the call does nothing).
int check_target(Win* win, int target, MPI_Aint disp, bool* skip) {
  int rc = check_rank(win, target);
  if (rc != MPI_SUCCESS) return rc;
  if (win->w->flavor != osc::Flavor::Dynamic && disp < 0) return MPI_ERR_DISP;
  *skip = target == MPI_PROC_NULL;
  if (*skip) return MPI_SUCCESS;
  return osc::check_access(win->w, target);
}

int check_op(MPI_Op handle, Op** op) {
  Op* o = op_from_handle(handle);
  // One-sided accumulates take predefined operations only (MPI-4.1 12.3.4).
  if (!o || !o->predefined) return MPI_ERR_OP;
  *op = o;
  return MPI_SUCCESS;
}

int do_put(const void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp,
           MPI_Count tcount, MPI_Datatype ttype, MPI_Win win_h, const char* fn, bool passive) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  Datatype *ot, *tt;
  WIN_TRY(win, fn, check_side(origin, ocount, otype, &ot, true));
  WIN_TRY(win, fn, check_side(nullptr, tcount, ttype, &tt, false));
  bool skip;
  WIN_TRY(win, fn, check_target(win, target, disp, &skip));
  if (skip) return MPI_SUCCESS;
  if (passive) WIN_TRY(win, fn, osc::check_passive(win->w, target));
  WIN_TRY(win, fn, osc::put(win->w, origin, ocount, *ot, target, disp, tcount, *tt));
  // MPI_Rput's request is returned complete: the origin buffer must be free.
  if (passive) WIN_TRY(win, fn, osc::complete_put(win->w, target));
  return MPI_SUCCESS;
}

int do_get(void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp, MPI_Count tcount,
           MPI_Datatype ttype, MPI_Win win_h, const char* fn, bool passive) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  Datatype *ot, *tt;
  WIN_TRY(win, fn, check_side(origin, ocount, otype, &ot, true));
  WIN_TRY(win, fn, check_side(nullptr, tcount, ttype, &tt, false));
  bool skip;
  WIN_TRY(win, fn, check_target(win, target, disp, &skip));
  if (skip) return MPI_SUCCESS;
  if (passive) WIN_TRY(win, fn, osc::check_passive(win->w, target));
  WIN_TRY(win, fn, osc::get(win->w, origin, ocount, *ot, target, disp, tcount, *tt));
  // MPI_Rget's request is returned complete: the data must be there.
  if (passive) WIN_TRY(win, fn, osc::complete_get(win->w, target));
  return MPI_SUCCESS;
}

// Accumulate (result null) and Get_accumulate.
int do_acc(const void* origin, MPI_Count ocount, MPI_Datatype otype, void* result, MPI_Count rcount,
           MPI_Datatype rtype, int target, MPI_Aint disp, MPI_Count tcount, MPI_Datatype ttype, MPI_Op op_h,
           MPI_Win win_h, const char* fn, bool fetch, bool passive) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  Op* op;
  WIN_TRY(win, fn, check_op(op_h, &op));
  const bool no_op = op->kind == OpKind::no_op;
  // MPI_NO_OP is for the fetching accumulates only (MPI-4.1 12.3.4).
  if (no_op && !fetch) return win_raise(win, MPI_ERR_OP, fn, "MPI_NO_OP is not allowed in this call");
  Datatype *ot = nullptr, *rt = nullptr, *tt;
  // MPI_NO_OP ignores the origin arguments (MPI-4.1 12.3.4).
  if (!no_op) WIN_TRY(win, fn, check_side(origin, ocount, otype, &ot, true));
  if (fetch) WIN_TRY(win, fn, check_side(result, rcount, rtype, &rt, true));
  WIN_TRY(win, fn, check_side(nullptr, tcount, ttype, &tt, false));
  bool skip;
  WIN_TRY(win, fn, check_target(win, target, disp, &skip));
  if (skip) return MPI_SUCCESS;
  if (passive) WIN_TRY(win, fn, osc::check_passive(win->w, target));
  WIN_TRY(win, fn, osc::accumulate(win->w, origin, ocount, ot, fetch ? result : nullptr, rcount, rt, target, disp,
                                   tcount, *tt, *op));
  return MPI_SUCCESS;
}

// A request that is already complete: every operation finishes in its call.
MPI_Request completed_request(Win* win) {
  progress::Guard guard;
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Send);
  r->comm = win->comm;
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  r->complete.store(true, std::memory_order_release);
  return handle_of(r);
}

// Window ranks of a group's members (every member must belong to the window).
int group_ranks(Win* win, MPI_Group handle, std::vector<int>* out) {
  Group* g = group_from_handle(handle);
  if (!g) return MPI_ERR_GROUP;
  const std::vector<int>& world = win->comm->p2p.world_of;
  out->clear();
  for (int wr : g->world) {
    int r = -1;
    for (size_t i = 0; i < world.size(); ++i)
      if (world[i] == wr) r = static_cast<int>(i);
    if (r < 0) return MPI_ERR_GROUP;
    out->push_back(r);
  }
  return MPI_SUCCESS;
}

}  // namespace

// ---- creation and destruction --------------------------------------------------------

// MPI_Win_create, MPI_Win_allocate, MPI_Win_allocate_shared and their _c
// variants are generated with the operations (below).

AXON_API(int, MPI_Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win* win)) {
  const char* fn = "MPI_Win_create_dynamic";
  AXON_COMM_OR_RAISE(c, comm, fn);
  AXON_TRY(c, fn, check_create_args(c, info, win, fn));
  return create_window(c, info, MPI_WIN_FLAVOR_DYNAMIC, win, fn,
                       [&](pml::Context* ctx, osc::Window** w) { return osc::create_dynamic(ctx, w); });
}

AXON_API(int, MPI_Win_free, (MPI_Win * win_h)) {
  const char* fn = "MPI_Win_free";
  if (!win_h) return raise_self(MPI_ERR_ARG, fn, "win is NULL");
  AXON_WIN_OR_RAISE(win, *win_h, fn);
  WIN_TRY(win, fn, osc::free_check(win->w));
  // Delete callbacks receive the handle while it is still valid.
  WIN_TRY(win, fn, attr_delete_all(host_of(win)));
  osc::destroy(win->w);
  comm_free(win->comm);
  errhandler_release(win->errhandler);
  win->magic = 0;
  delete win;
  *win_h = MPI_WIN_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_attach, (MPI_Win win_h, void* base, MPI_Aint size)) {
  const char* fn = "MPI_Win_attach";
  AXON_WIN_OR_RAISE(win, win_h, fn);
  if (win->w->flavor != osc::Flavor::Dynamic) return win_raise(win, MPI_ERR_RMA_FLAVOR, fn, "not a dynamic window");
  if (size < 0) return win_raise(win, MPI_ERR_SIZE, fn, "negative size");
  if (!base && size > 0) return win_raise(win, MPI_ERR_BASE, fn, "base is NULL");
  WIN_TRY(win, fn, osc::attach(win->w, base, static_cast<uint64_t>(size)));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_detach, (MPI_Win win_h, const void* base)) {
  const char* fn = "MPI_Win_detach";
  AXON_WIN_OR_RAISE(win, win_h, fn);
  if (win->w->flavor != osc::Flavor::Dynamic) return win_raise(win, MPI_ERR_RMA_FLAVOR, fn, "not a dynamic window");
  WIN_TRY(win, fn, osc::detach(win->w, base));
  return MPI_SUCCESS;
}

namespace {
int shared_query(MPI_Win win_h, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr, const char* fn) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  if (!size || !disp_unit || !baseptr) return win_raise(win, MPI_ERR_ARG, fn, "NULL argument");
  WIN_TRY(win, fn, check_rank(win, rank));
  uint64_t bytes;
  int du;
  void* base;
  WIN_TRY(win, fn, osc::shared_query(win->w, rank, &bytes, &du, &base));
  *size = static_cast<MPI_Aint>(bytes);
  *disp_unit = du;
  *static_cast<void**>(baseptr) = base;
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Win_shared_query, (MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr)) {
  MPI_Aint du = 0;
  int rc = shared_query(win, rank, size, disp_unit ? &du : nullptr, baseptr, "MPI_Win_shared_query");
  if (rc == MPI_SUCCESS) *disp_unit = static_cast<int>(du);
  return rc;
}

AXON_API(int, MPI_Win_shared_query_c,
         (MPI_Win win, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr)) {
  return shared_query(win, rank, size, disp_unit, baseptr, "MPI_Win_shared_query_c");
}

// ---- operations ------------------------------------------------------------------------

// Request-based operations: valid in passive target epochs only (MPI-4.1
// 12.3.5); the operation is complete when the call returns.
#define AXON_REQUEST_OP(call, win_h, request, fn)                                   \
  do {                                                                              \
    Win* win_ = win_of(win_h);                                                      \
    if (!win_) return raise_self(MPI_ERR_WIN, fn, "invalid window");                \
    if (!(request)) return win_raise(win_, MPI_ERR_ARG, fn, "request is NULL");     \
    int rc_ = (call);                                                               \
    if (rc_ != MPI_SUCCESS) return rc_;                                             \
    *(request) = completed_request(win_);                                           \
    return MPI_SUCCESS;                                                             \
  } while (0)

// MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate, their request-based
// MPI_R* forms, MPI_Fetch_and_op, and window creation (MPI_Win_create,
// MPI_Win_allocate, MPI_Win_allocate_shared), each with its large-count
// variant, only forward to the functions above: generated from
// src/binding/c_entries.txt (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/win_entries.inc"
#include "progress/progress.h"

AXON_API(int, MPI_Compare_and_swap,
         (const void* origin_addr, const void* compare_addr, void* result_addr, MPI_Datatype datatype,
          int target_rank, MPI_Aint target_disp, MPI_Win win_h)) {
  const char* fn = "MPI_Compare_and_swap";
  AXON_WIN_OR_RAISE(win, win_h, fn);
  Datatype* t;
  WIN_TRY(win, fn, check_datatype(datatype, &t));
  // Integer, logical, multi-language and byte types only (MPI-4.1 12.3.5);
  // MPI_CHAR too, a one-byte C integer in practice, which MPICH accepts.
  switch (t->op_group) {
    case OpGroup::c_integer:
    case OpGroup::fortran_integer:
    case OpGroup::logical:
    case OpGroup::multi_language:
    case OpGroup::byte:
      break;
    default:
      if (datatype != MPI_CHAR) return win_raise(win, MPI_ERR_TYPE, fn, "not an integer, logical or byte type");
  }
  if (!t->predefined) return win_raise(win, MPI_ERR_TYPE, fn, "not a predefined type");
  if (!origin_addr || !compare_addr || !result_addr) return win_raise(win, MPI_ERR_BUFFER, fn, "NULL buffer");
  bool skip;
  WIN_TRY(win, fn, check_target(win, target_rank, target_disp, &skip));
  if (skip) return MPI_SUCCESS;
  WIN_TRY(win, fn, osc::compare_and_swap(win->w, origin_addr, compare_addr, result_addr, *t, target_rank,
                                         target_disp));
  return MPI_SUCCESS;
}

// ---- synchronization ---------------------------------------------------------------

AXON_API(int, MPI_Win_fence, (int assert_bits, MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_fence");
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_fence", osc::fence(win->w, assert_bits));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_post, (MPI_Group group, int assert_bits, MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_post");
  std::vector<int> ranks;
  WIN_TRY(win, "MPI_Win_post", group_ranks(win, group, &ranks));
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_post", osc::post(win->w, ranks, assert_bits));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_start, (MPI_Group group, int assert_bits, MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_start");
  std::vector<int> ranks;
  WIN_TRY(win, "MPI_Win_start", group_ranks(win, group, &ranks));
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_start", osc::start(win->w, ranks, assert_bits));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_complete, (MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_complete");
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_complete", osc::complete(win->w));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_wait, (MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_wait");
  // The long wait without the mutex (other threads' flush, lock ... on this
  // window must not block behind it); then the epoch ends under it.
  osc::wait_ready(win->w);
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_wait", osc::wait(win->w));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_test, (MPI_Win win_h, int* flag)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_test");
  if (!flag) return win_raise(win, MPI_ERR_ARG, "MPI_Win_test", "flag is NULL");
  bool done = false;
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_test", osc::test(win->w, &done));
  if (!done) progress::progress();
  *flag = done;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_lock, (int lock_type, int rank, int assert_bits, MPI_Win win_h)) {
  const char* fn = "MPI_Win_lock";
  AXON_WIN_OR_RAISE(win, win_h, fn);
  if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
    return win_raise(win, MPI_ERR_LOCKTYPE, fn, "lock type is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED");
  WIN_TRY(win, fn, check_rank(win, rank));
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, fn, osc::lock(win->w, lock_type, rank, assert_bits));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_unlock, (int rank, MPI_Win win_h)) {
  const char* fn = "MPI_Win_unlock";
  AXON_WIN_OR_RAISE(win, win_h, fn);
  WIN_TRY(win, fn, check_rank(win, rank));
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, fn, osc::unlock(win->w, rank));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_lock_all, (int assert_bits, MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_lock_all");
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_lock_all", osc::lock_all(win->w, assert_bits));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_unlock_all, (MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_unlock_all");
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, "MPI_Win_unlock_all", osc::unlock_all(win->w));
  return MPI_SUCCESS;
}

namespace {
int flush_one(int rank, MPI_Win win_h, const char* fn) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  WIN_TRY(win, fn, check_rank(win, rank));
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, fn, osc::flush(win->w, rank));
  return MPI_SUCCESS;
}
int flush_all(MPI_Win win_h, const char* fn) {
  AXON_WIN_OR_RAISE(win, win_h, fn);
  std::lock_guard<std::mutex> sync_guard(win->sync);
  WIN_TRY(win, fn, osc::flush(win->w, -1));
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Win_flush, (int rank, MPI_Win win)) { return flush_one(rank, win, "MPI_Win_flush"); }
AXON_API(int, MPI_Win_flush_local, (int rank, MPI_Win win)) { return flush_one(rank, win, "MPI_Win_flush_local"); }
AXON_API(int, MPI_Win_flush_all, (MPI_Win win)) { return flush_all(win, "MPI_Win_flush_all"); }
AXON_API(int, MPI_Win_flush_local_all, (MPI_Win win)) { return flush_all(win, "MPI_Win_flush_local_all"); }

AXON_API(int, MPI_Win_sync, (MPI_Win win_h)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_sync");
  osc::sync(win->w);
  return MPI_SUCCESS;
}

// ---- name, info, group, attributes, error handlers -----------------------------------

AXON_API(int, MPI_Win_get_group, (MPI_Win win_h, MPI_Group* group)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_get_group");
  if (!group) return win_raise(win, MPI_ERR_ARG, "MPI_Win_get_group", "group is NULL");
  *group = group_handle(group_new(local_world_ranks(win->comm)));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_set_name, (MPI_Win win_h, const char* win_name)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_set_name");
  if (!win_name) return win_raise(win, MPI_ERR_ARG, "MPI_Win_set_name", "name is NULL");
  // Longer names are truncated, as for communicators.
  win->name.assign(win_name, strnlen(win_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_get_name, (MPI_Win win_h, char* win_name, int* resultlen)) {
  if (win_h == MPI_WIN_NULL) {  // MPI-4.1 7.8: allowed, and named after itself
    if (!win_name || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Win_get_name", "NULL argument");
    *resultlen = static_cast<int>(strlen(strcpy(win_name, "MPI_WIN_NULL")));
    return MPI_SUCCESS;
  }
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_get_name");
  if (!win_name || !resultlen) return win_raise(win, MPI_ERR_ARG, "MPI_Win_get_name", "NULL argument");
  memcpy(win_name, win->name.c_str(), win->name.size() + 1);
  *resultlen = static_cast<int>(win->name.size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_set_info, (MPI_Win win_h, MPI_Info info)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_set_info");
  Info* in = info_from_handle(info);
  if (!in && info != MPI_INFO_NULL) return win_raise(win, MPI_ERR_INFO, "MPI_Win_set_info", "invalid info");
  if (in)
    for (const auto& [k, v] : in->entries) win->hints->set(k, v);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_get_info, (MPI_Win win_h, MPI_Info* info_used)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_get_info");
  if (!info_used) return win_raise(win, MPI_ERR_ARG, "MPI_Win_get_info", "info_used is NULL");
  // The hints in effect: the defaults of this implementation, then what the user set.
  Info* out = info_new();
  out->set("no_locks", "false");
  out->set("accumulate_ordering", "rar,raw,war,waw");
  out->set("accumulate_ops", "same_op_no_op");
  out->set("same_size", "false");
  out->set("same_disp_unit", "false");
  if (win->flavor == MPI_WIN_FLAVOR_SHARED) out->set("alloc_shared_noncontig", "false");
  // User hints we do not know are ignored, and MPI_Win_get_info returns only
  // hints not ignored (MPI-4.1 12.2.7; MPICH does the same).
  static const char* const known[] = {"no_locks",       "accumulate_ordering",   "accumulate_ops",
                                      "same_size",      "same_disp_unit",        "alloc_shared_noncontig",
                                      "mpi_accumulate_granularity"};
  for (const auto& [k, v] : win->hints->entries)
    for (const char* name : known)
      if (k == name) out->set(k, v);
  *info_used = info_handle(out);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_set_attr, (MPI_Win win_h, int keyval, void* value)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_set_attr");
  WIN_TRY(win, "MPI_Win_set_attr", attr_set(host_of(win), keyval, value));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_get_attr, (MPI_Win win_h, int keyval, void* value, int* flag)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_get_attr");
  if (!value || !flag) return win_raise(win, MPI_ERR_ARG, "MPI_Win_get_attr", "NULL argument");
  WIN_TRY(win, "MPI_Win_get_attr", attr_get(host_of(win), keyval, value, flag));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_delete_attr, (MPI_Win win_h, int keyval)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_delete_attr");
  WIN_TRY(win, "MPI_Win_delete_attr", attr_delete(host_of(win), keyval));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_create_errhandler,
         (MPI_Win_errhandler_function * function, MPI_Errhandler* errhandler)) {
  if (!function || !errhandler) return raise_self(MPI_ERR_ARG, "MPI_Win_create_errhandler", "NULL argument");
  auto* e = new Errhandler;
  e->kind = Errhandler::Kind::User;
  // One function slot serves every object kind; win_raise calls it with an MPI_Win*.
  e->comm_fn = reinterpret_cast<MPI_Comm_errhandler_function*>(function);
  *errhandler = errhandler_handle(e);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_set_errhandler, (MPI_Win win_h, MPI_Errhandler errhandler)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_set_errhandler");
  Errhandler* e = errhandler_from_handle(errhandler);
  if (!e) return win_raise(win, MPI_ERR_ERRHANDLER, "MPI_Win_set_errhandler", "invalid error handler");
  errhandler_retain(e);
  errhandler_release(win->errhandler);
  win->errhandler = e;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_get_errhandler, (MPI_Win win_h, MPI_Errhandler* errhandler)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_get_errhandler");
  if (!errhandler) return win_raise(win, MPI_ERR_ARG, "MPI_Win_get_errhandler", "errhandler is NULL");
  errhandler_retain(win->errhandler);
  *errhandler = errhandler_handle(win->errhandler);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Win_call_errhandler, (MPI_Win win_h, int errorcode)) {
  AXON_WIN_OR_RAISE(win, win_h, "MPI_Win_call_errhandler");
  win_raise(win, errorcode, "MPI_Win_call_errhandler");
  return MPI_SUCCESS;
}

}  // namespace axon::mpi
