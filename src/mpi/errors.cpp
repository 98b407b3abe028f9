// Error classes, their strings, user-defined error classes / codes / strings
// (MPI_Add_error_*, MPI_Remove_error_*), and error handlers on communicators.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "base/log.h"
#include "mpi/api.h"
#include "mpi/attributes.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {

struct ClassText {
  int code;
  const char* name;
  const char* text;
};

constexpr ClassText kClasses[] = {
    {MPI_SUCCESS, "MPI_SUCCESS", "no error"},
    {MPI_ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"},
    {MPI_ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"},
    {MPI_ERR_TAG, "MPI_ERR_TAG", "invalid tag"},
    {MPI_ERR_COMM, "MPI_ERR_COMM", "invalid communicator"},
    {MPI_ERR_RANK, "MPI_ERR_RANK", "invalid rank"},
    {MPI_ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request"},
    {MPI_ERR_ROOT, "MPI_ERR_ROOT", "invalid root"},
    {MPI_ERR_GROUP, "MPI_ERR_GROUP", "invalid group"},
    {MPI_ERR_OP, "MPI_ERR_OP", "invalid reduction operation"},
    {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"},
    {MPI_ERR_DIMS, "MPI_ERR_DIMS", "invalid dimension argument"},
    {MPI_ERR_ARG, "MPI_ERR_ARG", "invalid argument of some other kind"},
    {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"},
    {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated: the receive buffer is too small"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER", "known error not in this list"},
    {MPI_ERR_INTERN, "MPI_ERR_INTERN", "internal error in the MPI library"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING", "pending request"},
    {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS", "error code is in the status"},
    {MPI_ERR_ACCESS, "MPI_ERR_ACCESS", "permission denied"},
    {MPI_ERR_AMODE, "MPI_ERR_AMODE", "invalid file access mode"},
    {MPI_ERR_ASSERT, "MPI_ERR_ASSERT", "invalid assertion argument"},
    {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"},
    {MPI_ERR_BASE, "MPI_ERR_BASE", "invalid base address"},
    {MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION", "error in a data conversion function"},
    {MPI_ERR_DISP, "MPI_ERR_DISP", "invalid displacement"},
    {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP", "data representation already defined"},
    {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"},
    {MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE", "file is in use"},
    {MPI_ERR_FILE, "MPI_ERR_FILE", "invalid file handle"},
    {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY", "info key too long"},
    {MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY", "info key not defined"},
    {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE", "info value too long"},
    {MPI_ERR_INFO, "MPI_ERR_INFO", "invalid info object"},
    {MPI_ERR_IO, "MPI_ERR_IO", "I/O error"},
    {MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL", "invalid attribute key"},
    {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"},
    {MPI_ERR_NAME, "MPI_ERR_NAME", "service name not published"},
    {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", "out of memory"},
    {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME", "collective arguments differ between processes"},
    {MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE", "not enough space"},
    {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE", "no such file"},
    {MPI_ERR_PORT, "MPI_ERR_PORT", "invalid port name"},
    {MPI_ERR_QUOTA, "MPI_ERR_QUOTA", "quota exceeded"},
    {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY", "read-only file or file system"},
    {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH", "memory cannot be attached to the window"},
    {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT", "conflicting accesses to a window"},
    {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE", "target memory is outside the window"},
    {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED", "memory cannot be shared"},
    {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC", "wrong synchronization of RMA calls"},
    {MPI_ERR_SERVICE, "MPI_ERR_SERVICE", "invalid service name"},
    {MPI_ERR_SIZE, "MPI_ERR_SIZE", "invalid size argument"},
    {MPI_ERR_SPAWN, "MPI_ERR_SPAWN", "error spawning processes"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP", "unsupported data representation"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION", "unsupported operation"},
    {MPI_ERR_WIN, "MPI_ERR_WIN", "invalid window"},
    {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR", "wrong window flavor for this call"},
    {MPI_ERR_PROC_ABORTED, "MPI_ERR_PROC_ABORTED", "operation with an aborted process"},
    {MPI_ERR_VALUE_TOO_LARGE, "MPI_ERR_VALUE_TOO_LARGE", "value too large to store"},
    {MPI_ERR_SESSION, "MPI_ERR_SESSION", "invalid session"},
    {MPI_ERR_ERRHANDLER, "MPI_ERR_ERRHANDLER", "invalid error handler"},
    {MPI_ERR_ABI, "MPI_ERR_ABI", "ABI mismatch"},
    // The tool information interface's return codes are error classes too
    // (MPI-4.1 15.3.10): MPI_Error_class / MPI_Error_string accept them.
    {MPI_T_ERR_CANNOT_INIT, "MPI_T_ERR_CANNOT_INIT", "the tool interface cannot be initialized"},
    {MPI_T_ERR_NOT_ACCESSIBLE, "MPI_T_ERR_NOT_ACCESSIBLE", "the requested information is not accessible"},
    {MPI_T_ERR_NOT_INITIALIZED, "MPI_T_ERR_NOT_INITIALIZED", "the tool interface is not initialized"},
    {MPI_T_ERR_NOT_SUPPORTED, "MPI_T_ERR_NOT_SUPPORTED", "the requested tool operation is not supported"},
    {MPI_T_ERR_MEMORY, "MPI_T_ERR_MEMORY", "out of memory in the tool interface"},
    {MPI_T_ERR_INVALID, "MPI_T_ERR_INVALID", "invalid or bad parameter value in the tool interface"},
    {MPI_T_ERR_INVALID_INDEX, "MPI_T_ERR_INVALID_INDEX", "invalid tool variable or category index"},
    {MPI_T_ERR_INVALID_ITEM, "MPI_T_ERR_INVALID_ITEM", "invalid item index in a tool query"},
    {MPI_T_ERR_INVALID_SESSION, "MPI_T_ERR_INVALID_SESSION", "invalid performance variable session"},
    {MPI_T_ERR_INVALID_HANDLE, "MPI_T_ERR_INVALID_HANDLE", "invalid tool variable handle"},
    {MPI_T_ERR_INVALID_NAME, "MPI_T_ERR_INVALID_NAME", "no tool variable or category of that name"},
    {MPI_T_ERR_OUT_OF_HANDLES, "MPI_T_ERR_OUT_OF_HANDLES", "no more tool variable handles available"},
    {MPI_T_ERR_OUT_OF_SESSIONS, "MPI_T_ERR_OUT_OF_SESSIONS", "no more performance variable sessions available"},
    {MPI_T_ERR_CVAR_SET_NOT_NOW, "MPI_T_ERR_CVAR_SET_NOT_NOW", "the control variable cannot be set now"},
    {MPI_T_ERR_CVAR_SET_NEVER, "MPI_T_ERR_CVAR_SET_NEVER", "the control variable can never be set"},
    {MPI_T_ERR_PVAR_NO_WRITE, "MPI_T_ERR_PVAR_NO_WRITE", "the performance variable cannot be written or reset"},
    {MPI_T_ERR_PVAR_NO_STARTSTOP, "MPI_T_ERR_PVAR_NO_STARTSTOP",
     "the performance variable cannot be started or stopped"},
    {MPI_T_ERR_PVAR_NO_ATOMIC, "MPI_T_ERR_PVAR_NO_ATOMIC",
     "the performance variable cannot be read and reset atomically"},
};

const ClassText* find_class(int code) {
  for (const ClassText& c : kClasses)
    if (c.code == code) return &c;
  return nullptr;
}

// User-defined error classes and codes (MPI-4.1 9.5). They are numbered
// above MPI_ERR_LASTCODE, which the ABI reserves for the library, and never
// reused, so a removed code is never confused with a newer one. A class is
// its own class; a code names the class it was added to.
struct UserError {
  int error_class;
  bool is_class;
  std::string text;  // empty: MPI_Error_string gives an empty string
};

struct UserErrors {
  std::mutex mutex;
  std::map<int, UserError> by_code;
  int next = MPI_ERR_LASTCODE + 1;
};

UserErrors& user_errors() {
  static UserErrors u;
  return u;
}

// MPI_LASTUSEDCODE: the largest error value in use. Caller holds the mutex.
void publish_last_used(const UserErrors& u) {
  attr_set_last_used_code(u.by_code.empty() ? MPI_ERR_LASTCODE : u.by_code.rbegin()->first);
}

// The class of a predefined or user error value; -1 when it is neither.
int class_of(int code) {
  if (find_class(code)) return code;
  UserErrors& u = user_errors();
  std::lock_guard<std::mutex> g(u.mutex);
  auto it = u.by_code.find(code);
  return it == u.by_code.end() ? -1 : it->second.error_class;
}

Errhandler fatal_handler{kErrhandlerMagic, Errhandler::Kind::Fatal, true, nullptr, 1};
Errhandler return_handler{kErrhandlerMagic, Errhandler::Kind::Return, true, nullptr, 1};
Errhandler abort_handler{kErrhandlerMagic, Errhandler::Kind::Abort, true, nullptr, 1};

[[noreturn]] void die(int code, const char* function, const char* detail, const char* why) {
  const ClassText* c = find_class(code);
  std::string user_text;
  if (!c) {
    UserErrors& u = user_errors();
    std::lock_guard<std::mutex> g(u.mutex);
    auto it = u.by_code.find(code);
    user_text = it == u.by_code.end() ? "unknown error code"
                                      : "user error " + std::to_string(code) + " " + it->second.text;
  }
  char message[768];
  snprintf(message, sizeof message, "%s: %s: %s%s%s (%s)", function, c ? c->name : "error",
           c ? c->text : user_text.c_str(), detail ? ": " : "", detail ? detail : "", why);
  log::error("%s", message);
  rte::abort_job(code > 0 && code < 256 ? code : 1, message);
}

}  // namespace

const char* error_class_name(int code) {
  const ClassText* c = find_class(code);
  return c ? c->name : nullptr;
}

Errhandler* errhandler_from_handle(MPI_Errhandler h) {
  if (h == MPI_ERRORS_ARE_FATAL) return &fatal_handler;
  if (h == MPI_ERRORS_RETURN) return &return_handler;
  if (h == MPI_ERRORS_ABORT) return &abort_handler;
  if (!may_be_object<Errhandler>(h)) return nullptr;
  auto* e = reinterpret_cast<Errhandler*>(h);
  return e->magic == kErrhandlerMagic ? e : nullptr;
}

MPI_Errhandler errhandler_handle(Errhandler* e) {
  if (e == &fatal_handler) return MPI_ERRORS_ARE_FATAL;
  if (e == &return_handler) return MPI_ERRORS_RETURN;
  if (e == &abort_handler) return MPI_ERRORS_ABORT;
  return reinterpret_cast<MPI_Errhandler>(e);
}

// Communicators of different threads may share a handler (MPI_THREAD_MULTIPLE:
// one thread dups a communicator while another frees one), so the count is
// updated atomically.
void errhandler_retain(Errhandler* e) {
  if (!e->predefined) std::atomic_ref<int>(e->refcount).fetch_add(1, std::memory_order_relaxed);
}

void errhandler_release(Errhandler* e) {
  if (e->predefined) return;
  if (std::atomic_ref<int>(e->refcount).fetch_sub(1, std::memory_order_acq_rel) == 1) {
    e->magic = 0;
    delete e;
  }
}

int raise(Comm* comm, int code, const char* function, const char* detail) {
  if (code == MPI_SUCCESS) return code;
  Errhandler* e = comm && comm->errhandler ? comm->errhandler : &fatal_handler;
  // Programs written for MPICH set MPI_ERRORS_RETURN on MPI_COMM_WORLD only
  // and expect it to cover communicators that kept the default handler (dups
  // made before the call, MPI_COMM_SELF, calls without a valid communicator);
  // MPICH's own test suite relies on it. So MPI_ERRORS_ARE_FATAL defers to
  // WORLD's handler when WORLD (while it exists) was given another one: a
  // program that never changes a handler still dies on its first error.
  if (e->kind == Errhandler::Kind::Fatal) {
    Comm* world = comm_from_handle(MPI_COMM_WORLD);
    if (world && world != comm && world->errhandler && world->errhandler->kind != Errhandler::Kind::Fatal)
      e = world->errhandler;
  }
  switch (e->kind) {
    case Errhandler::Kind::Return:
      return code;
    case Errhandler::Kind::User: {
      MPI_Comm handle = comm ? comm->handle : MPI_COMM_WORLD;
      int c = code;
      // The handler may replace and free itself (MPI_Comm_set_errhandler +
      // MPI_Errhandler_free): hold a reference while it runs.
      errhandler_retain(e);
      e->comm_fn(&handle, &c);
      errhandler_release(e);
      // The code is passed by reference: what the handler leaves there is
      // what the failing call returns (as MPICH; its errors/io/fileerrret
      // relies on a handler that turns the error into MPI_SUCCESS).
      return c;
    }
    case Errhandler::Kind::Abort:
      die(code, function, detail, "MPI_ERRORS_ABORT");
    case Errhandler::Kind::Fatal:
      break;
  }
  die(code, function, detail, "MPI_ERRORS_ARE_FATAL");
}

bool valid_error_code(int code) { return class_of(code) >= 0; }

// MPI-4 raises errors that have no (valid) communicator, window or file on
// MPI_COMM_SELF (MPI-3 raised them on MPI_COMM_WORLD; raise() falls back to
// WORLD's handler while SELF keeps the default one).
int raise_self(int code, const char* function, const char* detail) {
  return raise(comm_self(), code, function, detail);
}

}  // namespace axon::mpi

using namespace axon::mpi;

AXON_API(int, MPI_Error_class, (int errorcode, int* errorclass)) {
  if (!errorclass) return raise_self(MPI_ERR_ARG, "MPI_Error_class", "errorclass is NULL");
  int c = class_of(errorcode);
  if (c < 0) return raise_self(MPI_ERR_ARG, "MPI_Error_class", "not a valid error code");
  *errorclass = c;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Error_string, (int errorcode, char* string, int* resultlen)) {
  if (!string || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Error_string", "NULL argument");
  if (const ClassText* c = find_class(errorcode)) {
    int n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", c->name, c->text);
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
  }
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  auto it = u.by_code.find(errorcode);
  if (it == u.by_code.end()) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Error_string", "not a valid error code");
  }
  // Strings are limited to MPI_MAX_ERROR_STRING - 1 characters when added.
  const std::string& text = it->second.text;
  std::memcpy(string, text.c_str(), text.size() + 1);
  *resultlen = static_cast<int>(text.size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Add_error_class, (int* errorclass)) {
  if (!errorclass) return raise_self(MPI_ERR_ARG, "MPI_Add_error_class", "errorclass is NULL");
  UserErrors& u = user_errors();
  std::lock_guard<std::mutex> g(u.mutex);
  int c = u.next++;
  u.by_code[c] = UserError{c, true, {}};
  publish_last_used(u);
  *errorclass = c;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Add_error_code, (int errorclass, int* errorcode)) {
  if (!errorcode) return raise_self(MPI_ERR_ARG, "MPI_Add_error_code", "errorcode is NULL");
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  // A predefined class or a user class (not a user code): MPI-4.1 9.5.
  auto it = u.by_code.find(errorclass);
  bool valid = (errorclass != MPI_SUCCESS && find_class(errorclass)) || (it != u.by_code.end() && it->second.is_class);
  if (!valid) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Add_error_code", "not a valid error class");
  }
  int code = u.next++;
  u.by_code[code] = UserError{errorclass, false, {}};
  publish_last_used(u);
  *errorcode = code;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Add_error_string, (int errorcode, const char* string)) {
  if (!string) return raise_self(MPI_ERR_ARG, "MPI_Add_error_string", "string is NULL");
  size_t n = strnlen(string, MPI_MAX_ERROR_STRING);
  if (n >= MPI_MAX_ERROR_STRING)
    return raise_self(MPI_ERR_ARG, "MPI_Add_error_string", "string longer than MPI_MAX_ERROR_STRING - 1");
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  auto it = u.by_code.find(errorcode);
  // Predefined values (<= MPI_ERR_LASTCODE) keep their strings (MPI-4.1 9.5).
  if (it == u.by_code.end()) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Add_error_string", "not a user-defined error code or class");
  }
  it->second.text.assign(string, n);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Remove_error_class, (int errorclass)) {
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  auto it = u.by_code.find(errorclass);
  const char* why = nullptr;
  if (it == u.by_code.end() || !it->second.is_class) {
    why = "not a user-defined error class";
  } else {
    for (const auto& [code, e] : u.by_code)
      if (!e.is_class && e.error_class == errorclass) why = "error codes still belong to this class";
  }
  if (why) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Remove_error_class", why);
  }
  u.by_code.erase(it);  // its string goes with it
  publish_last_used(u);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Remove_error_code, (int errorcode)) {
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  auto it = u.by_code.find(errorcode);
  if (it == u.by_code.end() || it->second.is_class) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Remove_error_code", "not a user-defined error code");
  }
  u.by_code.erase(it);
  publish_last_used(u);
  return MPI_SUCCESS;
}

// Removing the string of a user code or class that has none is a no-op.
AXON_API(int, MPI_Remove_error_string, (int errorcode)) {
  UserErrors& u = user_errors();
  std::unique_lock<std::mutex> g(u.mutex);
  auto it = u.by_code.find(errorcode);
  if (it == u.by_code.end()) {
    g.unlock();
    return raise_self(MPI_ERR_ARG, "MPI_Remove_error_string", "not a user-defined error code or class");
  }
  it->second.text.clear();
  return MPI_SUCCESS;
}

namespace {
int set_comm_errhandler(const char* fn, MPI_Comm comm, MPI_Errhandler errhandler) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Errhandler* e = errhandler_from_handle(errhandler);
  // MPI-4.1 has a class for this: MPI_ERR_ERRHANDLER (older MPIs used MPI_ERR_ARG).
  if (!e) return raise(c, MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  errhandler_retain(e);
  if (c->errhandler) errhandler_release(c->errhandler);
  c->errhandler = e;
  return MPI_SUCCESS;
}

int get_comm_errhandler(const char* fn, MPI_Comm comm, MPI_Errhandler* errhandler) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!errhandler) return raise(c, MPI_ERR_ARG, fn, "errhandler is NULL");
  errhandler_retain(c->errhandler);
  *errhandler = errhandler_handle(c->errhandler);
  return MPI_SUCCESS;
}

int create_comm_errhandler(const char* fn, MPI_Comm_errhandler_function* function, MPI_Errhandler* errhandler) {
  if (!function || !errhandler) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  auto* e = new Errhandler;
  e->kind = Errhandler::Kind::User;
  e->comm_fn = function;
  *errhandler = errhandler_handle(e);
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler errhandler)) {
  return set_comm_errhandler("MPI_Comm_set_errhandler", comm, errhandler);
}
AXON_API(int, MPI_Comm_get_errhandler, (MPI_Comm comm, MPI_Errhandler* errhandler)) {
  return get_comm_errhandler("MPI_Comm_get_errhandler", comm, errhandler);
}
AXON_API(int, MPI_Comm_create_errhandler,
         (MPI_Comm_errhandler_function * function, MPI_Errhandler* errhandler)) {
  return create_comm_errhandler("MPI_Comm_create_errhandler", function, errhandler);
}

// MPI-1's names, removed in MPI-3.0 and kept for old codes (mpi.h).
AXON_API(int, MPI_Errhandler_set, (MPI_Comm comm, MPI_Errhandler errhandler)) {
  return set_comm_errhandler("MPI_Errhandler_set", comm, errhandler);
}
AXON_API(int, MPI_Errhandler_get, (MPI_Comm comm, MPI_Errhandler* errhandler)) {
  return get_comm_errhandler("MPI_Errhandler_get", comm, errhandler);
}
AXON_API(int, MPI_Errhandler_create, (MPI_Comm_errhandler_function * function, MPI_Errhandler* errhandler)) {
  return create_comm_errhandler("MPI_Errhandler_create", function, errhandler);
}

AXON_API(int, MPI_Errhandler_free, (MPI_Errhandler * errhandler)) {
  if (!errhandler) return raise_self(MPI_ERR_ARG, "MPI_Errhandler_free", "NULL argument");
  Errhandler* e = errhandler_from_handle(*errhandler);
  if (!e) return raise_self(MPI_ERR_ERRHANDLER, "MPI_Errhandler_free", "invalid error handler");
  // Only the user's reference goes: a communicator still using the handler
  // keeps it alive (refcount). Predefined handlers may be "freed" too: the
  // handle MPI_Comm_get_errhandler returned for one must be freeable.
  errhandler_release(e);
  *errhandler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}

// Any error code may be passed, user codes included; the call itself
// succeeds once the handler has returned (MPI-4.1 9.3.5).
AXON_API(int, MPI_Comm_call_errhandler, (MPI_Comm comm, int errorcode)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_call_errhandler");
  raise(c, errorcode, "MPI_Comm_call_errhandler");
  return MPI_SUCCESS;
}
