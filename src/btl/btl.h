// The byte-transfer layer: moving bytes to one peer process.
//
// A transport (self, sm, later tcp and verbs) knows nothing about MPI tags or
// communicators. It offers active messages — send(peer, id, bytes) makes the
// handler registered for `id` run on the peer with those bytes — and, where
// it can, one-sided reads of the peer's memory. The PML picks protocols from
// each transport's capabilities.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/uio.h>
#include <vector>

namespace axon::btl {

// Handler for an active message: `msg` is valid only during the call.
using AmHandler = void (*)(int src_world_rank, const void* msg, size_t len);

// Active-message ids are owned by the upper layers; a BTL only routes them.
constexpr int kMaxAmIds = 32;
void register_handler(int am_id, AmHandler handler);
AmHandler handler(int am_id);

// Kinds of memory a transport's operations can touch directly in this
// process (Caps::memory): a protocol stages anything else through host memory.
enum MemoryKind : uint8_t {
  kMemoryHost = 1u << 0,
  kMemoryDevice = 1u << 1,  // GPU memory (GPUDirect RDMA or a device-aware copy)
};

// A one-sided transfer posted with get() or put(). The transport calls
// done(op, status) exactly once, from its progress() (never from inside the
// call that posted it, so the poster finishes its own bookkeeping first):
// status kOk when the bytes are in place, a negative axon::Status when the
// transfer failed (an error was reported). `context` is the poster's.
// `rail` is the poster's choice of path (Transport::rails): the transport
// carries the operation there.
struct RdmaOp {
  void (*done)(RdmaOp* op, int status) = nullptr;
  void* context = nullptr;
  int rail = 0;
};

// Most parallel paths one transport keeps to one peer (Transport::rails).
constexpr int kMaxRails = 8;

// Packs the next `len` payload bytes into `dst` for send_packed().
using PackFn = void (*)(void* context, uint8_t* dst, size_t len);

// What a transport can do, for the protocols above (src/pml) to choose from.
// Nothing above btl asks for a transport by name: it reads these.
struct Caps {
  size_t eager_limit = 0;     // largest payload send() takes in one message
  bool can_get = false;       // get() reads memory a peer exposed with expose()
  bool can_put = false;       // put() writes memory a peer exposed with expose_writable()
  // Largest get()/put() in one call (0: any length). Longer transfers are
  // split by the protocol, which keeps up to rdma_depth of them in flight:
  // the local buffer is registered piece by piece as the pieces are posted.
  size_t max_rdma = 0;
  int rdma_depth = 1;
  // The protocol cuts a transfer into pieces at local addresses that are
  // multiples of this (a power of two; piece_length below), so pieces of
  // one buffer share no page when it is the page size: a registering
  // transport pins each page once, for one piece.
  size_t rdma_align = 1;
  // expose() and get()/put() register memory with a device (pinning pages:
  // costly and limited by RLIMIT_MEMLOCK); see expose_segment.
  bool registers = false;
  uint8_t memory = kMemoryHost;  // MemoryKind bits: local memory send/get/put take directly
  // Every peer this transport reaches runs on this node and can open a CUDA
  // IPC handle of this process's GPU memory (accel::ipc_*): large GPU
  // messages go by handle instead of being staged.
  bool ipc_peers = false;
  // send_packed() packs straight into the transport's own buffer (no copy
  // between packing and sending).
  bool pack_send = false;
  uint32_t latency_ns = 0;    // one-way latency of a small message: route() prefers the lowest
  uint32_t bandwidth_mbs = 0; // streaming bandwidth: route() breaks latency ties by it
  size_t expose_segment = 0;  // >0: the PML exposes large rendezvous buffers this many bytes at a time
  // One-sided operations for RMA windows (src/osc/rdma.cpp): expose_window,
  // put_nb / get_nb and flush_test below.
  bool rma = false;
  // 8-byte remote atomics (atomic_nb): fetch-and-add, compare-and-swap.
  bool atomics = false;
  // The device's atomics are coherent with the CPU's atomics on the target
  // (IBV_ATOMIC_GLOB); otherwise only with other NIC atomics (IBV_ATOMIC_HCA).
  bool atomics_glob = false;
};

// The length of the next piece of a transfer at local address `at` with
// `remaining` bytes left: at most `max` (0: no limit) and, unless it is the
// last, ending on a multiple of `align` (Caps::rdma_align) when that leaves
// a piece at all.
inline size_t piece_length(const void* at, size_t remaining, size_t max, size_t align) {
  size_t n = max && max < remaining ? max : remaining;
  if (align > 1 && n < remaining) {
    uintptr_t start = reinterpret_cast<uintptr_t>(at), end = (start + n) & ~(uintptr_t(align) - 1);
    if (end > start) n = end - start;
  }
  return n;
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual const Caps& caps() const = 0;
  virtual bool reaches(int world_rank) const = 0;

  // Sends header+payload as one active message. Returns kOk, or kAgain when
  // the peer's queue is full (the caller keeps the message and retries after
  // progress), or a negative axon::Status on failure.
  virtual int send(int peer, int am_id, const void* header, size_t header_len,
                   const void* payload, size_t payload_len) = 0;

  // The same, with the payload produced by pack(context, dst, payload_len)
  // (a convertor packing non-contiguous data). kAgain: nothing was sent and
  // pack may have run; the caller retries the whole message later. The
  // default packs into a buffer this transport keeps, then calls send().
  virtual int send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len,
                          PackFn pack, void* context);

  // ---- rails: parallel paths to one peer (ports, devices, NIC pairs) ----
  // The protocols above choose which rail carries what (src/pml/stripe.cpp
  // stripes rendezvous pieces and fragments by weight); the transport carries
  // each message or operation on the rail it is given and chooses nothing.
  // Rail 0 always exists and carries send() in order; everything else the
  // transport reaches the peer by is a further rail. Rails usable to `peer`
  // now: 1 .. kMaxRails.
  virtual int rails(int peer) const {
    (void)peer;
    return 1;
  }
  // A rail's share of the traffic, relative to the peer's other rails (its
  // link rate, in Mb/s); 0: not usable at the moment (still connecting).
  virtual uint32_t rail_weight(int peer, int rail) const {
    (void)peer; (void)rail;
    return 1;
  }
  // send() on rail `rail` (< rails(peer)). Messages on one rail arrive in
  // order; on different rails in any order, so only messages that carry their
  // own place (fragments with their offset) go on a rail other than 0.
  virtual int send_on(int rail, int peer, int am_id, const void* header, size_t header_len, const void* payload,
                      size_t payload_len) {
    (void)rail;
    return send(peer, am_id, header, header_len, payload, payload_len);
  }

  // Makes `len` bytes at `addr` readable by `peer` through get(); returns the
  // key the peer must pass to get() (0 when the transport needs none), valid
  // on every rail to the peer. The memory stays exposed until unexpose().
  virtual uint64_t expose(int peer, const void* addr, size_t len) {
    (void)peer; (void)addr; (void)len;
    return 0;
  }
  virtual void unexpose(int peer, uint64_t key) { (void)peer; (void)key; }

  // Makes `len` bytes at `addr` writable by `peer` through put() (can_put
  // transports only); returns the key for put(), 0 on failure. Released by
  // unexpose().
  virtual uint64_t expose_writable(int peer, void* addr, size_t len) {
    (void)peer; (void)addr; (void)len;
    return 0;
  }

  // Posts a read of `len` bytes at `remote_addr` in the peer's address
  // space, exposed under `remote_key`, into `local` (can_get transports), or
  // a write of `local` into memory the peer exposed with expose_writable()
  // (can_put). At most caps().max_rdma bytes when that is set. `local` stays
  // in use until op->done runs. Returns kOk (posted: done will run), kAgain
  // (nothing posted: the send queue is full or the peer still connecting;
  // progress and retry) or a negative Status (reported; done will not run).
  virtual int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) {
    (void)peer; (void)local; (void)remote_addr; (void)remote_key; (void)len; (void)op;
    return -3;  // kUnsupported
  }
  virtual int put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
                  RdmaOp* op) {
    (void)peer; (void)local; (void)remote_addr; (void)remote_key; (void)len; (void)op;
    return -3;  // kUnsupported
  }

  // ---- one-sided operations for RMA windows (caps.rma) ----
  // Makes [addr, addr+len) readable and writable by every peer (and, with
  // caps.atomics, a target of atomic_nb) for the life of a window; returns
  // the key peers pass below, 0 on failure. Released by unexpose_window().
  virtual uint64_t expose_window(void* addr, size_t len) {
    (void)addr; (void)len;
    return 0;
  }
  virtual void unexpose_window(uint64_t key) { (void)key; }
  // Posts a write of `len` bytes at `local` to the peer's exposed memory and
  // returns: `local` may be reused at once (copied or inlined where needed).
  // Completion is observed with flush_test(). kAgain: not connected yet or the
  // queue is full; progress and retry.
  virtual int put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) {
    (void)peer; (void)local; (void)len; (void)remote_addr; (void)key;
    return -3;  // kUnsupported
  }
  // Posts a read; `local` holds the data once flush_test() says complete.
  virtual int get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) {
    (void)peer; (void)local; (void)len; (void)remote_addr; (void)key;
    return -3;
  }
  // Posts an 8-byte atomic on an 8-byte aligned remote word: compare-and-swap
  // (`cas`: replaces it with `value` if it equals `compare`) or fetch-and-add
  // of `value`; the old word goes to `result` (may be null) by completion.
  virtual int atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
                        void* result) {
    (void)peer; (void)cas; (void)remote_addr; (void)key; (void)value; (void)compare; (void)result;
    return -3;
  }
  // The flush, as a test (osc waits on it with its own back-off): 1 when
  // every operation posted to `peer` above completed, 0 when some are still
  // in flight (after polling once), negative when one failed.
  virtual int flush_test(int peer) {
    (void)peer;
    return 1;
  }

  // Runs handlers for arrived messages and the done callbacks of completed
  // get()/put(); returns how many it handled.
  virtual int progress() = 0;

  // Second start-up phase, after every rank's business card was exchanged:
  // connect to the peers this transport reaches. Returns 0 or an error
  // already reported.
  virtual int connect_peers() { return 0; }

  // ---- dynamic processes (processes of other jobs, rte::is_foreign) ----
  // This process's business card for peers of other jobs (false: this
  // transport cannot be reached by them).
  virtual bool card(std::vector<uint8_t>* out) const {
    (void)out;
    return false;
  }
  // Learns the foreign process `id` (rte::foreign(id)) from its card;
  // true when reaches(id) holds afterwards. Default: not reachable.
  virtual bool add_peer(int id, const std::vector<uint8_t>& card) {
    (void)id; (void)card;
    return false;
  }

 private:
  std::vector<uint8_t> pack_buffer_;  // send_packed()'s default
};

// For transports whose get()/put() finish inside the posting call (a memory
// copy): the completions wait here and their done callbacks run from the
// transport's next progress(), as the contract says.
class DoneQueue {
 public:
  void push(RdmaOp* op, int status) { ready_.push_back({op, status}); }
  bool empty() const { return ready_.empty(); }
  // Runs the callbacks queued so far (one may post again); returns how many.
  // Inline for the empty case: transports call it on every progress().
  int run() { return ready_.empty() ? 0 : run_ready(); }

 private:
  int run_ready();
  struct Ready {
    RdmaOp* op;
    int status;
  };
  std::vector<Ready> ready_;
  std::vector<Ready> running_;
};

// Opens every transport enabled by AXON_BTL and wires endpoints to all peers
// (publishes business cards, exchanges them through rte). Returns 0 or an error
// already reported to the user.
int init();
void finalize();

// The transport that reaches `peer` best, or nullptr. Inline: every
// message asks.
namespace detail {
extern std::vector<Transport*> routes;  // by world rank (btl.cpp)
}  // namespace detail
inline Transport* route(int world_rank) {
  return size_t(world_rank) < detail::routes.size() ? detail::routes[size_t(world_rank)] : nullptr;
}

// Dynamic processes (src/mpi/dpm/): processes of other jobs are reached
// over tcp only (opened here on first use when the job did not open it).
// open_dynamic() returns 0 or an error already reported; card() is this
// process's tcp card; add_peer() routes the foreign id `id` (0: reachable).
int open_dynamic();
bool card(std::vector<uint8_t>* out);
int add_peer(int id, const std::vector<uint8_t>& card);

// Progress on every open transport; returns the number of completions.
int progress();

// Names of transports compiled in, for axon_info.
std::vector<const char*> available();

}  // namespace axon::btl
