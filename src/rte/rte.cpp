#include "rte/rte.h"

#include <pmix.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/log.h"

namespace axon::rte {

namespace {

Job the_job;
pmix_proc_t my_proc;
bool pmix_up = false;

std::string sanitize(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return out;
}

bool get_uint(const pmix_proc_t* proc, const char* key, uint32_t* out) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(proc, key, nullptr, 0, &v) != PMIX_SUCCESS || !v) return false;
  bool ok = true;
  switch (v->type) {
    case PMIX_UINT32: *out = v->data.uint32; break;
    case PMIX_UINT16: *out = v->data.uint16; break;
    case PMIX_PROC_RANK: *out = v->data.rank; break;
    case PMIX_INT: *out = static_cast<uint32_t>(v->data.integer); break;
    case PMIX_UINT64: *out = static_cast<uint32_t>(v->data.uint64); break;
    case PMIX_SIZE: *out = static_cast<uint32_t>(v->data.size); break;
    default: ok = false;
  }
  PMIX_VALUE_RELEASE(v);
  return ok;
}

bool get_string(const pmix_proc_t* proc, const char* key, std::string* out) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(proc, key, nullptr, 0, &v) != PMIX_SUCCESS || !v) return false;
  bool ok = v->type == PMIX_STRING && v->data.string;
  if (ok) *out = v->data.string;
  PMIX_VALUE_RELEASE(v);
  return ok;
}

// CPUs the node lets us use: the cgroup v2 cpuset when there is one, else
// the online CPUs. Our own affinity mask is no guide: mpirun binds each rank
// to one core when there are enough of them.
int count_node_cpus() {
  std::ifstream f("/sys/fs/cgroup/cpuset.cpus.effective");
  std::string list;
  if (f && std::getline(f, list) && !list.empty()) {
    int n = 0;
    std::stringstream ss(list);
    std::string range;
    while (std::getline(ss, range, ',')) {
      int a, b;
      if (sscanf(range.c_str(), "%d-%d", &a, &b) == 2) n += b - a + 1;
      else if (sscanf(range.c_str(), "%d", &a) == 1) n += 1;
    }
    if (n > 0) return n;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

// A launcher that speaks another wire-up protocol starts us with its own
// variables; running as N singletons would silently give wrong answers.
const char* foreign_launcher() {
  const char* ntasks = getenv("SLURM_NTASKS");
  if (getenv("SLURM_JOB_ID") && getenv("SLURM_STEP_ID") && ntasks && atoi(ntasks) > 1)
    return "srun without --mpi=pmix";
  if (getenv("PMI_FD") || getenv("PMI_RANK") || getenv("PMI_SIZE") || getenv("PMI_PORT"))
    return "a PMI-1/PMI-2 launcher (e.g. MPICH's Hydra)";
  if (getenv("OMPI_COMM_WORLD_SIZE")) return "Open MPI's mpirun";
  return nullptr;
}

void finish_job_setup() {
  Job& j = the_job;
  j.shm_prefix = "/axon." + sanitize(j.nspace);
  j.node_cpus = count_node_cpus();
  j.oversubscribed = j.local_size > j.node_cpus;
  log::set_identity(j.rank, j.hostname.c_str());
  log::debug(1, "rank %d of %d, local %d of %d, node cpus %d%s", j.rank, j.size, j.local_rank,
             j.local_size, j.node_cpus, j.oversubscribed ? " (oversubscribed)" : "");
}

int init_singleton() {
  Job& j = the_job;
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  j = Job{};
  j.hostname = host;
  j.nspace = "singleton." + std::to_string(getpid());
  j.local_peers = {0};
  finish_job_setup();
  return 0;
}

}  // namespace

const Job& job() { return the_job; }

namespace {
std::vector<Proc> foreign_procs;  // id job().size + i
}

int proc_id(const std::string& nspace, int rank, const std::string& hostname) {
  if (nspace == the_job.nspace) return rank;
  for (size_t i = 0; i < foreign_procs.size(); ++i)
    if (foreign_procs[i].rank == rank && foreign_procs[i].nspace == nspace)
      return the_job.size + static_cast<int>(i);
  foreign_procs.push_back(Proc{nspace, rank, hostname});
  return the_job.size + static_cast<int>(foreign_procs.size()) - 1;
}

bool is_foreign(int id) { return id >= the_job.size && id < the_job.size + foreign_count(); }

const Proc* foreign(int id) { return is_foreign(id) ? &foreign_procs[id - the_job.size] : nullptr; }

int foreign_count() { return static_cast<int>(foreign_procs.size()); }

bool have_server() { return pmix_up; }

void global_name(int id, uint32_t* job_hash, int* rank) {
  const Proc* p = foreign(id);
  const std::string& nspace = p ? p->nspace : the_job.nspace;
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : nspace) h = (h ^ c) * 16777619u;
  *job_hash = h;
  *rank = p ? p->rank : id;
}

bool is_local(int world_rank) {
  for (int p : the_job.local_peers)
    if (p == world_rank) return true;
  return false;
}

int init() {
  // Sibling ranks read each other's memory with process_vm_readv for
  // single-copy transfers; Yama's ptrace_scope=1 forbids that unless we opt in.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  if (!getenv("PMIX_NAMESPACE") && !getenv("PMIX_SERVER_URI41") && !getenv("PMIX_SERVER_URI4") &&
      !getenv("PMIX_SERVER_URI3") && !getenv("PMIX_SERVER_URI2")) {
    if (const char* other = foreign_launcher()) {
      // N processes would otherwise each run as a singleton and give wrong answers.
      log::error("MPI_Init: started by %s? This process has no PMIx server (PMIX_NAMESPACE is not "
                 "set) but looks like one rank of several; Axon needs PMIx: use Axon's mpirun, or "
                 "srun --mpi=pmix under Slurm", other);
      return 1;
    }
    return init_singleton();
  }
  // The hash datastore: the default shared-memory one loses fence-less gets and
  // hangs when peers die (see docs/architecture.md).
  setenv("PMIX_MCA_gds", "hash", 0);
  auto threads = [] {  // of this process (Job::library_threads)
    std::ifstream f("/proc/self/status");
    std::string k;
    int n = 0;
    while (f >> k)
      if (k == "Threads:" && (f >> n)) break;
    return n;
  };
  const int threads_before = threads();
  pmix_status_t rc = PMIx_Init(&my_proc, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    log::error("cannot connect to the PMIx server of the launcher: %s", PMIx_Error_string(rc));
    return 1;
  }
  pmix_up = true;
  Job& j = the_job;
  j = Job{};  // the runtime may start again after a finalize (Sessions)
  j.library_threads = std::max(0, threads() - threads_before);
  foreign_procs.clear();
  j.singleton = false;
  j.nspace = my_proc.nspace;
  j.rank = static_cast<int>(my_proc.rank);

  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, my_proc.nspace, PMIX_RANK_WILDCARD);
  uint32_t v = 0;
  // PMIX_JOB_SIZE, not PMIX_UNIV_SIZE: some launchers put the slot count in the latter.
  if (!get_uint(&wildcard, PMIX_JOB_SIZE, &v)) {
    log::error("the PMIx server did not provide the job size (PMIX_JOB_SIZE)");
    return 1;
  }
  j.size = static_cast<int>(v);
  std::string peers;
  if (get_string(&wildcard, PMIX_LOCAL_PEERS, &peers)) {
    std::stringstream ss(peers);
    std::string item;
    while (std::getline(ss, item, ',')) j.local_peers.push_back(atoi(item.c_str()));
  }
  if (j.local_peers.empty()) j.local_peers = {j.rank};
  std::sort(j.local_peers.begin(), j.local_peers.end());
  j.local_size = static_cast<int>(j.local_peers.size());
  j.local_rank = 0;
  for (int i = 0; i < j.local_size; ++i)
    if (j.local_peers[i] == j.rank) j.local_rank = i;
  if (!get_string(&my_proc, PMIX_HOSTNAME, &j.hostname)) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    j.hostname = host;
  }
  finish_job_setup();
  return 0;
}

int publish(const char* key, const void* data, size_t len) {
  if (!pmix_up) return 0;  // singleton: nobody to tell
  pmix_value_t value;
  pmix_byte_object_t bo;
  bo.bytes = static_cast<char*>(const_cast<void*>(data));
  bo.size = len;
  PMIX_VALUE_LOAD(&value, &bo, PMIX_BYTE_OBJECT);
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &value);
  PMIX_VALUE_DESTRUCT(&value);
  if (rc != PMIX_SUCCESS) {
    log::error("PMIx_Put(%s) failed: %s", key, PMIx_Error_string(rc));
    return 1;
  }
  return 0;
}

int exchange() {
  if (!pmix_up) return 0;
  pmix_status_t rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) {
    log::error("PMIx_Commit failed: %s", PMIx_Error_string(rc));
    return 1;
  }
  pmix_info_t info;
  bool collect = true;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  rc = PMIx_Fence(nullptr, 0, &info, 1);
  PMIX_INFO_DESTRUCT(&info);
  if (rc != PMIX_SUCCESS) {
    log::error("PMIx_Fence failed (%s): a peer probably died during start-up", PMIx_Error_string(rc));
    return 1;
  }
  return 0;
}

int lookup(int world_rank, const char* key, std::vector<uint8_t>* out) {
  if (!pmix_up) return 1;
  pmix_proc_t peer;
  PMIX_LOAD_PROCID(&peer, my_proc.nspace, static_cast<pmix_rank_t>(world_rank));
  pmix_value_t* v = nullptr;
  pmix_status_t rc = PMIx_Get(&peer, key, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS || !v) return 1;
  bool ok = v->type == PMIX_BYTE_OBJECT;
  if (ok) out->assign(v->data.bo.bytes, v->data.bo.bytes + v->data.bo.size);
  PMIX_VALUE_RELEASE(v);
  return ok ? 0 : 1;
}

int spawn(const std::vector<SpawnApp>& apps, std::string* nspace, std::string* why) {
  if (!pmix_up) {
    *why = "this process was not started by a launcher (singleton): there is nobody to start processes";
    return 1;
  }
  std::vector<pmix_app_t> papps(apps.size());
  pmix_status_t rc_ignore_ = PMIX_SUCCESS;
  for (size_t a = 0; a < apps.size(); ++a) {
    pmix_app_t& p = papps[a];
    PMIX_APP_CONSTRUCT(&p);
    p.cmd = strdup(apps[a].command.c_str());
    for (const std::string& arg : apps[a].argv) PMIX_ARGV_APPEND(rc_ignore_, p.argv, arg.c_str());
    for (const std::string& e : apps[a].env) PMIX_ARGV_APPEND(rc_ignore_, p.env, e.c_str());
    p.maxprocs = apps[a].maxprocs;
    if (!apps[a].wdir.empty()) p.cwd = strdup(apps[a].wdir.c_str());
  }
  char child[PMIX_MAX_NSLEN + 1] = {};
  pmix_status_t rc = PMIx_Spawn(nullptr, 0, papps.data(), papps.size(), child);
  (void)rc_ignore_;
  for (pmix_app_t& p : papps) PMIX_APP_DESTRUCT(&p);
  if (rc != PMIX_SUCCESS) {
    *why = std::string("the launcher could not start the processes (") + PMIx_Error_string(rc) +
           "; mpirun prints why)";
    return 1;
  }
  *nspace = child;
  return 0;
}

int appnum() {
  uint32_t v = 0;
  if (!pmix_up || !get_uint(&my_proc, PMIX_APPNUM, &v)) return 0;
  return static_cast<int>(v);
}

int universe_size() {
  uint32_t v = 0;
  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, my_proc.nspace, PMIX_RANK_WILDCARD);
  if (!pmix_up || !get_uint(&wildcard, PMIX_UNIV_SIZE, &v) || v == 0) return the_job.size;
  return static_cast<int>(v);
}

int publish_name(const std::string& service, const std::string& value) {
  if (!pmix_up) return -1;
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  PMIX_INFO_LOAD(&info, service.c_str(), value.c_str(), PMIX_STRING);
  pmix_status_t rc = PMIx_Publish(&info, 1);
  PMIX_INFO_DESTRUCT(&info);
  return rc == PMIX_SUCCESS ? 0 : 1;
}

int lookup_name(const std::string& service, std::string* value) {
  if (!pmix_up) return -1;
  pmix_pdata_t pdata;
  PMIX_PDATA_CONSTRUCT(&pdata);
  PMIX_LOAD_KEY(pdata.key, service.c_str());
  pmix_status_t rc = PMIx_Lookup(&pdata, 1, nullptr, 0);
  bool ok = rc == PMIX_SUCCESS && pdata.value.type == PMIX_STRING && pdata.value.data.string;
  if (ok) *value = pdata.value.data.string;
  PMIX_PDATA_DESTRUCT(&pdata);
  return ok ? 0 : 1;
}

int unpublish_name(const std::string& service) {
  if (!pmix_up) return -1;
  char* keys[2] = {const_cast<char*>(service.c_str()), nullptr};
  pmix_status_t rc = PMIx_Unpublish(keys, nullptr, 0);
  return rc == PMIX_SUCCESS ? 0 : 1;
}

void abort_job(int code, const char* message) {
  if (pmix_up) {
    // The launcher ends every rank and reports `code` as the job's exit status.
    PMIx_Abort(code, message, nullptr, 0);
  }
  _exit(code);
}

void finalize() {
  if (pmix_up) {
    PMIx_Finalize(nullptr, 0);
    pmix_up = false;
  }
}

}  // namespace axon::rte
