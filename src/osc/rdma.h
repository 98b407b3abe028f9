// The RDMA path of one-sided communication (internal to src/osc).
//
// A target reached with Path::Rdma has its window memory registered with an
// RDMA-capable transport (btl caps.rma: verbs) for the window's lifetime;
// origins learn its address and key at creation. Put is an RDMA WRITE and
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
// dynamic windows, which stay on active messages). Registers this rank's
// memory [mem, mem+bytes) when some peer may reach it by RDMA, exchanges
// (address, key) and turns peers into Path::Rdma: those on other nodes
// (`force`: AXON_OSC_PATH=rdma, every other rank) that the route's transport
// can reach with RDMA and whose registration succeeded (else they stay on
// active messages, logged at AXON_VERBOSE=1). `all_local`: every rank of the
// window is on this node (the same on every rank: nothing to do unless forced).
int setup(Window* w, void* mem, uint64_t bytes, bool all_local, bool force);
// Releases the registration (the window's memory stays).
void release(Window* w);

// `at` is the target address from locate(); runs of `ttype` from there.
// Put: `dense` may be reused on return. Get: `dense` is filled by the next
// flush of this target.
int put(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const unsigned char* dense);
int get(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, unsigned char* dense);
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
