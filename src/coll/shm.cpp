// Node-level collectives through one shared-memory segment per communicator
// and node, and the hierarchical forms (segment inside a node, point-to-point
// among the node leaders). docs/collectives.md ("Node level") has the design;
// in short:
//
// * Segment. At the first node-level call the node's leader (its lowest
//   member) creates <job shm prefix>.coll.<context id>.<random> exclusively
//   with mode 0600 (base/shm_file.h: nobody can guess, plant or adopt it),
//   sizes and maps it, and sends its name to the other members (one
//   message each on the collective context); they map it after checking
//   owner, mode and size. Each increments `attached`; whoever brings it to
//   the node's rank count unlinks the name. Since every rank makes the same
//   calls with the same selection, either every local rank attaches (and
//   the last one unlinks) or none does. mpirun removes
//   /dev/shm/axon.<nspace>.* if the job dies in between.
// * Steps. Every node-level operation is a sequence of steps numbered by
//   NodeState::seq (the same on every local rank). Step s uses data set
//   s & 1 (two sets: step s+1 can fill one while step s is read from the
//   other) and arrival lines s % kFlagSets. Cache-line flags per rank, all
//   monotonic: arrive (my data of step s is in my slot), red (my piece of
//   step s is reduced), done (I no longer read anything of step s). Before
//   writing into set s & 1 a rank waits until every done >= s - 2; a step
//   that uses only arrival lines and the small area (small bcast) waits
//   for done >= s - kFlagSets. No flag is ever reset.
// * Data. Each set has one slot of `chunk` bytes per rank plus a result
//   slot. Reductions copy a chunk of items (their byte span, layout kept)
//   into the own slot; small chunks are then reduced by every reader in rank
//   order, large chunks piecewise (rank i reduces piece i of all slots into
//   the result slot, then everyone copies the result), so the reduction of
//   chunk k overlaps the copy-in of chunk k+1 by faster ranks. Broadcast
//   packs chunks of the whole set into it. Allgather(v) / gather / scatter
//   / alltoall move packed byte streams, a slot (or sub-slot) per rank and
//   step (see "data movement" below).
#include "coll/shm.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/futex.h"
#include "base/log.h"
#include "base/param.h"
#include "base/shm_file.h"
#include "coll/internal.h"
#include "rte/rte.h"

namespace axon::coll {

namespace {

SizeParam chunk_param{"AXON_COLL_SHM_CHUNK", 0,
                      "Bytes per rank and step of the node-level shared-memory collectives (slot size of the "
                      "per-communicator segment); 0 = by the node's rank count (512 KiB up to 4 ranks, less "
                      "above, at least 64 KiB). Must be the same on every rank."};
IntParam node_size_param{"AXON_COLL_NODE_SIZE", 0,
                         "For tests: pretend that nodes are runs of this many consecutive ranks (only on a "
                         "communicator whose ranks all share one real node; 0 = real topology)."};

// A reduction step where every reader would combine at most this many bytes
// ((ranks - 1) x the step's span) is done by every reader itself (one
// synchronisation); larger ones piecewise (two). Measured: docs/collectives.md.
constexpr size_t kSmallReduce = 16384;
// When ranks outnumber cores a synchronisation costs a hand-off of the CPU
// (about 5 us), worth far more reduction work than on a core of one's own.
// So an allreduce's readers each reduce steps up to 128 KiB of operands
// themselves (4 ranks on 2 cores, 8 / 16 / 32 KiB: 15.7 / 17.8 / 20.3 ->
// 11.0 / 14.0 / 17.0 us; 3 ranks 16-64 KiB 13-26 % less; 8 ranks 2-16 KiB
// 23-42 % less), and a reduce's root always reduces every step alone: its
// non-roots copy their operands in and go on, with no second wait (4 ranks,
// 32 KiB - 1 MiB: 2.0-2.2x faster; 3 ranks 64 KiB - 4 MiB and 8 ranks
// 64 KiB - 4 MiB: the same or faster at every size; docs/performance.md).
// Every rank of a node sees the same oversubscription, so all take the
// same path.
constexpr size_t kSmallReduceOversubscribed = 128 * 1024;
// Oversubscribed allreduce steps from this size share one reduction per
// step (see node_reduce).
constexpr size_t kShareResult = 4096;
size_t small_reduce_limit(bool one_reader) {
  if (!rte::job().oversubscribed) return kSmallReduce;
  return one_reader ? SIZE_MAX : kSmallReduceOversubscribed;
}
// Point-to-point tag of the leader phase on the communicator's collective
// context (basic.cpp uses 1..5; user schedules 16 and up).
constexpr int kTagHier = 6;
// The node segment's name, from the node's leader to the other members.
constexpr int kTagSegment = 7;

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

// Slot size (see chunk_param). Larger slots mean fewer steps, so fewer
// hand-offs between ranks (each a context switch when oversubscribed);
// the data sets, 2 x (ranks + 1) slots, should stay cache-sized. Measured
// (docs/collectives.md, "Slot size"): 256-512 KiB beat 64 KiB for
// 128 KiB - 4 MiB allgather / alltoall / allreduce / reduce at 2 and 4
// ranks; 1 MiB slots fall off a cliff.
constexpr size_t kMinChunk = 64 * 1024;
constexpr size_t kMaxChunk = 512 * 1024;
constexpr size_t kDataSetBudget = 2560 * 1024;  // bytes of one data set, (ranks + 1) slots
constexpr size_t kBcastStep = 768 * 1024;
int64_t chunk_setting() {
  // (The parameter is read once anyway; this spares the call per collective.)
  static const int64_t c = chunk_param.get();
  return c;
}
// Whole cache lines: the lines after the data sets stay aligned.
size_t whole_lines(size_t b) { return (b + 63) & ~size_t{63}; }
size_t chunk_for(int n) {
  int64_t c = chunk_setting();
  if (c > 0) return c < 4096 ? size_t{4096} : whole_lines(static_cast<size_t>(c));
  size_t fit = kDataSetBudget / (static_cast<size_t>(n) + 1) & ~size_t{4095};
  return std::clamp(fit, kMinChunk, kMaxChunk);
}
// The least slot any node of a communicator may have: eligibility checks
// use it, so every rank of a multi-node communicator decides alike.
size_t least_chunk() {
  int64_t c = chunk_setting();
  return c > 0 ? chunk_for(1) : kMinChunk;
}

// Header, flag lines, small areas, two data sets, then one sleepers count
// per flag line (futex wait mode: how many ranks sleep on that line).
size_t segment_bytes(int n, size_t chunk) {
  return sizeof(Header) + (kFlagSets + 2) * static_cast<size_t>(n) * sizeof(Flag) + kFlagSets * kSmall +
         2 * (static_cast<size_t>(n) + 1) * chunk + (kFlagSets + 2) * static_cast<size_t>(n) * sizeof(uint32_t);
}

// Waits for `pred` with the library's policy (spin, then yield the core),
// driving pml progress now and then: nonblocking collectives and messages of
// other ranks keep moving while this rank waits here.
template <class Pred> void node_wait(Pred pred) {
  if (pred()) return;
  Backoff backoff(pml::spin_rounds());
  for (unsigned i = 1;; ++i) {
    if (pred()) return;
    if ((i & 7) == 0 && pml::progress() > 0) {
      backoff.reset();
      continue;
    }
    backoff.idle();
  }
}

bool all_at_least(const Flag* f, int n, uint64_t s) {
  for (int i = 0; i < n; ++i)
    if (f[i].v.load(std::memory_order_acquire) < s) return false;
  return true;
}

// How a waiting rank gets out of the way (same on every rank of a node:
// a sleeper relies on the writer to wake it).
StringParam wait_param{"AXON_COLL_SHM_WAIT", "auto",
                       "How node-level shared-memory collectives wait: spin (poll, then yield the core), futex "
                       "(poll, yield AXON_COLL_SHM_YIELDS times, then sleep until the writer wakes the rank), or "
                       "auto (futex when the node is oversubscribed, else spin). Must be the same on every rank."};
// Measured (docs/collectives.md, "Oversubscribed"): a sleep and its
// wake-up cost far more than a yield on the machines at hand, so by
// default only a wait that already took a thousand yields (milliseconds:
// a late rank, not a hand-off) goes to sleep and leaves the core alone.
IntParam yields_param{"AXON_COLL_SHM_YIELDS", 1000,
                      "In the futex wait mode of the node-level collectives: rounds of sched_yield before a "
                      "waiting rank goes to sleep."};
// A sleeping rank wakes up at least this often to drive pml progress
// (a peer may wait for its nonblocking operations meanwhile).
constexpr long kSleepNs = 200 * 1000;
// Oversubscribed, a rank that waits only for ranks last seen on other CPUs
// polls instead of yielding: they are (most likely) running and arrive
// within a context switch, while a yield would hand this CPU to a local
// peer that has nothing to do yet and cost a switch each way. A wait for
// a rank that last ran on this very CPU yields at once (that rank cannot
// run until this one gives the CPU up). Measured: docs/collectives.md,
// "Oversubscribed".
IntParam peer_spin_param{"AXON_COLL_SHM_PEER_SPIN_US", 10,
                         "Oversubscribed node-level collectives: microseconds a rank polls (instead of "
                         "yielding) while every rank it waits for last ran on another CPU; 0 = always yield."};

bool use_futex() {
  const std::string& m = wait_param.get();
  if (m == "futex") return kHaveFutex;
  if (m == "spin") return false;
  return kHaveFutex && rte::job().oversubscribed;
}

// Views into the mapped segment.
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
  bool waits_on_own_cpu(const Flag* f, int j, int k, uint64_t s, int32_t mine) const {
    for (; j < k; ++j)
      if (f[j].v.load(std::memory_order_acquire) < s &&
          pml::peer_cpu(ns.ctx, ns.topo.members[writer_of(&f[j])]) == mine)
        return true;
    return false;
  }
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
  // Waits until every flag of f[0..k) is at step s or beyond.
  void wait_all(const Flag* f, int k, uint64_t s) const {
    if (!ns.futex) {
      wait_spin(f, k, s);
      return;
    }
    int j = 0;
    while (j < k && f[j].v.load(std::memory_order_acquire) >= s) ++j;
    if (j == k) return;
    // Spin while every rank has a core (none when oversubscribed), then
    // yield (or poll a while, see peer_spin_param), then sleep.
    const int64_t spins = pml::spin_rounds(), yields = spins + yields_param.get();
    static const uint64_t peer_spin_ns = static_cast<uint64_t>(std::max<int64_t>(peer_spin_param.get(), 0)) * 1000;
    int32_t mine = peer_spin_ns ? pml::publish_cpu() : 0;
    PeerPoll poll(peer_spin_ns);
    for (int64_t i = 1;; ++i) {
      while (j < k && f[j].v.load(std::memory_order_acquire) >= s) ++j;
      if (j == k) return;
      if ((i & 7) == 0 && pml::progress() > 0) continue;
      if (i <= spins) {
        cpu_relax();
        continue;
      }
      if (i <= yields) {
        if (mine != 0 && poll.poll(!waits_on_own_cpu(f, j, k, s, mine))) {
          --i;  // polling rounds do not count towards the sleep
          cpu_relax();
          continue;
        }
        sched_yield();
        poll.yielded();
        if (mine != 0) mine = pml::publish_cpu();  // the scheduler may have moved this rank
        continue;
      }
      // Sleep on the first line not there yet (the others are re-checked
      // after every wake; flags only grow).
      std::atomic<uint32_t>* sl = sleepers(&f[j]);
      sl->fetch_add(1, std::memory_order_seq_cst);
      uint64_t v = f[j].v.load(std::memory_order_seq_cst);
      if (v < s) futex_wait(low_half(&f[j].v), static_cast<uint32_t>(v), kSleepNs);
      sl->fetch_sub(1, std::memory_order_relaxed);
    }
  }
  void wait_one(const Flag* f, uint64_t s) const { wait_all(f, 1, s); }
  static void wait_spin(const Flag* f, int k, uint64_t s) {
    node_wait([&] { return all_at_least(f, k, s); });
  }
};

// What the node's leader sends the other members at the first node-level call.
struct SegmentName {
  int32_t status;  // MPI_SUCCESS, or why the leader has no segment
  char name[252];  // NUL-terminated
};

// Creates (the node's leader) or maps (the others) the node's segment; see
// the top of the file.
int attach_segment(CommState* st) {
  NodeState& ns = *st->node;
  const Topology& t = ns.topo;
  int n = static_cast<int>(t.members.size());
  size_t chunk = chunk_for(n);
  size_t bytes = segment_bytes(n, chunk);
  const std::string& prefix = rte::job().shm_prefix;
  shm::Mapping map;
  std::string name, why;
  SegmentName msg{};
  if (t.me == 0) {
    if (shm::create(prefix, "coll." + std::to_string(st->coll->id), bytes, &name, &map, &why) != 0 ||
        name.size() >= sizeof msg.name) {
      log::error("coll: cannot create the node segment (%zu bytes): %s", bytes,
                 why.empty() ? "its name is too long" : why.c_str());
      if (map.base()) shm::unlink(name);
      msg.status = MPI_ERR_NO_MEM;
    } else {
      std::memcpy(msg.name, name.c_str(), name.size() + 1);
    }
    for (int i = 1; i < n; ++i) {
      int rc = pml::send(&msg, sizeof msg, byte_type(), t.members[i], kTagSegment, st->coll, pml::SendMode::Standard);
      if (rc != MPI_SUCCESS && msg.status == MPI_SUCCESS) msg.status = rc;
    }
    if (msg.status != MPI_SUCCESS) return msg.status;
  } else {
    pml::Request r;
    if (int rc = pml::recv(&msg, sizeof msg, byte_type(), t.members[0], kTagSegment, st->coll, &r); rc != MPI_SUCCESS)
      return rc;
    if (msg.status != MPI_SUCCESS) return msg.status;
    if (!shm::parse_name(msg.name, sizeof msg.name, prefix, &name)) {
      log::error("coll: the node's leader sent no usable segment name");
      return MPI_ERR_INTERN;
    }
    if (shm::open_existing(name, bytes, &map, &why) != 0 || map.size() != bytes) {
      log::error("coll: cannot map the node segment: %s", why.empty() ? "its size is wrong" : why.c_str());
      return MPI_ERR_NO_MEM;
    }
  }
  ns.bytes = map.size();
  ns.base = map.release();  // NodeState unmaps it
  ns.chunk = chunk;
  ns.futex = use_futex();
  auto* h = static_cast<Header*>(ns.base);
  if (h->attached.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n)) shm::unlink(name);
  return MPI_SUCCESS;
}

// The segment, mapped at the first node-level call.
inline int attach(CommState* st) { return st->node->base ? MPI_SUCCESS : attach_segment(st); }

// Items per reduction step: as many as fit a slot with their byte span.
MPI_Count items_per_step(const Datatype* type, size_t chunk) {
  return static_cast<MPI_Count>((chunk - static_cast<size_t>(type->true_extent)) / static_cast<size_t>(type->extent)) + 1;
}

bool reduction_type_ok(const Datatype* type) {
  return type->extent > 0 && type->true_extent > 0 && static_cast<size_t>(type->true_extent) <= least_chunk();
}

// Copies `count` items from the image `src` (a buffer pointer: item 0's
// layout) to a user buffer, writing only the bytes the type covers.
void copy_out(const Datatype* type, const void* src, void* dst, MPI_Count count) {
  if (count <= 0) return;
  if (type->contiguous) std::memcpy(dst, src, payload_bytes(count, type));
  else copy_items_between(*type, src, dst, static_cast<size_t>(count));
}

// ---- node-level primitives over topo.members -------------------------------------

void node_barrier(Seg& g) {
  uint64_t s = ++g.ns.seq;
  g.post(&g.arrive(s)[g.me], s);
  g.wait_all(g.arrive(s), g.n, s);
  g.arrived_all(s);
  g.post(&g.done()[g.me], s);
}

// Broadcast of `count` items of `type` from member `root`, in packed chunks.
// The root also puts its byte count into each step's flag line: a member
// whose count differs (an erroneous program) gets MPI_ERR_OTHER (short) or
// MPI_ERR_TRUNCATE (long) instead of silent garbage, and returns normally
// as long as both counts take the same number of steps (always for
// messages up to one step, the smaller of (ranks + 1) x chunk and kBcastStep bytes).
int node_bcast(Seg& g, void* buf, MPI_Count count, const Datatype* type, int root) {
  int err = MPI_SUCCESS;
  size_t total = payload_bytes(count, type);
  // A whole data set per step, but at most kBcastStep bytes: readers copy
  // out step k while the root fills step k + 1 (measured best at 2 and 4
  // ranks, docs/collectives.md "Slot size").
  size_t step_bytes = std::min((static_cast<size_t>(g.n) + 1) * g.chunk, kBcastStep);
  Convertor cv;
  bool contiguous = type->contiguous;
  if (!contiguous) cv = Convertor(*type, buf, static_cast<size_t>(count));
  for (size_t off = 0; off < total; off += step_bytes) {
    size_t len = std::min(step_bytes, total - off);
    uint64_t s = ++g.ns.seq;
    Flag* f = &g.arrive(s)[root];
    uint8_t* data = len <= kInline ? f->data : len <= kSmall ? g.small(s) : g.set(s);
    if (g.me == root) {
      if (len <= kSmall) g.claim_lines(s);
      else g.claim(s);
      if (contiguous) std::memcpy(data, static_cast<uint8_t*>(buf) + off, len);
      else convertor_pack(cv, data, len);
      f->pad = total;
      g.post(f, s);
    } else {
      g.wait_one(f, s);
      size_t sent = static_cast<size_t>(f->pad);
      if (sent != total) {
        if (err == MPI_SUCCESS) err = sent < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
        // Take what the root wrote, from where it wrote it.
        size_t root_len = sent > off ? std::min(step_bytes, sent - off) : 0;
        data = root_len <= kInline ? f->data : root_len <= kSmall ? g.small(s) : g.set(s);
        len = std::min(len, root_len);
      }
      if (contiguous) std::memcpy(static_cast<uint8_t*>(buf) + off, data, len);
      else convertor_unpack(cv, data, len);
      // A root usually runs ahead: start fetching the line of the next
      // step now, so that its transfer overlaps the way out of this call
      // and into the next one (a stale copy costs the root nothing more
      // than the invalidation it pays anyway).
      __builtin_prefetch(&g.arrive(s + 1)[root]);
    }
    g.post(&g.done()[g.me], s);
  }
  return err;
}

// A reduce to a root of two members, streamed: the other member copies its
// operand into its slot, a slot's worth per step, and the root combines
// each step straight into its receive buffer as soon as it is there, its
// own operand read where it is (the send buffer, copied into the receive
// buffer while the other member copies). The piecewise path of
// node_reduce instead copies every operand in, reduces a share on each
// rank and copies the result out, one phase after the other. (Smaller
// steps, to overlap the copy and the reduction, measured slower:
// docs/collectives.md.)
// Contiguous types only (`count` and `type` are the same on both ranks, as
// the standard requires, so both take this path alike).
int node_reduce_streamed(Seg& g, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                         int root) {
  const int other = 1 - root;
  const MPI_Aint ext = type->extent, tlb = type->true_lb;
  const uint64_t total = payload_bytes(count, type);
  // The accumulator is op_apply's right operand, and the result must be
  // x_0 op x_1: the root's own operand can go into it first (before the
  // other one arrives) when it is x_1 or the op commutes. Otherwise the
  // other operand goes in first, and an in-place root keeps its own
  // operand in its slot meanwhile.
  const bool own_first = root == 1 || op->commutative;
  const bool in_place = in == out;
  const MPI_Count per = items_per_step(type, g.chunk);
  int err = MPI_SUCCESS;
  for (MPI_Count c0 = 0; c0 < count; c0 += per) {
    const MPI_Count cnt = std::min(per, count - c0);
    const size_t span = items_span(cnt, type);
    const uint64_t s = ++g.ns.seq;
    const uint8_t* mine = static_cast<const uint8_t*>(in) + c0 * ext + tlb;
    g.claim(s);
    if (g.me != root) {
      std::memcpy(g.slot(s, g.me), mine, span);
      g.arrive(s)[g.me].pad = total;
      g.post(&g.arrive(s)[g.me], s);
      g.post(&g.done()[g.me], s);
      continue;
    }
    uint8_t* acc = static_cast<uint8_t*>(out) + c0 * ext + tlb;
    const uint8_t* theirs = g.slot(s, other);
    if (own_first) {
      if (!in_place) std::memcpy(acc, mine, span);
    } else if (in_place) {
      std::memcpy(g.slot(s, g.me), mine, span);
      mine = g.slot(s, g.me);
    }
    g.wait_one(&g.arrive(s)[other], s);
    g.arrived_all(s);
    uint64_t sent = g.arrive(s)[other].pad;
    if (sent != total && err == MPI_SUCCESS) err = sent < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
    if (!own_first) std::memcpy(acc, theirs, span);
    // (op_apply takes buffer pointers: item 0's layout.)
    const void* left = (own_first ? theirs : mine) - tlb;
    if (int rc = op_apply(*op, left, acc - tlb, static_cast<size_t>(cnt), *type); rc != MPI_SUCCESS) return rc;
    g.post(&g.done()[g.me], s);
  }
  return err;
}

// Reduction of `count` items: `in` is my operand (a buffer pointer), `out`
// receives the result on member `root` (every member when root < 0). The
// result is x_0 op x_1 op ... op x_{n-1} in member order.
int node_reduce(Seg& g, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                int root) {
  const MPI_Aint ext = type->extent, tlb = type->true_lb;
  bool reader = root < 0 || g.me == root;
  const uint64_t total = payload_bytes(count, type);
  int err = MPI_SUCCESS;
  // Compares the contributions' byte counts after the arrivals of step s.
  auto check_counts = [&](uint64_t s) {
    for (int i = 0; i < g.n && err == MPI_SUCCESS; ++i) {
      uint64_t theirs = g.arrive(s)[i].pad;
      if (theirs != total) err = theirs < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
    }
  };
  // The common small call, a contiguous operand that takes one step which
  // every reader reduces itself: what the loop below does for it, without
  // its bookkeeping (same places, so ranks on either path meet).
  if (type->contiguous && total <= g.chunk && total * static_cast<size_t>(g.n - 1) <= small_reduce_limit(root >= 0)) {
    uint64_t s = ++g.ns.seq;
    Flag* f = g.arrive(s);
    // Operands that fit the flag line travel in it; those that fit a
    // rank's share of the small area (64-byte aligned: an op may load
    // whole vectors) go there. Such a step uses only the arrival lines
    // and the small area, so a rank need not wait until everyone is done
    // with the step before last (claim) but only with the step kFlagSets
    // back (claim_lines): a reduce's non-roots run up to that many calls
    // ahead, and the root finds their operands there (measured at 2
    // ranks, 4-512 B: 13-25 % less per call). An allreduce keeps the data
    // sets: every rank waits for all operands there anyway.
    const size_t share = (kSmall / static_cast<size_t>(g.n)) & ~size_t{63};
    bool inl = total <= kInline;
    bool in_small = root >= 0 && !inl && total <= share;
    if (root >= 0 && (inl || in_small)) g.claim_lines(s);
    else g.claim(s);
    auto operand = [&](int i) {
      return inl ? f[i].data : in_small ? g.small(s) + static_cast<size_t>(i) * share : g.slot(s, i);
    };
    std::memcpy(operand(g.me), in, total);
    f[g.me].pad = total;
    g.post(&f[g.me], s);
    if (reader) {
      g.wait_all(f, g.n, s);
      g.arrived_all(s);
      check_counts(s);
      // Oversubscribed, the ranks of a CPU run one after the other: the
      // first to get here reduces and leaves the result in the result slot,
      // later ones (in the common order, the CPU's other rank after its
      // hand-off) copy it instead of reducing all operands again. A rank
      // that finds the result claimed but not there yet reduces itself: the
      // claimer may be waiting for this very CPU. Measured at 4 ranks on 2
      // cores (docs/performance.md): 3-12 % less from 4 KiB to 32 KiB,
      // 3-6 % more below (the copy into the result slot costs about what
      // the saved reduction does).
      static const bool oversubscribed = rte::job().oversubscribed;
      bool share = oversubscribed && root < 0 && total >= kShareResult && err == MPI_SUCCESS;
      if (share && g.result_ready(s)) {
        std::memcpy(out, g.result(s), total);
        g.post(&g.done()[g.me], s);
        return err;
      }
      bool publish = share && g.claim_result(s);
      std::memcpy(out, operand(g.n - 1), total);
      for (int i = g.n - 2; i >= 0; --i)
        if (int rc = op_apply(*op, operand(i), out, static_cast<size_t>(count), *type); rc != MPI_SUCCESS) return rc;
      if (publish) {
        std::memcpy(g.result(s), out, total);
        g.publish_result(s);
      }
      // A reduce's non-roots usually run ahead (claim_lines): fetch the
      // lines of their next call now (its operands where this call's
      // were), as a bcast reader does the root's line. 2 ranks, 4-512 B:
      // 8-30 % less per call (docs/collectives.md). (The same for a bcast
      // reader's small area measured 10-25 % slower: the root writes
      // there while it is fetched.)
      if (root >= 0 && g.n <= 4)
        for (int i = 0; i < g.n; ++i) {
          if (i == g.me) continue;
          __builtin_prefetch(&g.arrive(s + 1)[i]);
          if (in_small)
            for (size_t b = 0; b < total; b += 64) __builtin_prefetch(g.small(s + 1) + static_cast<size_t>(i) * share + b);
        }
    }
    g.post(&g.done()[g.me], s);
    return err;
  }
  if (root >= 0 && g.n == 2 && type->contiguous && total > kSmallReduce && !rte::job().oversubscribed)
    return node_reduce_streamed(g, in, out, count, type, op, root);
  MPI_Count per = items_per_step(type, g.chunk);
  for (MPI_Count c0 = 0; c0 < count; c0 += per) {
    MPI_Count cnt = std::min(per, count - c0);
    size_t span = items_span(cnt, type);
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    // Tiny spans travel inside the arrival flag's cache line.
    bool inl = span <= kInline;
    // Every reader reduces all operands itself for small steps.
    bool every_reader = span * static_cast<size_t>(g.n - 1) <= small_reduce_limit(root >= 0);
    // Nobody but the root reads the root's operand then: with a separate
    // receive buffer it stays in the user's send buffer, uncopied.
    const uint8_t* mine = static_cast<const uint8_t*>(in) + c0 * ext + tlb;
    bool direct = every_reader && root >= 0 && g.me == root && in != out;
    auto operand = [&](int i) {
      if (direct && i == g.me) return const_cast<uint8_t*>(mine);
      return inl ? g.arrive(s)[i].data : g.slot(s, i);
    };
    if (!direct) std::memcpy(operand(g.me), mine, span);
    // My byte count goes with my arrival (as the bcast root's does): a
    // reader whose count differs (an erroneous program) returns an error
    // instead of reducing stale bytes; everyone still completes the steps.
    g.arrive(s)[g.me].pad = total;
    g.post(&g.arrive(s)[g.me], s);
    // Buffer pointer (item 0) of the image in slot i / the result slot.
    auto image = [&](uint8_t* p) { return p - tlb; };
    // (Only readers have a receive buffer: a non-root's may be null.)
    void* dst = reader ? static_cast<uint8_t*>(out) + c0 * ext : nullptr;
    if (every_reader) {
      if (reader) {
        g.wait_all(g.arrive(s), g.n, s);
        g.arrived_all(s);
        check_counts(s);
        // acc = x_{n-1}; acc = x_i op acc for i = n-2 .. 0. A contiguous
        // type accumulates in the user's buffer itself (my operand is in
        // the segment already, so in place is fine); otherwise in the result
        // slot (one reader) or own scratch (every rank reads).
        uint8_t* acc;
        std::vector<uint8_t> own;
        if (type->contiguous) acc = static_cast<uint8_t*>(dst);
        else if (root >= 0) acc = g.result(s);
        else {
          // Whole extents: a user op may read an item's padding too.
          own.resize(static_cast<size_t>(cnt * ext) + static_cast<size_t>(type->true_extent));
          acc = own.data();
        }
        std::memcpy(acc, operand(g.n - 1), span);
        for (int i = g.n - 2; i >= 0; --i)
          if (int rc = op_apply(*op, image(operand(i)), image(acc), static_cast<size_t>(cnt), *type);
              rc != MPI_SUCCESS)
            return rc;
        if (!type->contiguous) copy_out(type, image(acc), dst, cnt);
      }
    } else {
      g.wait_all(g.arrive(s), g.n, s);
      g.arrived_all(s);
      if (reader) check_counts(s);
      Blocks pieces(cnt, g.n);
      MPI_Count p0 = pieces.offset[g.me], pc = pieces.size[g.me];
      if (pc > 0) {
        size_t off = static_cast<size_t>(p0 * ext);
        size_t pspan = items_span(pc, type);
        std::memcpy(g.result(s) + off, g.slot(s, g.n - 1) + off, pspan);
        for (int i = g.n - 2; i >= 0; --i)
          if (int rc = op_apply(*op, image(g.slot(s, i)) + off, image(g.result(s)) + off, static_cast<size_t>(pc),
                                *type);
              rc != MPI_SUCCESS)
            return rc;
      }
      g.post(&g.red()[g.me], s);
      if (reader) {
        g.wait_all(g.red(), g.n, s);
        copy_out(type, image(g.result(s)), dst, cnt);
      }
    }
    g.post(&g.done()[g.me], s);
  }
  return err;
}

// ---- data movement: allgather(v), gather, scatter, alltoall -------------------------
//
// Each rank's contribution is a packed byte stream (the type signature's
// bytes, holes removed); a step moves the next piece of every stream
// through the set: up to `chunk` bytes per rank (allgather, gather,
// scatter) or chunk / n per pair (alltoall). Every rank knows how many
// steps a call takes (signatures match), so seq stays in step everywhere.
// Contiguous buffers are copied with memcpy, others through a convertor.

// A cursor over the packed stream of `count` items of `type` at `buf`.
struct Stream {
  uint8_t* base = nullptr;
  bool contig = true;
  size_t pos = 0;
  Convertor cv;
  Stream() = default;
  Stream(const void* buf, MPI_Count count, const Datatype* type)
      : base(static_cast<uint8_t*>(const_cast<void*>(buf))), contig(type == nullptr || type->contiguous) {
    if (!contig && count > 0) cv = Convertor(*type, buf, static_cast<size_t>(count));
  }
  void pack(void* dst, size_t len) {
    if (len == 0) return;
    if (contig) std::memcpy(dst, base + pos, len);
    else convertor_pack(cv, dst, len);
    pos += len;
  }
  void unpack(const void* src, size_t len) {
    if (len == 0) return;
    if (contig) std::memcpy(base + pos, src, len);
    else convertor_unpack(cv, src, len);
    pos += len;
  }
};

// Bytes of a stream of `total` bytes that fall into [off, off + per).
size_t piece(size_t total, size_t off, size_t per) { return total <= off ? 0 : std::min(per, total - off); }

// Allgather(v) (root < 0: every member reads) and gather (root: the only
// reader). bytes[i]: member i's stream length, known to every rank (only
// its own to a gather non-root, where all are equal); `src`: my stream
// (length 0 at a gather root or an in-place rank: nothing to send);
// out[i]: where member i's stream goes (readers only).
void node_gather(Seg& g, const std::vector<size_t>& bytes, Stream& src, size_t my_bytes, std::vector<Stream>& out,
                 int root) {
  size_t maxb = 0;
  for (size_t b : bytes) maxb = std::max(maxb, b);
  bool inl = maxb <= kInline;
  size_t per = inl ? kInline : g.chunk;
  bool reader = root < 0 || g.me == root;
  for (size_t off = 0; off < maxb; off += per) {
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    src.pack(inl ? f[g.me].data : g.slot(s, g.me), piece(my_bytes, off, per));
    g.post(&f[g.me], s);
    if (reader) {
      g.wait_all(f, g.n, s);
      g.arrived_all(s);
      for (int i = 0; i < g.n; ++i)
        if (i != g.me) out[i].unpack(inl ? f[i].data : g.slot(s, i), piece(bytes[i], off, per));
    }
    g.post(&g.done()[g.me], s);
  }
}

// Scatter of `m` bytes per member from member `root`: the root writes member
// j's piece into slot j (or j's arrival line) and posts j's arrival flag, so
// every member waits on its own line only.
void node_scatter(Seg& g, size_t m, std::vector<Stream>& src, Stream& dst, int root) {
  bool inl = m <= kInline;
  size_t per = inl ? kInline : g.chunk;
  for (size_t off = 0; off < m; off += per) {
    uint64_t s = ++g.ns.seq;
    Flag* f = g.arrive(s);
    size_t len = piece(m, off, per);
    if (g.me == root) {
      g.claim(s);
      for (int j = 0; j < g.n; ++j)
        if (j != root) {
          src[j].pack(inl ? f[j].data : g.slot(s, j), len);
          g.post(&f[j], s);
        }
    } else {
      g.wait_one(&f[g.me], s);
      dst.unpack(inl ? f[g.me].data : g.slot(s, g.me), len);
    }
    g.post(&g.done()[g.me], s);
  }
}

// Alltoall of `m` bytes per pair: my slot holds one sub-slot per other
// rank; everyone reads its sub-slot of every slot. In place works
// because a step packs bytes [off, off + len) of every block before it
// unpacks the same range into them.
// The steps of a node-level alltoall; pack(j, to, off, len) writes bytes
// [off, off + len) of the block for rank j, unpack(i, from, off, len) reads
// those of the block from rank i. Templated so that the byte path below
// inlines plain memcpy.
template <typename Pack, typename Unpack>
void node_alltoall_steps(Seg& g, size_t m, Pack&& pack, Unpack&& unpack) {
  size_t n = static_cast<size_t>(g.n);
  // Sub-slots for the n - 1 other ranks only (none for myself): at 2 ranks
  // the whole slot carries the one block, half the steps of n sub-slots.
  size_t others = n - 1;
  bool inl = m * others <= kInline;
  size_t sub = inl ? m : (g.chunk / others) & ~static_cast<size_t>(63);
  // Sub-slot of destination j in rank i's slot.
  auto at = [](int i, int j) { return static_cast<size_t>(j < i ? j : j - 1); };
  for (size_t off = 0; off < m; off += sub) {
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    size_t len = piece(m, off, sub);
    uint8_t* mine = inl ? f[g.me].data : g.slot(s, g.me);
    for (int j = 0; j < g.n; ++j)
      if (j != g.me) pack(j, mine + at(g.me, j) * sub, off, len);
    g.post(&f[g.me], s);
    g.wait_all(f, g.n, s);
    g.arrived_all(s);
    for (int i = 0; i < g.n; ++i)
      if (i != g.me) unpack(i, (inl ? f[i].data : g.slot(s, i)) + at(i, g.me) * sub, off, len);
    g.post(&g.done()[g.me], s);
  }
}

void node_alltoall(Seg& g, size_t m, std::vector<Stream>& src, std::vector<Stream>& dst) {
  node_alltoall_steps(
      g, m, [&](int j, uint8_t* to, size_t, size_t len) { src[j].pack(to, len); },
      [&](int i, const uint8_t* from, size_t, size_t len) { dst[i].unpack(from, len); });
}

// The same two for contiguous buffers (every block a byte range, `m`
// bytes per block; blocks at i * m): memcpy straight between the user's
// buffers and the segment, no streams, no allocation. Same steps, pieces
// and places as node_gather / node_alltoall, so a rank on this path and one
// with a derived type on the general path meet in every step.
void node_allgather_bytes(Seg& g, const uint8_t* mine, size_t m, uint8_t* recv) {
  bool inl = m <= kInline;
  size_t per = inl ? kInline : g.chunk;
  for (size_t off = 0; off < m; off += per) {
    size_t len = std::min(per, m - off);
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    std::memcpy(inl ? f[g.me].data : g.slot(s, g.me), mine + off, len);
    g.post(&f[g.me], s);
    g.wait_all(f, g.n, s);
    g.arrived_all(s);
    for (int i = 0; i < g.n; ++i)
      if (i != g.me) std::memcpy(recv + static_cast<size_t>(i) * m + off, inl ? f[i].data : g.slot(s, i), len);
    g.post(&g.done()[g.me], s);
  }
}

// `send` may be `recv` (in place): a step packs bytes [off, off + len) of
// every block before it unpacks the same range.
void node_alltoall_bytes(Seg& g, const uint8_t* send, size_t m, uint8_t* recv) {
  node_alltoall_steps(
      g, m,
      [&](int j, uint8_t* to, size_t off, size_t len) { std::memcpy(to, send + static_cast<size_t>(j) * m + off, len); },
      [&](int i, const uint8_t* from, size_t off, size_t len) {
        std::memcpy(recv + static_cast<size_t>(i) * m + off, from, len);
      });
}

// Member index of comm rank `r` on my node.
int member_index(const Topology& t, int r) {
  for (size_t i = 0; i < t.members.size(); ++i)
    if (t.members[i] == r) return static_cast<int>(i);
  return -1;
}

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
    pml::Guard guard;
    pml::request_release(s);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

bool node_kind(Kind k) {
  return k == Kind::barrier || k == Kind::bcast || k == Kind::reduce || k == Kind::allreduce;
}
// Kinds with a single-node form only (no hierarchical one yet).
bool move_kind(Kind k) {
  return k == Kind::allgather || k == Kind::allgatherv || k == Kind::gather || k == Kind::scatter ||
         k == Kind::alltoall;
}

bool common_ok(const CommState* st, const Args& a) {
  if (st->inter() || !(node_kind(a.kind) || move_kind(a.kind)) || !st->node || !st->node->topo.known) return false;
  if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && a.recvcount > 0 && !reduction_type_ok(a.recvtype))
    return false;
  // Alltoall splits a slot into one 64-byte-aligned sub-slot per rank.
  if (a.kind == Kind::alltoall && static_cast<size_t>(st->coll->size()) * 64 > least_chunk()) return false;
  return true;
}

}  // namespace

NodeState::~NodeState() {
  if (base) munmap(base, bytes);
}

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
    int64_t pretend = node_size_param.get();
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
  t.me = member_index(t, rank);
  t.blocks = true;
  for (int i = 1; i < size; ++i) t.blocks = t.blocks && t.node_of[i] >= t.node_of[i - 1];
  t.max_ppn = 0;
  for (int c : count) t.max_ppn = std::max(t.max_ppn, c);
  t.known = true;
  return MPI_SUCCESS;
}

bool shm_eligible(const CommState* st, const Args& a) {
  return common_ok(st, a) && st->node->topo.nodes == 1;
}

bool hier_eligible(const CommState* st, const Args& a) {
  if (!common_ok(st, a) || move_kind(a.kind) || st->node->topo.nodes < 2) return false;
  if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && !a.op->commutative && !st->node->topo.blocks)
    return false;
  return true;
}

namespace {

// The node-level part of a call on my node's members (`root`: member index,
// -1 = everyone gets the result). n == 1 needs no segment.
int node_part(CommState* st, const Args& a, const void* in, void* out, int root) {
  NodeState& ns = *st->node;
  int n = static_cast<int>(ns.topo.members.size());
  if (n == 1) {
    if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && in != out && (root < 0 || root == 0))
      copy_out(a.recvtype, in, out, a.recvcount);
    return MPI_SUCCESS;
  }
  if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
  Seg g{ns, n, ns.topo.me};
  switch (a.kind) {
    case Kind::barrier:
      node_barrier(g);
      return MPI_SUCCESS;
    case Kind::bcast:
      return node_bcast(g, out, a.recvcount, a.recvtype, root);
    default:
      return node_reduce(g, in, out, a.recvcount, a.recvtype, a.op, root);
  }
}

}  // namespace

namespace {

// Allgather(v), gather, scatter, alltoall on a single-node communicator
// (members = ranks). The own block is a local typed copy.
int shm_move(CommState* st, const Args& a) {
  NodeState& ns = *st->node;
  int n = static_cast<int>(ns.topo.members.size()), me = ns.topo.me;
  auto recv_block = [&](int i, MPI_Count count) {
    MPI_Aint disp = a.kind == Kind::allgatherv ? a.rdispls[i] : static_cast<MPI_Aint>(i) * count;
    return byte_at(a.recvbuf, disp * a.recvtype->extent);
  };
  auto send_block = [&](int i) { return byte_at(a.sendbuf, static_cast<MPI_Aint>(i) * a.sendcount * a.sendtype->extent); };
  // Contiguous send and receive types with matching sizes (or in place):
  // the byte paths. Blocks of other sizes (an erroneous program) take the
  // general paths below, which copy the smaller of both.
  if ((a.kind == Kind::allgather || a.kind == Kind::alltoall) && a.recvtype->contiguous &&
      (a.in_place || (a.sendtype->contiguous && payload_bytes(a.sendcount, a.sendtype) ==
                                                    payload_bytes(a.recvcount, a.recvtype)))) {
    size_t m = payload_bytes(a.recvcount, a.recvtype);
    auto* recv = static_cast<uint8_t*>(a.recvbuf);
    const auto* send = a.in_place ? recv : static_cast<const uint8_t*>(a.sendbuf);
    // The own block: allgather sends it from the send buffer, alltoall from block `me`.
    if (!a.in_place && m > 0)
      std::memcpy(recv + static_cast<size_t>(me) * m, a.kind == Kind::allgather ? send : send + static_cast<size_t>(me) * m,
                  m);
    if (n == 1 || m == 0) return MPI_SUCCESS;
    if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
    Seg g{ns, n, me};
    if (a.kind == Kind::allgather) node_allgather_bytes(g, a.in_place ? recv + static_cast<size_t>(me) * m : send, m, recv);
    else node_alltoall_bytes(g, send, m, recv);
    return MPI_SUCCESS;
  }
  switch (a.kind) {
    case Kind::allgather:
    case Kind::allgatherv: {
      std::vector<MPI_Count> counts(static_cast<size_t>(n), a.recvcount);
      if (a.kind == Kind::allgatherv) counts = a.recvcounts;
      std::vector<size_t> bytes(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) bytes[i] = payload_bytes(counts[i], a.recvtype);
      if (!a.in_place)
        if (int rc = copy_typed(a.sendbuf, a.sendcount, a.sendtype, recv_block(me, a.recvcount), counts[me], a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      Stream src = a.in_place ? Stream(recv_block(me, a.recvcount), counts[me], a.recvtype)
                              : Stream(a.sendbuf, a.sendcount, a.sendtype);
      std::vector<Stream> out(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i)
        if (i != me) out[i] = Stream(recv_block(i, a.recvcount), counts[i], a.recvtype);
      node_gather(g, bytes, src, bytes[me], out, -1);
      return MPI_SUCCESS;
    }
    case Kind::gather: {
      bool root = me == a.root;
      size_t m = root ? payload_bytes(a.recvcount, a.recvtype) : payload_bytes(a.sendcount, a.sendtype);
      if (root && !a.in_place)
        if (int rc = copy_typed(a.sendbuf, a.sendcount, a.sendtype, recv_block(me, a.recvcount), a.recvcount,
                                a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<size_t> bytes(static_cast<size_t>(n), m);
      Stream src = root ? Stream() : Stream(a.sendbuf, a.sendcount, a.sendtype);
      std::vector<Stream> out(static_cast<size_t>(n));
      if (root)
        for (int i = 0; i < n; ++i)
          if (i != me) out[i] = Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype);
      node_gather(g, bytes, src, root ? 0 : m, out, a.root);
      return MPI_SUCCESS;
    }
    case Kind::scatter: {
      bool root = me == a.root;
      size_t m = root ? payload_bytes(a.sendcount, a.sendtype) : payload_bytes(a.recvcount, a.recvtype);
      if (root && !a.in_place)
        if (int rc = copy_typed(send_block(me), a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<Stream> src(static_cast<size_t>(n));
      Stream dst;
      if (root) {
        for (int j = 0; j < n; ++j)
          if (j != me) src[j] = Stream(send_block(j), a.sendcount, a.sendtype);
      } else {
        dst = Stream(a.recvbuf, a.recvcount, a.recvtype);
      }
      node_scatter(g, m, src, dst, a.root);
      return MPI_SUCCESS;
    }
    default: {  // alltoall
      size_t m = payload_bytes(a.recvcount, a.recvtype);
      if (!a.in_place)
        if (int rc = copy_typed(send_block(me), a.sendcount, a.sendtype, recv_block(me, a.recvcount), a.recvcount,
                                a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<Stream> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        if (i == me) continue;
        src[i] = a.in_place ? Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype)
                            : Stream(send_block(i), a.sendcount, a.sendtype);
        dst[i] = Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype);
      }
      node_alltoall(g, m, src, dst);
      return MPI_SUCCESS;
    }
  }
}

}  // namespace

int shm_run(CommState* st, const Args& a) {
  const Topology& t = st->node->topo;
  if (move_kind(a.kind)) return shm_move(st, a);
  switch (a.kind) {
    case Kind::barrier:
      return node_part(st, a, nullptr, nullptr, -1);
    case Kind::bcast:
      if (a.recvcount == 0) return MPI_SUCCESS;
      return node_part(st, a, nullptr, a.recvbuf, member_index(t, a.root));
    case Kind::reduce: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      const void* in = a.in_place ? a.recvbuf : a.sendbuf;
      return node_part(st, a, in, a.recvbuf, member_index(t, a.root));
    }
    default: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      const void* in = a.in_place ? a.recvbuf : a.sendbuf;
      return node_part(st, a, in, a.recvbuf, -1);
    }
  }
}

namespace {

// The mapped segment of a one-node communicator for a call of at most the
// small-area size, or null. (One node: the members are the communicator's
// ranks in order, so a root's member index is its rank. A mapped segment
// means more than one member: node_part maps none for one.)
NodeState* small_call_segment(CommState* st, MPI_Count count, const Datatype* type) {
  NodeState* ns = st->node.get();
  return ns && ns->base && ns->topo.nodes == 1 && payload_bytes(count, type) <= kSmall ? ns : nullptr;
}

}  // namespace

bool node_bcast_now(CommState* st, void* buf, MPI_Count count, const Datatype* type, int root, int* rc) {
  NodeState* ns = small_call_segment(st, count, type);
  if (!ns) return false;
  Seg g{*ns, static_cast<int>(ns->topo.members.size()), ns->topo.me};
  *rc = node_bcast(g, buf, count, type, root);
  return true;
}

bool node_reduce_now(CommState* st, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                     int root, int* rc) {
  NodeState* ns = small_call_segment(st, count, type);
  if (!ns) return false;
  Seg g{*ns, static_cast<int>(ns->topo.members.size()), ns->topo.me};
  *rc = node_reduce(g, in, out, count, type, op, root);
  return true;
}

int hier_run(CommState* st, const Args& a) {
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
