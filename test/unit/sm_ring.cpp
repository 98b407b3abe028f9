// The shared-memory rings of btl/sm (src/btl/sm/sm.cpp, layout.h) between
// two fork()ed processes: rank 0 sends, rank 1 receives.
//
// sm.cpp is compiled into this program as it is; what it asks of the
// runtime (rte::job, publish, lookup) comes from stand-ins below that pass
// the segment names through memory shared before the fork, and btl::handler
// hands every message to this test's handler. The ring has 8 slots
// (AXON_BTL_SM_SLOTS) of 384 bytes (AXON_BTL_SM_EAGER_LIMIT 256). Checked:
//  - a full ring: 8 sends succeed, the 9th answers kAgain and counts in
//    axon_btl_sm_ring_full; one progress() of the receiver delivers the 8
//    in order, each slot's sequence word index+1, am id and length exact;
//  - wrap-around: the next 8 reuse the same 8 slots in the same order with
//    sequence words 9..16;
//  - the receiver frees every slot it took: after it takes an odd count (3),
//    exactly 8 sends fit again before kAgain;
//  - a stream of 4000 more sent while the receiver polls: no message lost,
//    repeated or reordered, every byte exact, and the sender's kAgain
//    answers equal to its ring_full count.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/status.h"
#include "btl/btl.h"
#include "btl/sm/layout.h"
#include "btl/sm/sm.h"
#include "rte/rte.h"
#include "unit_check.h"

namespace btl = axon::btl;
namespace sm = axon::btl::sm;
using axon::kAgain;
using axon::kOk;

namespace {

constexpr int kSlots = 8;
constexpr size_t kMaxPayload = 256;  // the eager limit set below
constexpr uint64_t kOdd = 3;         // messages taken in the odd-count phase
constexpr uint64_t kBeforeStream = 3 * kSlots + kOdd;
constexpr uint64_t kStream = 4000;   // messages of the concurrent phase
constexpr uint64_t kTotal = kBeforeStream + kStream;

// Memory both processes share (mapped before the fork): the segment names
// each published, and the phase each side reached.
struct Board {
  std::atomic<int> published[2];
  char name[2][256];
  size_t name_len[2];
  // Sender: 1 ring filled, 2 refilled after the wrap, 3 three more sent,
  // 4 filled again, 5 stream sent. Receiver: 1, 2, 3, 4 took them.
  std::atomic<int> sender_phase;
  std::atomic<int> receiver_phase;
};
Board* board = nullptr;

axon::rte::Job job_of_this_process;

bool wait_until(const std::atomic<int>& word, int want, const char* what) {
  const time_t deadline = time(nullptr) + 30;
  while (word.load(std::memory_order_acquire) < want) {
    if (time(nullptr) > deadline) {
      CHECK(false, "timed out waiting for %s", what);
      return false;
    }
    sched_yield();
  }
  return true;
}

uint64_t counter_value(const char* name) {
  for (const axon::Counter* c : axon::Counter::all())
    if (std::strcmp(c->name(), name) == 0) return c->value();
  CHECK(false, "no counter named %s", name);
  return 0;
}

// Message `i`: an 8-byte header holding i, then payload_len(i) bytes of a
// pattern of i, under am id am_of(i).
size_t payload_len(uint64_t i) { return i == kSlots - 1 ? kMaxPayload : (i * 37) % (kMaxPayload + 1); }
int am_of(uint64_t i) { return 1 + static_cast<int>(i % (btl::kMaxAmIds - 1)); }
uint8_t payload_byte(uint64_t i, size_t j) { return static_cast<uint8_t>((i * 29 + j * 7 + (j >> 5)) & 0xff); }

int send_message(btl::Transport& t, uint64_t i) {
  std::vector<uint8_t> payload(payload_len(i));
  for (size_t j = 0; j < payload.size(); ++j) payload[j] = payload_byte(i, j);
  return t.send(1, am_of(i), &i, sizeof i, payload.data(), payload.size());
}

// ---- the receiver's view ------------------------------------------------------

uint64_t received = 0;
int last_handler_am = -1;
std::vector<const sm::SlotHeader*> slot_of;  // by message index, first 2 * kSlots

void on_message(int src, const void* msg, size_t len) {
  const uint64_t i = received++;
  const auto* slot = static_cast<const sm::SlotHeader*>(msg) - 1;
  uint64_t index = ~0ull;
  if (len >= sizeof index) std::memcpy(&index, msg, sizeof index);
  const uint64_t sequence = slot->sequence.load(std::memory_order_relaxed);
  CHECK(src == 0 && index == i && len == sizeof index + payload_len(i),
        "message %llu: from %d, index %llu, %zu bytes; want from 0, index %llu, %zu bytes",
        static_cast<unsigned long long>(i), src, static_cast<unsigned long long>(index), len,
        static_cast<unsigned long long>(i), sizeof index + payload_len(i));
  CHECK(sequence == i + 1 && slot->am_id == am_of(i) && last_handler_am == am_of(i) && slot->length == len,
        "message %llu: slot sequence %llu am %u (handler asked for %d) length %u; want %llu, %d, %zu",
        static_cast<unsigned long long>(i), static_cast<unsigned long long>(sequence), slot->am_id,
        last_handler_am, slot->length, static_cast<unsigned long long>(i + 1), am_of(i), len);
  if (index != i || len != sizeof index + payload_len(i)) return;
  const auto* payload = static_cast<const uint8_t*>(msg) + sizeof index;
  size_t bad = 0;
  for (size_t j = 0; j < payload_len(i); ++j) bad += payload[j] != payload_byte(i, j);
  CHECK(bad == 0, "message %llu: %zu payload bytes differ", static_cast<unsigned long long>(i), bad);
  if (i < 2 * kSlots) slot_of.push_back(slot);
}

void receive(btl::Transport& t) {
  // The first 8, taken only once the sender found the ring full.
  if (!wait_until(board->sender_phase, 1, "the sender to fill the ring")) return;
  int handled = t.progress();
  CHECK(handled == kSlots && received == kSlots, "the first progress() handled %d (%llu received), want %d",
        handled, static_cast<unsigned long long>(received), kSlots);
  CHECK(t.progress() == 0, "a second progress() found more messages in a ring of %d", kSlots);
  for (size_t k = 1; k < slot_of.size(); ++k) {
    auto step = reinterpret_cast<const uint8_t*>(slot_of[k]) - reinterpret_cast<const uint8_t*>(slot_of[k - 1]);
    CHECK(step == 384, "slots of messages %zu and %zu lie %td bytes apart, want 384", k - 1, k, step);
  }
  board->receiver_phase.store(1, std::memory_order_release);
  // The next 8, after the wrap: the same slots in the same order.
  if (!wait_until(board->sender_phase, 2, "the sender to refill the ring")) return;
  handled = t.progress();
  CHECK(handled == kSlots && received == 2 * kSlots, "the progress() after the wrap handled %d, want %d", handled,
        kSlots);
  CHECK(slot_of.size() == 2 * kSlots, "%zu slots recorded, want %d", slot_of.size(), 2 * kSlots);
  for (size_t k = kSlots; k < slot_of.size(); ++k)
    CHECK(slot_of[k] == slot_of[k - kSlots], "message %zu did not reuse the slot of message %zu", k, k - kSlots);
  board->receiver_phase.store(2, std::memory_order_release);
  // An odd count, then a full ring again.
  if (!wait_until(board->sender_phase, 3, "the sender's three messages")) return;
  handled = t.progress();
  CHECK(handled == kOdd && received == 2 * kSlots + kOdd, "the progress() of %llu messages handled %d",
        static_cast<unsigned long long>(kOdd), handled);
  board->receiver_phase.store(3, std::memory_order_release);
  if (!wait_until(board->sender_phase, 4, "the sender to fill the ring again")) return;
  handled = t.progress();
  CHECK(handled == kSlots && received == kBeforeStream, "the progress() of the third full ring handled %d", handled);
  board->receiver_phase.store(4, std::memory_order_release);
  // The stream: polled while the sender writes.
  const time_t deadline = time(nullptr) + 30;
  while (received < kTotal && time(nullptr) <= deadline) {
    if (t.progress() == 0) sched_yield();
  }
  CHECK(received == kTotal, "%llu messages received, want %llu", static_cast<unsigned long long>(received),
        static_cast<unsigned long long>(kTotal));
  wait_until(board->sender_phase, 5, "the sender to finish");
  CHECK(t.progress() == 0, "messages after the last one");
}

// ---- the sender's view ---------------------------------------------------------

void send(btl::Transport& t) {
  CHECK(t.caps().eager_limit == kMaxPayload, "eager limit %zu, want %zu (AXON_BTL_SM_EAGER_LIMIT)",
        t.caps().eager_limit, kMaxPayload);
  for (uint64_t i = 0; i < kSlots; ++i) {
    int rc = send_message(t, i);
    CHECK(rc == kOk, "send %llu into an empty ring of %d answered %d", static_cast<unsigned long long>(i), kSlots,
          rc);
  }
  int rc = send_message(t, kSlots);
  CHECK(rc == kAgain, "send %d into a full ring answered %d, want kAgain", kSlots, rc);
  CHECK(counter_value("axon_btl_sm_ring_full") == 1 && counter_value("axon_btl_sm_messages_sent") == kSlots,
        "after filling the ring: ring_full %llu, messages_sent %llu; want 1, %d",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")),
        static_cast<unsigned long long>(counter_value("axon_btl_sm_messages_sent")), kSlots);
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < kSlots; ++i) bytes += 8 + payload_len(i);
  CHECK(counter_value("axon_btl_sm_bytes_sent") == bytes, "bytes_sent %llu, want %llu",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_bytes_sent")),
        static_cast<unsigned long long>(bytes));
  board->sender_phase.store(1, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 1, "the receiver to take the first 8")) return;
  for (uint64_t i = kSlots; i < 2 * kSlots; ++i) {
    rc = send_message(t, i);
    CHECK(rc == kOk, "send %llu after the receiver emptied the ring answered %d", static_cast<unsigned long long>(i),
          rc);
  }
  rc = send_message(t, 2 * kSlots);
  CHECK(rc == kAgain && counter_value("axon_btl_sm_ring_full") == 2,
        "send %d into the refilled ring answered %d (ring_full %llu), want kAgain (2)", 2 * kSlots, rc,
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")));
  board->sender_phase.store(2, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 2, "the receiver to take the second 8")) return;
  for (uint64_t i = 2 * kSlots; i < 2 * kSlots + kOdd; ++i) {
    rc = send_message(t, i);
    CHECK(rc == kOk, "send %llu into an empty ring answered %d", static_cast<unsigned long long>(i), rc);
  }
  board->sender_phase.store(3, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 3, "the receiver to take the three")) return;
  // Every slot the receiver took is free again: exactly kSlots fit.
  for (uint64_t i = 2 * kSlots + kOdd; i < kBeforeStream; ++i) {
    rc = send_message(t, i);
    CHECK(rc == kOk, "send %llu after the receiver took %llu answered %d (a slot it took is not free)",
          static_cast<unsigned long long>(i), static_cast<unsigned long long>(kOdd), rc);
  }
  rc = send_message(t, kBeforeStream);
  CHECK(rc == kAgain && counter_value("axon_btl_sm_ring_full") == 3,
        "send %llu into the third full ring answered %d (ring_full %llu), want kAgain (3)",
        static_cast<unsigned long long>(kBeforeStream), rc,
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")));
  board->sender_phase.store(4, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 4, "the receiver to take the third ring")) return;
  uint64_t refused = 0;
  const time_t deadline = time(nullptr) + 30;
  for (uint64_t i = kBeforeStream; i < kTotal && time(nullptr) <= deadline;) {
    rc = send_message(t, i);
    if (rc == kAgain) {
      ++refused;
      sched_yield();
      continue;
    }
    CHECK(rc == kOk, "stream send %llu answered %d", static_cast<unsigned long long>(i), rc);
    ++i;
  }
  CHECK(counter_value("axon_btl_sm_messages_sent") == kTotal, "messages_sent %llu, want %llu",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_messages_sent")),
        static_cast<unsigned long long>(kTotal));
  CHECK(counter_value("axon_btl_sm_ring_full") == 3 + refused, "ring_full %llu, want %llu (3 + %llu refused)",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")),
        static_cast<unsigned long long>(3 + refused), static_cast<unsigned long long>(refused));
  board->sender_phase.store(5, std::memory_order_release);
}

// One side: open the transport as rank `rank`, connect, run its part.
int run_rank(int rank, const std::string& prefix) {
  axon::rte::Job& job = job_of_this_process;
  job.rank = rank;
  job.size = 2;
  job.local_rank = rank;
  job.local_size = 2;
  job.local_peers = {0, 1};
  job.nspace = "unit";
  job.shm_prefix = prefix;
  job.singleton = false;
  int error = 0;
  std::unique_ptr<btl::Transport> t = btl::open_sm(&error);
  CHECK(t && error == 0, "rank %d: open_sm failed (%d)", rank, error);
  if (!t) return 1;
  if (!wait_until(board->published[1 - rank], 1, "the peer's segment name")) return 1;
  error = t->connect_peers();
  CHECK(error == 0 && t->reaches(1 - rank) && !t->reaches(rank), "rank %d: connect_peers %d", rank, error);
  if (error) return 1;
  if (rank == 0) send(*t);
  else receive(*t);
  return 0;
}

}  // namespace

// ---- stand-ins for what sm.cpp calls -------------------------------------------

namespace axon::rte {
const Job& job() { return job_of_this_process; }
int publish(const char*, const void* data, size_t len) {
  int me = job_of_this_process.rank;
  if (len > sizeof board->name[me]) return 1;
  std::memcpy(board->name[me], data, len);
  board->name_len[me] = len;
  board->published[me].store(1, std::memory_order_release);
  return 0;
}
int lookup(int world_rank, const char*, std::vector<uint8_t>* out) {
  if (!board->published[world_rank].load(std::memory_order_acquire)) return 1;
  const auto* name = reinterpret_cast<const uint8_t*>(board->name[world_rank]);
  out->assign(name, name + board->name_len[world_rank]);
  return 0;
}
void abort_job(int code, const char* message) {
  std::printf("FAIL abort_job(%d): %s\n", code, message);
  std::fflush(stdout);
  _exit(2);
}
}  // namespace axon::rte

namespace axon::btl {
AmHandler handler(int am_id) {
  last_handler_am = am_id;
  return on_message;
}
int Transport::send_packed(int, int, const void*, size_t, size_t, PackFn, void*) { return kInternal; }
// The ring test posts no get(): a completion here would be a stray one.
int DoneQueue::run_ready() {
  CHECK(ready_.empty(), "%zu get() completions queued, want none", ready_.size());
  return 0;
}
}  // namespace axon::btl

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  setenv("AXON_BTL_SM_SLOTS", "8", 1);
  setenv("AXON_BTL_SM_EAGER_LIMIT", "256", 1);
  setenv("AXON_BTL_SM_CMA", "0", 1);  // rings only: no single-copy probe
  void* shared = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  board = new (shared) Board{};
  // Named like a job's files, so run-tests.sh reports any left behind.
  const std::string prefix = "/axon.unit." + std::to_string(getpid());
  std::puts("sm ring of 8 slots between two processes: full ring gives kAgain, one progress() takes 8 in order "
            "with sequence words i+1, wrap-around reuses the slots in order, taken slots free again, "
            "4000 streamed messages exact");
  pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    int rc = run_rank(1, prefix);
    char label[64];
    std::snprintf(label, sizeof label, "sm_ring receiver");
    _exit(rc ? 1 : unit::finish(label));
  }
  int rc = run_rank(0, prefix);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0 && rc == 0,
        "the receiving process ended with status %#x (sender %d)", status, rc);
  // The segments were unlinked once both mapped them; after a failure
  // before that, remove what is left.
  for (int r = 0; r < 2; ++r)
    if (board->published[r].load()) shm_unlink(std::string(board->name[r], board->name_len[r]).c_str());
  munmap(shared, sizeof(Board));
  return unit::finish("sm_ring sender");
}
