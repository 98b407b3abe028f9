// The progress engine's state: the lock, the hooks, the waiting parameters.
#include "progress/progress.h"

#include <algorithm>
#include <vector>

#include "base/counter.h"
#include "base/param.h"
#include "btl/btl.h"
#include "diag/hang.h"
#include "progress/cpu_page.h"
#include "rte/rte.h"

namespace axon::progress {

namespace {

IntParam spin_param{"AXON_WAIT_SPIN", -1,
                    "Polling rounds a waiting rank spins before it starts yielding its core "
                    "(-1: 2000, or 0 when local ranks outnumber cores)"};

// Oversubscribed, a rank waiting for one peer that last ran on another CPU
// polls instead of yielding: that peer is most likely running and answers
// within microseconds, while a yield hands this CPU to a local rank that
// may have nothing to do yet, and costs a context switch each way (about
// 5 us here, docs/collectives.md "Oversubscribed"). A wait for a peer on
// this very CPU yields at once: that peer cannot run until this one stops.
IntParam peer_spin_param{"AXON_WAIT_PEER_SPIN_US", 10,
                         "Oversubscribed: microseconds a rank waiting for one local peer polls (instead of "
                         "yielding its core) while that peer last ran on another CPU; 0 = always yield"};

// The names say pml: they were counted there first, and tools read them.
Counter wait_yields{"axon_pml_wait_yields", Counter::Class::Counter,
                    "Times a rank waiting for a send or a receive from one peer gave its core away "
                    "(sched_yield; ranks outnumber cores)"};
Counter wait_peer_polls{"axon_pml_wait_peer_polls", Counter::Class::Counter,
                        "Times such a wait polled instead, for a peer that last ran on another CPU "
                        "(AXON_WAIT_PEER_SPIN_US)"};

int spin = 2000;
uint64_t peer_spin = 0;
std::vector<Hook> hooks;

}  // namespace

namespace detail {
std::recursive_mutex big_lock;
std::atomic<int> threaded{0};
uint64_t peer_spin_ns() { return peer_spin; }
void count_peer_wait(uint64_t yields, uint64_t poll_stretches) {
  wait_yields.add(yields);
  wait_peer_polls.add(poll_stretches);
}
}  // namespace detail

void init() {
  int64_t s = spin_param.get();
  spin = s >= 0 ? static_cast<int>(s) : (rte::job().oversubscribed ? 0 : 2000);
  // Only where waits yield at once (spinning ranks poll anyway).
  peer_spin = spin == 0 ? static_cast<uint64_t>(std::max<int64_t>(peer_spin_param.get(), 0)) * 1000 : 0;
  // A failure is reported there and costs only the CPU hints: waits yield.
  (void)open_cpu_page();
}

void enable_thread_safety() { detail::threaded.fetch_add(1); }
void disable_thread_safety() { detail::threaded.fetch_sub(1); }

void add_hook(Hook hook) {
  Guard guard;
  hooks.push_back(hook);
}

void remove_hook(Hook hook) {
  Guard guard;
  std::erase(hooks, hook);
}

int progress() {
  Guard guard;
  int n = btl::progress();
  // Index loop: a hook may add or remove hooks.
  for (size_t i = 0; i < hooks.size(); ++i) n += hooks[i]();
  // The hang doctor: mpirun's question is answered from here (hang.h).
  diag::hang::count_progress(n);
  diag::hang::poll();
  return n;
}

int spin_rounds() { return spin; }

bool shares_my_cpu(int peer) {
  int32_t theirs = peer_cpu(peer);
  return theirs != 0 && theirs == current_cpu_plus_one();
}

}  // namespace axon::progress
