// slurm.hpp -- the hosts of a Slurm allocation, for mpirun run inside one.
#pragma once

#include "launcher/options.hpp"

#include <string>
#include <vector>

namespace axon::launcher {

// "n[1-3,7],gpu01" -> n1 n2 n3 n7 gpu01 (zero padding kept: n[01-02] -> n01 n02).
bool expand_slurm_nodelist(const std::string &list, std::vector<std::string> &names);
// "2(x3),1" -> 2 2 2 1.
bool expand_slurm_counts(const std::string &list, std::vector<int> &counts);

// When SLURM_JOB_NODELIST is set: its hosts, with slots from
// SLURM_TASKS_PER_NODE (else SLURM_JOB_CPUS_PER_NODE, else 1). Returns false
// (and prints why) when the variables cannot be understood; true with no
// hosts outside an allocation.
bool hosts_from_slurm(std::vector<HostSlots> &hosts);

}  // namespace axon::launcher
