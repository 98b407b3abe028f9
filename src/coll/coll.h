// Collective operations: the layer's one interface.
//
// The MPI layer checks arguments and describes a call as `Args`; this layer
// picks an algorithm (src/coll/select.cpp), builds it as a schedule of
// point-to-point rounds (src/coll/schedule.h), and either runs it to
// completion (blocking), hands it to the progress engine (nonblocking,
// MPI_I*), or keeps it for repeated starts (persistent, *_init). Small
// blocking barrier / bcast / reduce / allreduce take the direct versions at
// the end of this header. docs/collectives.md explains the algorithms and
// the selection. Blocking barrier / bcast / reduce / allreduce may instead
// run node-level (src/coll/shm.h: a shared-memory segment per communicator
// and node, hierarchical across nodes); that state lives in CommState.
// A call on GPU buffers runs on host copies of them (device_staging.cpp),
// or, for a reduction the GPU kernels can do, on the buffers themselves
// (device_reduce.cpp).
// Neighbourhood collectives come as NeighborArgs (neighbor.cpp).
#pragma once

#include <functional>
#include <memory>

#include <cstdint>
#include <vector>

#include "datatype/datatype.h"
#include "op/op.h"
#include "pml/pml.h"

namespace axon::coll {

enum class Kind : uint8_t {
  barrier, bcast, gather, gatherv, scatter, scatterv, allgather, allgatherv, alltoall, alltoallv,
  alltoallw, reduce, allreduce, reduce_scatter, reduce_scatter_block, scan, exscan, count_
};
inline constexpr int kKindCount = static_cast<int>(Kind::count_);
const char* kind_name(Kind kind);  // "allreduce", ...

// One collective call as the MPI layer checked it. Counts and displacements
// are in items of the respective type (alltoallw: displacements in bytes);
// per-rank arrays are indexed by rank (by remote rank on an
// intercommunicator). `in_place` is MPI_IN_PLACE (sendbuf then meaningless).
// `root` is a rank, or MPI_ROOT / MPI_PROC_NULL on an intercommunicator.
// reduce_scatter(_block): recvcounts[i] items go to rank i (all equal for
// _block); the reductions take their count / type from recvcount / recvtype.
struct Args {
  Kind kind = Kind::barrier;
  const void* sendbuf = nullptr;
  MPI_Count sendcount = 0;
  const Datatype* sendtype = nullptr;
  void* recvbuf = nullptr;
  MPI_Count recvcount = 0;  // bcast / reductions: the count
  const Datatype* recvtype = nullptr;  // bcast / reductions: the type
  bool in_place = false;
  std::vector<MPI_Count> sendcounts, recvcounts;
  std::vector<MPI_Aint> sdispls, rdispls;
  std::vector<const Datatype*> sendtypes, recvtypes;
  const Op* op = nullptr;
  int root = 0;
  // Set by this layer (device_staging.cpp), not by the caller: a reduction
  // on GPU buffers staged to host memory whose local combine steps run as
  // GPU kernels (accel::combine_on_device).
  bool device_combine = false;
  // Set by this layer (device_reduce.cpp): a reduction whose buffers are
  // GPU memory runs with them where they are (device scratch, GPU kernels).
  bool device_resident = false;
  bool operator==(const Args&) const = default;
};

// The communication report's count of one kind of call on a communicator
// (src/mpi/report.cpp): calls started, their bytes (report_bytes below), and
// the algorithms that ran them ("direct" for the small blocking versions).
struct CallTally {
  static constexpr int kMaxAlgorithms = 4;  // distinct names kept, in the order first used
  uint64_t calls = 0;
  uint64_t bytes = 0;
  const char* algorithms[kMaxAlgorithms] = {};
  void add(size_t call_bytes, const char* algorithm) {
    ++calls;
    bytes += call_bytes;
    if (algorithms[0] != algorithm) [[unlikely]] note_algorithm(algorithm);
  }
  void note_algorithm(const char* algorithm);
};
// The bytes a call counts for in the report: what this rank contributes or
// receives per call as the selection measures it (bcast and the reductions:
// the buffer; rooted calls: the root's or the member's block), and for the
// v/w forms and reduce_scatter the sum over their per-rank counts; 0 for a barrier.
size_t report_bytes(const Args& a, int rank);

// Per-communicator collective state (src/coll/internal.h): the contexts, the
// operation sequence that gives each call its tag, the node topology and
// the node segment. Created by the MPI layer on
// first use, destroyed with the communicator.
struct CommState;
// `coll` carries the collective traffic; for an intercommunicator `coll`
// maps remote ranks and `local` is a context over the local group (else null).
CommState* state_create(pml::Context* coll, pml::Context* local);
void state_destroy(CommState* state);
// The tallies of a communicator's calls so far, indexed by Kind.
const CallTally* tallies(const CommState* state);

// Blocking collective. Here, in post and in init, buffers in GPU memory
// are staged through host copies (the copy back: when the call returns, or
// in the last round of the request's schedule), except for the reductions
// that run on the device buffers themselves (device_reduce.cpp).
int run(CommState* state, const Args& args);
// Blocking bcast of a contiguous predefined message on an
// intracommunicator whose previous collective was a blocking bcast of as
// many bytes for which the selection (nothing forced or explained) chose
// the node segment (up to 1 KiB, one node) or the direct point-to-point
// version (up to 2 KiB): runs that again at once, without building Args or
// selecting; true with the result in *rc. False when the call does not
// qualify; the caller then takes run(). The buffer must be host memory.
bool bcast_shortcut(CommState* state, void* buf, MPI_Count count, const Datatype* type, int root, int* rc);
// The same for a blocking reduce (root: its rank) or allreduce (`kind`)
// after one of the same kind, byte count, op commutativity and type
// extents: `send` is the send buffer, null when in place.
bool reduction_shortcut(CommState* state, Kind kind, const void* send, void* out, MPI_Count count,
                        const Datatype* type, const Op* op, int root, int* rc);
// Nonblocking: *out is a new request of Kind::Collective, completed through
// pml::request_complete (MPI_Wait/Test work unchanged).
int post(CommState* state, const Args& args, pml::Request** out);
// Persistent: *out is an inactive persistent request; start() runs it.
int init(CommState* state, const Args& args, pml::Request** out);
int start(pml::Request* req);
// Releases what a collective request owns (its schedule) and the request.
void request_free(pml::Request* req);
inline bool is_collective(const pml::Request* r) { return r->kind == pml::Request::Kind::Collective; }

// ---- neighbourhood collectives (src/coll/neighbor.cpp) ---------------------------
// One block: `count` items of `type` at `buf`, from or to `peer`
// (MPI_PROC_NULL: a cartesian edge, skipped; its block stays untouched).
struct NeighborBlock {
  void* buf;
  MPI_Count count;
  const Datatype* type;
  int peer;
};
// One neighbourhood collective as the MPI layer checked it: recvs[k] comes
// from the topology's k-th source, sends[k] goes to its k-th destination.
// `cartesian`: slots 2d and 2d + 1 are the -1 and +1 neighbours of
// dimension d, which may be one process (periodic, extent 1 or 2); the
// block sent towards +1 then arrives in the receiver's -1 slot. `tag`: the
// messages' tag on the collective context (cartesian: tag - k for slot k),
// allotted by the caller outside every other tag used there.
struct NeighborArgs {
  std::vector<NeighborBlock> recvs, sends;
  bool cartesian = false;
  int tag = 0;
};
// Blocking, on the communicator's collective context.
int neighbor_run(pml::Context* ctx, const NeighborArgs& a);
// Nonblocking: *out is a new request of Kind::Collective that a progress
// hook completes once every message has (a transfer that failed to post
// fails it then); may already be complete on return.
int neighbor_post(pml::Context* ctx, const NeighborArgs& a, pml::Request** out);
// Persistent: *out is an inactive persistent request (start() runs it).
int neighbor_init(CommState* state, const NeighborArgs& a, pml::Request** out);

// ---- internal collectives on a bare context ------------------------------------
// Used by the MPI layer where no communicator object exists yet (creation,
// finalize). They use tags of their own, so they never mix with user
// collectives in flight on the same context; they must not run concurrently
// with each other on one context.
int barrier(pml::Context* ctx);
int bcast(void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx);
// `sendbuf` null means in place (the data is in recvbuf).
int reduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
           int root, pml::Context* ctx);
int allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
              pml::Context* ctx);
// Every rank contributes `bytes` bytes; recvbuf receives size*bytes, in rank order.
// `sendbuf` null means in place (own block already at recvbuf + rank*bytes).
int allgather_bytes(const void* sendbuf, size_t bytes, void* recvbuf, pml::Context* ctx);

}  // namespace axon::coll
