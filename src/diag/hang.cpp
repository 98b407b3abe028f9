// The hang doctor, rank side: the blocked-call record, the communicators'
// collective counts, the signal handler, the snapshot and the watchdog
// (AXON_HANG_REPORT_AFTER). See hang.h and docs/diagnostics.md.
//
// The snapshot is text: lines for people, and lines starting with '#' that
// mpirun reads for its diagnosis and does not print:
//   #waits W          this rank waits for world rank W (a receive from it,
//                     a send to it, a request on it)
//   #coll ID SEQ CALL ROOT
//                     blocked in collective number SEQ, CALL (with ROOT,
//                     -1 when not rooted), on the communicator of
//                     collective context ID
//   #name ID NAME     that communicator's name
//   #finalize         blocked in MPI_Finalize (its barrier waits for every
//                     rank that is not in MPI_Finalize too)
#include "diag/hang.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/param.h"
#include "datatype/datatype.h"
#include "pml/pml.h"

namespace axon::diag::hang {

Blocked blocked;
std::atomic<const char*> last_call{nullptr};
std::atomic<int> requested{0};
std::atomic<uint64_t> progress_made{0};

namespace {

// Set by mpirun for its ranks; a rank started otherwise has no doctor.
StringParam dir_param{"AXON_HANG_DIR", "",
                      "Set by mpirun: the directory where a rank writes its hang-doctor answer "
                      "(the node's PMIx tmpdir); empty: the hang doctor is off"};
IntParam launcher_param{"AXON_LAUNCHER_PID", 0,
                        "Set by mpirun: the process (mpirun or its daemon) a rank asks for a hang report "
                        "(AXON_HANG_REPORT_AFTER)"};
IntParam after_param{"AXON_HANG_REPORT_AFTER", 0, Range{0, 86400},
                     "Seconds a rank may stay blocked in one MPI call without any progress before it asks "
                     "mpirun for a hang report (once); 0: never"};

// Communicators known by context ids. Fixed size: collective entry looks
// its communicator up here and must not allocate; the last hit is cached.
struct CommEntry {
  uint32_t p2p = UINT32_MAX, coll = UINT32_MAX;
  const std::string* name = nullptr;
  int size = 0;
  uint64_t collectives = 0;
  const char* last = nullptr;  // the last collective entered
};
constexpr int kComms = 64;
CommEntry comms[kComms];
int last_hit = 0;

int rank_number = -1;
char answer_path[PATH_MAX];
char answer_tmp[PATH_MAX];
bool armed = false;

// ---- async-signal-safe writing -------------------------------------------------

struct Text {
  char buf[512];
  size_t n = 0;
  void add(const char* s) {
    while (s && *s && n + 1 < sizeof buf) buf[n++] = *s++;
  }
};

void write_file(const char* data, size_t n) {
  int fd = open(answer_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    data += w;
    n -= static_cast<size_t>(w);
  }
  close(fd);
  rename(answer_tmp, answer_path);  // mpirun sees a whole answer or none
}

void on_signal(int) {
  int saved = errno;
  if (blocked.call.load(std::memory_order_relaxed) != nullptr) {
    requested.store(1, std::memory_order_relaxed);  // the wait loop answers
  } else {
    Text t;
    const char* last = last_call.load(std::memory_order_relaxed);
    t.add("not in a blocking MPI call");
    if (last) {
      t.add("; last blocking call ");
      t.add(last);
    }
    t.add("\n");
    write_file(t.buf, t.n);
  }
  errno = saved;
}

// ---- the snapshot ---------------------------------------------------------------

CommEntry* find_comm(uint32_t id) {
  CommEntry& hit = comms[last_hit];
  if (hit.p2p == id || hit.coll == id) return &hit;
  for (int i = 0; i < kComms; ++i) {
    if (comms[i].p2p == id || comms[i].coll == id) {
      last_hit = i;
      return &comms[i];
    }
  }
  return nullptr;
}

std::string rank_text(int rank) {
  if (rank == MPI_ANY_SOURCE) return "MPI_ANY_SOURCE";
  if (rank == MPI_PROC_NULL) return "MPI_PROC_NULL";
  return std::to_string(rank);
}
std::string tag_text(int tag) { return tag == MPI_ANY_TAG ? "MPI_ANY_TAG" : std::to_string(tag); }

int world_of(const pml::Context* ctx, int rank) {
  if (!ctx || rank < 0 || rank >= ctx->size()) return -1;
  return ctx->world_of[static_cast<size_t>(rank)];
}

// "comm=MPI_COMM_WORLD size=2"
std::string comm_text(const pml::Context* ctx) {
  if (!ctx) return "comm=?";
  return "comm=" + comm_name(ctx->id) + " size=" + std::to_string(ctx->size());
}

std::string type_text() {
  return "count=" + std::to_string(static_cast<long long>(blocked.count)) +
         ", datatype=" + (blocked.type_name && *blocked.type_name ? blocked.type_name : "(derived)");
}

void describe_blocked(const char* call, std::string& out) {
  const pml::Context* ctx = blocked.ctx;
  std::string waits;
  auto wait_for = [&](int world) {
    if (world >= 0) waits += "#waits " + std::to_string(world) + "\n";
  };
  out += "in ";
  out += call;
  out += "(";
  switch (blocked.what) {
    case What::Recv:
    case What::Probe:
      out += "source=" + rank_text(blocked.peer) + ", tag=" + tag_text(blocked.tag) + ", " + comm_text(ctx);
      if (blocked.what == What::Recv) out += ", " + type_text();
      wait_for(world_of(ctx, blocked.peer));
      break;
    case What::Send:
      out += "dest=" + rank_text(blocked.peer) + ", tag=" + tag_text(blocked.tag) + ", " + comm_text(ctx) + ", " +
             type_text();
      wait_for(world_of(ctx, blocked.peer));
      break;
    case What::Sendrecv:
      out += "dest=" + rank_text(blocked.peer) + ", sendtag=" + tag_text(blocked.tag) +
             ", source=" + rank_text(blocked.peer2) + ", recvtag=" + tag_text(blocked.tag2) + ", " + comm_text(ctx) +
             ", " + type_text();
      wait_for(world_of(ctx, blocked.peer2));
      break;
    case What::Wait:
    case What::WaitAny:
      out += std::to_string(blocked.nrequests) + " request" + (blocked.nrequests == 1 ? "" : "s");
      break;
    case What::Collective:
      if (blocked.root >= 0) out += "root=" + std::to_string(blocked.root) + ", ";
      out += comm_text(ctx);
      if (blocked.type_name) out += ", " + type_text();
      break;
    case What::Other:
      if (std::strcmp(call, "MPI_Finalize") == 0) waits += "#finalize\n";
      break;
  }
  out += ")";
  if (blocked.what == What::Collective && ctx) {
    out += ", collective #" + std::to_string(blocked.coll_seq) + " on " + comm_name(ctx->id);
    waits += "#coll " + std::to_string(ctx->id) + " " + std::to_string(blocked.coll_seq) + " " + call + " " +
             std::to_string(blocked.root) + "\n";
  }
  out += "\n";
  if (blocked.what == What::Wait || blocked.what == What::WaitAny) {
    for (int i = 0; i < blocked.nrequests && i < 16; ++i) {
      MPI_Request h = blocked.requests[i];
      if (h == MPI_REQUEST_NULL) continue;
      auto* r = reinterpret_cast<const pml::Request*>(h);
      if (!pml::request_valid(r)) continue;
      int peer = -1;
      out += "  request " + std::to_string(i) + ": " + pml::describe_request(r, &peer) + "\n";
      if (blocked.what == What::Wait && !r->complete.load(std::memory_order_acquire)) wait_for(peer);
    }
  }
  out += waits;
}

}  // namespace

void answer() {
  requested.store(0, std::memory_order_relaxed);
  if (!armed) return;
  std::string out;
  const char* call = blocked.call.load(std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_acquire);
  if (call) {
    describe_blocked(call, out);
  } else {
    const char* last = last_call.load(std::memory_order_relaxed);
    out += std::string("not in a blocking MPI call") + (last ? std::string("; last blocking call ") + last : "") + "\n";
  }
  {
    progress::Guard guard;
    pml::describe_matching(&out);
    pml::describe_pending_sends(&out);
  }
  std::string counts;
  for (const CommEntry& c : comms) {
    if (c.p2p == UINT32_MAX || c.collectives == 0) continue;
    counts += (counts.empty() ? "" : ", ") + (c.name ? *c.name : std::string("?")) + " " +
              std::to_string(c.collectives) + " (last " + (c.last ? c.last : "?") + ")";
    out += "#name " + std::to_string(c.coll) + " " + (c.name ? *c.name : std::string("?")) + "\n";
  }
  out += "  collectives entered: " + (counts.empty() ? std::string("none") : counts) + "\n";
  write_file(out.data(), out.size());
}

void comm_opened(uint32_t p2p_id, uint32_t coll_id, const std::string* name, int size) {
  progress::Guard guard;
  CommEntry* slot = find_comm(p2p_id);
  for (int i = 0; !slot && i < kComms; ++i)
    if (comms[i].p2p == UINT32_MAX) slot = &comms[i];
  if (!slot) return;  // more than kComms at once: the rest are shown by context id
  *slot = CommEntry{p2p_id, coll_id, name, size, 0, nullptr};
}

void comm_closed(uint32_t p2p_id) {
  progress::Guard guard;
  if (CommEntry* c = find_comm(p2p_id)) *c = CommEntry{};
}

uint64_t collective_entered(uint32_t coll_id, const char* call) {
  CommEntry* c = find_comm(coll_id);
  if (!c) return 0;
  c->last = call;
  return ++c->collectives;
}

std::string comm_name(uint32_t context_id) {
  const CommEntry* c = find_comm(context_id);
  if (c && c->name && !c->name->empty()) return *c->name;
  return "communicator #" + std::to_string(context_id / 2);
}

// ---- the watchdog ---------------------------------------------------------------

namespace {
std::thread watchdog;
std::mutex watchdog_lock;
std::condition_variable watchdog_wake;
bool watchdog_stop = false;

// Asks the launcher once when the same blocking call saw no progress for
// `after` seconds. Reads only atomics: it never touches MPI state.
void watch(int64_t after, pid_t launcher) {
  using Clock = std::chrono::steady_clock;
  uint64_t entered = 0, made = 0;
  Clock::time_point since = Clock::now();
  std::unique_lock<std::mutex> lock(watchdog_lock);
  while (!watchdog_wake.wait_for(lock, std::chrono::milliseconds(200), [] { return watchdog_stop; })) {
    uint64_t e = blocked.entered.load(std::memory_order_relaxed);
    uint64_t m = progress_made.load(std::memory_order_relaxed);
    bool in_call = blocked.call.load(std::memory_order_relaxed) != nullptr;
    if (!in_call || e != entered || m != made) {
      entered = e;
      made = m;
      since = Clock::now();
      continue;
    }
    if (Clock::now() - since >= std::chrono::seconds(after)) {
      kill(launcher, SIGUSR1);
      return;  // once
    }
  }
}
}  // namespace

void init(int world_rank) {
  const std::string& dir = dir_param.get();
  if (dir.empty()) return;
  rank_number = world_rank;
  int n1 = std::snprintf(answer_path, sizeof answer_path, "%s/hang.%d", dir.c_str(), world_rank);
  int n2 = std::snprintf(answer_tmp, sizeof answer_tmp, "%s/hang.%d.tmp", dir.c_str(), world_rank);
  if (n1 <= 0 || n2 <= 0 || static_cast<size_t>(n2) >= sizeof answer_tmp) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal_number(), &action, nullptr) != 0) return;
  armed = true;
  // mpirun signals only ranks that say they can take the signal (the
  // default action of a real-time signal ends the process).
  char marker[PATH_MAX];
  std::snprintf(marker, sizeof marker, "%s/hang-armed.%d", dir.c_str(), world_rank);
  int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  int64_t after = after_param.get();
  pid_t launcher = static_cast<pid_t>(launcher_param.get());
  if (after > 0 && launcher > 0 && !watchdog.joinable()) {
    watchdog_stop = false;
    watchdog = std::thread(watch, after, launcher);
  }
}

void finalize() {
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watchdog_lock);
      watchdog_stop = true;
    }
    watchdog_wake.notify_all();
    watchdog.join();
  }
  // The handler stays: a late question is answered "not in a blocking MPI call".
}

}  // namespace axon::diag::hang
