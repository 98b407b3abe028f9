// What the files of src/osc share with each other and the layers above never
// see (they include osc.h only): the layout of the shared control segment and
// its words, the lock-word and accumulate-lock protocols, and the helpers
// that more than one of the files below calls. Each declaration names the
// file that defines it:
//   window.cpp          creation and destruction, the control segment, dynamic
//                       windows' region table, AXON_OSC_PATH
//   shared.cpp          MPI_Win_shared_query, Win_create memory moved into
//                       shared memory (AXON_OSC_SHARE_CREATE)
//   cma.cpp             private memory reached with process_vm_readv / writev
//                       and the queue of small CMA operations
//   put_get.cpp         Put / Get, where a target's data is, epoch checks
//   accumulate.cpp      accumulates and compare-and-swap at the origin,
//                       element atomics and the accumulate lock
//   active_target.cpp   fence and PSCW
//   passive_target.cpp  lock / unlock / flush, request completion, Win_sync
//   target.cpp          what an active message does at its target (am.h)
// The two engines keep their own headers: am.h (active messages) and rdma.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/backoff.h"
#include "osc/osc.h"
#include "progress/progress.h"

namespace axon::osc {

// ---- the shared control segment (created by window.cpp) ---------------------

inline constexpr int kMaxRegions = 4096;  // attached regions per rank (dynamic windows)
inline constexpr uint32_t kExclusive = 0x80000000u;

// Per target, in the control segment. Fresh shared memory is zero: every
// word starts unlocked and every counter at zero.
struct alignas(64) PeerCtl {
  std::atomic<uint32_t> lock;         // passive target: kExclusive, or the number of shared holders
  std::atomic<uint32_t> acc;          // accumulate mutex (read-modify-write done under it)
  std::atomic<uint64_t> completions;  // PSCW: MPI_Win_complete calls aimed at this rank
  std::atomic<uint32_t> regions_hi;   // dynamic windows: slots [0, regions_hi) of the region table may be used
};
// An attached region of a dynamic window (a table of kMaxRegions per rank
// after the post counters, in dynamic windows' segments only).
struct Region {
  std::atomic<uint64_t> base;
  std::atomic<uint64_t> size;  // 0: free slot
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "control words are shared between processes");

// Segment layout: Control header, PeerCtl[n], post counters[n*n], then the
// region tables (dynamic windows) or the data (allocate flavors).
struct Control {
  uint64_t magic;
  uint32_t n;
};

inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

inline size_t peers_offset() { return round_up(sizeof(Control), 64); }
inline size_t posts_offset(int n) { return peers_offset() + sizeof(PeerCtl) * static_cast<size_t>(n); }
inline size_t regions_offset(int n) { return round_up(posts_offset(n) + 4ull * n * n, 64); }

inline PeerCtl& peer_ctl(const Window* w, int r) {
  return reinterpret_cast<PeerCtl*>(reinterpret_cast<unsigned char*>(w->ctl) + peers_offset())[r];
}
inline Region* regions(const Window* w, int r) {
  return reinterpret_cast<Region*>(reinterpret_cast<unsigned char*>(w->ctl) + regions_offset(w->size)) +
         static_cast<size_t>(r) * kMaxRegions;
}
// Posts of `target` towards `origin` (PSCW): written by the target, read by the origin.
inline std::atomic<uint32_t>& post_counter(const Window* w, int origin, int target) {
  auto* p = reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<unsigned char*>(w->ctl) +
                                                     posts_offset(w->size));
  return p[static_cast<size_t>(origin) * w->size + target];
}

// Whether [first, last) of rank r lies in memory attached to a dynamic
// window: in one region, or in regions attached separately that follow each
// other with no gap (MPICH accepts such accesses too). (window.cpp)
bool attached(const Window* w, int r, uint64_t first, uint64_t last);

// ---- epochs ------------------------------------------------------------------

// Our markers in Epochs::locked.
inline constexpr int8_t kNotLocked = 0, kLockedShared = 1, kLockedExclusive = 2, kLockedNoCheck = 3;

inline bool holds_passive(const Window* w, int target) {
  return w->ep.lock_all || w->ep.locked[target] != kNotLocked;
}

inline bool any_locked(const Window* w) {
  for (int8_t l : w->ep.locked)
    if (l != kNotLocked) return true;
  return false;
}

// ---- creation (window.cpp) -----------------------------------------------------

// AXON_OSC_PATH=am / =rdma (every other rank by active messages / by RDMA).
bool force_am();
bool force_rdma();

// What each rank tells the others at creation.
struct PeerInfo {
  int64_t pid;
  uint64_t base;
  uint64_t bytes;
  int64_t disp_unit;
  int64_t all_local;  // every rank of the window is on this rank's node
  uint64_t probe;     // address of cma_probe in this process
};

// ---- shared Win_create memory (shared.cpp) ---------------------------------------

// Collective over the window, after set_private_peers: turns the node's
// ranks whose memory could be shared into Path::Mapped on every rank of the
// node (and for ourselves).
int share_create_memory(Window* w, const std::vector<PeerInfo>& info);
// At MPI_Win_free: our pages moved into a memfd become private anonymous
// memory again, where that is safe.
void move_to_private(const Window::Mapping& m, uint64_t inode);

// ---- private memory by CMA (cma.cpp) ----------------------------------------------

// Read by the other ranks with process_vm_readv at window creation: tells
// whether the ptrace policy lets them reach this process's memory.
extern const uint64_t cma_probe;
// Private memory: our own is read directly, the others' on this node through
// CMA where permitted, the rest by active messages.
void set_private_peers(Window* w, const std::vector<PeerInfo>& info);
// Moves the packed stream `dense` to (write) or from target memory holding
// `count` items of `t` at `at`: memcpy for Mapped / Self targets,
// process_vm_writev / readv for Cma targets.
int transfer(const Window* w, int target, uint64_t at, size_t count, const Datatype& t, unsigned char* dense,
             bool write);
// Issues the queue of `target` (-1: every target) and returns the first
// error one of its batches had since the last call.
int cma_drain(Window* w, int target);
// Issues the queue of `target` before an operation that must come after it
// (its errors stay for the next synchronization).
void cma_order(Window* w, int target);
// Queues a Put (write) or Get of the contiguous origin buffer `buf` to the
// runs of `count` items of `t` at target address `at`. False: not queued
// (too large, too many runs): the caller transfers it now, after issuing
// the queue.
bool cma_enqueue(Window* w, int target, uint64_t at, size_t count, const Datatype& t, unsigned char* buf,
                 bool write);

// ---- where the data is (put_get.cpp) --------------------------------------------

// Where `count` items of `t` at displacement `disp` of `target` are: checks
// the range and returns the address (local for Mapped / Self, the target's
// for Cma).
int locate(const Window* w, int target, MPI_Aint disp, size_t count, const Datatype& t, uint64_t* at);

// ---- accumulate atomicity (accumulate.cpp; target.cpp applies the same) ----------

// inout = in op inout on `count` packed elements of `basic`. op_apply works
// on elements laid out with their extent: pair types with padding
// (MPI_DOUBLE_INT ...) are unpacked around it.
int apply_packed(const Op& op, const unsigned char* in, unsigned char* inout, size_t count, const Datatype& basic);

// The accumulate lock of a target (held only for the read-modify-write).
class AccLock {
 public:
  AccLock(const Window* w, int target) : word_(peer_ctl(w, target).acc) {
    Backoff backoff(progress::spin_rounds());
    for (;;) {
      uint32_t expected = 0;
      if (word_.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return;
      backoff.idle();
    }
  }
  ~AccLock() { word_.store(0, std::memory_order_release); }
  AccLock(const AccLock&) = delete;
  AccLock& operator=(const AccLock&) = delete;

 private:
  std::atomic<uint32_t>& word_;
};

// One element updated atomically: *addr = in op *addr; the old value to `old`.
template <class U> void atomic_element(U* addr, const void* in, void* old_out, const Op& op, const Datatype& basic) {
  U old;
  if (op.kind == OpKind::no_op) {
    old = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
  } else if (op.kind == OpKind::replace) {
    U v;
    memcpy(&v, in, sizeof v);
    old = __atomic_exchange_n(addr, v, __ATOMIC_ACQ_REL);
  } else {
    old = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
    for (;;) {
      U v = old;
      op_apply(op, in, &v, 1, basic);
      if (__atomic_compare_exchange_n(addr, &old, v, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
    }
  }
  if (old_out) memcpy(old_out, &old, sizeof old);
}

// Compare-and-swap of one aligned 4- or 8-byte word in memory other
// processes map too; `result` receives the old value.
void atomic_compare_and_swap(void* word, size_t size, const void* origin, const void* compare, void* result);

// ---- completion and lock words (passive_target.cpp) -------------------------------

// Waits for what this rank sent to `target` (-1: all) by messages and RDMA
// (and issues its queued CMA operations first).
int flush_ops(Window* w, int target);
// Releases a passive-target lock word held as `how` (kLockedShared /
// kLockedExclusive; kLockedNoCheck holds nothing).
void release_lock(std::atomic<uint32_t>& word, int8_t how);

}  // namespace axon::osc
