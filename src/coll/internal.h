// What the algorithm files share: the description of one collective as the
// builders see it, the per-communicator state, the algorithm tables.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coll/coll.h"
#include "coll/schedule.h"
#include "coll/shm.h"
#include "coll/util.h"
#include "progress/progress.h"

namespace axon::coll {

struct Algorithm;

// Finished nonblocking schedules kept for the next call with equal Args
// and the same algorithm chosen (calls without per-rank arrays: their Args
// copy allocates nothing), the way a persistent request restarts its
// schedule: a loop of small
// MPI_I* calls with the same arguments builds each schedule once instead of
// every call (2 ranks, 8-byte MPI_Ialltoall: about 3,000 of 6,700
// instructions per call went into building and freeing it). A cached
// schedule retains its datatypes, so no key can name a freed type that a
// new one reuses the address of. Every member is called with the pml lock
// held (progress::Guard).
class ScheduleCache {
 public:
  ScheduleCache() = default;
  ~ScheduleCache();
  ScheduleCache(const ScheduleCache&) = delete;
  ScheduleCache& operator=(const ScheduleCache&) = delete;
  // An idle schedule built for `args` and `alg`, now in use; null when
  // there is none.
  Schedule* take(const Args& args, const Algorithm* alg);
  // Keeps `s` (in use) for reuse when an entry is free or idle; returns it,
  // or null when every entry is in use (the caller keeps ownership then).
  Schedule* adopt(const Args& args, const Algorithm* alg, std::unique_ptr<Schedule>& s);
  // A schedule this cache owns has finished: idle again.
  void release(Schedule* s);

 private:
  static constexpr size_t kEntries = 8;
  struct Entry {
    Args args;
    const Algorithm* alg = nullptr;
    std::unique_ptr<Schedule> schedule;
    bool busy = false;
    uint64_t used = 0;  // for evicting the least recently used idle entry
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

struct CommState {
  pml::Context* coll = nullptr;   // collective traffic (remote ranks on an intercommunicator)
  pml::Context* local = nullptr;  // intercommunicator: the local group; else null
  uint32_t seq = 0;               // collectives started so far: each gets its own tag
  // Node topology and the node segment (src/coll/shm.h), from the first
  // blocking barrier / bcast / reduce / allreduce on.
  std::unique_ptr<NodeState> node;
  // select.cpp: the last default choice and everything it depended on that
  // may differ between calls (the communicator's size, nodes and the
  // parameters do not), so that a run of like calls skips the size rules.
  struct PickMemo {
    const Algorithm* alg = nullptr;  // null: nothing remembered
    const char* why = nullptr;
    Kind kind = Kind::barrier;
    bool blocking = false;
    bool items = false;         // recvcount > 0
    signed char commutes = -1;  // the op's, -1 without an op
    size_t bytes = 0;
    ptrdiff_t extent = 0, true_extent = 0;  // reductions: whether items fit a slot
  };
  mutable PickMemo memo;
  // The barrier's own (no size rules, but it would evict the memo above
  // in a loop of bcast and barrier, and with it the bcast shortcut).
  mutable PickMemo barrier_memo;
  // Nonblocking schedules for reuse (see ScheduleCache).
  ScheduleCache schedules;
  // The communication report's counts, by Kind (always kept: one add per call).
  CallTally tallies[kKindCount];
  CallTally& tally(Kind kind) { return tallies[static_cast<int>(kind)]; }
  bool inter() const { return local != nullptr; }
  // The tag of the next collective: every rank starts collectives in the
  // same order, so the n-th one gets the same tag everywhere. Positive and
  // above the internal collectives' tags (1..15).
  int next_tag() { return 16 + static_cast<int>(seq++ & 0x3fffffff); }
};

// Everything a builder needs: the schedule to fill, the call, and who we are.
struct Build {
  Schedule& s;
  const Args& a;
  int rank;
  int size;
  int radix;  // k-nomial trees
};

using Builder = void (*)(Build&);

struct Algorithm {
  const char* name;
  Builder build;
  bool commutative_only;  // order of operands not kept: needs a commutative op
  const char* what;       // one line for the explain output
  // Node-level algorithms (src/coll/shm/) have no builder and serve
  // blocking calls only (a nonblocking or persistent call falls back to the
  // first entry): the node segment alone (one node) or the segment with
  // point-to-point messages among the node leaders.
  enum class Level : unsigned char { pt2pt, shm, hierarchical };
  Level level = Level::pt2pt;
  bool node() const { return level != Level::pt2pt; }
};

// The algorithms of one collective, default order; the first entry of each
// table is the fallback that works for everything.
const std::vector<Algorithm>& algorithms(Kind kind);

// Builds the intercommunicator form (src/coll/inter.cpp); false if the kind
// has no intercommunicator algorithm here.
bool build_inter(Schedule& s, const Args& a, CommState* st);

// Persistent request of a schedule built here (engine.cpp, neighbor.cpp):
// takes ownership of `schedule`, whose `state` must be set.
pml::Request* init_schedule(std::unique_ptr<Schedule> schedule);

// ---- collectives on GPU buffers (src/coll/device_staging.cpp) -------------------
// A call whose buffers are GPU memory runs the host algorithm on host
// copies: engine.cpp stages it, runs it, and copies the receive buffer back.
class DeviceStaging {
 public:
  DeviceStaging() = default;
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;
  // Copies the receive buffer back to the device (once); 0 or an MPI error class.
  int finish();
  // Persistent collectives, at every start and completion: the device data
  // to the host copies again (send span; receive span unless the call
  // writes it whole), and the receive span back (0 or an MPI error class).
  int copy_in();
  int copy_out();

 private:
  friend int stage_device_buffers(Args* a, int peers, std::unique_ptr<DeviceStaging>* out);
  const void* send_device_ = nullptr;  // start of the send span on the device
  size_t send_copy_ = 0;               // bytes copied in
  bool recv_copy_in_ = false;          // whether the receive span is copied in
  void* recv_device_ = nullptr;        // start of the span on the device
  void* recv_host_ = nullptr;          // pinned_alloc'ed, recv_len_ bytes
  size_t recv_len_ = 0;
  size_t recv_copy_ = 0;               // bytes copied back at finish
  void* send_host_ = nullptr;          // pinned_alloc'ed, send_len_ bytes
  size_t send_len_ = 0;
  bool finished_ = false;
};
// Whether a call's arguments name GPU memory (one cheap check per buffer
// while no CUDA driver is in use).
bool names_device_memory(const Args& a);
// Replaces the device buffers of *a with host copies (send data and the
// receive span copied in: in-place data and untouched bytes survive), and
// for a reduction decides whether its combine steps run as GPU kernels
// (Args::device_combine; counted here when they do not). `peers`: the size
// of the group the per-rank blocks refer to. Returns 0 or an MPI error class.
int stage_device_buffers(Args* a, int peers, std::unique_ptr<DeviceStaging>* out);

// ---- reductions resident on the device (src/coll/device_reduce.cpp) -------------
// How a reducing call whose arguments name GPU memory runs: off (staged:
// device_staging.cpp), or on the device with its data in device memory
// (Args::device_resident) for every form (all), or only where host ranks
// of the same call would run the same schedule (matched: the engine
// compares with the blocking host choice). AXON_COLL_DEVICE_RESIDENT.
enum class Resident : uint8_t { off, matched, all };
Resident device_resident_mode(const Args& a, const CommState* st);
// Counts a call that runs resident (MPI_T axon_coll_device_resident_reductions).
void count_device_resident(const Args& a);

// Blocking reduce of a small predefined contiguous type sent straight to
// the root (src/coll/basic.cpp): the direct path's choice on an
// oversubscribed node (engine.cpp). Same arguments as coll::reduce.
int reduce_flat(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op, int root,
                pml::Context* ctx);

// The direct versions of basic.cpp combine with GPU kernels while one is
// alive on the calling thread (a blocking call with Args::device_combine:
// the direct path runs on its caller's thread only).
extern thread_local bool direct_device_combine;
struct DeviceCombineScope {
  DeviceCombineScope() { direct_device_combine = true; }
  ~DeviceCombineScope() { direct_device_combine = false; }
  DeviceCombineScope(const DeviceCombineScope&) = delete;
  DeviceCombineScope& operator=(const DeviceCombineScope&) = delete;
};

// Blocking bcast of a small predefined contiguous type sent by the root
// straight to every other rank (src/coll/basic.cpp): the direct path's
// choice on an oversubscribed node. Same arguments as coll::bcast.
int bcast_flat(void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx);

// ---- builders (src/coll/algo_*.cpp) ---------------------------------------------
void barrier_dissemination(Build& b);
void bcast_binomial(Build& b);
void bcast_knomial(Build& b);
void bcast_scatter_allgather(Build& b);
void bcast_pipeline(Build& b);
void gather_binomial(Build& b);
void gather_linear(Build& b);
void gatherv_linear(Build& b);
void scatter_binomial(Build& b);
void scatter_linear(Build& b);
void scatterv_linear(Build& b);
void allgather_ring(Build& b);
void allgather_recursive_doubling(Build& b);
void allgather_bruck(Build& b);
void allgatherv_ring(Build& b);
void allgatherv_linear(Build& b);
void alltoall_pairwise(Build& b);
void alltoall_bruck(Build& b);
void alltoall_linear(Build& b);
void alltoallv_pairwise(Build& b);
void alltoallv_linear(Build& b);
void reduce_binomial(Build& b);
void reduce_knomial(Build& b);
void allreduce_recursive_doubling(Build& b);
void allreduce_reduce_bcast(Build& b);
void allreduce_ring(Build& b);
void allreduce_rabenseifner(Build& b);
void reduce_scatter_reduce_scatterv(Build& b);
void reduce_scatter_pairwise(Build& b);
void scan_linear(Build& b);
void scan_recursive_doubling(Build& b);

// Per-peer typed blocks of one side of an all-to-all (b.size peers).
struct Side {
  std::vector<const void*> at;
  std::vector<MPI_Count> count;
  std::vector<const Datatype*> type;
};
// Normalises alltoall / alltoallv / alltoallw to per-peer blocks; in place,
// the send side is a copy of the receive buffer taken in a first round.
void alltoall_sides(Build& b, Side* snd, Side* rcv);

// A reducing exchange cut into segments of about AXON_COLL_REDUCE_SEGMENT
// bytes, one round each: send `scount` items at `sbuf` to `to`, receive
// `rcount` items from `from` into `rbuf`, and fold each received segment in
// (`fold(first item, items)`, which adds the segment's reduce/copy steps).
// The cut depends on the message's count alone, so sender and receiver cut
// alike, and every rank, on host or GPU buffers, builds the same rounds. In
// a device-resident schedule the kernel of one segment then runs while the
// next segment moves (schedule.h); on host buffers the cost is one message
// latency per extra segment, a few percent at the default size.
void segmented_exchange(Schedule& s, const void* sbuf, MPI_Count scount, int to, void* rbuf, MPI_Count rcount,
                        int from, const Datatype* type, const std::function<void(MPI_Count, MPI_Count)>& fold);

// Byte images of per-rank blocks of a typed buffer: the blocks themselves
// when the type is a plain byte range, else packed copies in schedule
// scratch (pack() / unpack() add the copy steps).
struct Blocks2 {
  std::vector<uint8_t*> at;
  std::vector<size_t> bytes;
  bool direct = false;
  void* base = nullptr;
  const Datatype* type = nullptr;
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> displs;  // in items
  size_t total = 0;
};
// Blocks i = 0..n-1 of `counts[i]` items at item displacement displs[i].
Blocks2 block_view(Schedule& s, void* base, const Datatype* type, const std::vector<MPI_Count>& counts,
                   const std::vector<MPI_Aint>& displs);
// Equal blocks of `count` items, block i at item i*count.
Blocks2 block_view(Schedule& s, void* base, const Datatype* type, MPI_Count count, int n);
// Copy steps: typed block i -> image / image -> typed block i (no-ops when direct).
void pack_block(Schedule& s, const Blocks2& v, int i);
void unpack_block(Schedule& s, const Blocks2& v, int i);

}  // namespace axon::coll
