// How a rank waits for something another process will do.
//
// Busy-polling is fastest while every rank has a core of its own; with more
// ranks than cores, a spinning rank steals the timeslice of the very peer it
// is waiting for and every hand-off costs a scheduler tick (milliseconds).
// So a waiter spins a bounded number of rounds (none when the node is
// oversubscribed) and then yields the core on every further round.
#pragma once

#include <sched.h>

#include <cstdint>

#include "base/clock.h"

namespace axon {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  explicit Backoff(int spin_rounds) : spin_rounds_(spin_rounds) {}
  // Call after a round of progress that found nothing to do.
  void idle() {
    if (rounds_ < spin_rounds_) {
      ++rounds_;
      cpu_relax();
    } else {
      sched_yield();
    }
  }
  // Call after a round that made progress.
  void reset() { rounds_ = 0; }

 private:
  int spin_rounds_;
  int rounds_ = 0;
};

// The CPU this process runs on now, plus one (0: not known): the form in
// which ranks publish where they wait, for the peers that wait for them.
inline int32_t current_cpu_plus_one() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : cpu + 1;
}

// The polling stretches of a rank that waits without spinning (ranks
// outnumbering cores): while every rank it waits for last ran on another
// CPU, that rank is most likely running and answers within a context
// switch, so the waiter polls for up to `ns` instead of handing its CPU to
// a local rank that may have nothing to do; a wait for a rank on its own
// CPU yields at once (that rank cannot run until this one stops). A new
// stretch starts after every yield.
class PeerPoll {
 public:
  explicit PeerPoll(uint64_t ns) : ns_(ns) {}
  // Whether to poll once more rather than yield now; `elsewhere`: every
  // awaited rank last ran on another CPU.
  bool poll(bool elsewhere) {
    if (!elsewhere) return false;
    uint64_t now = now_ns();
    if (until_ == 0) {
      until_ = now + ns_;
      ++stretches_;
    }
    return now < until_;
  }
  // Call after yielding.
  void yielded() { until_ = 0; }
  // Stretches started so far.
  uint64_t stretches() const { return stretches_; }

 private:
  uint64_t ns_;
  uint64_t until_ = 0;  // end of the current stretch (0: none)
  uint64_t stretches_ = 0;
};

}  // namespace axon
