// Dynamic processes (src/mpi/dpm/, docs/dpm.md): the meeting of two
// groups through a port, shared by MPI_Comm_accept / _connect and spawn.
#pragma once

#include <vector>

#include "mpi/communicator.h"
#include "mpi/objects.h"

namespace axon::mpi {

// Collective over the intracommunicator `c`; `port_name` and `timeout`
// (seconds, 0: none) matter at `root` only. MPI_SUCCESS and *out the new
// intercommunicator, or the error class (MPI_ERR_PORT: bad or unknown port,
// no partner in time, broken connection).
int dpm_accept(const char* port_name, double timeout, int root, Comm* c, Comm** out);
int dpm_connect(const char* port_name, double timeout, int root, Comm* c, Comm** out);
// MPI_Init of a process started by MPI_Comm_spawn: connects MPI_COMM_WORLD
// to the parent (MPI_Comm_get_parent's communicator); nothing otherwise.
void dpm_init_parent();
// The intercommunicator to the parent (MPI_COMM_NULL when not spawned, or
// once it was freed or disconnected).
MPI_Comm dpm_parent();
// MPI_Intercomm_create's swap of the two groups' members (collective over
// t.local, the leaders over t.bridge): world ranks when both groups are of
// one job, else every member's description (a process of another job
// learned and routed as by accept / connect). *remote gets the remote
// group's ids in its rank order.
int dpm_swap_groups(const TwoGroups& t, const std::vector<int>& local_ids, std::vector<int>* remote);

}  // namespace axon::mpi
