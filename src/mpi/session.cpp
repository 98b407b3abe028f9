// MPI_Session_* and MPI_Group_from_session_pset (MPI-4.1 11.3).
//
// Process sets: "mpi://WORLD" (every process of the job) and "mpi://SELF"
// (this process). Names compare case-insensitively, as URIs' schemes do.
// The runtime under the sessions is the one the World model uses
// (runtime_acquire / runtime_release in src/mpi/init.cpp).
#include "mpi/session.h"

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "accel/accel.h"
#include "mpi/api.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {

RecycledObjects<Session> session_memory;
std::atomic<uint64_t> next_session_id{1};
std::mutex registry_lock;
std::map<uint64_t, Session*> live_sessions;

constexpr const char* kPsetWorld = "mpi://WORLD";
constexpr const char* kPsetSelf = "mpi://SELF";
constexpr const char* kPsets[] = {kPsetWorld, kPsetSelf};
constexpr int kNumPsets = 2;

// The members (world ranks) of a process set, or false when there is none of that name.
bool pset_members(const char* name, std::vector<int>* members) {
  if (strcasecmp(name, kPsetWorld) == 0) {
    members->resize(static_cast<size_t>(rte::job().size));
    std::iota(members->begin(), members->end(), 0);
    return true;
  }
  if (strcasecmp(name, kPsetSelf) == 0) {
    *members = {rte::job().rank};
    return true;
  }
  return false;
}

// The "thread_level" hint of MPI_Session_init (MPI-4.1 11.3.1); a value
// Axon does not know leaves the default, as hints may be ignored.
int requested_thread_level(const Info* info) {
  if (!info) return MPI_THREAD_SINGLE;
  const std::string* v = info->find("thread_level");
  if (!v) return MPI_THREAD_SINGLE;
  for (int level : {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE})
    if (strcasecmp(v->c_str(), thread_level_name(level)) == 0) return level;
  return MPI_THREAD_SINGLE;
}

// Copies a name the way MPI_Session_get_nth_pset does: a zero length asks for
// the size needed (with the terminating NUL); otherwise the name is cut to
// fit the buffer.
void copy_name(const char* name, int* len, char* out) {
  int n = static_cast<int>(strlen(name));
  if (*len == 0) {
    *len = n + 1;
    return;
  }
  int copied = std::min(n, *len - 1);
  std::memcpy(out, name, static_cast<size_t>(copied));
  out[copied] = '\0';
}

}  // namespace

Session* session_from_handle(MPI_Session handle) {
  if (!may_be_object<Session>(handle)) return nullptr;
  auto* s = reinterpret_cast<Session*>(handle);
  return s->magic == kSessionMagic ? s : nullptr;
}

int session_raise(Session* s, int code, const char* function, const char* detail) {
  if (code == MPI_SUCCESS) return code;
  Errhandler* e = s ? s->errhandler : nullptr;
  if (e && e->kind == Errhandler::Kind::Return) return code;
  if (e && e->kind == Errhandler::Kind::User) {
    MPI_Session h = reinterpret_cast<MPI_Session>(s);
    int c = code;
    errhandler_retain(e);  // the handler may replace and free itself
    reinterpret_cast<MPI_Session_errhandler_function*>(e->comm_fn)(&h, &c);
    errhandler_release(e);
    return c;  // the handler may have replaced the code (see raise())
  }
  return raise(nullptr, code, function, detail);  // no communicator: ends the job
}

void* session_bsend_buffer(uint64_t session_id) {
  std::lock_guard<std::mutex> lock(registry_lock);
  auto it = live_sessions.find(session_id);
  return it == live_sessions.end() ? nullptr : it->second->bsend_buffer;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Session_init, (MPI_Info info, MPI_Errhandler errhandler, MPI_Session* session)) {
  const char* fn = "MPI_Session_init";
  Errhandler* e = errhandler_from_handle(errhandler);
  if (!e) return raise_self(MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  Info* hints = nullptr;
  if (info != MPI_INFO_NULL && !(hints = info_from_handle(info))) {
    Session on_error;  // reports through the handler the user gave
    on_error.errhandler = e;
    return session_raise(&on_error, MPI_ERR_INFO, fn, "invalid info");
  }
  if (!session) {
    Session on_error;
    on_error.errhandler = e;
    return session_raise(&on_error, MPI_ERR_ARG, fn, "session is NULL");
  }
  int level = requested_thread_level(hints);
  runtime_acquire(level);
  Session* s = session_memory.take();
  s->id = next_session_id++;
  s->errhandler = e;
  errhandler_retain(e);
  // The level provided, which may be higher than the one asked for (as with
  // MPI_Init_thread): a session started next to an MPI_THREAD_MULTIPLE World
  // model, or another such session, is thread-safe too.
  s->thread_level = std::max(level, runtime_thread_level());
  {
    std::lock_guard<std::mutex> lock(registry_lock);
    live_sessions[s->id] = s;
  }
  *session = reinterpret_cast<MPI_Session>(s);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_finalize, (MPI_Session * session)) {
  const char* fn = "MPI_Session_finalize";
  if (!session) return raise_self(MPI_ERR_ARG, fn, "session is NULL");
  AXON_SESSION_OR_RAISE(s, *session, fn);
  // Messages still in the session's buffer are delivered first, as if it
  // were detached (MPI-4.1 3.6.1).
  {
    std::lock_guard<std::mutex> lock(registry_lock);
    live_sessions.erase(s->id);
  }
  session_buffer_destroy(s);
  errhandler_release(s->errhandler);
  session_memory.give_back(s, kSessionFreed);
  *session = MPI_SESSION_NULL;
  runtime_release(false);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_get_num_psets, (MPI_Session session, MPI_Info info, int* npset_names)) {
  const char* fn = "MPI_Session_get_num_psets";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return session_raise(s, MPI_ERR_INFO, fn, "invalid info");
  if (!npset_names) return session_raise(s, MPI_ERR_ARG, fn, "npset_names is NULL");
  *npset_names = kNumPsets;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_get_nth_pset,
         (MPI_Session session, MPI_Info info, int n, int* pset_len, char* pset_name)) {
  const char* fn = "MPI_Session_get_nth_pset";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return session_raise(s, MPI_ERR_INFO, fn, "invalid info");
  if (n < 0 || n >= kNumPsets) return session_raise(s, MPI_ERR_ARG, fn, "n is not the index of a process set");
  if (!pset_len || *pset_len < 0) return session_raise(s, MPI_ERR_ARG, fn, "invalid pset_len");
  if (*pset_len > 0 && !pset_name) return session_raise(s, MPI_ERR_ARG, fn, "pset_name is NULL");
  copy_name(kPsets[n], pset_len, pset_name);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_get_pset_info, (MPI_Session session, const char* pset_name, MPI_Info* info)) {
  const char* fn = "MPI_Session_get_pset_info";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (!pset_name || !info) return session_raise(s, MPI_ERR_ARG, fn, "NULL argument");
  std::vector<int> members;
  if (!pset_members(pset_name, &members)) return session_raise(s, MPI_ERR_ARG, fn, "no process set of that name");
  Info* out = info_new();
  out->set("mpi_size", std::to_string(members.size()));
  *info = info_handle(out);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_get_info, (MPI_Session session, MPI_Info* info_used)) {
  const char* fn = "MPI_Session_get_info";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (!info_used) return session_raise(s, MPI_ERR_ARG, fn, "info_used is NULL");
  Info* out = info_new();
  out->set("thread_level", thread_level_name(s->thread_level));
  // MPI 5.0 memory allocation kinds: ordinary and MPI_Alloc_mem memory,
  // and CUDA's when the driver and a device are usable (src/accel).
  out->set("mpi_memory_alloc_kinds", accel::memory_alloc_kinds());
  *info_used = info_handle(out);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Group_from_session_pset, (MPI_Session session, const char* pset_name, MPI_Group* newgroup)) {
  const char* fn = "MPI_Group_from_session_pset";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (!pset_name || !newgroup) return session_raise(s, MPI_ERR_ARG, fn, "NULL argument");
  std::vector<int> members;
  if (!pset_members(pset_name, &members)) return session_raise(s, MPI_ERR_ARG, fn, "no process set of that name");
  Group* g = group_new(std::move(members));
  g->session_id = s->id;
  *newgroup = group_handle(g);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_create_errhandler,
         (MPI_Session_errhandler_function * function, MPI_Errhandler* errhandler)) {
  if (!function || !errhandler) return raise_self(MPI_ERR_ARG, "MPI_Session_create_errhandler", "NULL argument");
  auto* e = new Errhandler;
  e->kind = Errhandler::Kind::User;
  // One function-pointer slot serves every kind of object; the kind of the
  // object it is set on decides how it is called.
  e->comm_fn = reinterpret_cast<MPI_Comm_errhandler_function*>(function);
  *errhandler = errhandler_handle(e);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_set_errhandler, (MPI_Session session, MPI_Errhandler errhandler)) {
  const char* fn = "MPI_Session_set_errhandler";
  AXON_SESSION_OR_RAISE(s, session, fn);
  Errhandler* e = errhandler_from_handle(errhandler);
  if (!e) return session_raise(s, MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  errhandler_retain(e);
  errhandler_release(s->errhandler);
  s->errhandler = e;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Session_get_errhandler, (MPI_Session session, MPI_Errhandler* errhandler)) {
  const char* fn = "MPI_Session_get_errhandler";
  AXON_SESSION_OR_RAISE(s, session, fn);
  if (!errhandler) return session_raise(s, MPI_ERR_ARG, fn, "errhandler is NULL");
  errhandler_retain(s->errhandler);
  *errhandler = errhandler_handle(s->errhandler);
  return MPI_SUCCESS;
}

// Any error code may be passed; the call succeeds once the handler returned.
AXON_API(int, MPI_Session_call_errhandler, (MPI_Session session, int errorcode)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_call_errhandler");
  session_raise(s, errorcode, "MPI_Session_call_errhandler");
  return MPI_SUCCESS;
}
