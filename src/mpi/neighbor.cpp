// Neighbourhood collectives (MPI-4.1 8.6): MPI_Neighbor_allgather(v) and
// MPI_Neighbor_alltoall(v,w), their nonblocking MPI_Ineighbor_* and
// persistent MPI_Neighbor_*_init forms and the large-count _c variants.
//
// Each call is one round of point-to-point messages on the communicator's
// collective context: a receive from every source and a send to every
// destination of the topology (src/mpi/topology.h), all posted at once.
// MPI_PROC_NULL neighbours (cartesian edges) are skipped, so their blocks of
// the receive buffer are left untouched.
//
// Matching. Collectives on a communicator are called in the same order
// everywhere and the PML keeps messages between two processes in order, so
// one tag would do if every pair of processes were neighbours only once. On a
// periodic cartesian dimension of extent 1 or 2 the same process is both the
// -1 and the +1 neighbour; the standard wants the block sent towards +1 to
// arrive in the receiver's -1 slot. So a cartesian message carries its
// direction in the tag: sent in direction (d, -1) it is tagged kTagNeighbor -
// 2d, in (d, +1) kTagNeighbor - 2d - 1, and the receive of slot (d, -1)
// expects the second, slot (d, +1) the first. Graph and distributed-graph
// neighbours use kTagNeighbor and rely on posting order (repeated edges pair
// up in the order they were given, as MPI specifies).
//
// Nonblocking calls return a Kind::Collective request that a progress hook
// completes once every message has; the communicator counts it as pending so
// that MPI_Comm_free does not deallocate it under the operation.
#include <algorithm>
#include <memory>
#include <vector>

#include "coll/coll.h"
#include "coll/schedule.h"
#include "mpi/api.h"
#include "mpi/context_id.h"
#include "mpi/topology.h"

using namespace axon;
using namespace axon::mpi;

namespace {

struct Transfer {
  bool send;
  void* buf;
  MPI_Count count;
  const Datatype* type;
  int peer;
  int tag;
};

// The tags of slot k's send and receive (see the top of the file).
int send_tag(const Topology& t, size_t k) {
  return t.kind == MPI_CART ? kTagNeighbor - static_cast<int>(k) : kTagNeighbor;
}
int recv_tag(const Topology& t, size_t k) {
  return t.kind == MPI_CART ? kTagNeighbor - static_cast<int>(k ^ 1) : kTagNeighbor;
}

// Posts every transfer; on a failure the ones already posted stay in `parts`
// (they must still complete before the buffers are given back).
int post(Comm* c, const std::vector<Transfer>& plan, std::vector<pml::Request*>* parts) {
  // Receives first: a message from a neighbour that is also a destination
  // then finds its receive already posted.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Transfer& x : plan) {
      if (x.send != (pass == 1) || x.peer == MPI_PROC_NULL) continue;
      pml::Request* r = nullptr;
      int rc = x.send ? pml::isend(x.buf, x.count, x.type, x.peer, x.tag, &c->coll, pml::SendMode::Standard, &r)
                      : pml::irecv(x.buf, x.count, x.type, x.peer, x.tag, &c->coll, &r);
      if (rc != MPI_SUCCESS) return rc;
      parts->push_back(r);
    }
  }
  return MPI_SUCCESS;
}

int finish_blocking(std::vector<pml::Request*>& parts, int rc) {
  for (pml::Request* r : parts) {
    pml::wait(r);
    pml::Guard guard;
    if (rc == MPI_SUCCESS) rc = r->error;
    pml::request_release(r);
  }
  return rc;
}

enum class Form : uint8_t { Blocking, Nonblocking, Persistent };

// ---- nonblocking ----------------------------------------------------------

struct Pending {
  Comm* comm;
  pml::Request* request;
  std::vector<pml::Request*> parts;
  int error;
};
std::vector<std::unique_ptr<Pending>> pending_ops;

int neighbor_progress() {
  int advanced = 0;
  for (size_t i = 0; i < pending_ops.size();) {
    Pending& op = *pending_ops[i];
    bool done = std::all_of(op.parts.begin(), op.parts.end(),
                            [](const pml::Request* r) { return r->complete.load(std::memory_order_acquire); });
    if (!done) {
      ++i;
      continue;
    }
    ++advanced;
    int error = op.error;
    for (pml::Request* r : op.parts) {
      if (error == MPI_SUCCESS) error = r->error;
      pml::request_release(r);
    }
    pml::Request* req = op.request;
    req->source = MPI_ANY_SOURCE;
    req->tag = MPI_ANY_TAG;
    req->bytes = 0;
    req->error = error;
    --op.comm->pending;
    pending_ops.erase(pending_ops.begin() + static_cast<long>(i));
    pml::request_complete(req);
  }
  if (pending_ops.empty()) pml::remove_progress_hook(neighbor_progress);
  return advanced;
}

// Runs the plan: to completion (request == nullptr) or in the background.
int run(Comm* c, const std::vector<Transfer>& plan, MPI_Request* request) {
  auto op = std::make_unique<Pending>();
  op->comm = c;
  op->error = post(c, plan, &op->parts);
  if (!request) return finish_blocking(op->parts, op->error);
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Collective);
  r->comm = c;
  op->request = r;
  {
    pml::Guard guard;
    ++c->pending;
    if (pending_ops.empty()) pml::add_progress_hook(neighbor_progress);
    pending_ops.push_back(std::move(op));
  }
  *request = handle_of(r);
  pml::progress();
  return MPI_SUCCESS;
}

// A persistent request of the plan (MPI_Neighbor_*_init): a one-round
// collective schedule started by every MPI_Start. A schedule gives all its
// messages one tag, so the cartesian direction travels in the order instead:
// messages between two processes match in posting order, and each pair of
// slots (d, -1), (d, +1) posts its sends swapped, so the block sent towards
// +1 meets the receive of the -1 slot, as with the tags above.
int persist(Comm* c, const Topology& t, const std::vector<Transfer>& plan, MPI_Request* request) {
  coll::CommState* state = coll_state_of(c);
  auto s = std::make_unique<coll::Schedule>(&c->coll, nullptr);
  s->state = state;
  std::vector<const Transfer*> sends;
  for (const Transfer& x : plan) {
    s->retain(x.type);
    if (!x.send) {
      if (x.peer != MPI_PROC_NULL) s->recv(x.buf, x.count, x.type, x.peer);
    } else {
      sends.push_back(&x);
    }
  }
  for (size_t k = 0; k < sends.size(); ++k) {
    const Transfer& x = *sends[t.kind == MPI_CART ? (k ^ 1) : k];
    if (x.peer != MPI_PROC_NULL) s->send(x.buf, x.count, x.type, x.peer);
  }
  s->round();
  pml::Request* r = coll::init_schedule(std::move(s));
  r->comm = c;
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
  std::vector<Transfer> plan;
  for (size_t k = 0; k < t->sources.size(); ++k)
    plan.push_back({false, at(recvbuf, static_cast<MPI_Aint>(k) * recvcount * rt->extent), recvcount, rt,
                    t->sources[k], recv_tag(*t, k)});
  for (size_t k = 0; k < t->destinations.size(); ++k)
    plan.push_back({true, const_cast<void*>(sendbuf), sendcount, st, t->destinations[k], send_tag(*t, k)});
  int rc = form == Form::Persistent ? persist(c, *t, plan, request)
                                    : run(c, plan, form == Form::Nonblocking ? request : nullptr);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
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
  std::vector<Transfer> plan;
  for (size_t k = 0; k < in; ++k) {
    char* block = at(recvbuf, static_cast<MPI_Aint>(displs[k]) * rt->extent);
    if (int rc = check_block(recvcounts[k], recvtype, block, &rt)) return raise(c, rc, fn, "invalid receive block");
    plan.push_back({false, block, recvcounts[k], rt, t->sources[k], recv_tag(*t, k)});
  }
  for (size_t k = 0; k < t->destinations.size(); ++k)
    plan.push_back({true, const_cast<void*>(sendbuf), sendcount, st, t->destinations[k], send_tag(*t, k)});
  int rc = form == Form::Persistent ? persist(c, *t, plan, request)
                                    : run(c, plan, form == Form::Nonblocking ? request : nullptr);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
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
  std::vector<Transfer> plan;
  for (size_t k = 0; k < t->sources.size(); ++k)
    plan.push_back({false, at(recvbuf, static_cast<MPI_Aint>(k) * recvcount * rt->extent), recvcount, rt,
                    t->sources[k], recv_tag(*t, k)});
  for (size_t k = 0; k < t->destinations.size(); ++k)
    plan.push_back({true, at(sendbuf, static_cast<MPI_Aint>(k) * sendcount * st->extent), sendcount, st,
                    t->destinations[k], send_tag(*t, k)});
  int rc = form == Form::Persistent ? persist(c, *t, plan, request)
                                    : run(c, plan, form == Form::Nonblocking ? request : nullptr);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
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
  std::vector<Transfer> plan;
  for (size_t k = 0; k < in; ++k) {
    char* block = at(recvbuf, static_cast<MPI_Aint>(rdispls[k]) * rt->extent);
    if (int rc = check_block(recvcounts[k], recvtype, block, &rt)) return raise(c, rc, fn, "invalid receive block");
    plan.push_back({false, block, recvcounts[k], rt, t->sources[k], recv_tag(*t, k)});
  }
  for (size_t k = 0; k < out; ++k) {
    char* block = at(sendbuf, static_cast<MPI_Aint>(sdispls[k]) * st->extent);
    if (int rc = check_block(sendcounts[k], sendtype, block, &st)) return raise(c, rc, fn, "invalid send block");
    plan.push_back({true, block, sendcounts[k], st, t->destinations[k], send_tag(*t, k)});
  }
  int rc = form == Form::Persistent ? persist(c, *t, plan, request)
                                    : run(c, plan, form == Form::Nonblocking ? request : nullptr);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
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
  std::vector<Transfer> plan;
  for (size_t k = 0; k < in; ++k) {
    Datatype* rt = nullptr;
    char* block = at(recvbuf, rdispls[k]);
    if (int rc = check_block(recvcounts[k], recvtypes[k], block, &rt)) return raise(c, rc, fn, "invalid receive block");
    plan.push_back({false, block, recvcounts[k], rt, t->sources[k], recv_tag(*t, k)});
  }
  for (size_t k = 0; k < out; ++k) {
    Datatype* st = nullptr;
    char* block = at(sendbuf, sdispls[k]);
    if (int rc = check_block(sendcounts[k], sendtypes[k], block, &st)) return raise(c, rc, fn, "invalid send block");
    plan.push_back({true, block, sendcounts[k], st, t->destinations[k], send_tag(*t, k)});
  }
  int rc = form == Form::Persistent ? persist(c, *t, plan, request)
                                    : run(c, plan, form == Form::Nonblocking ? request : nullptr);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
}

}  // namespace

// ---- entry points ------------------------------------------------------------------
// Every operation in its blocking, nonblocking (MPI_Ineighbor_*) and persistent
// (MPI_Neighbor_*_init, MPI-4.1 8.13) form, each with its large-count variant,
// only forwards to its function above: generated from src/binding/c_entries.txt
// (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/neighbor_entries.inc"
