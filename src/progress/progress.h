// The progress engine: the one lock, the list of things to advance, and how
// a rank waits for another process.
//
// Layers above the transports (pml, coll, osc, the MPI bindings) do not
// drive each other: each registers a hook here, and whoever waits calls
// progress(), which polls the transports that carry traffic (btl::progress)
// and then every hook in registration order. Waiting spins a bounded number
// of rounds and then yields (none when ranks outnumber cores), and a rank
// waiting for one local peer polls while that peer runs on another CPU
// (the CPUs ranks publish, below).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "base/backoff.h"

namespace axon::progress {

// Reads the waiting parameters (after rte knows whether ranks outnumber
// cores). Called once by MPI initialisation, before any wait.
void init();

// ---- the lock ---------------------------------------------------------------------
// Serializes the library under MPI_THREAD_MULTIPLE (and while the osc
// progress agent runs); a no-op otherwise. Guards nest.
void enable_thread_safety();
// Gives back one enable_thread_safety() (the lock goes off with the last):
// only while no other thread can be inside the library.
void disable_thread_safety();
namespace detail {
// Inline below: every call on the message path takes a Guard or two, and as
// calls into progress.cpp they cost about 10 instructions each even when
// there is nothing to lock.
extern std::atomic<int> threaded;
extern std::recursive_mutex big_lock;
}  // namespace detail
class Guard {
 public:
  Guard() : locked_(detail::threaded.load(std::memory_order_relaxed) > 0) {
    if (locked_) detail::big_lock.lock();
  }
  ~Guard() {
    if (locked_) detail::big_lock.unlock();
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  bool locked_;
};

// ---- progress ----------------------------------------------------------------------
// A hook returns how many things it advanced. Hooks run with the lock held
// and may start nonblocking operations, but must never block.
using Hook = int (*)();
void add_hook(Hook hook);
void remove_hook(Hook hook);
// Polls the transports once, then runs every hook; returns how many things
// advanced.
int progress();

// ---- waiting -----------------------------------------------------------------------
// Polling rounds a wait spins before it yields (0 when ranks outnumber cores).
int spin_rounds();
// Waits until pred() holds, driving progress.
template <class Pred> void wait_until(Pred pred);
// The same for something only world rank `peer` (a peer on this node or
// not) can make true: oversubscribed, polls while that peer last ran on
// another CPU and yields at once while it shares ours.
template <class Pred> void wait_for_peer(Pred pred, int peer);

// ---- where ranks run ---------------------------------------------------------------
// Records the CPU this process runs on now where the local peers read it;
// returns it plus one, 0 when not known. Oversubscribed waits call it
// before they poll.
int32_t publish_cpu();
// The CPU world rank `peer` last published, plus one; 0 when not known
// (another node, no shared memory with it, nothing published yet).
int32_t peer_cpu(int peer);
// Whether world rank `peer` last ran on the CPU this process runs on now.
bool shares_my_cpu(int peer);

namespace detail {
// Nanoseconds a wait for one peer polls while that peer runs elsewhere (0: always yield).
uint64_t peer_spin_ns();
void count_peer_wait(uint64_t yields, uint64_t poll_stretches);
}  // namespace detail

template <class Pred> void wait_until(Pred pred) {
  Backoff backoff(spin_rounds());
  while (!pred()) {
    if (progress() > 0) backoff.reset();
    else backoff.idle();
  }
}

template <class Pred> void wait_for_peer(Pred pred, int peer) {
  uint64_t spin_ns = detail::peer_spin_ns();
  if (spin_rounds() != 0 || peer < 0) return axon::progress::wait_until(pred);  // qualified: no ADL
  int32_t mine = spin_ns ? publish_cpu() : 0;
  PeerPoll poll(spin_ns);
  uint64_t yields = 0;
  while (!pred()) {
    if (progress() > 0) continue;
    int32_t theirs = mine != 0 ? peer_cpu(peer) : 0;
    if (poll.poll(theirs != 0 && theirs != mine)) {
      cpu_relax();
      continue;
    }
    ++yields;
    sched_yield();
    poll.yielded();
    if (mine != 0) mine = publish_cpu();  // the scheduler may have moved this rank
  }
  detail::count_peer_wait(yields, poll.stretches());
}

}  // namespace axon::progress
