// Neighbourhood collectives (MPI-4.1 8.6) as the MPI layer hands them over
// (coll.h, NeighborArgs): one round of point-to-point messages on the
// communicator's collective context, a receive from every source and a
// send to every destination of the topology, all posted at once.
// MPI_PROC_NULL neighbours (cartesian edges) are skipped, so their blocks
// of the receive buffer are left untouched.
//
// Matching. Collectives on a communicator are called in the same order
// everywhere and the PML keeps messages between two processes in order, so
// one tag would do if every pair of processes were neighbours only once. On
// a periodic cartesian dimension of extent 1 or 2 the same process is both
// the -1 and the +1 neighbour; the standard wants the block sent towards +1
// to arrive in the receiver's -1 slot. So a cartesian message carries its
// direction in the tag: sent in direction (d, -1) it is tagged tag - 2d, in
// (d, +1) tag - 2d - 1, and the receive of slot (d, -1) expects the second,
// slot (d, +1) the first. Graph and distributed-graph neighbours use `tag`
// itself and rely on posting order (repeated edges pair up in the order
// they were given, as MPI specifies).
//
// Nonblocking calls return a Kind::Collective request that a progress hook
// completes once every message has.
#include <algorithm>
#include <memory>
#include <vector>

#include "coll/internal.h"
#include "progress/progress.h"

namespace axon::coll {

namespace {

struct Transfer {
  bool send;
  void* buf;
  MPI_Count count;
  const Datatype* type;
  int peer;
  int tag;
};

// The call as a list of transfers: the receives (slot k's tag: see the top
// of the file), then the sends.
std::vector<Transfer> plan_of(const NeighborArgs& a) {
  std::vector<Transfer> plan;
  plan.reserve(a.recvs.size() + a.sends.size());
  for (size_t k = 0; k < a.recvs.size(); ++k) {
    const NeighborBlock& b = a.recvs[k];
    plan.push_back({false, b.buf, b.count, b.type, b.peer, a.cartesian ? a.tag - static_cast<int>(k ^ 1) : a.tag});
  }
  for (size_t k = 0; k < a.sends.size(); ++k) {
    const NeighborBlock& b = a.sends[k];
    plan.push_back({true, b.buf, b.count, b.type, b.peer, a.cartesian ? a.tag - static_cast<int>(k) : a.tag});
  }
  return plan;
}

// Posts every transfer; on a failure the ones already posted stay in `parts`
// (they must still complete before the buffers are given back).
int post_plan(pml::Context* ctx, const std::vector<Transfer>& plan, std::vector<pml::Request*>* parts) {
  // Receives first: a message from a neighbour that is also a destination
  // then finds its receive already posted.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Transfer& x : plan) {
      if (x.send != (pass == 1) || x.peer == MPI_PROC_NULL) continue;
      pml::Request* r = nullptr;
      int rc = x.send ? pml::isend(x.buf, x.count, x.type, x.peer, x.tag, ctx, pml::SendMode::Standard, &r)
                      : pml::irecv(x.buf, x.count, x.type, x.peer, x.tag, ctx, &r);
      if (rc != MPI_SUCCESS) return rc;
      parts->push_back(r);
    }
  }
  return MPI_SUCCESS;
}

// ---- nonblocking ----------------------------------------------------------

struct Pending {
  pml::Request* request;
  std::vector<pml::Request*> parts;
  int error;
};
std::vector<std::unique_ptr<Pending>> pending_ops;  // under the pml lock

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
    pending_ops.erase(pending_ops.begin() + static_cast<long>(i));
    pml::request_complete(req);
  }
  if (pending_ops.empty()) progress::remove_hook(neighbor_progress);
  return advanced;
}

}  // namespace

int neighbor_run(pml::Context* ctx, const NeighborArgs& a) {
  std::vector<pml::Request*> parts;
  int rc = post_plan(ctx, plan_of(a), &parts);
  for (pml::Request* r : parts) {
    pml::wait(r);
    progress::Guard guard;
    if (rc == MPI_SUCCESS) rc = r->error;
    pml::request_release(r);
  }
  return rc;
}

int neighbor_post(pml::Context* ctx, const NeighborArgs& a, pml::Request** out) {
  auto op = std::make_unique<Pending>();
  // A transfer that fails to post fails the request when the others are done.
  op->error = post_plan(ctx, plan_of(a), &op->parts);
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Collective);
  op->request = r;
  {
    progress::Guard guard;
    if (pending_ops.empty()) progress::add_hook(neighbor_progress);
    pending_ops.push_back(std::move(op));
  }
  *out = r;
  progress::progress();
  return MPI_SUCCESS;
}

// A schedule gives all its messages one tag, so the cartesian direction
// travels in the order instead: messages between two processes match in
// posting order, and each pair of slots (d, -1), (d, +1) posts its sends
// swapped, so the block sent towards +1 meets the receive of the -1 slot,
// as with the tags of the other forms.
int neighbor_init(CommState* state, const NeighborArgs& a, pml::Request** out) {
  auto s = std::make_unique<Schedule>(state->coll, nullptr);
  s->state = state;
  for (const NeighborBlock& b : a.recvs) {
    s->retain(b.type);
    if (b.peer != MPI_PROC_NULL) s->recv(b.buf, b.count, b.type, b.peer);
  }
  for (const NeighborBlock& b : a.sends) s->retain(b.type);
  for (size_t k = 0; k < a.sends.size(); ++k) {
    const NeighborBlock& b = a.sends[a.cartesian ? (k ^ 1) : k];
    if (b.peer != MPI_PROC_NULL) s->send(b.buf, b.count, b.type, b.peer);
  }
  s->round();
  *out = init_schedule(std::move(s));
  return MPI_SUCCESS;
}

}  // namespace axon::coll
