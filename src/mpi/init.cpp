// Start-up, shut-down and the environment queries.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/log.h"
#include "base/param.h"
#include "btl/btl.h"
#include "coll/coll.h"
#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/attributes.h"
#include "mpi/bsend.h"
#include "mpi/dpm.h"
#include "mpi/report.h"
#include "osc/osc.h"
#include "progress/progress.h"
#include "rte/rte.h"

#ifndef PACKAGE_VERSION
#include "axon_config.h"
#endif

namespace axon::mpi {

namespace {
std::atomic<int> state{0};  // World model: 0 not initialized, 1 running, 2 finalized
int thread_level = MPI_THREAD_SINGLE;
pthread_t main_thread;

// The runtime (rte, pml, btl, the predefined communicators) is shared by the
// World model and every session: the first user starts it, the last one
// stops it. Starting and stopping are collective over the job (a PMIx fence
// to exchange business cards, a barrier before shared memory goes away), so
// processes start and stop it together: MPI_Init, or the first
// MPI_Session_init when no World model runs; MPI_Finalize, or the last
// MPI_Session_finalize. It can start again after it stopped (Sessions).
//
// The PMIx connection (rte) outlives a stop by the last session: a PMIx
// server answers a fence that meets a client which finalized and connects
// again with PARTIAL_SUCCESS, so a rank that stops and starts again quickly
// would break the next start-up's fence. It ends with MPI_Finalize, or at
// exit when only sessions used it.
std::mutex runtime_lock;
int runtime_users = 0;
int runtime_level = MPI_THREAD_SINGLE;  // the highest level any current user asked for
bool rte_up = false;

void rte_finalize_at_exit() {
  std::lock_guard<std::mutex> lock(runtime_lock);
  if (rte_up && runtime_users == 0) {
    rte::finalize();
    rte_up = false;
  }
}

void runtime_stop(bool world_ends) {
  buffered_sends_flush();
  report_write();  // AXON_REPORT: while every transport is open
  // Every rank must be done with shared memory before anyone unmaps it.
  {
    diag::hang::BlockedIn blocked("MPI_Finalize", diag::hang::What::Other, &comm_world()->coll);
    blocked.arm();
    coll::barrier(&comm_world()->coll);
  }
  diag::hang::finalize();
  comms_finalize();
  osc::finalize();  // the RMA progress agent stops before the transports close
  btl::finalize();
  pml::finalize();
  if (world_ends) {
    rte::finalize();
    rte_up = false;
  }
}

int start(int required, int* provided) {
  if (state.load() != 0) {
    return raise_self(MPI_ERR_OTHER, "MPI_Init",
                      state.load() == 1 ? "MPI is already initialized" : "MPI was finalized; it cannot be initialized again");
  }
  int level = required;
  if (level < MPI_THREAD_SINGLE || level > MPI_THREAD_MULTIPLE) level = MPI_THREAD_SINGLE;
  thread_level = level;
  main_thread = pthread_self();
  runtime_acquire(level);
  if (provided) *provided = level;
  state.store(1);
  dpm_init_parent();  // a process started by MPI_Comm_spawn connects to its parent
  return MPI_SUCCESS;
}
}  // namespace

void runtime_acquire(int thread_level_required) {
  std::lock_guard<std::mutex> lock(runtime_lock);
  if (thread_level_required == MPI_THREAD_MULTIPLE) progress::enable_thread_safety();
  if (runtime_users == 0) runtime_level = MPI_THREAD_SINGLE;
  runtime_level = std::max(runtime_level, thread_level_required);
  if (runtime_users++ > 0) return;
  if (!rte_up) {
    if (rte::init() != 0) rte::abort_job(1, "MPI_Init: cannot start");
    rte_up = true;
    static bool exit_hook = false;
    if (!exit_hook) exit_hook = atexit(rte_finalize_at_exit) == 0;
  }
  progress::init();
  if (pml::init() != 0 || btl::init() != 0) {
    log::error("MPI start-up failed: see the messages above");
    rte::abort_job(1, "MPI start-up failed");
  }
  comms_init();
  diag::hang::init(rte::job().rank);
  // Typos in AXON_* variables: rank 0 names them (every rank has the same
  // environment under mpirun), once per process.
  if (rte::job().rank == 0) warn_unknown_variables();
}

void runtime_release(bool world_ends) {
  std::lock_guard<std::mutex> lock(runtime_lock);
  if (--runtime_users == 0) runtime_stop(world_ends);
}

int runtime_thread_level() {
  std::lock_guard<std::mutex> lock(runtime_lock);
  return runtime_level;
}

bool runtime_running() {
  std::lock_guard<std::mutex> lock(runtime_lock);
  return runtime_users > 0;
}

bool initialized() { return state.load() >= 1; }
bool finalized() { return state.load() == 2; }

void set_status(MPI_Status* s, int source, int tag, int error, size_t bytes, bool cancelled) {
  if (!s) return;
  s->MPI_SOURCE = source;
  s->MPI_TAG = tag;
  s->MPI_ERROR = error;
  s->MPI_internal[0] = static_cast<int>(static_cast<uint32_t>(bytes));
  s->MPI_internal[1] = static_cast<int>(static_cast<uint32_t>(static_cast<uint64_t>(bytes) >> 32));
  s->MPI_internal[2] = cancelled ? 1 : 0;
}

void set_empty_status(MPI_Status* s) { set_status(s, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, false); }

void status_from_request(MPI_Status* s, const pml::Request* r) {
  if (!s) return;
  // MPI_ERROR is left alone by single-completion calls (MPI-4.1 3.2.5); the
  // multiple-completion calls set it themselves.
  int error = s->MPI_ERROR;
  set_status(s, r->source, r->tag, error, r->bytes, r->cancelled);
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Init, (int* argc, char*** argv)) {
  (void)argc;
  (void)argv;
  return start(MPI_THREAD_SINGLE, nullptr);
}

AXON_API(int, MPI_Init_thread, (int* argc, char*** argv, int required, int* provided)) {
  (void)argc;
  (void)argv;
  return start(required, provided);
}

AXON_API(int, MPI_Initialized, (int* flag)) {
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Initialized", "flag is NULL");
  *flag = state.load() >= 1;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Finalized, (int* flag)) {
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Finalized", "flag is NULL");
  *flag = state.load() == 2;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Finalize, (void)) {
  if (state.load() != 1) return raise_self(MPI_ERR_OTHER, "MPI_Finalize", "MPI is not initialized");
  // MPI-4.1 11.2.2: MPI_COMM_SELF's attributes are deleted first, while MPI
  // is fully usable (MPI_Finalized still says false in the callbacks).
  int attr_rc = attributes_finalize();
  buffered_sends_flush();  // as if the process's buffer were detached
  runtime_release(true);
  state.store(2);
  // A failing delete callback makes MPI_Finalize report that error, once
  // the library has shut down (raising it now would reach a closed comm).
  return attr_rc;
}

AXON_API(int, MPI_Abort, (MPI_Comm comm, int errorcode)) {
  (void)comm;  // the whole job ends: Axon has no partial-job recovery
  char msg[128];
  snprintf(msg, sizeof msg, "MPI_Abort was called with error code %d", errorcode);
  log::error("%s", msg);
  rte::abort_job(errorcode, msg);
}

AXON_API(int, MPI_Query_thread, (int* provided)) {
  if (!provided) return raise_self(MPI_ERR_ARG, "MPI_Query_thread", "provided is NULL");
  *provided = thread_level;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Is_thread_main, (int* flag)) {
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Is_thread_main", "flag is NULL");
  *flag = pthread_equal(pthread_self(), main_thread) != 0;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Get_processor_name, (char* name, int* resultlen)) {
  if (!name || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Get_processor_name", "NULL argument");
  char host[MPI_MAX_PROCESSOR_NAME];
  if (gethostname(host, sizeof host) != 0) strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  size_t n = strlen(host);
  std::memcpy(name, host, n + 1);
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Get_version, (int* version, int* subversion)) {
  if (!version || !subversion) return raise_self(MPI_ERR_ARG, "MPI_Get_version", "NULL argument");
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Get_library_version, (char* version, int* resultlen)) {
  if (!version || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Get_library_version", "NULL argument");
  std::string transports;
  for (const char* t : btl::available()) transports += (transports.empty() ? "" : ", ") + std::string(t);
  int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                   "Axon MPI %s (MPI %d.%d, standard ABI %d.%d; transports: %s)", PACKAGE_VERSION,
                   MPI_VERSION, MPI_SUBVERSION, MPI_ABI_VERSION, MPI_ABI_SUBVERSION, transports.c_str());
  *resultlen = n;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Abi_get_version, (int* abi_major, int* abi_minor)) {
  if (!abi_major || !abi_minor) return raise_self(MPI_ERR_ARG, "MPI_Abi_get_version", "NULL argument");
  *abi_major = MPI_ABI_VERSION;
  *abi_minor = MPI_ABI_SUBVERSION;
  return MPI_SUCCESS;
}

AXON_API(double, MPI_Wtime, (void)) { return now_seconds(); }

AXON_API(double, MPI_Wtick, (void)) {
  timespec res;
  if (clock_getres(CLOCK_MONOTONIC, &res) != 0) return 1e-9;
  return static_cast<double>(res.tv_sec) + 1e-9 * static_cast<double>(res.tv_nsec);
}
