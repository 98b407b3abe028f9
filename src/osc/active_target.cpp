// Active target synchronization: MPI_Win_fence and the PSCW epochs
// (post / start / complete / wait / test). Ranks of this node meet in the
// control segment's post and completion counters; ranks on other nodes are
// told by active messages (am.h).
#include "osc/internal.h"

#include <atomic>
#include <vector>

#include "coll/coll.h"
#include "osc/am.h"
#include "progress/progress.h"

namespace axon::osc {

int fence(Window* w, int assert_bits) {
  if (w->ep.started || w->ep.posted || w->ep.lock_all || any_locked(w)) return MPI_ERR_RMA_SYNC;
  // Operations on mapped / CMA targets completed at their call, those sent
  // as active messages once acknowledged: then the barrier ends the epoch
  // everywhere.
  int frc = flush_ops(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  int rc = coll::barrier(w->ctx);
  if (rc == MPI_SUCCESS) rc = frc;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  w->ep.fence = !(assert_bits & MPI_MODE_NOSUCCEED);
  return rc;
}

int post(Window* w, const std::vector<int>& origins, int assert_bits) {
  if (w->ep.posted) return MPI_ERR_RMA_SYNC;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!(assert_bits & MPI_MODE_NOCHECK))
    for (int o : origins) {
      if (w->peers[o].same_node) post_counter(w, o, w->rank).fetch_add(1, std::memory_order_release);
      else if (int rc = am::post(w, o); rc != MPI_SUCCESS) return rc;
    }
  w->ep.post_group = origins;
  w->ep.completions_expected += origins.size();
  w->ep.posted = true;
  return MPI_SUCCESS;
}

int start(Window* w, const std::vector<int>& targets, int assert_bits) {
  if (w->ep.started || w->ep.lock_all || any_locked(w)) return MPI_ERR_RMA_SYNC;
  if (!(assert_bits & MPI_MODE_NOCHECK)) {
    for (int t : targets) {
      std::atomic<uint32_t>& posts = post_counter(w, w->rank, t);
      uint32_t seen = w->ep.posts_seen[t];
      progress::wait_until([&] { return posts.load(std::memory_order_acquire) != seen; });
      w->ep.posts_seen[t] = seen + 1;
    }
  }
  w->ep.start_group = targets;
  w->ep.started = true;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int complete(Window* w) {
  if (!w->ep.started) return MPI_ERR_RMA_SYNC;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  int rc = MPI_SUCCESS;
  for (int t : w->ep.start_group) {
    // Our active messages to t are applied before t learns we completed.
    int frc = w->peers[t].path >= Path::Cma ? flush_ops(w, t) : MPI_SUCCESS;
    if (w->peers[t].same_node) peer_ctl(w, t).completions.fetch_add(1, std::memory_order_release);
    else if (int crc = am::complete(w, t); crc != MPI_SUCCESS) frc = crc;
    if (rc == MPI_SUCCESS) rc = frc;
  }
  w->ep.started = false;
  w->ep.start_group.clear();
  return rc;
}

int test(Window* w, bool* done) {
  if (!w->ep.posted) return MPI_ERR_RMA_SYNC;
  *done = peer_ctl(w, w->rank).completions.load(std::memory_order_acquire) >= w->ep.completions_expected;
  if (*done) {
    w->ep.posted = false;
    w->ep.post_group.clear();
  }
  return MPI_SUCCESS;
}

void wait_ready(const Window* w) {
  // Only post / wait / test change these, and only one thread may wait on
  // an exposure epoch; the counter is atomic.
  if (!w->ep.posted) return;
  const std::atomic<uint64_t>& done = peer_ctl(w, w->rank).completions;
  const uint64_t expected = w->ep.completions_expected;
  progress::wait_until([&] { return done.load(std::memory_order_acquire) >= expected; });
}

int wait(Window* w) {
  if (!w->ep.posted) return MPI_ERR_RMA_SYNC;
  std::atomic<uint64_t>& done = peer_ctl(w, w->rank).completions;
  const uint64_t expected = w->ep.completions_expected;
  progress::wait_until([&] { return done.load(std::memory_order_acquire) >= expected; });
  w->ep.posted = false;
  w->ep.post_group.clear();
  return MPI_SUCCESS;
}

}  // namespace axon::osc
