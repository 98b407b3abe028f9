// Neighbourhood collectives (MPI-4.1 8.6): MPI_Neighbor_allgather(v) and
// MPI_Neighbor_alltoall(v,w), their nonblocking MPI_Ineighbor_* and
// persistent MPI_Neighbor_*_init forms and the large-count _c variants.
//
// This file checks the arguments and describes the call as one block per
// neighbour of the topology (src/mpi/topology.h) in coll::NeighborArgs;
// src/coll/neighbor.cpp moves the blocks. A nonblocking call's
// communicator counts it as pending, so that MPI_Comm_free does not
// deallocate it under the operation.
#include <vector>

#include "coll/coll.h"
#include "mpi/api.h"
#include "mpi/context_id.h"
#include "mpi/topology.h"

using namespace axon;
using namespace axon::mpi;

namespace {

enum class Form : uint8_t { Blocking, Nonblocking, Persistent };

void release_comm(pml::Request* r) { --static_cast<Comm*>(r->comm)->pending; }

// Runs the checked call in its form; `a` holds its blocks.
int submit(const char* fn, Comm* c, const Topology& t, coll::NeighborArgs& a, MPI_Request* request, Form form) {
  a.cartesian = t.kind == MPI_CART;
  a.tag = kTagNeighbor;
  int rc;
  if (form == Form::Blocking) {
    rc = coll::neighbor_run(&c->coll, a);
    return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
  }
  pml::Request* r = nullptr;
  rc = form == Form::Nonblocking ? coll::neighbor_post(&c->coll, a, &r) : coll::neighbor_init(coll_state_of(c), a, &r);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  progress::Guard guard;
  r->comm = c;
  if (form == Form::Nonblocking && !r->complete.load(std::memory_order_acquire)) {
    ++c->pending;
    r->on_complete = release_comm;
  }
  *request = handle_of(r);
  return MPI_SUCCESS;
}

// ---- argument checks -------------------------------------------------------

// The communicator's topology, or the error class.
int topology_for(const char* fn, MPI_Comm comm, Comm** out, const Topology** topo) {
  Comm* c = comm_from_handle(comm);
  if (!c) return raise_self(MPI_ERR_COMM, fn, "invalid communicator");
  *out = c;
  if (c->inter || !c->topology) return raise(c, MPI_ERR_TOPOLOGY, fn, "communicator has no topology");
  *topo = c->topology.get();
  return MPI_SUCCESS;
}

// `block`: where the block starts (the buffer argument plus the block's
// displacement), so that MPI_BOTTOM with an absolute address as the
// displacement passes with a predefined type too.
int check_block(MPI_Count count, MPI_Datatype handle, const void* block, Datatype** type) {
  if (int rc = check_count(count)) return rc;
  if (int rc = check_datatype(handle, type)) return rc;
  return check_buffer(block, count, *type);
}

char* at(const void* base, MPI_Aint bytes) { return const_cast<char*>(static_cast<const char*>(base)) + bytes; }

// ---- the five operations, generic in the count / displacement types ----

template <class Count>
int allgather(const char* fn, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Form form) {
  Comm* c = nullptr;
  const Topology* t = nullptr;
  if (int rc = topology_for(fn, comm, &c, &t)) return rc;
  if (form != Form::Blocking && !request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  Datatype *st = nullptr, *rt = nullptr;
  if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE");
  if (int rc = check_block(sendcount, sendtype, sendbuf, &st)) return raise(c, rc, fn, "invalid send block");
  if (int rc = check_block(recvcount, recvtype, recvbuf, &rt)) return raise(c, rc, fn, "invalid receive block");
  coll::NeighborArgs call;
  for (size_t k = 0; k < t->sources.size(); ++k)
    call.recvs.push_back(
        {at(recvbuf, static_cast<MPI_Aint>(k) * recvcount * rt->extent), recvcount, rt, t->sources[k]});
  for (size_t k = 0; k < t->destinations.size(); ++k)
    call.sends.push_back({const_cast<void*>(sendbuf), sendcount, st, t->destinations[k]});
  return submit(fn, c, *t, call, request, form);
}

template <class Count, class Displ>
int allgatherv(const char* fn, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               const Count recvcounts[], const Displ displs[], MPI_Datatype recvtype, MPI_Comm comm,
               MPI_Request* request, Form form) {
  Comm* c = nullptr;
  const Topology* t = nullptr;
  if (int rc = topology_for(fn, comm, &c, &t)) return rc;
  if (form != Form::Blocking && !request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE");
  Datatype *st = nullptr, *rt = nullptr;
  if (int rc = check_block(sendcount, sendtype, sendbuf, &st)) return raise(c, rc, fn, "invalid send block");
  if (int rc = check_datatype(recvtype, &rt)) return raise(c, rc, fn, "invalid receive type");
  size_t in = t->sources.size();
  if (in > 0 && (!recvcounts || !displs)) return raise(c, MPI_ERR_ARG, fn, "recvcounts or displs is NULL");
  coll::NeighborArgs call;
  for (size_t k = 0; k < in; ++k) {
    char* block = at(recvbuf, static_cast<MPI_Aint>(displs[k]) * rt->extent);
    if (int rc = check_block(recvcounts[k], recvtype, block, &rt)) return raise(c, rc, fn, "invalid receive block");
    call.recvs.push_back({block, recvcounts[k], rt, t->sources[k]});
  }
  for (size_t k = 0; k < t->destinations.size(); ++k)
    call.sends.push_back({const_cast<void*>(sendbuf), sendcount, st, t->destinations[k]});
  return submit(fn, c, *t, call, request, form);
}

template <class Count>
int alltoall(const char* fn, const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
             Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Form form) {
  Comm* c = nullptr;
  const Topology* t = nullptr;
  if (int rc = topology_for(fn, comm, &c, &t)) return rc;
  if (form != Form::Blocking && !request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE");
  Datatype *st = nullptr, *rt = nullptr;
  if (int rc = check_block(sendcount, sendtype, sendbuf, &st)) return raise(c, rc, fn, "invalid send block");
  if (int rc = check_block(recvcount, recvtype, recvbuf, &rt)) return raise(c, rc, fn, "invalid receive block");
  coll::NeighborArgs call;
  for (size_t k = 0; k < t->sources.size(); ++k)
    call.recvs.push_back(
        {at(recvbuf, static_cast<MPI_Aint>(k) * recvcount * rt->extent), recvcount, rt, t->sources[k]});
  for (size_t k = 0; k < t->destinations.size(); ++k)
    call.sends.push_back(
        {at(sendbuf, static_cast<MPI_Aint>(k) * sendcount * st->extent), sendcount, st, t->destinations[k]});
  return submit(fn, c, *t, call, request, form);
}

template <class Count, class Displ>
int alltoallv(const char* fn, const void* sendbuf, const Count sendcounts[], const Displ sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const Count recvcounts[], const Displ rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Form form) {
  Comm* c = nullptr;
  const Topology* t = nullptr;
  if (int rc = topology_for(fn, comm, &c, &t)) return rc;
  if (form != Form::Blocking && !request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE");
  Datatype *st = nullptr, *rt = nullptr;
  if (int rc = check_datatype(sendtype, &st)) return raise(c, rc, fn, "invalid send type");
  if (int rc = check_datatype(recvtype, &rt)) return raise(c, rc, fn, "invalid receive type");
  size_t in = t->sources.size(), out = t->destinations.size();
  if ((in > 0 && (!recvcounts || !rdispls)) || (out > 0 && (!sendcounts || !sdispls)))
    return raise(c, MPI_ERR_ARG, fn, "counts or displacements are NULL");
  coll::NeighborArgs call;
  for (size_t k = 0; k < in; ++k) {
    char* block = at(recvbuf, static_cast<MPI_Aint>(rdispls[k]) * rt->extent);
    if (int rc = check_block(recvcounts[k], recvtype, block, &rt)) return raise(c, rc, fn, "invalid receive block");
    call.recvs.push_back({block, recvcounts[k], rt, t->sources[k]});
  }
  for (size_t k = 0; k < out; ++k) {
    char* block = at(sendbuf, static_cast<MPI_Aint>(sdispls[k]) * st->extent);
    if (int rc = check_block(sendcounts[k], sendtype, block, &st)) return raise(c, rc, fn, "invalid send block");
    call.sends.push_back({block, sendcounts[k], st, t->destinations[k]});
  }
  return submit(fn, c, *t, call, request, form);
}

// Displacements in bytes, a type per neighbour.
template <class Count>
int alltoallw(const char* fn, const void* sendbuf, const Count sendcounts[], const MPI_Aint sdispls[],
              const MPI_Datatype sendtypes[], void* recvbuf, const Count recvcounts[], const MPI_Aint rdispls[],
              const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request* request, Form form) {
  Comm* c = nullptr;
  const Topology* t = nullptr;
  if (int rc = topology_for(fn, comm, &c, &t)) return rc;
  if (form != Form::Blocking && !request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE");
  size_t in = t->sources.size(), out = t->destinations.size();
  if ((in > 0 && (!recvcounts || !rdispls || !recvtypes)) || (out > 0 && (!sendcounts || !sdispls || !sendtypes)))
    return raise(c, MPI_ERR_ARG, fn, "counts, displacements or types are NULL");
  coll::NeighborArgs call;
  for (size_t k = 0; k < in; ++k) {
    Datatype* rt = nullptr;
    char* block = at(recvbuf, rdispls[k]);
    if (int rc = check_block(recvcounts[k], recvtypes[k], block, &rt)) return raise(c, rc, fn, "invalid receive block");
    call.recvs.push_back({block, recvcounts[k], rt, t->sources[k]});
  }
  for (size_t k = 0; k < out; ++k) {
    Datatype* st = nullptr;
    char* block = at(sendbuf, sdispls[k]);
    if (int rc = check_block(sendcounts[k], sendtypes[k], block, &st)) return raise(c, rc, fn, "invalid send block");
    call.sends.push_back({block, sendcounts[k], st, t->destinations[k]});
  }
  return submit(fn, c, *t, call, request, form);
}

}  // namespace

// ---- entry points ------------------------------------------------------------------
// Every operation in its blocking, nonblocking (MPI_Ineighbor_*) and persistent
// (MPI_Neighbor_*_init, MPI-4.1 8.13) form, each with its large-count variant,
// only forwards to its function above: generated from src/binding/c_entries.txt
// (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/neighbor_entries.inc"
#include "progress/progress.h"
