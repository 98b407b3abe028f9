// The RDMA path of one-sided communication (internal to src/osc).
//
// A target reached with Path::Rdma has its window memory registered with an
// RDMA-capable transport (btl caps.rma: verbs) for the window's lifetime;
// origins learn its address and key at creation (dynamic windows: each
// attached region is registered on its own and its key fetched on first
// use, below). Put is an RDMA WRITE and
// Get an RDMA READ per contiguous run of the target datatype, posted without
// waiting: flush / unlock / fence / complete wait for their completions
// (flush below). Synchronization (locks, PSCW notices) and accumulates keep
// using the active-message path (am.h), except 8-byte integer MPI_SUM
// accumulates and 8-byte compare-and-swap on windows where the NIC's atomics
// are sound (Window::nic_atomics; the rule is in rdma.cpp and docs/rma.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "osc/osc.h"

namespace axon::osc::rdma {

// Collective over the window, after the other paths were chosen (not for
// dynamic windows: setup_dynamic). Registers this rank's
// memory [mem, mem+bytes) when some peer may reach it by RDMA, exchanges
// (address, key) and turns peers into Path::Rdma: those on other nodes
// (`force`: AXON_OSC_PATH=rdma, every other rank) that the route's transport
// can reach with RDMA and whose registration succeeded (else they stay on
// active messages, logged at AXON_VERBOSE=1). `all_local`: every rank of the
// window is on this node (the same on every rank: nothing to do unless forced).
int setup(Window* w, void* mem, uint64_t bytes, bool all_local, bool force);
// Releases the registration (the window's memory stays).
void release(Window* w);

// `at` is the target address from locate(); runs of `ttype` from there;
// `key` the registration holding them (Peer::key, or dyn_key()).
// Put: `dense` may be reused on return. Get: `dense` is filled by the next
// flush of this target.
int put(Window* w, int target, uint64_t key, uint64_t at, size_t tcount, const Datatype& ttype,
        const unsigned char* dense);
int get(Window* w, int target, uint64_t key, uint64_t at, size_t tcount, const Datatype& ttype,
        unsigned char* dense);

// ---- dynamic windows (docs/rma.md, "Dynamic windows by RDMA") ----------------
// Each attached region is registered on its own at MPI_Win_attach; an
// origin fetches (base, size, key) of the region holding an address by an
// active message on first use and caches it; MPI_Win_detach tells every
// origin that fetched the key to drop it, and waits for their answers,
// before the registration goes. So no origin can hold a key of memory that
// is no longer registered, whatever is attached later at that address.
//
// MPI_Win_create_dynamic, after the other paths were chosen (no
// communication): peers on other nodes (`force`: every other rank) whose
// route can RDMA become Path::Rdma; our regions are registered with that
// transport from then on.
void setup_dynamic(Window* w, bool force);
// MPI_Win_attach (after the region table has it) / MPI_Win_detach (before
// the region table drops it): MPI_SUCCESS or an error class.
void attach_region(Window* w, void* base, uint64_t bytes);
int detach_region(Window* w, uint64_t base);
// Origin: the key of `target`'s registered region holding [first, last)
// (*key = 0: reach it by active messages: not registered, or the range
// spans several regions), or MPI_ERR_RMA_RANGE when no attached memory
// holds it.
int dyn_key(Window* w, int target, uint64_t first, uint64_t last, uint64_t* key);
// Counts a Put / Get to a dynamic window's rank on another node (or forced
// path) by RDMA or by active messages (MPI_T counters).
void count_dynamic(bool by_rdma);

// Handlers of the active messages above (am.cpp), PML lock held.
// Target: the region holding [first, last) for `origin`:
// out = {base, size, key, cacheable}; MPI_ERR_RMA_RANGE if not attached.
int region_query(Window* w, int origin, uint64_t first, uint64_t last, uint64_t out[4]);
// Origin: `target` detached its region at `base`.
void region_detached(Window* w, int target, uint64_t base);
// Waits until every RDMA operation posted to `target` (-1: every target)
// completed. MPI_SUCCESS or MPI_ERR_OTHER (a failed operation, logged).
int flush(Window* w, int target);

// Whether an accumulate of `basic` with `op` (null: compare-and-swap of
// `basic`) to `target` at these 8-byte aligned elements goes through the
// NIC's atomics on this window.
bool nic(const Window* w, int target, const Datatype& basic, const Op* op);
// MPI_SUM of `count` 8-byte integers (packed at `in`) into the elements at
// the runs of `ttype` from `at`; old values to `old` (null: not wanted).
// Fetching calls wait for completion; the others complete at flush.
int fetch_add(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const unsigned char* in,
              unsigned char* old);
int compare_and_swap(Window* w, int target, uint64_t at, const void* origin, const void* compare, void* result);

// Target of an active message asking for a NIC atomic on the sender's own
// memory (the sender cannot reach itself through the NIC): posts it and
// waits. Returns an MPI error class.
int proxy_atomic(Window* w, int origin, bool cas, uint64_t at, uint64_t value, uint64_t compare, uint64_t* old);

}  // namespace axon::osc::rdma
