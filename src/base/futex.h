// Sleeping on a word of memory shared between processes (Linux futex).
//
// Used where a rank would otherwise yield in a loop while it waits for a
// peer on an oversubscribed node: a sleeping rank is not runnable, so the
// peer it waits for gets the core without a round of yields in between.
// The word lives in a MAP_SHARED mapping, so the shared (not the
// FUTEX_PRIVATE_FLAG) operations are used: the kernel keys them by the
// physical page, which every process mapping the segment shares.
//
// The protocol that never loses a wake-up (the caller's part):
//   writer: store the new value (seq_cst); if the sleepers count is not
//           zero, futex_wake_all(word).
//   waiter: sleepers += 1 (seq_cst); re-read the word (seq_cst); if it
//           still holds the old value, futex_wait(word, old); sleepers -= 1.
// Either the writer sees the waiter's count, or the waiter sees the new
// value; and the kernel compares *word with `old` under its own lock, so a
// wake between the re-read and the sleep makes futex_wait return at once.
#pragma once

#include <climits>
#include <cstdint>
#include <ctime>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

namespace axon {

// Whether futex_wait really sleeps (else it yields once).
constexpr bool kHaveFutex =
#if defined(__linux__)
    true;
#else
    false;
#endif

// Sleeps while the 32-bit word at `word` holds `expected`, at most
// `timeout_ns` nanoseconds (0: no limit). Returns on a wake, when the word
// differs, on the timeout or on a signal: callers re-check their condition.
inline void futex_wait(const void* word, uint32_t expected, long timeout_ns) {
#if defined(__linux__)
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000L), timeout_ns % 1000000000L};
  syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns > 0 ? &ts : nullptr, nullptr, 0);
#else
  (void)word;
  (void)expected;
  (void)timeout_ns;
  sched_yield();
#endif
}

// Wakes every process sleeping on `word`.
inline void futex_wake_all(const void* word) {
#if defined(__linux__)
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
#else
  (void)word;
#endif
}

// The address of the low 32 bits of a 64-bit word (what a futex on a
// monotonic 64-bit counter compares: it changes with every increment).
inline const void* low_half(const void* word64) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return static_cast<const uint8_t*>(word64) + 4;
#else
  return word64;
#endif
}

}  // namespace axon
