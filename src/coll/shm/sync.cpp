// How the node's members wait for each other's flags on the segment (spin,
// yield, poll a peer on another CPU, sleep on the flag word), and the
// node barrier built on them (see internal.h, "Steps").
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/backoff.h"
#include "base/futex.h"
#include "base/param.h"
#include "coll/shm/internal.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::coll::nodelevel {

namespace {

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
// Who may leave a node barrier first. Whoever sees the last arrival may
// leave at once ("any"); but with more ranks than cores, the ones that
// leave first are those that arrived last, and after a bcast that is the
// root's CPU partners (the root left its bcast at once): in a loop of
// bcast and barrier (OSU's osu_bcast) they then wait inside the next
// bcast for the root, descheduled behind them on their CPU, two
// hand-offs. "root": nobody leaves the barrier after a blocking bcast
// before that bcast's root has, so the root runs first and sends before
// the others call (docs/collectives.md, "Barrier after a bcast"). The same on
// every rank (MPI_T_SCOPE_ALL_EQ), though a mix cannot hang: the root
// always marks itself done.
EnumParam release_param{"AXON_COLL_BARRIER_RELEASE",
                        {"auto", "any", "root"},
                        "Node-level barrier right after a blocking bcast: any (a rank leaves as soon as it sees "
                        "every arrival), root (nobody leaves before the bcast's root has, so a repeated bcast "
                        "finds its data sent), or auto (root when the node is oversubscribed). The same on every "
                        "rank; writable through MPI_T.",
                        EnumParam::Access::Writable};

// Waits for `pred` with the library's policy (spin, then yield the core),
// driving pml progress now and then: nonblocking collectives and messages of
// other ranks keep moving while this rank waits here.
template <class Pred> void node_wait(Pred pred) {
  if (pred()) return;
  Backoff backoff(progress::spin_rounds());
  for (unsigned i = 1;; ++i) {
    if (pred()) return;
    if ((i & 7) == 0 && progress::progress() > 0) {
      backoff.reset();
      continue;
    }
    backoff.idle();
  }
}

// Whether a barrier after a bcast waits for the bcast's root (release_param).
bool release_through_root() {
  static const bool oversubscribed = rte::job().oversubscribed;
  int mode = release_param.get();  // an atomic load: an MPI_T write shows at the next barrier
  return mode == 2 || (mode == 0 && oversubscribed);
}

}  // namespace

bool use_futex() {
  const std::string& m = wait_param.get();
  if (m == "futex") return kHaveFutex;
  if (m == "spin") return false;
  return kHaveFutex && rte::job().oversubscribed;
}

bool Seg::waits_on_own_cpu(const Flag* f, int j, int k, uint64_t s, int32_t mine) const {
  for (; j < k; ++j)
    if (f[j].v.load(std::memory_order_acquire) < s && pml::peer_cpu(ns.ctx, ns.topo.members[writer_of(&f[j])]) == mine)
      return true;
  return false;
}

void Seg::wait_slow(const Flag* f, int k, uint64_t s) const {
  if (!ns.futex) {
    node_wait([&] { return all_at_least(f, k, s); });
    return;
  }
  int j = 0;
  while (j < k && f[j].v.load(std::memory_order_acquire) >= s) ++j;
  if (j == k) return;
  // Spin while every rank has a core (none when oversubscribed), then
  // yield (or poll a while, see peer_spin_param), then sleep.
  const int64_t spins = progress::spin_rounds(), yields = spins + yields_param.get();
  static const uint64_t peer_spin_ns = static_cast<uint64_t>(std::max<int64_t>(peer_spin_param.get(), 0)) * 1000;
  int32_t mine = peer_spin_ns ? progress::publish_cpu() : 0;
  PeerPoll poll(peer_spin_ns);
  for (int64_t i = 1;; ++i) {
    while (j < k && f[j].v.load(std::memory_order_acquire) >= s) ++j;
    if (j == k) return;
    if ((i & 7) == 0 && progress::progress() > 0) continue;
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
      if (mine != 0) mine = progress::publish_cpu();  // the scheduler may have moved this rank
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

void node_barrier(Seg& g, int first) {
  uint64_t s = ++g.ns.seq;
  g.post(&g.arrive(s)[g.me], s);
  g.wait_all(g.arrive(s), g.n, s);
  g.arrived_all(s);
  g.post(&g.done()[g.me], s);
  // The root's done line: posted once it has seen every arrival, so this
  // waits only for the root to run (release_param).
  if (first >= 0 && first != g.me && release_through_root()) g.wait_one(&g.done()[first], s);
}

}  // namespace axon::coll::nodelevel
