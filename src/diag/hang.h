// The hang doctor, rank side (docs/diagnostics.md "Hang doctor"): what this
// rank is blocked in, told to mpirun when it asks.
//
// mpirun asks with a real-time signal (signal_number()). The handler only
// sets a flag when the rank is inside a blocking MPI call: the wait loop
// (progress::progress) sees it with one relaxed load and writes the whole
// snapshot (the call and its arguments, posted receives, unexpected
// messages, collectives entered per communicator) to AXON_HANG_DIR/hang.<rank>.
// Outside MPI the handler writes a short, async-signal-safe record itself
// ("not in a blocking MPI call; last call MPI_X").
//
// The cost on the fast path: a blocking call stores its name and arguments
// into one static record (BlockedIn, a handful of plain stores), and leaves
// with one store and one relaxed load. No allocation, no lock.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "diag/hang_signal.h"
#include "progress/progress.h"

namespace axon::pml {
struct Context;
struct Request;
}  // namespace axon::pml

namespace axon::diag::hang {

enum class What : uint8_t {
  Recv,        // peer = source
  Send,        // peer = dest
  Sendrecv,    // peer = dest, peer2 = source (tag2: receive tag)
  Probe,       // peer = source
  Wait,        // requests[0..nrequests) (MPI_Request handles)
  WaitAny,     // the same, any one completes it (no wait-for edges)
  Collective,  // root (rooted ones), coll_seq
  Other,       // MPI_Finalize
};

// The outermost blocking call of the process (the main thread's, in practice;
// under MPI_THREAD_MULTIPLE the first thread that entered one).
struct Blocked {
  std::atomic<const char*> call{nullptr};  // stored last on entry, cleared on exit
  What what = What::Other;
  const pml::Context* ctx = nullptr;       // the communicator's context of the call
  int peer = MPI_PROC_NULL, tag = 0;
  int peer2 = MPI_PROC_NULL, tag2 = 0;
  int root = -1;
  MPI_Count count = 0;
  const char* type_name = nullptr;
  const MPI_Request* requests = nullptr;
  int nrequests = 0;
  uint64_t coll_seq = 0;                   // collectives: this call's number on the communicator (1, 2, ...)
  std::atomic<uint64_t> entered{0};        // blocking calls entered so far (the watchdog's clock)
};
extern Blocked blocked;
extern std::atomic<const char*> last_call;  // the last blocking call left
extern std::atomic<int> requested;          // mpirun asked; the wait loop answers
// Rounds of progress that advanced something (the watchdog's other clock).
extern std::atomic<uint64_t> progress_made;

// Writes the snapshot now and clears the request (progress loop, or leaving a call).
void answer();

class BlockedIn {
 public:
  BlockedIn(const char* call, What what, const pml::Context* ctx) : outer_(claim(&claimed_)) {
    if (!outer_) return;
    // Only the fields `what` reads are set (by p2p(), waits(), collective()).
    blocked.what = what;
    blocked.ctx = ctx;
    blocked.entered.store(blocked.entered.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    call_ = call;
  }
  // Arguments, then arm() publishes the record (the signal handler reads the
  // fields only once `call` is set).
  BlockedIn& p2p(int peer, int tag, MPI_Count count, const char* type_name) {
    if (outer_) {
      blocked.peer = peer;
      blocked.tag = tag;
      blocked.count = count;
      blocked.type_name = type_name;
    }
    return *this;
  }
  BlockedIn& second(int peer, int tag) {
    if (outer_) {
      blocked.peer2 = peer;
      blocked.tag2 = tag;
    }
    return *this;
  }
  BlockedIn& waits(const MPI_Request* requests, int n) {
    if (outer_) {
      blocked.requests = requests;
      blocked.nrequests = n;
    }
    return *this;
  }
  BlockedIn& collective(int root, MPI_Count count, const char* type_name, uint64_t seq) {
    if (outer_) {
      blocked.root = root;
      blocked.count = count;
      blocked.type_name = type_name;
      blocked.coll_seq = seq;
    }
    return *this;
  }
  void arm() {
    if (!outer_) return;
    std::atomic_signal_fence(std::memory_order_release);
    blocked.call.store(call_, std::memory_order_relaxed);
  }
  ~BlockedIn() {
    if (!outer_) return;
    last_call.store(call_, std::memory_order_relaxed);
    blocked.call.store(nullptr, std::memory_order_relaxed);
    if (claimed_) owner.store(false, std::memory_order_release);
    // Asked while leaving: the wait loop may not run again.
    if (requested.load(std::memory_order_relaxed)) [[unlikely]] answer();
  }
  BlockedIn(const BlockedIn&) = delete;
  BlockedIn& operator=(const BlockedIn&) = delete;

 private:
  // Whether this call owns the record. One thread: when no call holds it
  // (a nested call finds it taken). Several (MPI_THREAD_MULTIPLE): the
  // first thread to take `owner`, so that two threads never write the
  // record's plain fields at once; the others are not recorded.
  static bool claim(bool* claimed) {
    if (progress::detail::threaded.load(std::memory_order_relaxed) > 0) [[unlikely]]
      return *claimed = !owner.exchange(true, std::memory_order_acquire);
    return blocked.call.load(std::memory_order_relaxed) == nullptr;
  }
  static inline std::atomic<bool> owner{false};
  bool claimed_ = false;
  bool outer_;
  const char* call_ = nullptr;
};

// Communicators by context id, for names in the snapshot and the count of
// collectives entered on each (opened/closed by src/mpi/comm.cpp and
// communicator.cpp). `name` is the communicator's name string (it lives as
// long as the communicator).
void comm_opened(uint32_t p2p_id, uint32_t coll_id, const std::string* name, int size);
void comm_closed(uint32_t p2p_id);
// A collective starts on the communicator whose collective context is
// `coll_id`: returns its number there (1 for the first). No lock: MPI
// forbids concurrent collectives on one communicator.
uint64_t collective_entered(uint32_t coll_id, const char* call);
// "MPI_COMM_WORLD", or "communicator #id" when not known.
std::string comm_name(uint32_t context_id);

// MPI initialisation (after the communicators exist) / finalization. Arms
// the doctor only in a rank started by Axon's mpirun (AXON_HANG_DIR set).
void init(int world_rank);
void finalize();

// In the progress loop: one relaxed load.
inline void poll() {
  if (requested.load(std::memory_order_relaxed)) [[unlikely]] answer();
}
inline void count_progress(int n) {
  if (n > 0) progress_made.store(progress_made.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace axon::diag::hang

namespace axon::pml {
// The matching state for the hang doctor (src/pml/match.cpp): posted
// receives and unexpected messages of every context, as text lines.
// Caller holds the pml lock.
void describe_matching(std::string* out);
// Incomplete send requests (queued, waiting for the receiver's match, ack,
// clear-to-send or read), the first few (src/pml/pml.cpp).
void describe_pending_sends(std::string* out);
// One request, e.g. "receive from 1 tag 9 on MPI_COMM_WORLD (4 bytes), incomplete";
// `world_peer` gets the world rank it waits for (-1: none).
std::string describe_request(const Request* r, int* world_peer);
}  // namespace axon::pml
