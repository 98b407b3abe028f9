// This process in its job: who am I, who are my peers, which of them share
// my node, and the key-value exchange (PMIx) through which transports publish
// their business cards. Under mpirun, srun --mpi=pmix or any PMIx launcher
// the data comes from the PMIx server; with no launcher the process is a
// singleton job of size 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace axon::rte {

struct Job {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::vector<int> local_peers;  // world ranks on this node, ascending (includes self)
  std::string nspace;            // PMIx namespace ("singleton.<pid>" without launcher)
  std::string hostname;
  // Prefix for every shared-memory object of this job: "/axon.<nspace>".
  // mpirun removes /dev/shm/axon.<nspace>.* whatever way the job ends.
  std::string shm_prefix;
  bool singleton = true;
  int node_cpus = 1;             // CPUs this node's cgroup/cpuset lets the job use
  bool oversubscribed = false;   // more local ranks than node_cpus
  int library_threads = 0;       // threads PMIx_Init started (its progress thread), not the application's
};

// Starts the PMIx client (or singleton mode). Returns 0 or prints why not and
// returns non-zero.
int init();
const Job& job();
bool is_local(int world_rank);

// Business cards: publish under `key`, exchange with one fence, look up.
int publish(const char* key, const void* data, size_t len);
int exchange();
int lookup(int world_rank, const char* key, std::vector<uint8_t>* out);

// ---- processes of other jobs (dynamic processes, src/mpi/dpm/) ----
// A process of another job (a spawned child, the parent, an accept/connect
// peer) gets a local id from job().size up, the first time it is named; the
// same (nspace, rank) always maps to the same id, and a process of this job
// maps to its world rank. Ids are local: two processes may give one foreign
// process different ids (nothing on the wire carries them).
struct Proc {
  std::string nspace;
  int rank = 0;
  std::string hostname;
};
int proc_id(const std::string& nspace, int rank, const std::string& hostname);
bool is_foreign(int id);
const Proc* foreign(int id);  // nullptr when id is not a foreign id
int foreign_count();
// A name of process `id` that means the same in every job: a hash of its
// job's nspace and its rank there (for orderings two jobs must agree on).
void global_name(int id, uint32_t* job_hash, int* rank);

// The PMIx connection, for the dynamic-process calls that go through the
// launcher (spawn, publish / lookup of names): false for a singleton.
bool have_server();

// Starts a new job through the launcher (PMIx_Spawn): returns 0 and its
// nspace, or non-zero with the reason in *why.
struct SpawnApp {
  std::string command;
  std::vector<std::string> argv;  // argv[0] included
  int maxprocs = 0;
  std::vector<std::string> env;   // NAME=value added to the new processes' environment
  std::string wdir;               // empty: the launcher's
};
int spawn(const std::vector<SpawnApp>& apps, std::string* nspace, std::string* why);
// This process's application number (PMIX_APPNUM; 0 when unknown).
int appnum();
// The universe size: PMIX_UNIV_SIZE when the launcher gives it, else the job size.
int universe_size();
// The launcher's name service (PMIx_Publish / _Lookup / _Unpublish): 0, or
// 1 not found / already there, -1 no launcher to ask.
int publish_name(const std::string& service, const std::string& value);
int lookup_name(const std::string& service, std::string* value);
int unpublish_name(const std::string& service);

// Ends the whole job with `code` (through the launcher when there is one).
[[noreturn]] void abort_job(int code, const char* message);

void finalize();

}  // namespace axon::rte
