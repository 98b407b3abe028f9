// What the pieces of the node-level collectives (src/coll/shm/*.cpp) share:
// the layout of the node segment, the views into it (Seg) and the steps'
// synchronisation, and the primitives one piece runs for another. Private
// to src/coll/shm/; the rest of coll uses src/coll/shm.h.
// docs/collectives.md ("Node level") has the design; in short:
//
// * Segment (segment.cpp). At the first node-level call the node's leader
//   (its lowest member) creates <job shm prefix>.coll.<context id>.<random>
//   exclusively with mode 0600 (base/shm_file.h: nobody can guess, plant or
//   adopt it), sizes and maps it, and sends its name to the other members
//   (one message each on the collective context); they map it after
//   checking owner, mode and size. Each increments `attached`; whoever
//   brings it to the node's rank count unlinks the name. Since every rank
//   makes the same calls with the same selection, either every local rank
//   attaches (and the last one unlinks) or none does. mpirun removes
//   /dev/shm/axon.<nspace>.* if the job dies in between.
// * Steps (sync.cpp). Every node-level operation is a sequence of steps
//   numbered by NodeState::seq (the same on every local rank). Step s uses
//   data set s & 1 (two sets: step s+1 can fill one while step s is read
//   from the other) and arrival lines s % kFlagSets. Cache-line flags per
//   rank, all monotonic: arrive (my data of step s is in my slot), red (my
//   piece of step s is reduced), done (I no longer read anything of step
//   s). Before writing into set s & 1 a rank waits until every done >= s -
//   2; a step that uses only arrival lines and the small area (small bcast)
//   waits for done >= s - kFlagSets. No flag is ever reset.
// * Data. Each set has one slot of `chunk` bytes per rank plus a result
//   slot. Reductions (reduce.cpp) copy a chunk of items (their byte span,
//   layout kept) into the own slot; small chunks are then reduced by every
//   reader in rank order, large chunks piecewise (rank i reduces piece i of
//   all slots into the result slot, then everyone copies the result), so
//   the reduction of chunk k overlaps the copy-in of chunk k+1 by faster
//   ranks. Broadcast packs chunks of the whole set into it. Allgather(v) /
//   gather / scatter / alltoall (move.cpp) move packed byte streams, a slot
//   (or sub-slot) per rank and step.
// * Nodes (topology.cpp): which ranks share a node, and which calls may run
//   node-level. Across nodes (hier.cpp) the node leaders exchange
//   point-to-point messages between the node-level parts.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "base/futex.h"
#include "coll/internal.h"
#include "coll/shm.h"

namespace axon::coll::nodelevel {

// Point-to-point tags on the communicator's collective context (basic.cpp
// uses 1..5; user schedules 16 and up): the leader phase of the
// hierarchical algorithms (hier.cpp), and the node segment's name from the
// node's leader to the other members (segment.cpp).
constexpr int kTagHier = 6;
constexpr int kTagSegment = 7;

// ---- the segment's layout ------------------------------------------------------

// One cache line: a step number and, for arrival flags, up to kInline bytes
// of data (small calls move flag and data in one line transfer).
constexpr size_t kInline = 48;
struct alignas(64) Flag {
  std::atomic<uint64_t> v;
  uint64_t pad;
  uint8_t data[kInline];
};
// Sets of arrival lines, used round robin by step (data sets: two, s & 1).
// (16 measured no better than 8 for a 2-rank bcast root.)
constexpr uint64_t kFlagSets = 8;
// Bytes of the small-message area per set of arrival lines (a bcast step
// of at most this many bytes uses it instead of a data set).
constexpr size_t kSmall = 1024;
struct alignas(64) Header {
  std::atomic<uint32_t> attached;
  // Shared allreduce result, per data set (s & 1): the step whose result
  // a rank has claimed to publish in the result slot, and the step whose
  // result is there (see node_reduce).
  std::atomic<uint64_t> result_claimed[2];
  std::atomic<uint64_t> result_ready[2];
};

// The least slot any node of a communicator may have (segment.cpp): the
// eligibility checks use it, so every rank of a multi-node communicator
// decides alike.
size_t least_chunk();

// Creates (the node's leader) or maps (the others) the node's segment
// (segment.cpp). Returns an MPI error code.
int attach_segment(CommState* st);
// The segment, mapped at the first node-level call.
inline int attach(CommState* st) { return st->node->base ? MPI_SUCCESS : attach_segment(st); }

// ---- views into the mapped segment and the steps' synchronisation ----------------

inline bool all_at_least(const Flag* f, int n, uint64_t s) {
  for (int i = 0; i < n; ++i)
    if (f[i].v.load(std::memory_order_acquire) < s) return false;
  return true;
}

struct Seg {
  NodeState& ns;
  int n, me;
  size_t chunk = ns.chunk;  // the segment's slot size, fixed when it was mapped
  // Arrival flags per data set: arrive(s)[i] >= s once rank i's data of
  // step s is in place.
  Flag* arrive(uint64_t s) const {
    return reinterpret_cast<Flag*>(static_cast<uint8_t*>(ns.base) + sizeof(Header)) + (s % kFlagSets) * n;
  }
  // The small-message area that goes with the arrival lines of step s.
  uint8_t* small(uint64_t s) const {
    return static_cast<uint8_t*>(ns.base) + sizeof(Header) + (kFlagSets + 2) * n * sizeof(Flag) +
           (s % kFlagSets) * kSmall;
  }
  Flag* red() const { return arrive(0) + kFlagSets * n; }
  Flag* done() const { return arrive(0) + (kFlagSets + 1) * n; }
  uint8_t* set(uint64_t s) const {
    return static_cast<uint8_t*>(ns.base) + sizeof(Header) + (kFlagSets + 2) * n * sizeof(Flag) + kFlagSets * kSmall +
           (s & 1) * (static_cast<size_t>(n) + 1) * chunk;
  }
  uint8_t* slot(uint64_t s, int i) const { return set(s) + static_cast<size_t>(i) * chunk; }
  uint8_t* result(uint64_t s) const { return slot(s, n); }
  Header* header() const { return static_cast<Header*>(ns.base); }
  // Whether the result of step s is in its result slot.
  bool result_ready(uint64_t s) const { return header()->result_ready[s & 1].load(std::memory_order_acquire) == s; }
  // Whether this rank is the one to publish step s's result (the first
  // to ask; the words of a data set only grow, by two steps a time).
  bool claim_result(uint64_t s) const {
    std::atomic<uint64_t>& c = header()->result_claimed[s & 1];
    uint64_t was = c.load(std::memory_order_relaxed);
    return was < s && c.compare_exchange_strong(was, s, std::memory_order_relaxed);
  }
  void publish_result(uint64_t s) const { header()->result_ready[s & 1].store(s, std::memory_order_release); }
  // Before writing into the data set of step s: every rank is done with
  // step s - 2. NodeState::safe remembers what is known already (a wait for
  // every rank's arrival at step t proves all are done with t - 1), so the
  // done flags are read only when that is not enough.
  void claim(uint64_t s) const {
    if (s < 2 || ns.safe >= s - 2) return;
    wait_all(done(), n, s - 2);
    ns.safe = least_done();
  }
  // Before a step that uses only arrival lines and the small area (no
  // data set): every rank is done with step s - kFlagSets, so a bcast root
  // can run that many small calls ahead of slow readers.
  void claim_lines(uint64_t s) const {
    if (s < kFlagSets || ns.safe >= s - kFlagSets) return;
    wait_all(done(), n, s - kFlagSets);
    ns.safe = least_done();
  }
  // The step every rank is done with (read after a wait on the done flags:
  // remembering the least of them, not just the step waited for, spares
  // the next few claims the cross-core reads).
  uint64_t least_done() const {
    uint64_t m = done()[0].v.load(std::memory_order_acquire);
    for (int i = 1; i < n; ++i) m = std::min(m, done()[i].v.load(std::memory_order_acquire));
    return m;
  }
  void arrived_all(uint64_t s) const {
    if (s - 1 > ns.safe) ns.safe = s - 1;
  }
  // Member index of the rank that writes flag line f (every flag array
  // holds one line per member, the arrays back to back from arrive(0)).
  int writer_of(const Flag* f) const { return static_cast<int>((f - arrive(0)) % n); }
  // Whether a rank that f[j..k) still waits for last ran on CPU `mine`
  // (as the ranks publish it in every oversubscribed wait, pml.h).
  bool waits_on_own_cpu(const Flag* f, int j, int k, uint64_t s, int32_t mine) const;
  // Sleepers count of flag line f (futex mode).
  std::atomic<uint32_t>* sleepers(const Flag* f) const {
    auto* first = arrive(0);
    auto* counts = reinterpret_cast<std::atomic<uint32_t>*>(static_cast<uint8_t*>(ns.base) + ns.bytes -
                                                            (kFlagSets + 2) * static_cast<size_t>(n) * sizeof(uint32_t));
    return counts + (f - first);
  }
  // Sets flag f to step s: the data written before is visible to whoever
  // sees the flag at s. In futex mode also wakes the ranks sleeping on it
  // (the store and the sleepers load are seq_cst: see base/futex.h).
  void post(Flag* f, uint64_t s) const {
    if (!ns.futex) {
      f->v.store(s, std::memory_order_release);
      return;
    }
    f->v.store(s, std::memory_order_seq_cst);
    if (sleepers(f)->load(std::memory_order_seq_cst) != 0) futex_wake_all(low_half(&f->v));
  }
  // Waits until every flag of f[0..k) is at step s or beyond. The flags
  // only grow, so one look that finds them all there ends the wait at
  // once; the waiting itself is wait_slow (sync.cpp).
  void wait_all(const Flag* f, int k, uint64_t s) const {
    if (all_at_least(f, k, s)) return;
    wait_slow(f, k, s);
  }
  void wait_one(const Flag* f, uint64_t s) const { wait_all(f, 1, s); }
  // The wait with the node's policy (AXON_COLL_SHM_WAIT): spin, yield,
  // poll, sleep, driving pml progress now and then.
  void wait_slow(const Flag* f, int k, uint64_t s) const;
};

// ---- what one piece runs for another ---------------------------------------------

// Whether the waits of a newly mapped segment sleep on the flag words
// (AXON_COLL_SHM_WAIT; sync.cpp).
bool use_futex();

// The barrier of the node's members on the segment (sync.cpp). `first`:
// the member (the last bcast's root, NodeState::bcast_root) that everyone
// else lets leave first where AXON_COLL_BARRIER_RELEASE says so, or -1.
void node_barrier(Seg& g, int first);

// Reduction of `count` items on the segment (reduce.cpp): `in` is my
// operand (a buffer pointer), `out` receives the result on member `root`
// (every member when root < 0). The result is x_0 op x_1 op ... op x_{n-1}
// in member order.
int node_reduce(Seg& g, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op, int root);

// The node-level part of a barrier / bcast / reduce / allreduce on my
// node's members (move.cpp; `root`: member index, -1 = everyone gets the
// result; barrier: node_barrier's `first`). A node of one member needs no
// segment.
int node_part(CommState* st, const Args& a, const void* in, void* out, int root);

// Member index of comm rank `r` on my node (topology.cpp).
int member_index(const Topology& t, int r);

// Kinds with a hierarchical form too / with a single-node form only.
inline bool node_kind(Kind k) {
  return k == Kind::barrier || k == Kind::bcast || k == Kind::reduce || k == Kind::allreduce;
}
inline bool move_kind(Kind k) {
  return k == Kind::allgather || k == Kind::allgatherv || k == Kind::gather || k == Kind::scatter ||
         k == Kind::alltoall;
}

// Copies `count` items from the image `src` (a buffer pointer: item 0's
// layout) to a user buffer, writing only the bytes the type covers.
inline void copy_out(const Datatype* type, const void* src, void* dst, MPI_Count count) {
  if (count <= 0) return;
  if (type->contiguous) std::memcpy(dst, src, payload_bytes(count, type));
  else copy_items_between(*type, src, dst, static_cast<size_t>(count));
}

// The mapped segment of a one-node communicator for a call of at most the
// small-area size, or null (the shortcuts of coll.h). (One node: the
// members are the communicator's ranks in order, so a root's member index
// is its rank. A mapped segment means more than one member: node_part maps
// none for one.)
inline NodeState* small_call_segment(CommState* st, MPI_Count count, const Datatype* type) {
  NodeState* ns = st->node.get();
  return ns && ns->base && ns->topo.nodes == 1 && payload_bytes(count, type) <= kSmall ? ns : nullptr;
}

}  // namespace axon::coll::nodelevel
