// Passive target synchronization: MPI_Win_lock / unlock, lock_all /
// unlock_all and the flushes, on the targets' lock words in the control
// segment (this node) or by active messages (other nodes); the completion
// of request-based operations and MPI_Win_sync. flush_ops is also what
// fence and complete (active_target.cpp) wait with.
#include "osc/internal.h"

#include <atomic>
#include <vector>

#include "osc/am.h"
#include "osc/rdma.h"
#include "progress/progress.h"

namespace axon::osc {

// Waits for what this rank sent to `target` (-1: all) by messages and RDMA.
int flush_ops(Window* w, int target) {
  int crc = cma_drain(w, target);
  int rc = am::flush(w, target);
  if (rc == MPI_SUCCESS) rc = crc;
  int rrc = rdma::flush(w, target);
  return rc != MPI_SUCCESS ? rc : rrc;
}

namespace {

void acquire_shared(std::atomic<uint32_t>& word) {
  progress::wait_until([&] {
    uint32_t v = word.load(std::memory_order_relaxed);
    return !(v & kExclusive) && word.compare_exchange_weak(v, v + 1, std::memory_order_acquire);
  });
}

void acquire_exclusive(std::atomic<uint32_t>& word) {
  progress::wait_until([&] {
    uint32_t v = 0;
    return word.compare_exchange_weak(v, kExclusive, std::memory_order_acquire);
  });
}

}  // namespace

void release_lock(std::atomic<uint32_t>& word, int8_t how) {
  if (how == kLockedExclusive) word.store(0, std::memory_order_release);
  else if (how == kLockedShared) word.fetch_sub(1, std::memory_order_release);
}

int lock(Window* w, int lock_type, int target, int assert_bits) {
  if (w->ep.lock_all || w->ep.started || w->ep.locked[target] != kNotLocked) return MPI_ERR_RMA_SYNC;
  std::atomic<uint32_t>& word = peer_ctl(w, target).lock;
  int8_t how = lock_type == MPI_LOCK_EXCLUSIVE ? kLockedExclusive : kLockedShared;
  if (assert_bits & MPI_MODE_NOCHECK) how = kLockedNoCheck;
  else if (!w->peers[target].same_node) {
    if (int rc = am::lock(w, &target, 1, how == kLockedExclusive); rc != MPI_SUCCESS) return rc;
  } else if (how == kLockedExclusive) acquire_exclusive(word);
  else acquire_shared(word);
  w->ep.locked[target] = how;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int unlock(Window* w, int target) {
  if (w->ep.lock_all || w->ep.locked[target] == kNotLocked) return MPI_ERR_RMA_SYNC;
  int rc = w->peers[target].path >= Path::Cma ? flush_ops(w, target) : MPI_SUCCESS;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const int8_t how = w->ep.locked[target];
  w->ep.locked[target] = kNotLocked;
  if (w->peers[target].same_node) release_lock(peer_ctl(w, target).lock, how);
  else if (how != kLockedNoCheck) {
    int urc = am::unlock(w, &target, 1, how == kLockedExclusive);
    if (rc == MPI_SUCCESS) rc = urc;
  }
  return rc;
}

int lock_all(Window* w, int assert_bits) {
  if (w->ep.lock_all || w->ep.started || any_locked(w)) return MPI_ERR_RMA_SYNC;
  w->ep.lock_all_nocheck = assert_bits & MPI_MODE_NOCHECK;
  if (!w->ep.lock_all_nocheck) {
    std::vector<int> remote;
    for (int t = 0; t < w->size; ++t) {
      if (w->peers[t].same_node) acquire_shared(peer_ctl(w, t).lock);
      else remote.push_back(t);
    }
    if (!remote.empty())
      if (int rc = am::lock(w, remote.data(), remote.size(), false); rc != MPI_SUCCESS) return rc;
  }
  w->ep.lock_all = true;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int unlock_all(Window* w) {
  if (!w->ep.lock_all) return MPI_ERR_RMA_SYNC;
  int rc = flush_ops(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  w->ep.lock_all = false;
  if (!w->ep.lock_all_nocheck) {
    std::vector<int> remote;
    for (int t = w->size - 1; t >= 0; --t) {
      if (w->peers[t].same_node) release_lock(peer_ctl(w, t).lock, kLockedShared);
      else remote.push_back(t);
    }
    if (!remote.empty()) {
      int urc = am::unlock(w, remote.data(), remote.size(), false);
      if (rc == MPI_SUCCESS) rc = urc;
    }
  }
  return rc;
}

int flush(Window* w, int target) {
  if (target >= 0 ? !holds_passive(w, target) : !(w->ep.lock_all || any_locked(w))) return MPI_ERR_RMA_SYNC;
  // Operations on mapped / CMA targets completed when they were called:
  // make their stores visible in order before anything this rank does next;
  // wait for the acknowledgements of those sent as active messages.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return flush_ops(w, target);
}

int complete_get(Window* w, int target) {
  if (w->peers[target].path == Path::Cma) return cma_drain(w, target);
  return w->peers[target].path == Path::Rdma ? rdma::flush(w, target) : MPI_SUCCESS;
}

int complete_put(Window* w, int target) {
  return w->peers[target].path == Path::Cma ? cma_drain(w, target) : MPI_SUCCESS;
}

void sync(Window* w) {
  // Queued CMA operations go out too (not required: Win_sync orders memory,
  // it does not complete operations; but it costs nothing when empty).
  cma_drain(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace axon::osc
