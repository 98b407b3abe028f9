// The point-to-point messaging layer: MPI's matching and ordering rules and
// the eager and rendezvous protocols, on top of the BTL transports.
//
// The PML knows communicators only as Contexts: a context id carried in every
// message, the local rank, and the map from communicator ranks to world ranks.
// A communicator owns two (point-to-point and collective traffic never match
// each other).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "base/handle.h"
#include "datatype/datatype.h"
#include "progress/progress.h"

namespace axon::pml {

struct MatchQueues;

struct Context {
  uint32_t id = 0;
  int rank = 0;                   // this process's rank in the communicator
  std::vector<int> world_of;      // communicator rank -> world rank
  std::vector<uint32_t> next_seq; // next sequence number towards each destination
  MatchQueues* queues = nullptr;  // matching state for messages addressed to this context
  int size() const { return static_cast<int>(world_of.size()); }
};

// Creates the matching state of a context (messages that arrived before it
// existed are kept and matched now). `world_of` maps ranks to world ranks.
void context_open(Context* ctx, uint32_t id, int rank, std::vector<int> world_of);
void context_close(Context* ctx);
// Whether receives posted on the context are still waiting for a message (a
// freed communicator is deallocated only once none are).
bool context_has_posted(const Context* ctx);

enum class SendMode : uint8_t { Standard, Synchronous, Ready, Buffered };

// Wildcards, as the MPI ABI defines them.
constexpr int kAnySource = MPI_ANY_SOURCE;
constexpr int kAnyTag = MPI_ANY_TAG;
constexpr int kProcNull = MPI_PROC_NULL;

struct Request {
  enum class Kind : uint8_t { Send, Recv, Generalized, Collective };
  uint32_t magic = 0;
  Kind kind = Kind::Send;
  std::atomic<bool> complete{false};
  bool persistent = false;
  bool active = false;          // persistent: started and not yet completed-and-waited
  bool free_when_complete = false;
  bool cancelled = false;
  bool truncated = false;
  bool partitioned = false;     // MPI_Psend_init / MPI_Precv_init (src/mpi/partitioned.cpp)
  bool cancel_pending = false;  // send: a cancel request is out, its reply not yet in
  bool done_while_cancelling = false;  // send: the protocol finished before the reply
  bool cancel_when_sent = false;  // send: cancelled while still queued here (transport full or connecting)
  // Result, valid once complete.
  int source = 0;               // rank in the communicator
  int tag = 0;
  int error = 0;                // MPI error class of the operation
  size_t bytes = 0;             // bytes received (or sent)
  // Arguments.
  void* buffer = nullptr;
  size_t length = 0;            // send: bytes to send; recv: capacity in bytes
  MPI_Count count = 0;
  const Datatype* type = nullptr;
  int peer = 0;                 // rank in the communicator, or kAnySource
  int match_tag = 0;
  Context* ctx = nullptr;
  SendMode mode = SendMode::Standard;
  // Protocol state.
  uint8_t state = 0;
  size_t offset = 0;            // fragments sent / received so far
  uint64_t remote_id = 0;       // the peer's request, for rendezvous replies
  uint64_t exposed_key = 0;     // rendezvous send: our buffer's key at the transport
  int dest_world = -1;
  uint32_t seq = 0;
  size_t message_length = 0;    // recv by fragments: bytes the sender will send
  uint8_t* staging = nullptr;   // packed copy of a non-contiguous buffer
  size_t packed = 0;            // sender: bytes of `staging` packed so far (a segmented RGET packs as it goes)
  // Segmented rendezvous (wire.h kRtsSegmented): segment size (0: not
  // segmented), the keys of the two segments exposed / known (by index % 2),
  // the next segment to read (receiver), the sender's data address (receiver).
  uint64_t seg_size = 0;
  uint64_t seg_keys[2] = {0, 0};
  uint64_t seg_index = 0;
  uint64_t seg_addr = 0;
  uint8_t seg_have = 0;         // receiver: bit (index % 2) set when that key arrived
  bool seg_moving = false;      // a segment's get/put is in flight (rndv.cpp)
  uint8_t device = 0;           // the buffer is GPU memory (kDeviceBuffer | kDeviceIpc, device.cpp)
  void* device_state = nullptr; // device buffers: shadow copy, staging pipeline (device.cpp)
  Request* next = nullptr;      // intrusive list link (posted queue, pending sends)
  Request* prev = nullptr;
  // Called once when the operation completes (buffered sends release their
  // buffer space; collective schedules advance).
  void (*on_complete)(Request*) = nullptr;
  void* user_data = nullptr;
  void* comm = nullptr;         // the MPI layer's communicator, for error handlers
  // Sends that had to wait (queued, or for an ack, FIN or CTS), from then
  // until request_release: the hang doctor's list of pending sends
  // (src/diag/hang.h, track_pending_send); guarded by the pml lock.
  Request* live_next = nullptr;
  Request* live_prev = nullptr;
  bool live = false;
};

// Start-up and shut-down (after the BTLs are open / before they close).
int init();
void finalize();

// Nonblocking operations. `type` is committed; `count` items at `buf`.
// A returned request is owned by the caller until release().
int isend(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx,
          SendMode mode, Request** out);
int irecv(void* buf, MPI_Count count, const Datatype* type, int source, int tag, Context* ctx,
          Request** out);
// Blocking forms: the fast paths of MPI_Send / MPI_Recv (no request when the
// message completes at once). `status` may be null.
int send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx,
         SendMode mode);
int recv(void* buf, MPI_Count count, const Datatype* type, int source, int tag, Context* ctx,
         Request* status_out);

// Sends a standard-mode message at once, without a request, when it can go
// eagerly now (contiguous host data within the transport's eager limit,
// nothing queued to that peer): true when sent. Otherwise nothing happened
// and the caller uses isend().
bool try_send_now(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx);
// The same for a standard-mode MPI_Isend: when the message went out at
// once, its request, already complete (a send that MPI_Cancel can still
// withdraw while the receiver has not matched it); null otherwise, and
// nothing happened (the caller takes isend()). Skips isend's preparation
// and start_send.
Request* isend_now(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Context* ctx);

// Largest message sent eagerly (the sender returns at once) to the other
// ranks of this node; 0 when this rank is alone on its node. The same on
// every rank of a node (transports derive it from the node's rank count),
// so collectives may choose by it.
size_t node_eager_limit();

// Persistent requests: created inactive, started with start().
Request* send_init(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag,
                   Context* ctx, SendMode mode);
Request* recv_init(void* buf, MPI_Count count, const Datatype* type, int source, int tag,
                   Context* ctx);
int start(Request* req);

// Probing. `found` false when nothing matches (iprobe). A matched probe
// fills source/tag/bytes of `info`.
struct Message;  // a message removed from matching by mprobe
int iprobe(int source, int tag, Context* ctx, bool* found, Request* info);
int improbe(int source, int tag, Context* ctx, bool* found, Message** msg, Request* info);
int imrecv(void* buf, MPI_Count count, const Datatype* type, Message* msg, Request** out);
// True when `msg` is a message mprobe handed out (not garbage).
bool message_valid(const Message* msg);

// Marks a request for cancellation. A receive not yet matched completes as
// cancelled at once. A send whose message waits unmatched at the receiver
// (eager, rendezvous or synchronous; an eager send that completed already
// becomes incomplete again until the answer) is withdrawn there and
// completes as cancelled; otherwise it completes normally (the cancel
// fails, as MPI allows). For a send, the call drives progress until the
// receiver answered (at most AXON_CANCEL_WAIT_MS), so the request is
// normally complete when it returns.
void cancel(Request* req);

// Waits until req completes (src/progress's policy: spin, then yield; a
// send or a receive from one peer polls while that peer runs elsewhere).
void wait(Request* req);

constexpr uint32_t kRequestMagic = 0x52455155u;  // "REQU": a live request
constexpr uint32_t kRequestFreed = 0xDEAD5155u;  // back in the pool
namespace detail {
// Released requests, reused (a fixed array: releasing never reallocates).
struct RequestPool {
  static constexpr size_t kCapacity = 1024;
  size_t count = 0;
  Request* slots[kCapacity];
};
extern RequestPool request_pool;  // pml.cpp
// request_alloc without the lock, for callers that hold it.
inline Request* take_request(Request::Kind kind) {
  Request* r;
  RequestPool& pool = request_pool;
  if (pool.count > 0) [[likely]] {
    r = pool.slots[--pool.count];
    r->~Request();
    new (r) Request;
  } else {
    r = new Request;
  }
  r->magic = kRequestMagic;
  r->kind = kind;
  return r;
}
}  // namespace detail
// A fresh request from the pool. The pool is shared by every thread: both
// ends take the PML lock themselves (recursive, a no-op below
// MPI_THREAD_MULTIPLE), since many callers (MPI_* request constructors,
// idup, collectives' entry points) run outside it. Two threads popping the
// same entry handed one Request to two operations: a receive freed by one
// while still posted by the other (MPICH's threads/comm/idup_nb crashed in
// deliver()). Inline: every nonblocking call takes one.
inline Request* request_alloc(Request::Kind kind) {
  progress::Guard guard;
  return detail::take_request(kind);
}
void request_release(Request* req);
inline bool request_valid(const Request* req) { return may_be_object<Request>(req) && req->magic == kRequestMagic; }
// Marks a request complete and runs its completion callback.
void request_complete(Request* req);
// For a started request nobody will wait for: `done` runs once the operation
// completes (at once if it already has), then the request is released.
// Caller holds the pml lock.
void release_when_complete(Request* req, void (*done)(Request*));

// The CPU communicator rank `peer` of `ctx` last published, plus one; 0 when
// not known (progress::peer_cpu for communicator ranks).
int32_t peer_cpu(const Context* ctx, int peer);

// Whether communicator rank `peer` of `ctx` last ran on the CPU this process
// runs on now (local peers only; false when not known). Oversubscribed, a
// rank that waits for several peers takes those first: they cannot run
// until it yields, while the others are likely running already.
bool shares_my_cpu(const Context* ctx, int peer);

// ---- traffic by peer (src/pml/traffic.cpp): the communication report ----
// What this process sent to each world rank since pml::init, counted where
// a send's protocol is chosen (its first message), whatever the transport
// then does with it. Collective traffic (collective context ids are odd)
// is kept apart from the application's point-to-point messages.
struct PeerTraffic {
  enum Origin { kPointToPoint, kCollective, kOrigins };
  enum Protocol { kEager, kRendezvous, kProtocols };
  uint64_t messages[kOrigins][kProtocols] = {};
  uint64_t bytes[kOrigins][kProtocols] = {};
};
// Indexed by world rank; entries past the end are peers sent nothing.
const std::vector<PeerTraffic>& traffic();
// AXON_EXPLAIN: sends print their path (explain.cpp), collectives their algorithm.
bool explaining();
// The transport that carries messages to `world_rank` ("sm", "tcp", ...).
const char* transport_name(int world_rank);

// ---- processes of other jobs (src/mpi/dpm/) ----
// This process's business card for processes of other jobs (opening the
// transport that reaches them when the job did not open it): true when
// there is one.
bool local_card(std::vector<uint8_t>* card);
// Makes the process of another job that rte::proc_id named `id` reachable
// from its card. MPI_SUCCESS, or MPI_ERR_INTERN when no transport reaches it.
int add_peer(int id, const std::vector<uint8_t>& card);

}  // namespace axon::pml
