// One-sided communication (RMA windows), below the MPI layer.
//
// A Window is the memory a group of ranks exposes to each other plus the
// synchronization state of this rank in it. This session covers ranks on one
// node (docs/rma.md):
// - every window has a control segment in POSIX shared memory
//   (/dev/shm/axon.<nspace>.osc.*, mode 0600, unlinked as soon as every rank
//   mapped it) with one passive-target lock word, one accumulate lock word,
//   PSCW counters and the attached regions of each rank;
// - Win_allocate / Win_allocate_shared put the ranks' memory in the same
//   segment: operations are plain loads, stores and atomics;
// - Win_create / Win_create_dynamic memory is private to its owner and is
//   read and written with process_vm_readv / writev (CMA), with no target
//   participation.
// - targets on other nodes (or unreachable by CMA, or every target with
//   AXON_OSC_PATH=am) are reached by active messages that the target applies
//   in its progress engine (am.h); each node then has its own control
//   segment for its ranks.
// Operations on mapped targets are complete when the call returns, so flush
// only orders memory for them; small contiguous Put / Get to CMA targets are
// queued and issued in one system call per target at the synchronization;
// for active-message targets flush, unlock, complete and fence wait for the
// acknowledgements.
// `Peer::path` says how a target is reached.
//
// The functions return MPI error classes (MPI_SUCCESS, MPI_ERR_RMA_SYNC, ...);
// the MPI layer (src/mpi/win.cpp) checks handles and arguments and raises
// through the window's error handler.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "datatype/datatype.h"
#include "op/op.h"
#include "pml/pml.h"

namespace axon::btl {
class Transport;
}

namespace axon::osc {

enum class Flavor : uint8_t { Create, Allocate, Shared, Dynamic };

struct Control;  // the shared control segment's layout (internal.h)
struct AmState;  // active-message state of a window (am.cpp)
struct CmaQueue;  // CMA operations queued until the next synchronization (cma.cpp)
// Frees a window's CmaQueue where its type is complete (cma.cpp).
struct CmaQueueDelete {
  void operator()(CmaQueue* q) const;
};

// How this rank reaches one target's memory.
enum class Path : uint8_t {
  Mapped,  // the memory is mapped here (allocate / allocate_shared)
  Self,    // our own private memory (create / dynamic, target == self)
  Cma,     // another process's private memory: process_vm_readv / writev
  Am,      // active messages applied by the target (other node, CMA forbidden, AXON_OSC_PATH=am; am.h)
  Rdma,    // RDMA WRITE / READ into the target's registered memory (rdma.h); sync and accumulates as Am
};

struct Peer {
  Path path = Path::Mapped;
  int pid = 0;
  unsigned char* mapped = nullptr;  // Path::Mapped: the target's memory in our mapping
  uint64_t base = 0;                // its address in the target process
  uint64_t size = 0;
  int disp_unit = 1;
  bool same_node = true;  // its control words are in our control segment
  uint64_t key = 0;       // Path::Rdma: the key of the target's registration (base: its address there;
                          // dynamic windows: 0, a key per region in Window::dyn_cache)
};

// Synchronization state of this rank (access and exposure epochs).
struct Epochs {
  bool fence = false;                 // between two fences (no NOSUCCEED)
  std::vector<int> start_group;       // PSCW access epoch targets (window ranks)
  bool started = false;
  std::vector<int> post_group;        // PSCW exposure epoch origins
  bool posted = false;
  uint64_t completions_expected = 0;  // cumulative, compared with the control counter
  std::vector<uint32_t> posts_seen;   // per target: posts consumed by start
  std::vector<int8_t> locked;         // per target: how we hold its lock (not / shared / exclusive / NOCHECK)
  bool lock_all = false;
  bool lock_all_nocheck = false;
};

struct Window {
  Flavor flavor = Flavor::Create;
  pml::Context* ctx = nullptr;  // collective context of the window's private communicator
  int rank = 0;
  int size = 1;
  void* base = nullptr;         // this rank's memory (MPI_BOTTOM for dynamic)
  uint64_t bytes = 0;
  int disp_unit = 1;
  std::vector<Peer> peers;      // by window rank
  // The shared segment: control area, then (allocate flavors) the data.
  void* map = nullptr;
  size_t map_len = 0;
  Control* ctl = nullptr;
  Epochs ep;
  // Active-message path (am.h): the window's id in messages (its context
  // id), the protocol state when some rank uses the path, and whether the
  // progress agent runs for it.
  uint32_t id = 0;
  AmState* am = nullptr;
  bool am_async = false;
  // RDMA path (rdma.h): our memory's registration on the transport that
  // carries it (released with the window), and whether 8-byte fetch-and-add
  // and compare-and-swap go through the NIC's atomics (the rule in rdma.cpp).
  btl::Transport* rdma = nullptr;
  uint64_t rdma_key = 0;
  bool nic_atomics = false;
  bool nic_self_proxy = false;  // our own memory's NIC atomics are asked of a neighbour
  // Dynamic windows on the RDMA path (rdma.cpp, "Dynamic windows" in
  // docs/rma.md). Target side: our attached regions registered with
  // `rdma` (key 0: registration failed, reached by active messages) and the
  // origins that fetched each key, told to forget it before MPI_Win_detach
  // returns. Origin side, per target: the regions whose keys we fetched (by
  // base; dropped when the target detaches them) and how many such
  // invalidations arrived (a fetch that raced with one is not cached).
  // Guarded by the PML lock (the handlers of rdma.cpp run under it).
  struct DynRegion {
    uint64_t base = 0, size = 0, key = 0;
    std::vector<bool> holders;  // by window rank
  };
  struct DynKey {
    uint64_t size = 0, key = 0;  // key 0: reach this region by active messages
  };
  std::vector<DynRegion> dyn_exposed;
  std::vector<std::map<uint64_t, DynKey>> dyn_cache;
  std::vector<uint64_t> dyn_invalidations;
  // Small Put / Get to Path::Cma targets wait here and go out as one
  // process_vm_writev / readv per target at the next synchronization (or
  // before an operation that must observe them); null without Cma peers.
  std::unique_ptr<CmaQueue, CmaQueueDelete> cma;
  // Win_create memory shared with the node's ranks (shared.cpp, "shared
  // Win_create memory" in docs/rma.md): our mappings of other ranks' memory
  // (Path::Mapped peers), and the page range of our own memory that now
  // lives in a memfd, made private again at MPI_Win_free.
  struct Mapping {
    void* addr;
    size_t len;
  };
  std::vector<Mapping> peer_maps;
  Mapping shared_own{nullptr, 0};
  uint64_t shared_inode = 0;  // the memfd's, to recognise it at MPI_Win_free
};

// ---- creation and destruction (collective over ctx) ------------------------
// Each returns MPI_SUCCESS and a new window in *out, or an error class
// (MPI_ERR_RMA_SHARED: ranks not on one node for allocate_shared;
// MPI_ERR_UNSUPPORTED_OPERATION: ranks on several nodes, not done yet;
// MPI_ERR_NO_MEM). On error every rank returns the same class when the cause
// is collective. `noncontig`: info alloc_shared_noncontig.
int create(pml::Context* ctx, void* base, uint64_t bytes, int disp_unit, Window** out);
int allocate(pml::Context* ctx, uint64_t bytes, int disp_unit, bool shared, bool noncontig, Window** out);
int create_dynamic(pml::Context* ctx, Window** out);
// MPI_ERR_RMA_SYNC (and nothing freed) when this rank still holds an epoch.
int free_check(const Window* w);
void destroy(Window* w);  // collective: barrier, then unmaps

// Dynamic windows: expose / withdraw [base, base+bytes) of this rank.
int attach(Window* w, void* base, uint64_t bytes);  // MPI_ERR_RMA_ATTACH when full or overlapping
int detach(Window* w, const void* base);            // MPI_ERR_RMA_RANGE when not attached

// Win_shared_query (any flavor): the target's memory in this process when it
// is directly addressable here, else size 0 and NULL (`rank` may be
// MPI_PROC_NULL: the lowest rank with addressable memory).
int shared_query(const Window* w, int rank, uint64_t* bytes, int* disp_unit, void** base);

// ---- operations ------------------------------------------------------------
// `target` is a window rank (MPI_PROC_NULL is handled by the caller). Types
// are committed; counts are non-negative. `op` for accumulates is predefined.
int put(Window* w, const void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype);
int get(Window* w, void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype);
// result may be null (Accumulate); origin may be null for MPI_NO_OP.
int accumulate(Window* w, const void* origin, size_t ocount, const Datatype* otype, void* result,
               size_t rcount, const Datatype* rtype, int target, MPI_Aint disp, size_t tcount,
               const Datatype& ttype, const Op& op);
int compare_and_swap(Window* w, const void* origin, const void* compare, void* result, const Datatype& type,
                     int target, MPI_Aint disp);

// ---- synchronization ---------------------------------------------------------
int fence(Window* w, int assert_bits);
int post(Window* w, const std::vector<int>& origins, int assert_bits);
int start(Window* w, const std::vector<int>& targets, int assert_bits);
int complete(Window* w);
int wait(Window* w);
// What wait() waits for, without changing the epoch state: MPI_Win_wait
// calls it without the window's synchronization mutex, so that other
// threads' calls on the window go on meanwhile; then wait() returns at once.
void wait_ready(const Window* w);
int test(Window* w, bool* done);
int lock(Window* w, int lock_type, int target, int assert_bits);
int unlock(Window* w, int target);
int lock_all(Window* w, int assert_bits);
int unlock_all(Window* w);
int flush(Window* w, int target);  // target -1: all
// Request-based Get (MPI_Rget): waits until the data of the operations just
// issued to `target` arrived (RDMA reads complete at flush otherwise).
int complete_get(Window* w, int target);
// Request-based Put (MPI_Rput): issues what is queued for `target`, so that
// the origin buffer may be reused when the request is returned complete.
int complete_put(Window* w, int target);
void sync(Window* w);              // Win_sync: a full memory barrier

// MPI_Finalize: stops the progress agent of windows never freed (before
// the transports close).
void finalize();

// Whether an operation to `target` is inside an access epoch (MPI_ERR_RMA_SYNC if not).
int check_access(const Window* w, int target);
// Whether a passive target epoch covers `target` (request-based operations).
int check_passive(const Window* w, int target);

}  // namespace axon::osc
