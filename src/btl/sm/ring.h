// btl/sm: the byte rings and the doorbells (layout.h), without system calls,
// so test/unit and test/fuzz drive them on plain memory.
//
// A ring has one producer (the sender) and one consumer (the segment's
// owner). Records are packed back to back at 8-byte steps: a small message
// (8-byte record header, the pml's 16-byte short match header, a few payload
// bytes) takes 32 bytes, so consecutive small messages share a cache line. A record
// longer than a line starts on a line (a skip record fills the rest of the
// one before) and fills whole lines, so a large message costs the lines it
// needs and no more. With AXON_BTL_SM_PACK=0 every record fills whole lines.
// The producer publishes a record by storing its header word (release)
// after its bytes, the word where the next record will go reading 0
// already: the producer zeroes it when it lies in the record's last line;
// at a line's start the consumer zeroed it when it released that line a lap
// before (the producer zeroes it itself where that line lay inside a large
// record, which the consumer leaves). The consumer therefore only ever
// reads 0 (not yet) or a published word at its read position, whatever
// stale bytes lie there from the previous lap. The producer's write position stays in its own memory; the consumer's
// read position is in its own line (RingControl), read by the producer only
// when its cached copy says the ring is full, and written by the consumer
// once per batch (kReleaseBatch) or when it finds the ring empty.
//
// Doorbells: a receiver polls only the rings of senders that rang. A sender
// sets its doorbell byte in the receiver's segment when it finds it clear
// (a load that hits its cache while the bell stays set). The receiver
// clears the bell of a ring that stayed empty for kIdlePolls polls and stops
// polling it; a sender publishing at that very moment may read the bell
// before its record is visible (no fence on the sender's path: it would wait
// for the line to cross), so the receiver also looks at every sleeping ring
// once every kSweepEvery polls, and such a message waits at most that long.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "btl/sm/layout.h"

namespace axon::btl::sm {

constexpr uint32_t kIdlePolls = 1024;  // empty polls before a ring's bell is cleared
constexpr uint32_t kSweepEvery = 64;   // polls between looks at the sleeping rings
constexpr int kRingBudget = 32;        // records taken from one ring per poll
// Empty polls in a row after which a poll also asks for the lines after the
// read position (RingReader::prefetch): a ring that idles that long waits
// for one message (ping-pong), whose later lines then cross with its first;
// a ring that streams would pull lines its producer is writing.
constexpr uint32_t kPrefetchAfter = 16;

// Records longer than this leave the starts of their inner lines as they
// are (the consumer zeroes the first words of the other lines it took, see
// RingReader::release); shorter ones are zeroed line by line (tracking
// their inside cost the 64-byte message rate 20 %).
constexpr uint64_t kLargeRecord = 4 * kLine;

inline std::atomic_ref<uint64_t> word_at(uint8_t* p) { return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p)); }

// The producer's side of one ring.
class RingWriter {
 public:
  void attach(RingControl* control, uint64_t capacity, uint32_t step, uint8_t* doorbell) {
    control_ = control;
    data_ = reinterpret_cast<uint8_t*>(control + 1);
    capacity_ = capacity;
    step_ = step;
    doorbell_ = doorbell;
    interior_.assign((capacity / kLine + 63) / 64, 0);
  }
  // Room for a message of `length` bytes: where its bytes go, or nullptr
  // when the ring is full (nothing written).
  uint8_t* reserve(size_t length) {
    const uint64_t record = record_bytes(length, step_);
    const uint64_t at = tail_ & (capacity_ - 1);
    uint64_t gap = record <= kLine ? 0 : (kLine - (at & (kLine - 1))) & (kLine - 1);
    // The record and the next record's header word stay inside the ring.
    if (at + gap + record + kRecordHeader > capacity_) gap = capacity_ - at;
    const uint64_t need = gap + record + kRecordHeader;
    if (tail_ + need - head_seen_ > capacity_) [[unlikely]] {
      head_seen_ = control_->head.load(std::memory_order_acquire);
      if (tail_ + need - head_seen_ > capacity_) return nullptr;
    }
    if (gap) {
      const uint64_t start = (at + gap) & (capacity_ - 1);
      word_at(data_ + start).store(0, std::memory_order_relaxed);
      word_at(data_ + at).store(record_word(kSkipRecord, uint32_t(gap - kRecordHeader)), std::memory_order_release);
      mark_lines(at, gap, false);  // the consumer zeroes the lines of filler
      tail_ += gap;
    }
    return data_ + (tail_ & (capacity_ - 1)) + kRecordHeader;
  }
  // Hands the reserved message (`length` bytes, as reserved) to the consumer.
  // The word after it must read 0 before the header is visible: inside the
  // record's last line the producer zeroes it; at a line's start the
  // consumer zeroed it when it released that line a lap before
  // (RingReader::release), so no store leaves the record's own lines (with
  // x86's in-order stores, one into the next line held the header back
  // until that line came: 9-14 % of the 2-rank latency).
  void publish(uint32_t am_id, size_t length) {
    const uint64_t at = tail_ & (capacity_ - 1);
    const uint64_t record = record_bytes(length, step_);
    const uint64_t next = at + record;  // inside the ring (reserve)
    if ((next & (kLine - 1)) || is_interior(next)) word_at(data_ + next).store(0, std::memory_order_relaxed);
    // Which of this record's lines the consumer will zero: all but the
    // inside of a record of whole lines.
    if (record > kLargeRecord) [[unlikely]] {
      mark_lines(at, kLine, false);
      mark_lines(at + kLine, record - kLine, true);
    } else if (interior_[(at / kLine) >> 6] | interior_[((next - 1) / kLine) >> 6]) [[unlikely]] {
      mark_lines(at, record, false);
    }
    word_at(data_ + at).store(record_word(am_id, uint32_t(length)), std::memory_order_release);
    tail_ += record;
    std::atomic_ref<uint8_t> bell(*doorbell_);
    if (bell.load(std::memory_order_relaxed) == 0) [[unlikely]] bell.store(1, std::memory_order_relaxed);
  }
  uint64_t tail() const { return tail_; }
  // Nothing was ever written: the next message is the first (tail_ is read
  // by reserve() anyway, so asking costs no load).
  bool untouched() const { return tail_ == 0; }
  uint8_t* data() const { return data_; }
  uint64_t capacity() const { return capacity_; }

 private:
  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint8_t* doorbell_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t step_ = kPackedStep;
  uint64_t tail_ = 0;       // bytes written since the start
  uint64_t head_seen_ = 0;  // the consumer's position when last read
  // By line of the ring: set where the line's start lay inside a record of
  // whole lines when last written, which the consumer does not zero
  // (RingReader::take); publish zeroes such a successor word itself.
  std::vector<uint64_t> interior_;
  bool is_interior(uint64_t at) const {
    const uint64_t line = at / kLine;
    return (interior_[line >> 6] >> (line & 63)) & 1;
  }
  // Sets or clears the bits of the lines whose starts lie in [at, at + n).
  void mark_lines(uint64_t at, uint64_t n, bool interior) {
    uint64_t line = (at + kLine - 1) / kLine;
    const uint64_t end = (at + n + kLine - 1) / kLine;  // lines whose start is below at + n
    while (line < end) {  // a word of the bitmap at a time
      const uint64_t word = line >> 6, first = line & 63;
      const uint64_t count = std::min<uint64_t>(64 - first, end - line);
      const uint64_t mask = (count == 64 ? ~0ull : ((1ull << count) - 1)) << first;
      if (interior) interior_[word] |= mask;
      else interior_[word] &= ~mask;
      line += count;
    }
  }
};

// The consumer's side of one ring. Every length and position read from the
// ring is checked against the ring before use: a corrupt ring is reported
// (kCorrupt), never read outside.
class RingReader {
 public:
  static constexpr int kEmpty = 0, kMessage = 1, kCorrupt = -1;
  void attach(RingControl* control, uint64_t capacity, uint32_t step) {
    control_ = control;
    data_ = reinterpret_cast<uint8_t*>(control + 1);
    capacity_ = capacity;
    step_ = step;
  }
  // The next message: kMessage with its am id, bytes and length (valid until
  // take()), kEmpty, or kCorrupt.
  int next(uint32_t* am_id, const uint8_t** msg, uint32_t* length) {
    for (int skips = 0; skips < 4; ++skips) {
      const uint64_t at = head_ & (capacity_ - 1);
      const uint64_t word = word_at(data_ + at).load(std::memory_order_acquire);
      if (word == 0) return kEmpty;
      const uint32_t am = record_am(word), len = record_length(word);
      if ((word >> 48) != (kRecordValid >> 48)) [[unlikely]] return kCorrupt;
      if (am == kSkipRecord) {
        if (len % kRecordAlign || at + kRecordHeader + len > capacity_) return kCorrupt;
        head_ += kRecordHeader + len;
        continue;
      }
      if (len > capacity_ || at + record_bytes(len, step_) + kRecordHeader > capacity_) [[unlikely]] return kCorrupt;
      *am_id = am;
      *msg = data_ + at + kRecordHeader;
      *length = len;
      return kMessage;
    }
    return kEmpty;  // a run of filler: the rest on the next poll
  }
  // A record of whole lines: its first line's start is zeroed (with the
  // lines before it still to do), its inside is left (the producer knows it
  // and zeroes a successor word there itself): the consumer does not touch
  // every line a large message crossed (-13 to -30 % bandwidth at 4-32 KiB).
  void take(uint32_t length) {
    const uint64_t record = record_bytes(length, step_);
    if (record > kLargeRecord) [[unlikely]] {
      // Remembered, and zeroed at the release (a store into the line just
      // read, on every large message, cost the 64-byte rate 20 %).
      if (large_count_ == kLargeKept) zero_lines(head_);
      large_[large_count_++] = {head_, head_ + record};
    }
    head_ += record;
  }
  // Tells the producer what was taken, in whole lines, having zeroed the
  // first word of each line taken: a record that the producer will start at
  // a line's start a lap later then needs no store of its own to make its
  // predecessor's successor word read 0 (publish). `idle` (the ring was
  // found empty): now; otherwise only once kReleaseBatch bytes are taken,
  // so that the zeroing stores, which wait for their lines, stay out of the
  // way of the stores a handled message leads to (a reply).
  void release(bool idle = true) {
    const uint64_t upto = head_ & ~uint64_t(kLine - 1);
    if (upto == released_ || (!idle && upto - released_ < release_batch())) return;
    zero_lines(upto);
    control_->head.store(released_ = upto, std::memory_order_release);
  }
  static constexpr uint64_t kReleaseBatch = 2048;
  // (A quarter of a small ring: its producer must not wait for the batch.)
  uint64_t release_batch() const { return capacity_ / 4 < kReleaseBatch ? capacity_ / 4 : kReleaseBatch; }
  bool empty() { return word_at(data_ + (head_ & (capacity_ - 1))).load(std::memory_order_acquire) == 0; }
  // Asks for the lines after the read position while it is empty: a
  // message's later lines otherwise cross only once its handler reads them
  // (docs/performance.md, "One-way latency stepped up at 89 bytes").
  void prefetch() const {
    const uint8_t* p = data_ + (head_ & (capacity_ - 1));
    __builtin_prefetch(p + kLine);
    __builtin_prefetch(p + 2 * kLine);
  }
  uint64_t head() const { return head_; }

 private:
  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t step_ = kPackedStep;
  uint64_t head_ = 0;
  uint64_t released_ = 0;
  uint64_t zeroed_ = 0;  // line starts below it are zeroed or left on purpose (take)
  // Zeroes the first words of the lines from zeroed_ up to `upto`, but not
  // the inside of the large records taken (their first lines, yes).
  void zero_lines(uint64_t upto) {
    for (uint32_t i = 0; i < large_count_; ++i) {
      zero_plain(large_[i].first + kLine);
      zeroed_ = large_[i].second;
    }
    large_count_ = 0;
    zero_plain(upto);
  }
  void zero_plain(uint64_t upto) {
    for (; zeroed_ < upto; zeroed_ += kLine)
      word_at(data_ + (zeroed_ & (capacity_ - 1))).store(0, std::memory_order_relaxed);
  }
  static constexpr uint32_t kLargeKept = 32;
  std::pair<uint64_t, uint64_t> large_[kLargeKept];  // [start, end) of large records since the last zeroing
  uint32_t large_count_ = 0;
};

// A receiver's rings and doorbells: polls only the rings whose senders rang.
class Inbox {
 public:
  // `doorbells`: the segment's bells (doorbell_bytes(rings) of them); `me`:
  // our own index, which has no sender.
  void init(uint8_t* doorbells, uint32_t rings, uint32_t me) {
    bells_ = doorbells;
    readers_.assign(rings, RingReader{});
    idle_.assign(rings, 0);
    awake_.assign((rings + 7) / 8, 0);
    active_.clear();
    me_ = me;
  }
  RingReader& reader(uint32_t index) { return readers_[index]; }

  // Delivers what arrived: deliver(index, am_id, msg, length) per message,
  // corrupt(index) (which must not return) for a ring that breaks the
  // layout. Returns the number of messages delivered.
  template <class Deliver, class Corrupt> int poll(Deliver&& deliver, Corrupt&& corrupt) {
    // Senders that rang since we last looked (8 bells per word).
    for (size_t w = 0; w < awake_.size(); ++w) {
      uint64_t rang = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(bells_ + 8 * w))
                          .load(std::memory_order_acquire) & ~awake_[w];
      if (rang) [[unlikely]] wake_bells(w, rang);
    }
    if (++polls_ % kSweepEvery == 0) [[unlikely]] sweep();
    int handled = 0;
    for (size_t i = 0; i < active_.size();) {
      const uint32_t index = active_[i];
      const int n = drain(index, idle_[index] >= kPrefetchAfter, deliver, corrupt);
      if (n > 0) {
        idle_[index] = 0;
        handled += n;
      } else if (++idle_[index] >= kIdlePolls && sleep(index)) {
        active_[i] = active_.back();
        active_.pop_back();
        continue;
      }
      ++i;
    }
    return handled;
  }
  // Ring polls so far (each awake ring once per poll(), sleeping ones once per sweep).
  uint64_t ring_polls() const { return ring_polls_; }
  size_t awake_rings() const { return active_.size(); }

 private:
  template <class Deliver, class Corrupt> int drain(uint32_t index, bool idling, Deliver& deliver, Corrupt& corrupt) {
    RingReader& r = readers_[index];
    ++ring_polls_;
    int n = 0;
    for (; n < kRingBudget; ++n) {
      uint32_t am = 0, length = 0;
      const uint8_t* msg = nullptr;
      const int got = r.next(&am, &msg, &length);
      if (got == RingReader::kEmpty) break;
      if (got == RingReader::kCorrupt) [[unlikely]] corrupt(index);
      deliver(index, am, msg, length);
      r.take(length);
    }
    if (n == 0 && idling) r.prefetch();
    r.release(n == 0);
    return n;
  }
  bool is_awake(uint32_t index) const { return (awake_[index / 8] >> (8 * (index % 8)) & 0xff) != 0; }
  void wake(uint32_t index) {
    if (index == me_ || index >= readers_.size() || is_awake(index)) return;
    awake_[index / 8] |= 0xffull << (8 * (index % 8));
    idle_[index] = 0;
    active_.push_back(index);
  }
  void wake_bells(size_t word, uint64_t rang) {
    for (uint32_t b = 0; b < 8; ++b)
      if (rang >> (8 * b) & 0xff) wake(uint32_t(word * 8 + b));
  }
  // Clears the bell of an idle ring; false (the ring stays awake) when a
  // message came in meanwhile.
  bool sleep(uint32_t index) {
    std::atomic_ref<uint8_t> bell(bells_[index]);
    bell.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!readers_[index].empty()) {
      bell.store(1, std::memory_order_relaxed);
      idle_[index] = 0;
      return false;
    }
    awake_[index / 8] &= ~(0xffull << (8 * (index % 8)));
    return true;
  }
  void sweep() {
    for (uint32_t index = 0; index < readers_.size(); ++index) {
      if (index == me_ || is_awake(index)) continue;
      ++ring_polls_;
      if (!readers_[index].empty()) wake(index);
    }
  }

  uint8_t* bells_ = nullptr;
  std::vector<RingReader> readers_;  // by sender's local index
  std::vector<uint32_t> idle_;       // empty polls in a row, by index
  std::vector<uint64_t> awake_;      // 0xff in each awake ring's byte, 8 rings per word
  std::vector<uint32_t> active_;     // the awake rings
  uint32_t me_ = 0;
  uint64_t polls_ = 0;
  uint64_t ring_polls_ = 0;
};

}  // namespace axon::btl::sm
