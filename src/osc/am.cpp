// The active-message path of one-sided communication: see am.h for the
// contract and docs/rma.md for the design.
//
// Every message is one BTL active message under kAmOsc: a Header (in the
// transport's header slot) and a payload of runs (the target layout) and
// data. Requests (put, get, accumulate, CAS, lock, unlock) are answered by
// one Reply each; a reply carries the origin's token (a Pending it waits on,
// 0 when nobody waits), an error class and, for reads, data. Each window
// counts per target the requests sent and the replies received: flush waits
// until they are equal.
//
// All state here is touched with the PML lock held (progress::Guard): handlers run
// inside pml::progress, which holds it, and the origin side takes it. The
// agent thread (AXON_OSC_ASYNC_PROGRESS) turns that lock on
// (progress::enable_thread_safety) and calls pml::progress while windows reached
// by active messages exist, sleeping longer and longer while nothing arrives.
#include "osc/am.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "base/status.h"
#include "btl/btl.h"
#include "pml/pml.h"
#include "osc/rdma.h"
#include "progress/progress.h"

namespace axon::osc {

// Per window, created by register_window.
struct AmState {
  int size = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> issued;  // requests sent, by target
  std::unique_ptr<std::atomic<uint64_t>[]> acked;   // replies received, by target
  int deferred = MPI_SUCCESS;  // error reported for an operation nobody waited on
  struct LockRequest {
    int world;
    int origin;
    uint64_t token;
    bool exclusive;
  };
  std::deque<LockRequest> lock_queue;  // target side: requests not granted yet (FIFO)
};

namespace am {

namespace {

// Active-message id of the osc layer (pml uses 1..12, src/pml/wire.h).
constexpr int kAmOsc = 24;

BoolParam async_param{"AXON_OSC_ASYNC_PROGRESS", true,
                      "Run an agent thread that drives progress while windows reached by active messages "
                      "(other nodes, AXON_OSC_PATH=am) exist, so that passive target operations complete "
                      "while the target computes outside MPI"};

enum Kind : uint8_t {
  kPut = 1, kGet, kAcc, kCas, kLock, kUnlock, kPost, kComplete, kReply, kNicAtomic,
  kRegion,    // dynamic window: which registered region holds these bytes (rdma.h)
  kDetached,  // dynamic window: the sender detached its region at `offset`, drop its key
};

struct Header {
  uint8_t kind;
  uint8_t flags;     // kLock / kUnlock: exclusive; kAcc: fetch
  uint16_t pad = 0;
  uint32_t win;      // window id (its context id)
  int32_t rank;      // sender's window rank
  int32_t status;    // kReply: MPI error class
  uint32_t nruns;    // runs at the start of the payload
  uint32_t pad2 = 0;
  uint64_t token;    // origin's Pending, 0: none
  uint64_t offset;   // kGet / kAcc: where the reply's data goes in the origin's buffer
  uint64_t type;     // kAcc / kCas: the basic datatype's handle
  uint64_t op;       // kAcc: the op's handle
};
static_assert(sizeof(Header) <= 64, "fits the transports' header slot");

// What an origin waits for: `remaining` replies, data copied to dest + offset.
struct Pending {
  std::atomic<int> remaining{0};
  int error = MPI_SUCCESS;
  unsigned char* dest = nullptr;
};

struct Out {
  int world;
  Header h;
  std::vector<unsigned char> payload;
};

std::unordered_map<uint32_t, Window*> windows;  // by id
std::deque<Out> outbound;                      // sends the transport refused for now (kAgain), in order
bool hook_added = false;
std::vector<Window*> lock_waiters;  // windows with queued lock requests

// The agent thread.
std::thread agent;
std::mutex agent_mutex;
std::condition_variable agent_cv;
int async_windows = 0;  // registered windows that want it
bool agent_stop = false;

Window* find(uint32_t id) {
  auto it = windows.find(id);
  return it == windows.end() ? nullptr : it->second;
}

// Sends (or queues) one message; caller holds the PML lock.
int send(int world, const Header& h, std::vector<unsigned char> payload) {
  if (outbound.empty()) {
    btl::Transport* t = btl::route(world);
    if (!t) {
      log::error("osc: no transport reaches rank %d", world);
      return MPI_ERR_OTHER;
    }
    int rc = t->send(world, kAmOsc, &h, sizeof h, payload.data(), payload.size());
    if (rc == kOk) return MPI_SUCCESS;
    if (rc != kAgain) {
      log::error("osc: sending to rank %d failed (%d)", world, rc);
      return MPI_ERR_OTHER;
    }
  }
  outbound.push_back(Out{world, h, std::move(payload)});
  return MPI_SUCCESS;
}

int drain_outbound() {
  int n = 0;
  while (!outbound.empty()) {
    Out& o = outbound.front();
    int rc = btl::route(o.world)->send(o.world, kAmOsc, &o.h, sizeof o.h, o.payload.data(), o.payload.size());
    if (rc == kAgain) break;
    if (rc != kOk) log::error("osc: sending to rank %d failed (%d)", o.world, rc);
    outbound.pop_front();
    ++n;
  }
  return n;
}

void reply(Window* w, int world, uint64_t token, int status, uint64_t offset, std::vector<unsigned char> data = {}) {
  Header r{};
  r.kind = kReply;
  r.win = w->id;
  r.rank = w->rank;
  r.status = status;
  r.token = token;
  r.offset = offset;
  send(world, r, std::move(data));
}

// Grants queued lock requests in order while the lock word allows.
int grant_locks(Window* w) {
  int n = 0;
  auto& q = w->am->lock_queue;
  while (!q.empty() && detail::target_try_lock(w, q.front().exclusive)) {
    reply(w, q.front().world, q.front().token, MPI_SUCCESS, 0);
    q.pop_front();
    ++n;
  }
  return n;
}

int progress_hook() {
  int n = drain_outbound();
  for (size_t i = 0; i < lock_waiters.size();) {
    Window* w = lock_waiters[i];
    n += grant_locks(w);
    if (w->am->lock_queue.empty()) lock_waiters.erase(lock_waiters.begin() + static_cast<std::ptrdiff_t>(i));
    else ++i;
  }
  return n;
}

void on_message(int src, const void* msg, size_t len) {
  Header h;
  if (len < sizeof h) return;
  memcpy(&h, msg, sizeof h);
  const unsigned char* payload = static_cast<const unsigned char*>(msg) + sizeof h;
  size_t plen = len - sizeof h;
  Window* w = find(h.win);
  if (!w) {
    log::debug(1, "osc: message of kind %d from rank %d for an unknown window %u dropped", h.kind, src, h.win);
    return;
  }
  std::vector<Run> runs(h.nruns);
  if (h.nruns) memcpy(runs.data(), payload, sizeof(Run) * h.nruns);
  const unsigned char* data = payload + sizeof(Run) * h.nruns;
  const size_t dlen = plen - sizeof(Run) * h.nruns;
  switch (h.kind) {
    case kPut: {
      int rc = detail::target_check(w, runs.data(), runs.size());
      if (rc == MPI_SUCCESS) detail::target_write(w, runs.data(), runs.size(), data);
      reply(w, src, h.token, rc, 0);
      break;
    }
    case kGet: {
      int rc = detail::target_check(w, runs.data(), runs.size());
      std::vector<unsigned char> out;
      if (rc == MPI_SUCCESS) {
        size_t bytes = 0;
        for (const Run& r : runs) bytes += r.len;
        out.resize(bytes);
        detail::target_read(w, runs.data(), runs.size(), out.data());
      }
      reply(w, src, h.token, rc, h.offset, std::move(out));
      break;
    }
    case kAcc: {
      const Datatype* basic = datatype_from_handle(reinterpret_cast<MPI_Datatype>(h.type));
      const Op* op = op_from_handle(reinterpret_cast<MPI_Op>(h.op));
      int rc = basic && op ? detail::target_check(w, runs.data(), runs.size()) : MPI_ERR_OTHER;
      std::vector<unsigned char> old;
      if (rc == MPI_SUCCESS) {
        size_t bytes = 0;
        for (const Run& r : runs) bytes += r.len;
        if (h.flags) old.resize(bytes);
        rc = detail::target_accumulate(w, runs.data(), runs.size(), *basic, *op, dlen ? data : nullptr,
                                       h.flags ? old.data() : nullptr);
        if (rc != MPI_SUCCESS) old.clear();
      }
      reply(w, src, h.token, rc, h.offset, std::move(old));
      break;
    }
    case kCas: {
      const Datatype* type = datatype_from_handle(reinterpret_cast<MPI_Datatype>(h.type));
      int rc = type && h.nruns == 1 && dlen == 2 * type->size ? detail::target_check(w, runs.data(), 1)
                                                              : MPI_ERR_OTHER;
      std::vector<unsigned char> old;
      if (rc == MPI_SUCCESS) {
        old.resize(type->size);
        detail::target_cas(w, runs[0].off, *type, data, data + type->size, old.data());
      }
      reply(w, src, h.token, rc, 0, std::move(old));
      break;
    }
    case kLock:
      w->am->lock_queue.push_back(AmState::LockRequest{src, h.rank, h.token, h.flags != 0});
      grant_locks(w);
      if (!w->am->lock_queue.empty() && std::find(lock_waiters.begin(), lock_waiters.end(), w) == lock_waiters.end())
        lock_waiters.push_back(w);
      break;
    case kUnlock:
      detail::target_unlock(w, h.flags != 0);
      reply(w, src, h.token, MPI_SUCCESS, 0);
      grant_locks(w);
      break;
    case kNicAtomic: {
      // flags: compare-and-swap; offset: the word in the sender's memory;
      // data: value, compare (rdma.h proxy_atomic).
      uint64_t v[2] = {0, 0}, old = 0;
      if (dlen == sizeof v) memcpy(v, data, sizeof v);
      int rc = dlen == sizeof v ? rdma::proxy_atomic(w, h.rank, h.flags != 0, h.offset, v[0], v[1], &old)
                                : MPI_ERR_OTHER;
      std::vector<unsigned char> out(sizeof old);
      memcpy(out.data(), &old, sizeof old);
      reply(w, src, h.token, rc, 0, rc == MPI_SUCCESS ? std::move(out) : std::vector<unsigned char>{});
      break;
    }
    case kRegion: {
      // One run: [off, off + len) of our memory.
      uint64_t out[4] = {0, 0, 0, 0};
      int rc = h.nruns == 1 ? rdma::region_query(w, h.rank, runs[0].off, runs[0].off + runs[0].len, out)
                            : MPI_ERR_OTHER;
      std::vector<unsigned char> data_out;
      if (rc == MPI_SUCCESS) {
        data_out.resize(sizeof out);
        memcpy(data_out.data(), out, sizeof out);
      }
      reply(w, src, h.token, rc, 0, std::move(data_out));
      break;
    }
    case kDetached:
      rdma::region_detached(w, h.rank, h.offset);
      reply(w, src, h.token, MPI_SUCCESS, 0);
      break;
    case kPost:
      detail::post_arrived(w, h.rank);
      break;
    case kComplete:
      detail::complete_arrived(w);
      break;
    case kReply: {
      if (h.token) {
        auto* p = reinterpret_cast<Pending*>(h.token);
        if (plen && p->dest) memcpy(p->dest + h.offset, payload, plen);
        if (h.status != MPI_SUCCESS && p->error == MPI_SUCCESS) p->error = h.status;
        p->remaining.fetch_sub(1, std::memory_order_release);
      } else if (h.status != MPI_SUCCESS && w->am->deferred == MPI_SUCCESS) {
        w->am->deferred = h.status;
      }
      if (h.rank >= 0 && h.rank < w->am->size) w->am->acked[h.rank].fetch_add(1, std::memory_order_release);
      break;
    }
    default:
      log::error("osc: message of unknown kind %d from rank %d", h.kind, src);
  }
}

// ---- the agent thread ------------------------------------------------------------

void agent_main() {
  unsigned sleep_us = 0;
  std::unique_lock<std::mutex> lk(agent_mutex);
  while (!agent_stop) {
    lk.unlock();
    int n = progress::progress();
    lk.lock();
    // Busy while messages arrive; otherwise sleep 1 us, doubling up to 1 ms,
    // so an idle agent costs nothing measurable on the cores the ranks share.
    sleep_us = n > 0 ? 0 : std::min(1000u, sleep_us ? sleep_us * 2 : 1u);
    if (sleep_us) agent_cv.wait_for(lk, std::chrono::microseconds(sleep_us), [] { return agent_stop; });
  }
}

void agent_start() {
  std::lock_guard<std::mutex> lk(agent_mutex);
  if (async_windows++ > 0) return;
  // While the agent runs, progress::Guard serializes the library between the
  // application thread(s) and the agent.
  progress::enable_thread_safety();
  agent_stop = false;
  agent = std::thread(agent_main);
}

void agent_stop_if_unused() {
  {
    std::lock_guard<std::mutex> lk(agent_mutex);
    if (async_windows <= 0 || --async_windows > 0) return;  // <= 0: stopped by finalize()
    agent_stop = true;
  }
  agent_cv.notify_all();
  agent.join();
  // The agent is gone and no other thread of ours is inside the library
  // (without MPI_THREAD_MULTIPLE only one may call it; with it the lock
  // stays on for MPI_Init's own enable): the PML lock can go back off.
  progress::disable_thread_safety();
}

// ---- origin side -------------------------------------------------------------------

int world_of(const Window* w, int rank) { return w->ctx->world_of[rank]; }

size_t eager_limit(const Window* w, int target) {
  btl::Transport* t = btl::route(world_of(w, target));
  return t ? t->caps().eager_limit : 4096;
}

// The target layout as runs at `at`.
std::vector<Run> runs_of(uint64_t at, size_t count, const Datatype& t) {
  std::vector<Run> runs;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    runs.push_back(Run{at + static_cast<uint64_t>(off), len});
  });
  return runs;
}

// Splits the runs into messages of at most `limit` payload bytes (runs and
// data). Each message holds whole elements of `es` bytes in stream order
// (an element of a pair type such as MPI_DOUBLE_INT spans two runs), so the
// target applies an accumulate to complete elements. fn(runs, n, stream
// offset, bytes) per message.
template <class Fn> void chunk(const std::vector<Run>& runs, size_t es, size_t limit, Fn fn) {
  // Room kept to finish the element under way: its bytes and two more runs.
  const size_t reserve = 2 * sizeof(Run) + es;
  const size_t soft = limit > reserve + sizeof(Run) + es ? limit - reserve : sizeof(Run) + es;
  std::vector<Run> cur;
  size_t cur_bytes = 0, stream = 0;
  auto emit = [&] {
    if (cur.empty()) return;
    fn(cur.data(), cur.size(), stream, cur_bytes);
    stream += cur_bytes;
    cur.clear();
    cur_bytes = 0;
  };
  for (const Run& r : runs) {
    uint64_t pos = r.off, left = r.len;
    while (left) {
      const size_t to_boundary = (es - cur_bytes % es) % es;
      size_t room;
      if (to_boundary) {
        room = to_boundary;  // finish the element first (within the reserve)
      } else {
        const size_t used = sizeof(Run) * (cur.size() + 1) + cur_bytes;
        room = used < soft ? soft - used : 0;
        room -= room % es;
        if (room == 0) {
          if (!cur.empty()) {
            emit();
            continue;
          }
          room = es;
        }
      }
      size_t take = std::min<uint64_t>(left, room);
      cur.push_back(Run{pos, take});
      cur_bytes += take;
      pos += take;
      left -= take;
    }
  }
  emit();
}

std::vector<unsigned char> payload_of(const Run* runs, size_t n, const unsigned char* data, size_t bytes,
                                      const unsigned char* extra = nullptr, size_t extra_bytes = 0) {
  std::vector<unsigned char> p(sizeof(Run) * n + bytes + extra_bytes);
  if (n) memcpy(p.data(), runs, sizeof(Run) * n);
  if (bytes) memcpy(p.data() + sizeof(Run) * n, data, bytes);
  if (extra_bytes) memcpy(p.data() + sizeof(Run) * n + bytes, extra, extra_bytes);
  return p;
}

Header request(const Window* w, Kind kind, uint64_t token) {
  Header h{};
  h.kind = kind;
  h.win = w->id;
  h.rank = w->rank;
  h.token = token;
  return h;
}

// Waits until the pending's replies arrived; returns its error.
int wait_pending(Pending& p) {
  progress::wait_until([&] { return p.remaining.load(std::memory_order_acquire) == 0; });
  progress::Guard guard;  // the handler wrote `error` under the lock
  return p.error;
}

// Whether the target reports errors only it can find (dynamic windows on
// another node): then the caller waits for the reply.
bool target_checks(const Window* w, int target) {
  return w->flavor == Flavor::Dynamic && !w->peers[target].same_node;
}

}  // namespace

void register_window(Window* w, bool async) {
  {
    progress::Guard guard;
    auto* s = new AmState;
    s->size = w->size;
    s->issued.reset(new std::atomic<uint64_t>[w->size]);
    s->acked.reset(new std::atomic<uint64_t>[w->size]);
    for (int r = 0; r < w->size; ++r) s->issued[r] = 0, s->acked[r] = 0;
    w->am = s;
    windows[w->id] = w;
    if (!hook_added) {
      btl::register_handler(kAmOsc, on_message);
      progress::add_hook(progress_hook);
      hook_added = true;
    }
  }
  w->am_async = async && async_param.get();
  if (w->am_async) agent_start();
}

void unregister_window(Window* w) {
  if (!w->am) return;
  if (w->am_async) agent_stop_if_unused();
  progress::Guard guard;
  windows.erase(w->id);
  std::erase(lock_waiters, w);
  delete w->am;
  w->am = nullptr;
}

int put(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const unsigned char* dense) {
  const bool wait = target_checks(w, target);
  Pending p;
  p.remaining.store(0, std::memory_order_relaxed);
  int rc = MPI_SUCCESS;
  {
    progress::Guard guard;
    const int world = world_of(w, target);
    chunk(runs_of(at, tcount, ttype), 1, eager_limit(w, target), [&](const Run* runs, size_t n, size_t off, size_t bytes) {
      if (rc != MPI_SUCCESS) return;
      if (wait) p.remaining.fetch_add(1, std::memory_order_relaxed);
      w->am->issued[target].fetch_add(1, std::memory_order_relaxed);
      Header h = request(w, kPut, wait ? reinterpret_cast<uint64_t>(&p) : 0);
      h.nruns = static_cast<uint32_t>(n);
      rc = send(world, h, payload_of(runs, n, dense + off, bytes));
    });
  }
  if (rc != MPI_SUCCESS) return rc;
  return wait ? wait_pending(p) : MPI_SUCCESS;
}

int get(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, unsigned char* dense) {
  Pending p;
  p.dest = dense;
  int rc = MPI_SUCCESS;
  {
    progress::Guard guard;
    const int world = world_of(w, target);
    chunk(runs_of(at, tcount, ttype), 1, eager_limit(w, target), [&](const Run* runs, size_t n, size_t off, size_t) {
      if (rc != MPI_SUCCESS) return;
      p.remaining.fetch_add(1, std::memory_order_relaxed);
      w->am->issued[target].fetch_add(1, std::memory_order_relaxed);
      Header h = request(w, kGet, reinterpret_cast<uint64_t>(&p));
      h.offset = off;
      h.nruns = static_cast<uint32_t>(n);
      rc = send(world, h, payload_of(runs, n, nullptr, 0));
      if (rc != MPI_SUCCESS) p.remaining.fetch_sub(1, std::memory_order_relaxed);
    });
  }
  int wrc = wait_pending(p);
  return rc != MPI_SUCCESS ? rc : wrc;
}

int accumulate(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const Datatype& basic,
               const Op& op, const unsigned char* in, unsigned char* old) {
  const bool wait = old || target_checks(w, target);
  Pending p;
  p.dest = old;
  int rc = MPI_SUCCESS;
  {
    progress::Guard guard;
    const int world = world_of(w, target);
    chunk(runs_of(at, tcount, ttype), basic.size, eager_limit(w, target),
          [&](const Run* runs, size_t n, size_t off, size_t bytes) {
            if (rc != MPI_SUCCESS) return;
            if (wait) p.remaining.fetch_add(1, std::memory_order_relaxed);
            w->am->issued[target].fetch_add(1, std::memory_order_relaxed);
            Header h = request(w, kAcc, wait ? reinterpret_cast<uint64_t>(&p) : 0);
            h.flags = old != nullptr;
            h.offset = off;
            h.nruns = static_cast<uint32_t>(n);
            h.type = reinterpret_cast<uint64_t>(to_handle(&basic));
            h.op = reinterpret_cast<uint64_t>(to_handle(&op));
            rc = send(world, h, payload_of(runs, n, in ? in + off : nullptr, in ? bytes : 0));
            if (rc != MPI_SUCCESS && wait) p.remaining.fetch_sub(1, std::memory_order_relaxed);
          });
  }
  int wrc = wait ? wait_pending(p) : MPI_SUCCESS;
  return rc != MPI_SUCCESS ? rc : wrc;
}

int compare_and_swap(Window* w, int target, uint64_t at, const Datatype& type, const void* origin,
                     const void* compare, void* result) {
  Pending p;
  p.dest = static_cast<unsigned char*>(result);
  p.remaining.store(1, std::memory_order_relaxed);
  int rc;
  {
    progress::Guard guard;
    w->am->issued[target].fetch_add(1, std::memory_order_relaxed);
    Header h = request(w, kCas, reinterpret_cast<uint64_t>(&p));
    h.nruns = 1;
    h.type = reinterpret_cast<uint64_t>(to_handle(&type));
    Run run{at, type.size};
    rc = send(world_of(w, target), h,
              payload_of(&run, 1, static_cast<const unsigned char*>(origin), type.size,
                         static_cast<const unsigned char*>(compare), type.size));
    if (rc != MPI_SUCCESS) return rc;
  }
  return wait_pending(p);
}

int proxy_atomic(Window* w, int helper, bool cas, uint64_t at, uint64_t value, uint64_t compare, uint64_t* old) {
  Pending p;
  p.dest = reinterpret_cast<unsigned char*>(old);
  p.remaining.store(1, std::memory_order_relaxed);
  {
    progress::Guard guard;
    w->am->issued[helper].fetch_add(1, std::memory_order_relaxed);
    Header h = request(w, kNicAtomic, reinterpret_cast<uint64_t>(&p));
    h.flags = cas;
    h.offset = at;
    const uint64_t v[2] = {value, compare};
    int rc = send(world_of(w, helper), h, payload_of(nullptr, 0, reinterpret_cast<const unsigned char*>(v), sizeof v));
    if (rc != MPI_SUCCESS) return rc;
  }
  return wait_pending(p);
}

int region(Window* w, int target, uint64_t first, uint64_t last, uint64_t out[4]) {
  Pending p;
  p.dest = reinterpret_cast<unsigned char*>(out);
  p.remaining.store(1, std::memory_order_relaxed);
  {
    progress::Guard guard;
    w->am->issued[target].fetch_add(1, std::memory_order_relaxed);
    Header h = request(w, kRegion, reinterpret_cast<uint64_t>(&p));
    h.nruns = 1;
    Run run{first, last - first};
    int rc = send(world_of(w, target), h, payload_of(&run, 1, nullptr, 0));
    if (rc != MPI_SUCCESS) return rc;
  }
  return wait_pending(p);
}

int region_detached(Window* w, const std::vector<int>& origins, uint64_t base) {
  if (origins.empty()) return MPI_SUCCESS;
  Pending p;
  p.remaining.store(static_cast<int>(origins.size()), std::memory_order_relaxed);
  {
    progress::Guard guard;
    for (int o : origins) {
      w->am->issued[o].fetch_add(1, std::memory_order_relaxed);
      Header h = request(w, kDetached, reinterpret_cast<uint64_t>(&p));
      h.offset = base;
      int rc = send(world_of(w, o), h, {});
      if (rc != MPI_SUCCESS) return rc;  // the transport failed: the job is lost anyway
    }
  }
  return wait_pending(p);
}

int flush(Window* w, int target) {
  AmState* s = w->am;
  if (!s) return MPI_SUCCESS;
  const int lo = target < 0 ? 0 : target, hi = target < 0 ? w->size : target + 1;
  progress::wait_until([&] {
    for (int t = lo; t < hi; ++t)
      if (s->acked[t].load(std::memory_order_acquire) < s->issued[t].load(std::memory_order_relaxed)) return false;
    return true;
  });
  progress::Guard guard;
  int rc = s->deferred;
  s->deferred = MPI_SUCCESS;
  return rc;
}

int lock(Window* w, const int* targets, size_t n, bool exclusive) {
  Pending p;
  p.remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  {
    progress::Guard guard;
    for (size_t i = 0; i < n; ++i) {
      w->am->issued[targets[i]].fetch_add(1, std::memory_order_relaxed);
      Header h = request(w, kLock, reinterpret_cast<uint64_t>(&p));
      h.flags = exclusive;
      int rc = send(world_of(w, targets[i]), h, {});
      if (rc != MPI_SUCCESS) return rc;  // the transport failed: the job is lost anyway
    }
  }
  return wait_pending(p);
}

int unlock(Window* w, const int* targets, size_t n, bool exclusive) {
  Pending p;
  p.remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  {
    progress::Guard guard;
    for (size_t i = 0; i < n; ++i) {
      w->am->issued[targets[i]].fetch_add(1, std::memory_order_relaxed);
      Header h = request(w, kUnlock, reinterpret_cast<uint64_t>(&p));
      h.flags = exclusive;
      int rc = send(world_of(w, targets[i]), h, {});
      if (rc != MPI_SUCCESS) return rc;
    }
  }
  return wait_pending(p);
}

void finalize() {
  {
    std::lock_guard<std::mutex> lk(agent_mutex);
    if (async_windows == 0) return;
    async_windows = 0;
    agent_stop = true;
  }
  agent_cv.notify_all();
  agent.join();
  // The agent is gone and no other thread of ours is inside the library
  // (without MPI_THREAD_MULTIPLE only one may call it; with it the lock
  // stays on for MPI_Init's own enable): the PML lock can go back off.
  progress::disable_thread_safety();
}

int agent_threads() {
  std::lock_guard<std::mutex> lk(agent_mutex);
  return async_windows > 0 ? 1 : 0;
}

int post(Window* w, int origin) {
  progress::Guard guard;
  return send(world_of(w, origin), request(w, kPost, 0), {});
}

int complete(Window* w, int target) {
  progress::Guard guard;
  return send(world_of(w, target), request(w, kComplete, 0), {});
}

}  // namespace am
}  // namespace axon::osc
