// The active-message path of one-sided communication (internal to src/osc).
//
// A target reached with Path::Am is on another node (or its memory cannot be
// reached with CMA, or AXON_OSC_PATH=am forces this path): every operation
// and the synchronization it needs travel as BTL active messages, and the
// target applies them in its progress engine (or in the agent thread that
// drives progress while the application computes: AXON_OSC_ASYNC_PROGRESS).
//
// am.cpp owns the protocol: message layout, fragmentation at the transport's
// eager limit, the outbound queue for a full transport, completion counters
// per target, the target's queue of lock requests and the agent thread.
// target.cpp owns what a message does to the target's memory and control
// words (the `target_*` functions below), so that local and remote accesses
// use the same accumulate lock, the same hardware atomics and the same lock
// word.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "osc/osc.h"

namespace axon::osc {

// A contiguous piece of target memory: offset from the target's window base
// (absolute address for dynamic windows) and length.
struct Run {
  uint64_t off;
  uint64_t len;
};

// Calls fn(offset, length) for every contiguous run of `count` items of `t`,
// in type-map order (the order of the packed stream), merging adjacent runs.
// One walker for the mapped, CMA, active-message and RDMA paths.
template <class Fn> void for_each_run(const Datatype& t, size_t count, Fn fn) {
  if (count == 0 || t.size == 0) return;
  if (t.contiguous) {
    fn(0, t.size * count);
    return;
  }
  std::ptrdiff_t run_at = 0;
  size_t run_len = 0;
  auto emit = [&](std::ptrdiff_t at, size_t len) {
    if (run_len && run_at + static_cast<std::ptrdiff_t>(run_len) == at) {
      run_len += len;
      return;
    }
    if (run_len) fn(run_at, run_len);
    run_at = at;
    run_len = len;
  };
  for (size_t i = 0; i < count * t.reps; ++i) {
    const std::ptrdiff_t unit = static_cast<std::ptrdiff_t>(i / t.reps) * t.extent +
                                static_cast<std::ptrdiff_t>(i % t.reps) * t.rep_stride;
    for (size_t b = 0; b < t.block_count; ++b) {
      const TypeBlock& block = t.blocks[b];
      for (size_t r = 0; r < block.count; ++r)
        emit(unit + block.offset + static_cast<std::ptrdiff_t>(r) * block.stride, block.length);
    }
  }
  if (run_len) fn(run_at, run_len);
}

namespace am {

// Window registry (a message names its window by the id of the window's
// context, the same on every rank). register_window is called before the
// last collective of the window's creation, so no message can arrive for a
// window its target does not know yet; unregister_window after the barrier
// of MPI_Win_free. `async`: some rank reaches this window's ranks by active
// messages, start the progress agent.
void register_window(Window* w, bool async);
void unregister_window(Window* w);

// Operations towards a Path::Am target. `at` is the byte offset of the
// target data from the target's base (absolute for dynamic windows); the
// target type's layout is shipped as runs. Put and Accumulate return once
// the data is on its way (flush / unlock / fence / complete wait for the
// acknowledgements); Get, the fetching accumulates and CAS wait for the
// reply. Errors the target finds (dynamic windows: not attached there) come
// back in the reply: such operations wait for it.
int put(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const unsigned char* dense);
int get(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, unsigned char* dense);
// in: packed origin elements (null for MPI_NO_OP); old: where the fetched
// elements go (null for Accumulate).
int accumulate(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const Datatype& basic,
               const Op& op, const unsigned char* in, unsigned char* old);
int compare_and_swap(Window* w, int target, uint64_t at, const Datatype& type, const void* origin,
                     const void* compare, void* result);

// Asks `helper` to apply a NIC atomic (rdma.h) to the word at `at` of our
// own memory and waits for the old value.
int proxy_atomic(Window* w, int helper, bool cas, uint64_t at, uint64_t value, uint64_t compare, uint64_t* old);
// Dynamic windows by RDMA (rdma.h): asks `target` for the region holding
// [first, last) and waits: out = {base, size, key, cacheable}, or the
// target's error (MPI_ERR_RMA_RANGE).
int region(Window* w, int target, uint64_t first, uint64_t last, uint64_t out[4]);
// Tells `origins` that our region at `base` is detached; waits until each
// one dropped its key.
int region_detached(Window* w, const std::vector<int>& origins, uint64_t base);
// Waits until every operation sent to `target` (-1: every target) was
// applied; returns an error class a target reported for one of them.
int flush(Window* w, int target);
// Passive target lock word of a target on another node: waits for the grant.
// `targets` several at once (lock_all).
int lock(Window* w, const int* targets, size_t n, bool exclusive);
// Releases it (after flush); waits until the target released it.
int unlock(Window* w, const int* targets, size_t n, bool exclusive);
// PSCW towards a rank on another node: tell `origin` we posted / tell
// `target` this origin completed (after flush).
int post(Window* w, int origin);
int complete(Window* w, int target);
// Stops the progress agent (MPI_Finalize with windows never freed).
void finalize();
// Threads of ours running now besides the application's (the agent: 0 or 1).
int agent_threads();

}  // namespace am

// ---- target side, implemented in target.cpp ----------------------------------
namespace detail {
// MPI_SUCCESS or MPI_ERR_RMA_RANGE (dynamic windows: a run outside every
// attached region of this rank).
int target_check(const Window* w, const Run* runs, size_t n);
void target_write(Window* w, const Run* runs, size_t n, const unsigned char* data);
void target_read(const Window* w, const Run* runs, size_t n, unsigned char* data);
// Atomic per element w.r.t. local and remote accumulates (same choice of
// hardware atomics or accumulate lock as the local path).
int target_accumulate(Window* w, const Run* runs, size_t n, const Datatype& basic, const Op& op,
                      const unsigned char* in, unsigned char* old);
void target_cas(Window* w, uint64_t off, const Datatype& type, const void* origin, const void* compare,
                void* result);
bool target_try_lock(Window* w, bool exclusive);
void target_unlock(Window* w, bool exclusive);
void post_arrived(Window* w, int target);  // target posted an exposure epoch to us
void complete_arrived(Window* w);          // an origin completed its access epoch to us
}  // namespace detail

}  // namespace axon::osc
