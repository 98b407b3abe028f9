// The communicator's nodes as the node-level collectives see them (which
// ranks share a node, who leads each), and which calls may run node-level
// (see internal.h, "Nodes").
#include <algorithm>
#include <memory>
#include <vector>

#include "base/param.h"
#include "coll/shm/internal.h"
#include "rte/rte.h"

namespace axon::coll {

namespace nodelevel {

namespace {

IntParam node_size_param{"AXON_COLL_NODE_SIZE", 0,
                         "For tests: pretend that nodes are runs of this many consecutive ranks (only on a "
                         "communicator whose ranks all share one real node; 0 = real topology)."};

// Whether a reduction's items fit a slot with their byte span (on every
// node: least_chunk).
bool reduction_type_ok(const Datatype* type) {
  return type->extent > 0 && type->true_extent > 0 && static_cast<size_t>(type->true_extent) <= least_chunk();
}

// What the single-node and the hierarchical forms both need.
bool common_ok(const CommState* st, const Args& a) {
  if (st->inter() || !(node_kind(a.kind) || move_kind(a.kind)) || !st->node || !st->node->topo.known) return false;
  if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && a.recvcount > 0 && !reduction_type_ok(a.recvtype))
    return false;
  // Alltoall splits a slot into one 64-byte-aligned sub-slot per rank.
  if (a.kind == Kind::alltoall && static_cast<size_t>(st->coll->size()) * 64 > least_chunk()) return false;
  return true;
}

}  // namespace

int member_index(const Topology& t, int r) {
  for (size_t i = 0; i < t.members.size(); ++i)
    if (t.members[i] == r) return static_cast<int>(i);
  return -1;
}

}  // namespace nodelevel

int node_topology(CommState* st) {
  if (!st->node) {
    st->node = std::make_unique<NodeState>();
    st->node->ctx = st->coll;
  }
  Topology& t = st->node->topo;
  if (t.known) return MPI_SUCCESS;
  const pml::Context* ctx = st->coll;
  int size = ctx->size(), rank = ctx->rank;
  bool all_local = true;
  for (int w : ctx->world_of) all_local = all_local && rte::is_local(w);
  std::vector<int> leader_of(size);
  if (all_local) {
    // One real node (every rank sees that, so all decide alike); tests may
    // cut it into pretend nodes of consecutive ranks.
    int64_t pretend = nodelevel::node_size_param.get();
    for (int i = 0; i < size; ++i) leader_of[i] = pretend > 0 ? static_cast<int>(i / pretend * pretend) : 0;
  } else {
    int mine = rank;
    for (int i = 0; i < size; ++i)
      if (rte::is_local(ctx->world_of[i])) {
        mine = i;
        break;
      }
    int rc = allgather_bytes(&mine, sizeof mine, leader_of.data(), const_cast<pml::Context*>(ctx));
    if (rc != MPI_SUCCESS) return rc;
  }
  // Nodes in the order of their lowest rank (= the leader).
  t.node_of.assign(size, -1);
  t.leaders.clear();
  for (int i = 0; i < size; ++i) {
    if (leader_of[i] == i) t.leaders.push_back(i);
  }
  t.nodes = static_cast<int>(t.leaders.size());
  std::vector<int> count(t.nodes, 0);
  for (int i = 0; i < size; ++i) {
    for (int k = 0; k < t.nodes; ++k)
      if (t.leaders[k] == leader_of[i]) t.node_of[i] = k;
    ++count[t.node_of[i]];
  }
  t.my_node = t.node_of[rank];
  t.members.clear();
  for (int i = 0; i < size; ++i)
    if (t.node_of[i] == t.my_node) t.members.push_back(i);
  t.me = nodelevel::member_index(t, rank);
  t.blocks = true;
  for (int i = 1; i < size; ++i) t.blocks = t.blocks && t.node_of[i] >= t.node_of[i - 1];
  t.max_ppn = 0;
  for (int c : count) t.max_ppn = std::max(t.max_ppn, c);
  t.known = true;
  return MPI_SUCCESS;
}

bool shm_eligible(const CommState* st, const Args& a) {
  return nodelevel::common_ok(st, a) && st->node->topo.nodes == 1;
}

bool hier_eligible(const CommState* st, const Args& a) {
  if (!nodelevel::common_ok(st, a) || nodelevel::move_kind(a.kind) || st->node->topo.nodes < 2) return false;
  if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && !a.op->commutative && !st->node->topo.blocks)
    return false;
  return true;
}

}  // namespace axon::coll
