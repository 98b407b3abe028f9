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

// Ends the whole job with `code` (through the launcher when there is one).
[[noreturn]] void abort_job(int code, const char* message);

void finalize();

}  // namespace axon::rte
