// The shared-memory rings of btl/sm (src/btl/sm/sm.cpp, ring.h) between
// two fork()ed processes: rank 0 sends, rank 1 receives.
//
// sm.cpp is compiled into this program as it is; what it asks of the
// runtime (rte::job, publish, lookup) comes from stand-ins below that pass
// the segment names through memory shared before the fork, and btl::handler
// hands every message to this test's handler. The ring holds 8 messages of
// the eager limit (AXON_BTL_SM_SLOTS 8, AXON_BTL_SM_EAGER_LIMIT 256): 4096
// bytes. Where each message goes is computed by a model of the layout
// (docs/sm.md: records at 8-byte steps, one over a line starts on a line,
// a record that would not fit before the ring's end starts it over). Checked:
//  - a full ring: the sends the model fits succeed, the next answers
//    kAgain and counts in axon_btl_sm_ring_full; the receiver gets them in
//    order, each at the model's offset, am id, length and bytes exact;
//  - wrap-around: the next fill goes on from the ring's end to its start,
//    again at the model's offsets;
//  - the receiver frees every byte it took: after it takes 3, exactly what
//    the model fits goes in again before kAgain;
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
#include "btl/sm/sm.h"
#include "rte/rte.h"
#include "unit_check.h"

namespace btl = axon::btl;
using axon::kAgain;
using axon::kOk;

namespace {

constexpr uint64_t kCapacity = 4096;  // 8 x (256 + 64 + 8 + a line), to a power of two
constexpr size_t kMaxPayload = 256;    // the eager limit set below
constexpr uint64_t kOdd = 3;           // messages taken in the odd-count phase
constexpr uint64_t kStream = 4000;     // messages of the concurrent phase

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
  std::atomic<uint64_t> sent_by_phase[6];  // messages sent when the sender reached phase k
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
size_t payload_len(uint64_t i) { return i == 7 ? kMaxPayload : (i * 37) % (kMaxPayload + 1); }
size_t length_of(uint64_t i) { return 8 + payload_len(i); }
int am_of(uint64_t i) { return 1 + static_cast<int>(i % (btl::kMaxAmIds - 1)); }
uint8_t payload_byte(uint64_t i, size_t j) { return static_cast<uint8_t>((i * 29 + j * 7 + (j >> 5)) & 0xff); }

int send_message(btl::Transport& t, uint64_t i) {
  std::vector<uint8_t> payload(payload_len(i));
  for (size_t j = 0; j < payload.size(); ++j) payload[j] = payload_byte(i, j);
  return t.send(1, am_of(i), &i, sizeof i, payload.data(), payload.size());
}

// The layout, written out independently of ring.h: the offset of each
// message's bytes in the ring, and whether the next fits.
struct Model {
  uint64_t tail = 0, head = 0, next = 0;  // next: the message index to place
  std::vector<uint64_t> offset;           // by message index
  bool add() {
    uint64_t record = (8 + length_of(next) + 7) / 8 * 8;
    if (record > 64) record = (record + 63) / 64 * 64;  // a long record fills whole lines
    const uint64_t at = tail % kCapacity;
    uint64_t gap = record > 64 && at % 64 ? 64 - at % 64 : 0;
    if (at + gap + record + 8 > kCapacity) gap = kCapacity - at;
    if (tail + gap + record + 8 - head > kCapacity) return false;
    tail += gap;
    offset.push_back(tail % kCapacity + 8);
    tail += record;
    ++next;
    return true;
  }
  // Places messages until one does not fit; returns how many.
  uint64_t fill() {
    uint64_t n = 0;
    while (add()) ++n;
    return n;
  }
};

// ---- the receiver's view ------------------------------------------------------

uint64_t received = 0;
int last_handler_am = -1;
const uint8_t* ring_base = nullptr;  // the ring's data: the first message's bytes less 8
std::vector<uint64_t> offset_of;     // by message index, where the receiver found it

void on_message(int src, const void* msg, size_t len) {
  const uint64_t i = received++;
  uint64_t index = ~0ull;
  if (len >= sizeof index) std::memcpy(&index, msg, sizeof index);
  if (!ring_base) ring_base = static_cast<const uint8_t*>(msg) - 8;
  offset_of.push_back(uint64_t(static_cast<const uint8_t*>(msg) - ring_base));
  CHECK(src == 0 && index == i && len == length_of(i) && last_handler_am == am_of(i),
        "message %llu: from %d, index %llu, %zu bytes, am %d; want from 0, index %llu, %zu bytes, am %d",
        static_cast<unsigned long long>(i), src, static_cast<unsigned long long>(index), len, last_handler_am,
        static_cast<unsigned long long>(i), length_of(i), am_of(i));
  if (index != i || len != length_of(i)) return;
  const auto* payload = static_cast<const uint8_t*>(msg) + sizeof index;
  size_t bad = 0;
  for (size_t j = 0; j < payload_len(i); ++j) bad += payload[j] != payload_byte(i, j);
  CHECK(bad == 0, "message %llu: %zu payload bytes differ", static_cast<unsigned long long>(i), bad);
}

// Takes messages until `want` arrived in all (a bounded number of polls).
void take_until(btl::Transport& t, uint64_t want) {
  for (int polls = 0; received < want && polls < 1000; ++polls) t.progress();
  CHECK(received == want, "%llu messages received, want %llu", static_cast<unsigned long long>(received),
        static_cast<unsigned long long>(want));
  CHECK(t.progress() == 0, "more messages after the %llu sent", static_cast<unsigned long long>(want));
}

void check_offsets(const Model& model, uint64_t from, uint64_t to, const char* phase) {
  uint64_t wrong = 0, first_wrong = 0;
  for (uint64_t i = from; i < to && i < offset_of.size(); ++i)
    if (offset_of[i] != model.offset[i] && wrong++ == 0) first_wrong = i;
  CHECK(wrong == 0, "%s: %llu messages not where the layout puts them (first %llu at %llu, want %llu)", phase,
        static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(first_wrong),
        static_cast<unsigned long long>(wrong ? offset_of[first_wrong] : 0),
        static_cast<unsigned long long>(wrong ? model.offset[first_wrong] : 0));
}

void receive(btl::Transport& t) {
  Model model;
  // The first fill, taken only once the sender found the ring full.
  if (!wait_until(board->sender_phase, 1, "the sender to fill the ring")) return;
  const uint64_t first = model.fill();
  take_until(t, first);
  check_offsets(model, 0, first, "the first fill");
  board->receiver_phase.store(1, std::memory_order_release);
  // The second, across the ring's end.
  if (!wait_until(board->sender_phase, 2, "the sender to refill the ring")) return;
  model.head = model.tail;
  const uint64_t second = first + model.fill();
  take_until(t, second);
  check_offsets(model, first, second, "the fill after the wrap");
  bool wrapped = false;
  for (uint64_t i = first; i < second; ++i) wrapped |= offset_of[i] < offset_of[i - 1];
  CHECK(wrapped, "the second fill (messages %llu-%llu) never went back to the ring's start",
        static_cast<unsigned long long>(first), static_cast<unsigned long long>(second));
  board->receiver_phase.store(2, std::memory_order_release);
  // Three, then a full ring again.
  if (!wait_until(board->sender_phase, 3, "the sender's three messages")) return;
  model.head = model.tail;
  for (uint64_t k = 0; k < kOdd; ++k) model.add();
  take_until(t, second + kOdd);
  board->receiver_phase.store(3, std::memory_order_release);
  if (!wait_until(board->sender_phase, 4, "the sender to fill the ring again")) return;
  model.head = model.tail;
  const uint64_t third = second + kOdd + model.fill();
  CHECK(board->sent_by_phase[4].load() == third, "the sender fit %llu messages after the three, the layout %llu",
        static_cast<unsigned long long>(board->sent_by_phase[4].load() - second - kOdd),
        static_cast<unsigned long long>(third - second - kOdd));
  take_until(t, third);
  check_offsets(model, second, third, "the third fill");
  board->receiver_phase.store(4, std::memory_order_release);
  // The stream: polled while the sender writes.
  const uint64_t total = third + kStream;
  const time_t deadline = time(nullptr) + 30;
  while (received < total && time(nullptr) <= deadline) {
    if (t.progress() == 0) sched_yield();
  }
  CHECK(received == total, "%llu messages received, want %llu", static_cast<unsigned long long>(received),
        static_cast<unsigned long long>(total));
  wait_until(board->sender_phase, 5, "the sender to finish");
  CHECK(t.progress() == 0, "messages after the last one");
}

// ---- the sender's view ---------------------------------------------------------

// Sends from message `i` on until the ring answers kAgain; returns the next index.
uint64_t fill(btl::Transport& t, uint64_t i) {
  int rc;
  while ((rc = send_message(t, i)) == kOk) ++i;
  CHECK(rc == kAgain, "send %llu answered %d, want kOk or kAgain", static_cast<unsigned long long>(i), rc);
  return i;
}

void send(btl::Transport& t) {
  CHECK(t.caps().eager_limit == kMaxPayload, "eager limit %zu, want %zu (AXON_BTL_SM_EAGER_LIMIT)",
        t.caps().eager_limit, kMaxPayload);
  Model model;
  const uint64_t want = model.fill();
  uint64_t i = fill(t, 0);
  CHECK(i == want && counter_value("axon_btl_sm_ring_full") == 1 && counter_value("axon_btl_sm_messages_sent") == i,
        "the first fill: %llu sent (the layout fits %llu), ring_full %llu, messages_sent %llu",
        static_cast<unsigned long long>(i), static_cast<unsigned long long>(want),
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")),
        static_cast<unsigned long long>(counter_value("axon_btl_sm_messages_sent")));
  uint64_t bytes = 0;
  for (uint64_t k = 0; k < i; ++k) bytes += length_of(k);
  CHECK(counter_value("axon_btl_sm_bytes_sent") == bytes, "bytes_sent %llu, want %llu",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_bytes_sent")),
        static_cast<unsigned long long>(bytes));
  board->sent_by_phase[1].store(i);
  board->sender_phase.store(1, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 1, "the receiver to take the first fill")) return;
  i = fill(t, i);
  CHECK(counter_value("axon_btl_sm_ring_full") == 2, "ring_full %llu after the second fill, want 2",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")));
  board->sent_by_phase[2].store(i);
  board->sender_phase.store(2, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 2, "the receiver to take the second fill")) return;
  for (uint64_t k = 0; k < kOdd; ++k, ++i) {
    int rc = send_message(t, i);
    CHECK(rc == kOk, "send %llu into an empty ring answered %d", static_cast<unsigned long long>(i), rc);
  }
  board->sent_by_phase[3].store(i);
  board->sender_phase.store(3, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 3, "the receiver to take the three")) return;
  // Every byte the receiver took is free again (the receiver checks the count).
  i = fill(t, i);
  CHECK(counter_value("axon_btl_sm_ring_full") == 3, "ring_full %llu after the third fill, want 3",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")));
  board->sent_by_phase[4].store(i);
  board->sender_phase.store(4, std::memory_order_release);
  if (!wait_until(board->receiver_phase, 4, "the receiver to take the third fill")) return;
  uint64_t refused = 0;
  const uint64_t total = i + kStream;
  const time_t deadline = time(nullptr) + 30;
  while (i < total && time(nullptr) <= deadline) {
    int rc = send_message(t, i);
    if (rc == kAgain) {
      ++refused;
      sched_yield();
      continue;
    }
    CHECK(rc == kOk, "stream send %llu answered %d", static_cast<unsigned long long>(i), rc);
    ++i;
  }
  CHECK(counter_value("axon_btl_sm_messages_sent") == total, "messages_sent %llu, want %llu",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_messages_sent")),
        static_cast<unsigned long long>(total));
  CHECK(counter_value("axon_btl_sm_ring_full") == 3 + refused, "ring_full %llu, want %llu (3 + %llu refused)",
        static_cast<unsigned long long>(counter_value("axon_btl_sm_ring_full")),
        static_cast<unsigned long long>(3 + refused), static_cast<unsigned long long>(refused));
  board->sent_by_phase[5].store(i);
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
  std::puts("sm byte ring of 4096 bytes between two processes: a full ring gives kAgain after the messages the "
            "layout fits, each at the layout's offset, wrap-around from the end to the start, taken bytes free "
            "again, 4000 streamed messages exact");
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
