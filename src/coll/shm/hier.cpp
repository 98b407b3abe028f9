// The hierarchical (node-aware) barrier, bcast, reduce and allreduce of a
// communicator that spans several nodes: the node-level part on each
// node's segment, and point-to-point messages among the node leaders (their
// lowest ranks) on the collective context in between (see internal.h).
#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/shm/internal.h"
#include "progress/progress.h"

namespace axon::coll {

namespace nodelevel {

namespace {

// A scratch buffer for `count` items of `type` laid out with its extent.
struct Scratch {
  std::vector<uint8_t> mem;
  uint8_t* base = nullptr;  // buffer pointer (item 0)
  // Whole extents (a user op may read an item's padding), never empty.
  Scratch(MPI_Count count, const Datatype* type)
      : mem(static_cast<size_t>(count * type->extent) + static_cast<size_t>(type->true_extent) + 1) {
    base = mem.data() - type->true_lb;
  }
  uint8_t* data() { return mem.data(); }  // the span itself
};

// ---- leader phase (point-to-point on the collective context) -----------------------

int send_bytes(const void* buf, size_t bytes, int peer, pml::Context* ctx) {
  return pml::send(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, kTagHier, ctx, pml::SendMode::Standard);
}
int recv_bytes(void* buf, size_t bytes, int peer, pml::Context* ctx) {
  pml::Request r;
  return pml::recv(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, kTagHier, ctx, &r);
}

// Binomial broadcast among the leaders from leader index `root`.
int leaders_bcast(const Topology& t, void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx) {
  int size = t.nodes, rel = (t.my_node - root + size) % size;
  int mask = 1;
  while (mask < size) {
    if (rel & mask) {
      pml::Request r;
      int rc = pml::recv(buf, count, type, t.leaders[(rel - mask + root) % size], kTagHier, ctx, &r);
      if (rc != MPI_SUCCESS) return rc;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (rel + mask < size) {
      int rc = pml::send(buf, count, type, t.leaders[(rel + mask + root) % size], kTagHier, ctx,
                         pml::SendMode::Standard);
      if (rc != MPI_SUCCESS) return rc;
    }
  return MPI_SUCCESS;
}

// Binomial reduction among the leaders towards leader 0; `acc` (a span of
// `count` items) holds this node's result and, on leader 0, the total.
// Leader i combines leaders i+1.. on the right: node order = rank order
// when nodes are runs of consecutive ranks.
int leaders_reduce(const Topology& t, Scratch& acc, MPI_Count count, const Datatype* type, const Op* op,
                   pml::Context* ctx) {
  size_t span = items_span(count, type);
  Scratch tmp(count, type);
  int i = t.my_node;
  for (int mask = 1; mask < t.nodes; mask <<= 1) {
    if (i & mask) return send_bytes(acc.data(), span, t.leaders[i - mask], ctx);
    if (i + mask < t.nodes) {
      if (int rc = recv_bytes(tmp.data(), span, t.leaders[i + mask], ctx); rc != MPI_SUCCESS) return rc;
      if (int rc = op_apply(*op, acc.base, tmp.base, static_cast<size_t>(count), *type); rc != MPI_SUCCESS)
        return rc;
      std::memcpy(acc.data(), tmp.data(), span);
    }
  }
  return MPI_SUCCESS;
}

int leaders_barrier(const Topology& t, pml::Context* ctx) {
  char token = 0, sink = 0;
  for (int d = 1; d < t.nodes; d <<= 1) {
    pml::Request* s = nullptr;
    int rc = pml::isend(&token, 0, byte_type(), t.leaders[(t.my_node + d) % t.nodes], kTagHier, ctx,
                        pml::SendMode::Standard, &s);
    if (rc != MPI_SUCCESS) return rc;
    rc = recv_bytes(&sink, 0, t.leaders[(t.my_node - d + t.nodes) % t.nodes], ctx);
    pml::wait(s);
    progress::Guard guard;
    pml::request_release(s);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace

}  // namespace nodelevel

int hier_run(CommState* st, const Args& a) {
  using namespace nodelevel;  // the leader phase above, the node-level parts
  const Topology& t = st->node->topo;
  pml::Context* ctx = st->coll;
  bool leader = t.me == 0;
  int rc = MPI_SUCCESS;
  switch (a.kind) {
    case Kind::barrier: {
      // Fan-in on the node, leaders' dissemination barrier, fan-out.
      int n = static_cast<int>(t.members.size());
      if (n == 1) return leaders_barrier(t, ctx);
      if ((rc = attach(st)) != MPI_SUCCESS) return rc;
      Seg g{*st->node, n, t.me};
      uint64_t s = ++g.ns.seq;
      g.post(&g.arrive(s)[g.me], s);
      if (leader) {
        g.wait_all(g.arrive(s), n, s);
        rc = leaders_barrier(t, ctx);
        g.post(&g.red()[0], s);
      } else {
        g.wait_one(&g.red()[0], s);
      }
      g.post(&g.done()[g.me], s);
      return rc;
    }
    case Kind::bcast: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      int rn = t.node_of[a.root];
      if (t.my_node == rn) {
        if ((rc = node_part(st, a, nullptr, a.recvbuf, member_index(t, a.root))) != MPI_SUCCESS) return rc;
        if (leader) rc = leaders_bcast(t, a.recvbuf, a.recvcount, a.recvtype, rn, ctx);
        return rc;
      }
      if (leader && (rc = leaders_bcast(t, a.recvbuf, a.recvcount, a.recvtype, rn, ctx)) != MPI_SUCCESS) return rc;
      return node_part(st, a, nullptr, a.recvbuf, 0);
    }
    default: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      const Datatype* type = a.recvtype;
      MPI_Count count = a.recvcount;
      size_t span = items_span(count, type);
      const void* in = a.in_place ? a.recvbuf : a.sendbuf;
      Scratch acc(count, type);
      // 1. Node result at the leader.
      if ((rc = node_part(st, a, in, acc.base, 0)) != MPI_SUCCESS) return rc;
      // 2. Leaders reduce to leader 0 (node order).
      if (leader && (rc = leaders_reduce(t, acc, count, type, a.op, ctx)) != MPI_SUCCESS) return rc;
      if (a.kind == Kind::reduce) {
        int r0 = t.leaders[0];
        if (ctx->rank == r0 && a.root == r0) copy_out(type, acc.base, a.recvbuf, count);
        else if (ctx->rank == r0) rc = send_bytes(acc.data(), span, a.root, ctx);
        else if (ctx->rank == a.root) {
          if ((rc = recv_bytes(acc.data(), span, r0, ctx)) == MPI_SUCCESS) copy_out(type, acc.base, a.recvbuf, count);
        }
        return rc;
      }
      // 3. Allreduce: leaders broadcast the total, each node from its leader.
      if (leader && (rc = leaders_bcast(t, acc.data(), static_cast<MPI_Count>(span), byte_type(), 0, ctx)) !=
                        MPI_SUCCESS)
        return rc;
      Args b = a;
      b.kind = Kind::bcast;
      b.recvcount = static_cast<MPI_Count>(span);
      b.recvtype = byte_type();
      if ((rc = node_part(st, b, nullptr, acc.data(), 0)) != MPI_SUCCESS) return rc;
      copy_out(type, acc.base, a.recvbuf, count);
      return MPI_SUCCESS;
    }
  }
}

}  // namespace axon::coll
