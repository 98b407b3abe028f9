// The predefined communicators and the basic queries (rank, size, names).
// Creating and freeing communicators: src/mpi/communicator.cpp.
#include <cstring>
#include <numeric>

#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace detail {
Comm world_comm;
Comm self_comm;
}  // namespace detail

namespace {
Comm& world = detail::world_comm;
Comm& self = detail::self_comm;

// Context ids of the predefined communicators; ids from 16 up are free for
// communicators created at run time.
constexpr uint32_t kWorldP2p = 0, kWorldColl = 1, kSelfP2p = 2, kSelfColl = 3;
}  // namespace

Comm* comm_world() { return &world; }
Comm* comm_self() { return &self; }

void comms_init() {
  const rte::Job& job = rte::job();
  std::vector<int> all(job.size);
  std::iota(all.begin(), all.end(), 0);
  world.predefined = true;
  world.handle = MPI_COMM_WORLD;
  world.name = "MPI_COMM_WORLD";
  world.errhandler = errhandler_from_handle(MPI_ERRORS_ARE_FATAL);
  pml::context_open(&world.p2p, kWorldP2p, job.rank, all);
  pml::context_open(&world.coll, kWorldColl, job.rank, all);
  diag::hang::comm_opened(kWorldP2p, kWorldColl, &world.name, world.size());
  self.predefined = true;
  self.handle = MPI_COMM_SELF;
  self.name = "MPI_COMM_SELF";
  self.errhandler = errhandler_from_handle(MPI_ERRORS_ARE_FATAL);
  pml::context_open(&self.p2p, kSelfP2p, 0, {job.rank});
  pml::context_open(&self.coll, kSelfColl, 0, {job.rank});
  diag::hang::comm_opened(kSelfP2p, kSelfColl, &self.name, self.size());
}

void comms_finalize() {
  comms_reap_all();
  for (Comm* c : {&world, &self}) {
    diag::hang::comm_closed(c->p2p.id);
    pml::context_close(&c->p2p);
    pml::context_close(&c->coll);
    c->p2p.world_of.clear();
    c->coll.world_of.clear();
  }
}

}  // namespace axon::mpi

using namespace axon::mpi;

AXON_API(int, MPI_Comm_rank, (MPI_Comm comm, int* rank)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_rank");
  if (!rank) return raise(c, MPI_ERR_ARG, "MPI_Comm_rank", "rank is NULL");
  *rank = c->rank();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_size, (MPI_Comm comm, int* size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_size");
  if (!size) return raise(c, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  *size = local_size(c);  // an intercommunicator's size is its local group's
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_set_name, (MPI_Comm comm, const char* comm_name)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_set_name");
  if (!comm_name) return raise(c, MPI_ERR_ARG, "MPI_Comm_set_name", "name is NULL");
  c->name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_get_name, (MPI_Comm comm, char* comm_name, int* resultlen)) {
  if (comm == MPI_COMM_NULL) {  // MPI-4.1 7.8: allowed, and named after itself
    if (!comm_name || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Comm_get_name", "NULL argument");
    *resultlen = static_cast<int>(std::strlen(std::strcpy(comm_name, "MPI_COMM_NULL")));
    return MPI_SUCCESS;
  }
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_get_name");
  if (!comm_name || !resultlen) return raise(c, MPI_ERR_ARG, "MPI_Comm_get_name", "NULL argument");
  std::memcpy(comm_name, c->name.c_str(), c->name.size() + 1);
  *resultlen = static_cast<int>(c->name.size());
  return MPI_SUCCESS;
}
