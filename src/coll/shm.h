// Node-level collectives through a shared-memory segment per communicator
// and node, and the hierarchical (node-aware) forms built on them: the
// intra-node part goes through the segment, the inter-node part runs among
// the node leaders with point-to-point messages.
//
// Only blocking barrier / bcast / reduce / allreduce (shm and hierarchical)
// and allgather(v) / gather / scatter / alltoall (shm, single node) on
// intracommunicators take these paths; nonblocking and persistent calls
// stay on pt2pt schedules. Every wait here drives pml progress, so a blocking node-level
// collective never starves a nonblocking one started before it on any rank
// (MPI orders collectives by call order, and both kinds may be mixed on one
// communicator). docs/collectives.md ("Node level") describes the segment.
// The implementation is src/coll/shm/ (its internal.h names the pieces:
// segment, synchronisation, reductions, data movement, nodes, hierarchy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/coll.h"

namespace axon::coll {

struct CommState;

// The communicator's nodes, known from the first node-level call on.
struct Topology {
  bool known = false;
  int nodes = 1;
  std::vector<int> node_of;   // comm rank -> node index (nodes ordered by their lowest rank)
  std::vector<int> leaders;   // node index -> leader (its lowest comm rank)
  std::vector<int> members;   // comm ranks on my node, ascending
  int me = 0;                 // my index in members
  int my_node = 0;
  bool blocks = true;         // every node is a run of consecutive ranks
  int max_ppn = 1;            // largest node
};

// The segment shared by the communicator's ranks on this node (created at
// the first node-level call, see NodeState::attach).
struct NodeState {
  Topology topo;
  const pml::Context* ctx = nullptr;  // the communicator's collective context (members' CPUs, pml::peer_cpu)
  void* base = nullptr;
  size_t bytes = 0;
  size_t chunk = 0;   // slot bytes per rank and step (shm/segment.cpp, chunk_param)
  uint64_t seq = 0;   // node-level steps done on this communicator
  uint64_t safe = 0;  // every local rank is known to be done with steps <= safe
  bool futex = false; // waits sleep on the flag word (AXON_COLL_SHM_WAIT; same on every local rank)
  // Member index of the root of the last blocking bcast on this one-node
  // communicator, or -1; the next node barrier takes it (and clears it):
  // nobody leaves that barrier before the root has, so a loop of bcast
  // and barrier finds each bcast's data sent when it calls
  // (AXON_COLL_BARRIER_RELEASE, shm/sync.cpp). Every rank makes the same
  // bcasts, so all agree.
  int bcast_root = -1;
  NodeState() = default;
  NodeState(const NodeState&) = delete;
  NodeState& operator=(const NodeState&) = delete;
  ~NodeState();
};

// Computes the topology if not known yet (a multi-node communicator runs one
// blocking allgather on its collective context: every rank makes the same
// first eligible call, so all do it together). Returns an MPI error code.
int node_topology(CommState* st);
// Whether the node-level algorithms can run this call: blocking barrier /
// bcast / reduce / allreduce (and, shm only, allgather(v) / gather /
// scatter / alltoall) on an intracommunicator, and for reductions a type
// whose items fit a slot. `hierarchical` also needs more than one node
// and, for a non-commutative op, nodes that are runs of consecutive ranks.
bool shm_eligible(const CommState* st, const Args& a);
bool hier_eligible(const CommState* st, const Args& a);
// Runs the call on the node segment (single node) or hierarchically.
int shm_run(CommState* st, const Args& a);
int hier_run(CommState* st, const Args& a);
// A small bcast / reduce (root: a rank, -1 = allreduce) straight on the
// segment of a one-node communicator (the shortcuts of coll.h): false,
// doing nothing, when no segment is mapped or the message is larger than
// the segment's small-message area (1 KiB). `in` is the operand buffer.
// Notes the root (a rank) of a blocking bcast for the next node barrier
// (NodeState::bcast_root); nothing on a communicator without a known
// single node.
inline void note_bcast_root(NodeState* ns, int root) {
  if (ns && ns->topo.known && ns->topo.nodes == 1) ns->bcast_root = root;
}
bool node_bcast_now(CommState* st, void* buf, MPI_Count count, const Datatype* type, int root, int* rc);
bool node_reduce_now(CommState* st, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                     int root, int* rc);

}  // namespace axon::coll
