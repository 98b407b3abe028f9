// The byte rings and doorbells of btl/sm (src/btl/sm/ring.h) on plain
// memory, in one process. Checked:
//  - packing: 1-byte messages behind a 24-byte match header take 40 bytes
//    each, back to back (9 in 360 bytes); a 200-byte message starts on the
//    next line (384), a skip record before it; every byte, am id and length
//    as sent;
//  - full: a ring of 1024 bytes takes exactly the messages a model of the
//    layout says, then reserve() answers nullptr; after the reader takes k
//    and releases, exactly the model's count fits again;
//  - wrap and stale bytes: 20000 messages of 0-300 bytes whose payloads are
//    full of valid-looking record words, through the 1024-byte ring with
//    reads interleaved (and up to 1500 bytes through an 8 KiB ring, packed
//    and a line per record): none lost, repeated or reordered, each exact, and
//    the ring wrapped (its position passed the capacity) thousands of times;
//  - corrupt records (a length past the ring, a skip past its end, stray
//    flag bits) are answered kCorrupt, never read;
//  - doorbells: a receiver with 63 silent senders and one that sends polls
//    one ring per poll() (plus the sleeping ones once per kSweepEvery polls),
//    none while nothing ever rang but the sweeps; an idle ring goes to sleep
//    after kIdlePolls empty polls (its bell cleared), a send rings it awake
//    at the next poll; a message published while the bell seemed set is
//    found by the next sweep;
//  - copy pieces: receiver and sender taking pieces of a large message
//    (claim_piece) get 0, 1, 2 ... from the front and n-1, n-2 ... from the
//    back, every piece exactly once, then -1; two threads racing over 20000
//    messages of 1-64 pieces take every piece once, the receiver's a prefix;
//    a word a peer corrupted (more taken than pieces) gives nothing.
#include <algorithm>
#include <atomic>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "btl/sm/layout.h"
#include "btl/sm/ring.h"
#include "unit_check.h"

namespace sm = axon::btl::sm;

namespace {

// Zeroed, line-aligned memory (a new segment reads as zeros).
struct Memory {
  explicit Memory(size_t n) : size(n), p(static_cast<uint8_t*>(::operator new(n, std::align_val_t(64)))) {
    std::memset(p, 0, n);
  }
  ~Memory() { ::operator delete(p, std::align_val_t(64)); }
  size_t size;
  uint8_t* p;
};

// One ring of `capacity` bytes and its doorbell, writer and reader attached.
struct OneRing {
  explicit OneRing(uint64_t capacity, uint32_t step = sm::kPackedStep)
      : mem(sm::ring_bytes(capacity) + 64), capacity(capacity) {
    auto* control = reinterpret_cast<sm::RingControl*>(mem.p);
    writer.attach(control, capacity, step, mem.p + sm::ring_bytes(capacity));
    reader.attach(control, capacity, step);
  }
  uint8_t* data() { return mem.p + sizeof(sm::RingControl); }
  Memory mem;
  uint64_t capacity;
  sm::RingWriter writer;
  sm::RingReader reader;
};

bool send(sm::RingWriter& w, uint32_t am, const uint8_t* bytes, size_t len) {
  uint8_t* dst = w.reserve(len);
  if (!dst) return false;
  std::memcpy(dst, bytes, len);
  w.publish(am, len);
  return true;
}

// The layout's placement rule, written out independently: where a record
// of `len` bytes goes after `tail`, and whether it fits with `head` taken.
struct Model {
  uint64_t capacity, tail = 0, head = 0;
  bool fits_and_add(size_t len) {
    uint64_t record = (8 + len + 7) / 8 * 8, at = tail % capacity;
    if (record > 64) record = (record + 63) / 64 * 64;
    uint64_t gap = record > 64 && at % 64 ? 64 - at % 64 : 0;
    if (at + gap + record + 8 > capacity) gap = capacity - at;
    if (tail + gap + record + 8 - head > capacity) return false;
    tail += gap + record;
    return true;
  }
};

void packing() {
  OneRing r(1024);
  uint8_t msg[25];
  for (int i = 0; i < 9; ++i) {
    for (size_t j = 0; j < sizeof msg; ++j) msg[j] = uint8_t(i * 31 + j);
    CHECK(send(r.writer, 3, msg, sizeof msg), "small message %d refused by an empty ring", i);
  }
  CHECK(r.writer.tail() == 9 * 40, "9 small messages took %llu bytes, want 360 (40 each)",
        static_cast<unsigned long long>(r.writer.tail()));
  std::vector<uint8_t> big(200, 0x5a);
  CHECK(send(r.writer, 4, big.data(), big.size()), "200-byte message refused");
  for (int i = 0; i < 9; ++i) {
    uint32_t am = 0, len = 0;
    const uint8_t* p = nullptr;
    int got = r.reader.next(&am, &p, &len);
    bool bytes_ok = got == sm::RingReader::kMessage && len == sizeof msg;
    for (size_t j = 0; bytes_ok && j < sizeof msg; ++j) bytes_ok = p[j] == uint8_t(i * 31 + j);
    CHECK(got == sm::RingReader::kMessage && am == 3 && p == r.data() + 40 * i + 8 && bytes_ok,
          "small message %d: got %d am %u at offset %td length %u; want am 3 at %d, 25 exact bytes", i, got, am,
          p ? p - r.data() : -1, len, 40 * i + 8);
    r.reader.take(len);
  }
  uint32_t am = 0, len = 0;
  const uint8_t* p = nullptr;
  int got = r.reader.next(&am, &p, &len);
  CHECK(got == sm::RingReader::kMessage && am == 4 && len == 200 && p == r.data() + 384 + 8 &&
            std::memcmp(p, big.data(), 200) == 0,
        "the 200-byte message: got %d am %u length %u at offset %td; want it on the line at 384", got, am, len,
        p ? p - r.data() : -1);
  r.reader.take(len);
  CHECK(r.reader.next(&am, &p, &len) == sm::RingReader::kEmpty, "a message after the last");
  // Unpacked (AXON_BTL_SM_PACK=0): every message on a line of its own.
  OneRing lines(1024, sm::kLine);
  for (int i = 0; i < 3; ++i) send(lines.writer, 3, msg, sizeof msg);
  for (int i = 0; i < 3; ++i) {
    got = lines.reader.next(&am, &p, &len);
    CHECK(got == sm::RingReader::kMessage && p == lines.data() + 64 * i + 8 && len == sizeof msg,
          "unpacked message %d at offset %td, want %d", i, p ? p - lines.data() : -1, 64 * i + 8);
    lines.reader.take(len);
  }
  CHECK(lines.writer.tail() == 3 * 64, "3 unpacked small messages took %llu bytes, want 192",
        static_cast<unsigned long long>(lines.writer.tail()));
}

void full() {
  OneRing r(1024);
  Model model{1024};
  std::vector<uint8_t> msg(100, 7);
  int want = 0;
  while (model.fits_and_add(msg.size())) ++want;
  int sent = 0;
  while (send(r.writer, 1, msg.data(), msg.size())) ++sent;
  CHECK(sent == want && want > 4, "a 1024-byte ring took %d messages of 100 bytes, the layout says %d", sent, want);
  // Take 3, release: exactly what the model frees fits again.
  for (int i = 0; i < 3; ++i) {
    uint32_t am = 0, len = 0;
    const uint8_t* p = nullptr;
    CHECK(r.reader.next(&am, &p, &len) == sm::RingReader::kMessage && len == 100, "full ring: message %d", i);
    r.reader.take(len);
  }
  CHECK(send(r.writer, 1, msg.data(), msg.size()) == false, "a send fit before the reader released its head");
  r.reader.release();
  model.head = r.reader.head();
  int again_want = 0, again = 0;
  while (model.fits_and_add(msg.size())) ++again_want;
  while (send(r.writer, 1, msg.data(), msg.size())) ++again;
  CHECK(again == again_want && again >= 2, "after 3 were taken %d more fit, the layout says %d", again, again_want);
}

// `capacity`-byte ring, message lengths up to `longest`: with a longest
// above 4 lines, large records (whose inner lines the consumer leaves with
// their stale bytes, ring.h) mix with small ones at every offset.
void wrap_and_stale_bytes(uint64_t capacity = 1024, size_t longest = 300, uint32_t step = sm::kPackedStep) {
  OneRing r(capacity, step);
  constexpr uint64_t kCount = 20000;
  uint64_t sent = 0, received = 0, bad = 0;
  std::vector<uint8_t> msg(longest);
  auto len_of = [longest](uint64_t i) { return size_t((i * 53 + i / 7) % (longest + 1)); };
  auto fill = [&](uint64_t i) {
    // Valid-looking record words everywhere, so a stale byte read as a
    // header would be taken for a message.
    for (size_t j = 0; j + 8 <= msg.size(); j += 8) {
      uint64_t w = sm::record_word(uint32_t(i % 7), uint32_t(j));
      std::memcpy(&msg[j], &w, 8);
    }
    std::memcpy(msg.data(), &i, 8);
  };
  while (received < kCount) {
    for (int k = 0; k < 5 && sent < kCount; ++k) {
      fill(sent);
      if (!send(r.writer, uint32_t(sent % 31), msg.data(), std::max<size_t>(8, len_of(sent)))) break;
      ++sent;
    }
    uint32_t am = 0, len = 0;
    const uint8_t* p = nullptr;
    for (int k = 0; k < 3; ++k) {
      int got = r.reader.next(&am, &p, &len);
      if (got != sm::RingReader::kMessage) {
        CHECK(got == sm::RingReader::kEmpty && received == sent, "message %llu: got %d with %llu sent",
              static_cast<unsigned long long>(received), got, static_cast<unsigned long long>(sent));
        if (got != sm::RingReader::kEmpty) return;
        break;
      }
      fill(received);
      uint64_t index = ~0ull;
      if (len >= 8) std::memcpy(&index, p, 8);
      if (index != received || am != received % 31 || len != std::max<size_t>(8, len_of(received)) ||
          std::memcmp(p, msg.data(), len) != 0)
        ++bad;
      r.reader.take(len);
      ++received;
    }
    r.reader.release();
  }
  CHECK(bad == 0, "%llu of %llu messages differ in index, am id, length or bytes", static_cast<unsigned long long>(bad),
        static_cast<unsigned long long>(kCount));
  CHECK(r.writer.tail() / r.capacity > 1000, "the ring wrapped %llu times, want > 1000",
        static_cast<unsigned long long>(r.writer.tail() / r.capacity));
}

void corrupt() {
  struct Case {
    const char* what;
    uint64_t word;
  } cases[] = {
      {"a length past the ring", sm::record_word(1, 5000)},
      {"a message running past the ring's end", sm::record_word(1, 1024 - 12)},
      {"a skip past the ring's end", sm::record_word(sm::kSkipRecord, 1024)},
      {"a skip of an unaligned length", sm::record_word(sm::kSkipRecord, 12)},
      {"stray flag bits", sm::record_word(1, 8) | (1ull << 50)},
      {"no valid bit", 8},
  };
  for (const Case& c : cases) {
    OneRing r(1024);
    std::memcpy(r.data(), &c.word, 8);
    uint32_t am = 0, len = 0;
    const uint8_t* p = nullptr;
    CHECK(r.reader.next(&am, &p, &len) == sm::RingReader::kCorrupt, "%s was not reported corrupt", c.what);
  }
}

void doorbells() {
  constexpr uint32_t kRings = 64, kSender = 37;
  constexpr uint64_t kCap = 1024;
  // A segment's tail: the bells, then the rings (layout.h's order).
  const size_t bells = sm::doorbell_bytes(kRings);
  Memory mem(bells + kRings * sm::ring_bytes(kCap));
  auto ring = [&](uint32_t i) { return reinterpret_cast<sm::RingControl*>(mem.p + bells + i * sm::ring_bytes(kCap)); };
  sm::Inbox inbox;
  inbox.init(mem.p, kRings, 0);
  for (uint32_t i = 0; i < kRings; ++i) inbox.reader(i).attach(ring(i), kCap, sm::kPackedStep);
  sm::RingWriter writer;
  writer.attach(ring(kSender), kCap, sm::kPackedStep, mem.p + kSender);
  uint64_t delivered = 0, from_wrong = 0;
  auto poll = [&]() {
    return inbox.poll(
        [&](uint32_t index, uint32_t, const uint8_t*, uint32_t) {
          ++delivered;
          from_wrong += index != kSender;
        },
        [&](uint32_t index) {
          std::printf("FAIL ring %u reported corrupt\n", index);
          std::exit(1);
        });
  };
  uint64_t polls = 0;
  // Nothing rang: only the sweeps look, each at the 63 sleeping rings.
  for (; polls < 2 * sm::kSweepEvery; ++polls) poll();
  CHECK(inbox.ring_polls() == 2 * (kRings - 1), "%llu ring polls in %llu silent polls, want %u (two sweeps)",
        static_cast<unsigned long long>(inbox.ring_polls()), static_cast<unsigned long long>(polls), 2 * (kRings - 1));
  uint8_t msg[16] = {1};
  CHECK(send(writer, 2, msg, sizeof msg) && mem.p[kSender] == 1, "the send did not ring the doorbell (bell %u)",
        mem.p[kSender]);
  uint64_t before = inbox.ring_polls();
  int n = poll();
  ++polls;
  CHECK(n == 1 && delivered == 1 && inbox.ring_polls() == before + 1 && inbox.awake_rings() == 1,
        "after one send: %d delivered, %llu ring polls for one poll(), %zu awake; want 1, 1, 1", n,
        static_cast<unsigned long long>(inbox.ring_polls() - before), inbox.awake_rings());
  // 63 silent senders: every poll looks at the one ring that rang.
  before = inbox.ring_polls();
  uint64_t sweeps = 0;
  for (int k = 0; k < 500; ++k, ++polls) {
    sweeps += (polls + 1) % sm::kSweepEvery == 0;
    send(writer, 2, msg, sizeof msg);
    poll();
  }
  CHECK(delivered == 501 && from_wrong == 0, "%llu delivered (%llu from silent rings), want 501",
        static_cast<unsigned long long>(delivered), static_cast<unsigned long long>(from_wrong));
  CHECK(inbox.ring_polls() - before == 500 + sweeps * (kRings - 2),
        "500 polls with one sender looked at %llu rings, want %llu (one each, and %llu sweeps of the 62 asleep)",
        static_cast<unsigned long long>(inbox.ring_polls() - before),
        static_cast<unsigned long long>(500 + sweeps * (kRings - 2)), static_cast<unsigned long long>(sweeps));
  // Idle: asleep after kIdlePolls empty polls, its bell cleared.
  for (uint32_t k = 0; k < sm::kIdlePolls; ++k, ++polls) poll();
  CHECK(inbox.awake_rings() == 0 && mem.p[kSender] == 0, "after %u empty polls: %zu awake, bell %u; want 0, 0",
        sm::kIdlePolls, inbox.awake_rings(), mem.p[kSender]);
  // A send rings it awake: delivered at the next poll.
  send(writer, 2, msg, sizeof msg);
  n = poll();
  ++polls;
  CHECK(n == 1 && mem.p[kSender] == 1, "a send to a sleeping ring: %d delivered at the next poll, bell %u", n,
        mem.p[kSender]);
  for (uint32_t k = 0; k < sm::kIdlePolls; ++k, ++polls) poll();
  // The race: a message whose sender saw the bell still set (cleared here
  // by hand after the send) waits for the sweep, and no longer.
  send(writer, 2, msg, sizeof msg);
  mem.p[kSender] = 0;
  uint64_t waited = 0;
  while (poll() == 0 && waited < 2 * sm::kSweepEvery) ++waited, ++polls;
  ++polls;
  CHECK(polls % sm::kSweepEvery == 0 && waited < sm::kSweepEvery,
        "a message behind a bell seen set was found after %llu polls (poll %llu), want at the next sweep",
        static_cast<unsigned long long>(waited), static_cast<unsigned long long>(polls));
}

void copy_pieces() {
  std::atomic<uint64_t> taken{0};
  // Alternating ends, one thread: front 0, back 6, front 1, back 5, ...
  std::vector<int64_t> got;
  for (int k = 0; k < 9; ++k) got.push_back(sm::claim_piece(taken, 7, k % 2 == 0));
  const int64_t expected[9] = {0, 6, 1, 5, 2, 4, 3, -1, -1};
  for (int k = 0; k < 9; ++k) CHECK(got[k] == expected[k], "claim %d: %lld, expected %lld", k, (long long)got[k],
                                    (long long)expected[k]);
  CHECK(taken.load() == (3ull << 32 | 4), "taken word %llx after 4 front and 3 back claims",
        (unsigned long long)taken.load());

  // A peer's garbage: more taken than there are pieces, or an absurd count.
  taken.store(uint64_t{5} << 32 | 9);
  CHECK(sm::claim_piece(taken, 8, true) == -1, "a corrupt word gave a front piece");
  CHECK(sm::claim_piece(taken, 8, false) == -1, "a corrupt word gave a back piece");
  taken.store(0);
  CHECK(sm::claim_piece(taken, uint64_t{1} << 33, false) == -1, "2^33 pieces accepted");

  // Two threads racing, as receiver and sender do.
  std::atomic<int> round{-1};
  std::atomic<int> done{0};
  std::vector<uint8_t> owner(64);
  const int rounds = 20000;
  int bad = 0, not_prefix = 0;
  std::thread back([&] {
    for (int r = 0; r < rounds; ++r) {
      while (round.load(std::memory_order_acquire) != r) {
      }
      uint64_t pieces = 1 + (uint64_t(r) * 7919) % 64;
      for (int64_t i; (i = sm::claim_piece(taken, pieces, false)) >= 0;) owner[size_t(i)] += 2;
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  });
  for (int r = 0; r < rounds; ++r) {
    uint64_t pieces = 1 + (uint64_t(r) * 7919) % 64;
    std::fill(owner.begin(), owner.end(), 0);
    taken.store(0, std::memory_order_relaxed);
    round.store(r, std::memory_order_release);
    for (int64_t i; (i = sm::claim_piece(taken, pieces, true)) >= 0;) owner[size_t(i)] += 1;
    while (done.load(std::memory_order_acquire) != r + 1) {
    }
    // Each piece exactly once; the front's pieces come first.
    bool seen_back = false;
    for (uint64_t i = 0; i < pieces; ++i) {
      bad += owner[i] != 1 && owner[i] != 2;
      if (owner[i] == 2) seen_back = true;
      else if (seen_back) ++not_prefix;
    }
  }
  back.join();
  CHECK(bad == 0, "%d pieces taken twice or never over %d racing rounds", bad, rounds);
  CHECK(not_prefix == 0, "%d front pieces after a back piece", not_prefix);
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::puts("btl/sm byte rings: packing 40-byte records, full at the layout's count, 20000 messages wrapping "
            "with stale record-like bytes, corrupt records refused, doorbells poll only the ring that rang, copy pieces from both ends");
  packing();
  full();
  wrap_and_stale_bytes();
  wrap_and_stale_bytes(8192, 1500);
  wrap_and_stale_bytes(8192, 1500, uint32_t(sm::kLine));  // AXON_BTL_SM_PACK=0
  corrupt();
  doorbells();
  copy_pieces();
  return unit::finish("sm_fastpath");
}
