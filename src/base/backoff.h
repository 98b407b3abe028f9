// How a rank waits for something another process will do.
//
// Busy-polling is fastest while every rank has a core of its own; with more
// ranks than cores, a spinning rank steals the timeslice of the very peer it
// is waiting for and every hand-off costs a scheduler tick (milliseconds).
// So a waiter spins a bounded number of rounds (none when the node is
// oversubscribed) and then yields the core on every further round.
#pragma once

#include <sched.h>

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

}  // namespace axon
