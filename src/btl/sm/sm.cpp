// btl/sm: shared-memory transport between the ranks of one node.
//
// Each rank owns one segment holding an inbound byte ring per local sender,
// so every ring has a single producer and a single consumer and needs no
// atomic read-modify-write. Messages are packed back to back behind 8-byte
// record headers, and a receiver polls only the rings whose senders rang its
// doorbell (ring.h). docs/sm.md is the reference page.
//
// Large messages do not go through the rings: get() reads the sender's buffer
// directly with process_vm_readv (CMA), one copy. When the kernel forbids
// that (ptrace restrictions, containers), caps().can_get is false and the PML
// streams fragments through the rings instead.
//
// Segments are named <job shm prefix>.sm.<rank>.<random>, created
// exclusively with mode 0600 (base/shm_file.h), their names published
// through PMIx (key axon.btl.sm.<n>), mapped by the peers only after checking
// owner, mode and header, and unlinked as soon as every local peer has
// mapped them, so no file outlives start-up even if the job is killed
// afterwards.
#include "btl/sm/sm.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/param.h"
#include "base/shm_file.h"
#include "base/status.h"
#include "btl/sm/layout.h"
#include "btl/sm/ring.h"
#include "btl/sm/segment.h"
#include "rte/rte.h"

namespace axon::btl {

namespace {

using namespace axon::btl::sm;  // the segment's layout (layout.h)

// The PMIx key of the segment's name: "axon.btl.sm.<n>", n counting the
// transport's openings in this process (the runtime may be started again,
// sessions: a key of its own each time, since PMIx may answer a key it has
// read before from its cache). Every rank opens it as often as the others.
constexpr const char* kCardKey = "axon.btl.sm";
int openings = 0;

SizeParam eager_limit_param{"AXON_BTL_SM_EAGER_LIMIT", 0,
                            "Largest payload (bytes) sent through the shared-memory rings; larger "
                            "messages use single-copy rendezvous (0: 32 KiB with up to 8 ranks on the "
                            "node, 16 KiB up to 16, else 8 KiB)"};
IntParam slots_param{"AXON_BTL_SM_SLOTS", 0,
                     "Size of each per-sender shared-memory ring, in messages of the eager limit "
                     "(0: 16 MiB of rings per rank shared among its local senders, 64 KiB to 2 MiB "
                     "per ring)"};
BoolParam pack_param{"AXON_BTL_SM_PACK", true,
                     "Pack small messages back to back in the shared-memory rings (8-byte steps, "
                     "several per cache line); off, every message starts a cache line of its own"};
BoolParam cma_param{"AXON_BTL_SM_CMA", true,
                    "Use single-copy process_vm_readv (CMA) for large messages between local ranks"};
SizeParam cma_chunk_param{"AXON_BTL_SM_CMA_CHUNK", 128 * 1024,
                          "Bytes per piece when sender and receiver copy a large message together "
                          "(messages of at least four pieces)"};
constexpr uint64_t kMinSharedPieces = 4;
BoolParam cma_help_param{"AXON_BTL_SM_CMA_SENDER_HELPS", true,
                         "A waiting sender copies part of its large message into the receiver's "
                         "buffer while the receiver copies the rest (two cores moving one message)"};

Counter messages_sent{"axon_btl_sm_messages_sent", Counter::Class::Counter,
                      "Messages this rank put into the shared-memory rings (eager messages, fragments, "
                      "protocol replies)"};
Counter bytes_sent{"axon_btl_sm_bytes_sent", Counter::Class::Counter,
                   "Bytes (protocol headers included) this rank put into the shared-memory rings"};
Counter ring_full{"axon_btl_sm_ring_full", Counter::Class::Counter,
                  "Sends that found the peer's ring full and had to wait"};
Counter cma_bytes{"axon_btl_sm_cma_bytes", Counter::Class::Counter,
                  "Bytes this rank copied between processes with process_vm_readv/writev (single-copy "
                  "large messages; the sender's helping share included)"};
Counter cma_helped{"axon_btl_sm_cma_helped_bytes", Counter::Class::Counter,
                   "Bytes of its own large messages this rank, as the sender, wrote into the receiver "
                   "while the receiver read the rest (AXON_BTL_SM_CMA_SENDER_HELPS)"};

// Two overlapping moves of W bytes: any length from W to 2 W.
template <size_t W> inline void copy_overlapping(uint8_t* d, const uint8_t* s, size_t n) {
  uint8_t a[W], b[W];
  std::memcpy(a, s, W);
  std::memcpy(b, s + n - W, W);
  std::memcpy(d, a, W);
  std::memcpy(d + n - W, b, W);
}

// memcpy for the headers and small payloads of the message path: up to 32
// bytes inline, where a call into libc's memcpy and its size dispatch cost
// about 15 instructions per copy (two per message).
inline void copy_bytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (n > 32) std::memcpy(d, s, n);
  else if (n >= 16) copy_overlapping<16>(d, s, n);
  else if (n >= 8) copy_overlapping<8>(d, s, n);
  else if (n >= 4) copy_overlapping<4>(d, s, n);
  else
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
}

// Moves `len` bytes between this process and `pid`; `read` pulls from the
// peer, otherwise pushes to it. Returns false on failure.
bool cma_copy(pid_t pid, bool read, void* local, uint64_t remote, size_t len) {
  const size_t total = len;
  auto* p = static_cast<uint8_t*>(local);
  while (len > 0) {
    iovec l{p, len};
    iovec r{reinterpret_cast<void*>(remote), len};
    ssize_t n = read ? process_vm_readv(pid, &l, 1, &r, 1, 0) : process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    remote += static_cast<uint64_t>(n);
    len -= static_cast<size_t>(n);
  }
  cma_bytes.add(total);
  return true;
}


// Bytes of each per-sender ring: a power of two holding at least two of the
// largest messages (`largest_record` bytes each); by default the rank's
// rings share 16 MiB, between 64 KiB and 2 MiB each (2 MiB up to 8 ranks,
// 256 KiB at 64, 64 KiB from 256: docs/sm.md).
uint64_t ring_capacity(int local_ranks, uint64_t largest_record, int64_t slots) {
  uint64_t want = 0;
  if (slots > 0) {
    want = std::bit_ceil(uint64_t(std::max<int64_t>(slots, 2)) * largest_record + kRecordHeader);
  } else {
    want = std::bit_floor((uint64_t(16) << 20) / uint64_t(std::max(1, local_ranks - 1)));
    want = std::clamp<uint64_t>(want, 64 << 10, 2 << 20);
  }
  want = std::max(want, std::bit_ceil(2 * largest_record + kRecordHeader));
  return std::clamp<uint64_t>(want, kMinCapacity, kMaxCapacity);
}

class SharedMemoryTransport final : public Transport {
 public:
  int open() {
    const rte::Job& job = rte::job();
    size_t eager = static_cast<size_t>(eager_limit_param.get());
    if (eager == 0) eager = default_eager_limit(job.local_size);
    eager = std::clamp<size_t>(eager, 256, (kMaxCapacity >> 2) - kMaxHeader - 2 * kLine);
    step_ = pack_param.get() ? kPackedStep : uint32_t(kLine);
    const uint64_t largest_record = record_bytes(kMaxHeader + eager, kLine) + kLine;  // a line of filler before it, at most
    capacity_ = ring_capacity(job.local_size, largest_record, slots_param.get());
    nrings_ = static_cast<uint32_t>(job.local_size);
    caps_.eager_limit = eager;
    caps_.latency_ns = 200;
    caps_.bandwidth_mbs = 10000;

    size_t size = segment_bytes(nrings_, capacity_);
    std::string why;
    if (int err = own_.create(job.shm_prefix, "sm." + std::to_string(job.rank), size, &why)) {
      log::error("cannot create the shared-memory segment of this rank (%zu bytes): %s", size, why.c_str());
      return err;
    }
    auto* h = static_cast<SegmentHeader*>(own_.base());
    h->nrings = nrings_;
    h->record_step = step_;
    h->ring_capacity = capacity_;
    h->owner_pid = getpid();
    h->cma_probe = kCmaProbeValue;
    h->cma_probe_addr = reinterpret_cast<uint64_t>(&h->cma_probe);
    h->attached.store(0, std::memory_order_relaxed);
    h->magic.store(kSegmentMagic, std::memory_order_release);

    inbox_.init(doorbells_of(own_.base()), nrings_, uint32_t(job.local_rank));
    for (uint32_t i = 0; i < nrings_; ++i) inbox_.reader(i).attach(ring_of(own_.base(), nrings_, capacity_, i), capacity_, step_);
    if (job.rank == 0)
      log::debug(1, "sm: %zu bytes of shared memory per rank (%u rings of %llu bytes, eager limit %zu), %zu on "
                 "the node", size, nrings_, static_cast<unsigned long long>(capacity_), eager, size * nrings_);
    // Its name goes to the local peers through PMIx, and only there.
    card_key_ = std::string(kCardKey) + "." + std::to_string(openings++);
    return rte::publish(card_key_.c_str(), own_.name().data(), own_.name().size());
  }

  int connect_peers() override {
    const rte::Job& job = rte::job();
    local_index_.assign(job.size, -1);
    for (int i = 0; i < job.local_size; ++i) local_index_[job.local_peers[i]] = i;
    local_world_ = job.local_peers;
    segments_.resize(job.local_size);
    outbound_.resize(job.local_size);
    pids_.assign(job.local_size, 0);
    bool cma_ok = cma_param.get();
    for (int i = 0; i < job.local_size; ++i) {
      int peer = job.local_peers[i];
      if (peer == job.rank) continue;
      std::vector<uint8_t> card;
      std::string name, why;
      if (rte::lookup(peer, card_key_.c_str(), &card) != 0 ||
          !shm::parse_name(card.data(), card.size(), job.shm_prefix, &name)) {
        log::error("local rank %d published no usable name of its shared-memory segment", peer);
        return EINVAL;
      }
      if (int err = segments_[i].attach(name, sizeof(SegmentHeader), &why)) {
        log::error("cannot map the shared-memory segment of local rank %d: %s", peer, why.c_str());
        return err;
      }
      if (const char* wrong = check_segment(segments_[i].base(), segments_[i].size(), uint32_t(job.local_size),
                                            uint32_t(job.local_rank))) {
        log::error("the shared-memory segment of local rank %d (/dev/shm%s) cannot be used: %s", peer,
                   name.c_str(), wrong);
        return EINVAL;
      }
      auto* h = static_cast<SegmentHeader*>(segments_[i].base());
      outbound_[i].attach(ring_of(h, h->nrings, h->ring_capacity, uint32_t(job.local_rank)), h->ring_capacity,
                          h->record_step, doorbells_of(h) + job.local_rank);
      pids_[i] = h->owner_pid;
      if (cma_ok && !cma_works(h)) cma_ok = false;
      h->attached.fetch_add(1, std::memory_order_acq_rel);
    }
    caps_.can_get = cma_ok;
    caps_.ipc_peers = true;  // every peer of sm shares this node
    caps_.pack_send = true;
    // Helping needs process_vm_writev into each peer: probe it the same way.
    sender_helps_ = cma_ok && cma_help_param.get();
    chunk_ = std::max<uint64_t>(4096, static_cast<uint64_t>(cma_chunk_param.get()));
    for (int i = kCopyDescriptors - 1; i >= 0; --i) free_descriptors_.push_back(i);
    log::debug(1, "sm: %d local ranks, rings of %llu bytes, %s, single copy %s", job.local_size,
               static_cast<unsigned long long>(capacity_),
               step_ == kPackedStep ? "small messages packed" : "a line per message",
               cma_ok ? "by CMA" : "off (copy through rings)");
    // Unlink our segment once every local peer has mapped it.
    auto* mine = static_cast<SegmentHeader*>(own_.base());
    uint64_t deadline = now_ns() + 60ull * 1000000000ull;
    Backoff backoff(rte::job().oversubscribed ? 0 : 1000);
    while (mine->attached.load(std::memory_order_acquire) < uint32_t(job.local_size - 1)) {
      if (now_ns() > deadline) {
        log::error("local peers did not map the shared-memory segment within 60 s");
        return ETIMEDOUT;
      }
      backoff.idle();
    }
    own_.unlink();
    return 0;
  }

  const char* name() const override { return "sm"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int world_rank) const override {
    return world_rank != rte::job().rank && world_rank < int(local_index_.size()) &&
           local_index_[world_rank] >= 0;
  }

  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override {
    RingWriter& out = outbound_[local_index_[peer]];
    if (out.untouched()) [[unlikely]] map_in(out);
    const size_t length = header_len + payload_len;
    uint8_t* data = out.reserve(length);
    if (!data) [[unlikely]] return full();
    copy_bytes(data, header, header_len);
    if (payload_len) copy_bytes(data + header_len, payload, payload_len);
    publish(out, am_id, length);
    return kOk;
  }

  // As send(), packing the payload straight into the ring slot.
  int send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len, PackFn pack,
                  void* context) override {
    RingWriter& out = outbound_[local_index_[peer]];
    if (out.untouched()) [[unlikely]] map_in(out);
    const size_t length = header_len + payload_len;
    uint8_t* data = out.reserve(length);
    if (!data) return full();
    copy_bytes(data, header, header_len);
    if (payload_len) pack(context, data + header_len, payload_len);
    publish(out, am_id, length);
    return kOk;
  }

  uint64_t expose(int peer, const void* addr, size_t len) override {
    if (!caps_.can_get || !sender_helps_ || free_descriptors_.empty()) return 0;
    int index = free_descriptors_.back();
    free_descriptors_.pop_back();
    CopyDescriptor& d = descriptors_of(own_.base(), nrings_)[index];
    d.source_address = reinterpret_cast<uint64_t>(addr);
    d.length = len;
    d.failed.store(0, std::memory_order_relaxed);
    d.state.store(kCopyArmed, std::memory_order_release);
    armed_.push_back(index);
    armed_to_[index] = peer;
    armed_len_[index] = len;
    return static_cast<uint64_t>(index) + 1;
  }

  void unexpose(int, uint64_t key) override {
    if (!key) return;
    int index = static_cast<int>(key - 1);
    descriptors_of(own_.base(), nrings_)[index].state.store(kCopyFree, std::memory_order_release);
    std::erase(armed_, index);
    free_descriptors_.push_back(index);
  }

  int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) override {
    int li = local_index_[peer];
    pid_t pid = pids_[li];
    // An exchange (we have a large message out to this peer too): the peer
    // is busy reading ours, and splitting both copies into pieces that each
    // side races for cost 10-25% (2-rank bibw, 1 MiB ialltoall), so copy
    // alone, in one call.
    // Below four pieces the receiver reads alone too: at two pieces (256 KiB)
    // the sender came too late for its half often enough that the half moved
    // between the cores' caches (streaming 22 against 27 GB/s read alone);
    // from four, two cores win (1 MiB: 26 against 19 GB/s).
    if (!descriptor_key_ok(remote_key)) remote_key = 0;  // read alone
    if (remote_key == 0 || len < kMinSharedPieces * chunk_ || sending_to(peer)) {
      if (!cma_copy(pid, true, local, remote_addr, len)) {
        log::error("process_vm_readv from rank %d failed: %s", peer, strerror(errno));
        return kIoError;
      }
      done_.push(op, kOk);
      return kOk;
    }
    CopyDescriptor& d = descriptors_of(segments_[li].base(), nrings_)[remote_key - 1];
    d.dest_address = reinterpret_cast<uint64_t>(local);
    d.length = len;
    d.chunk = chunk_;
    d.receiver_pid = getpid();
    d.taken.store(0, std::memory_order_relaxed);
    d.bytes_done.store(0, std::memory_order_relaxed);
    d.state.store(kCopyJoined, std::memory_order_release);
    uint64_t pieces = (len + chunk_ - 1) / chunk_;
    for (int64_t i; (i = claim_piece(d.taken, pieces, true)) >= 0;) {
      uint64_t off = static_cast<uint64_t>(i) * chunk_;
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_, len - off));
      if (!cma_copy(pid, true, static_cast<uint8_t*>(local) + off, remote_addr + off, n)) {
        log::error("process_vm_readv from rank %d failed: %s", peer, strerror(errno));
        d.failed.store(1, std::memory_order_release);
        break;
      }
      d.bytes_done.fetch_add(n, std::memory_order_acq_rel);
    }
    // The sender may still be writing its last piece (and may have lost its
    // core to another rank when the node is oversubscribed): progress()
    // completes the read once it has, rather than this call waiting.
    joined_.push_back({op, &d, len});
    return kOk;
  }

  // Reads joined by the sender that wait for its last pieces: done when
  // every byte is in (or the sender failed).
  int finish_joined() {
    int n = 0;
    for (size_t i = 0; i < joined_.size();) {
      Joined& j = joined_[i];
      int status = j.descriptor->failed.load(std::memory_order_acquire)                  ? kIoError
                   : j.descriptor->bytes_done.load(std::memory_order_acquire) >= j.length ? kOk
                                                                                          : kAgain;
      if (status == kAgain) {
        ++i;
        continue;
      }
      done_.push(j.op, status);
      joined_[i] = joined_.back();
      joined_.pop_back();
      ++n;
    }
    return n;
  }

  // Whether one of our large messages to `peer` is announced and not done.
  bool sending_to(int peer) const {
    return std::any_of(armed_.begin(), armed_.end(), [&](int index) { return armed_to_[index] == peer; });
  }

  // Sender side: copy pieces of our armed messages that a receiver has joined.
  int help_copies() {
    int helped = 0;
    for (int index : armed_) {
      CopyDescriptor& d = descriptors_of(own_.base(), nrings_)[index];
      if (d.state.load(std::memory_order_acquire) != kCopyJoined) continue;
      // The receiver wrote length and chunk: never more than we exposed.
      uint64_t len = std::min<uint64_t>(d.length, armed_len_[index]), chunk = d.chunk;
      if (chunk == 0) {
        d.failed.store(1, std::memory_order_release);
        continue;
      }
      uint64_t pieces = (len + chunk - 1) / chunk;
      for (int64_t i; (i = claim_piece(d.taken, pieces, false)) >= 0;) {
        uint64_t off = static_cast<uint64_t>(i) * chunk;
        size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, len - off));
        if (!cma_copy(d.receiver_pid, false, reinterpret_cast<uint8_t*>(d.source_address + off),
                      d.dest_address + off, n)) {
          d.failed.store(1, std::memory_order_release);
          break;
        }
        d.bytes_done.fetch_add(n, std::memory_order_acq_rel);
        cma_helped.add(n);
        ++helped;
      }
    }
    return helped;
  }

  int progress() override {
    int handled = armed_.empty() ? 0 : help_copies();
    if (!joined_.empty()) finish_joined();
    handled += done_.run();
    handled += inbox_.poll(
        [this](uint32_t index, uint32_t am_id, const uint8_t* msg, uint32_t length) {
          handler(int(am_id))(local_world_[index], msg, length);
        },
        [this](uint32_t index) { corrupt_ring(local_world_[index]); });
    return handled;
  }

 private:
  static int full() {
    ring_full.add();
    return kAgain;
  }
  // The first message to a peer faults in the whole ring we write in its
  // segment with one call instead of a page fault per page during the
  // first lap (512 of them for a 2 MiB ring: a quarter of the first
  // thousand windows of a message-rate loop went to them). Only rings that
  // carry traffic take memory, as before; a kernel without
  // MADV_POPULATE_WRITE (before 5.14) faults page by page, as before.
  static void map_in(const RingWriter& out) {
#ifdef MADV_POPULATE_WRITE
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(out.data()) & ~(page - 1);
    const uintptr_t end = reinterpret_cast<uintptr_t>(out.data()) + out.capacity();
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
    (void)out;
#endif
  }

  static void publish(RingWriter& out, int am_id, size_t length) {
    out.publish(uint32_t(am_id), length);
    messages_sent.add();
    bytes_sent.add(length);
  }

  // A record no sender of this job writes (memory of the segment
  // overwritten): nothing after it in the ring can be trusted either.
  [[noreturn]] static void corrupt_ring(int peer) {
    char message[160];
    snprintf(message, sizeof message, "sm: the ring from rank %d holds a record that breaks its layout: the "
             "shared-memory ring is corrupt", peer);
    log::error("%s; ending the job", message);
    rte::abort_job(1, message);
  }

  bool cma_works(const SegmentHeader* h) const {
    uint64_t value = 0;
    iovec l{&value, sizeof value};
    iovec r{reinterpret_cast<void*>(h->cma_probe_addr), sizeof value};
    ssize_t n = process_vm_readv(h->owner_pid, &l, 1, &r, 1, 0);
    // Writing the same value back proves the other direction (a helping sender
    // writes into its receiver).
    if (n == sizeof value && value == kCmaProbeValue) n = process_vm_writev(h->owner_pid, &l, 1, &r, 1, 0);
    if (n != sizeof value || value != kCmaProbeValue) {
      log::debug(1, "sm: process_vm_readv not permitted (%s); large messages will be copied twice",
                 n < 0 ? strerror(errno) : "short read");
      return false;
    }
    return true;
  }

  Caps caps_;
  DoneQueue done_;  // reads finished, their callbacks due
  struct Joined {
    RdmaOp* op;
    CopyDescriptor* descriptor;  // in the sender's segment
    uint64_t length;
  };
  std::vector<Joined> joined_;
  bool sender_helps_ = false;
  uint64_t chunk_ = 128 * 1024;
  std::vector<int> free_descriptors_;  // our copy descriptors not in use
  std::vector<int> armed_;             // ours announced to a receiver
  int armed_to_[kCopyDescriptors] = {};  // by descriptor: the receiver's world rank
  uint64_t armed_len_[kCopyDescriptors] = {};  // by descriptor: the bytes exposed
  uint64_t capacity_ = 0;  // data bytes of each of our rings
  uint32_t step_ = kPackedStep;  // their record step (AXON_BTL_SM_PACK)
  uint32_t nrings_ = 0;
  std::string card_key_;
  SharedSegment own_;
  std::vector<SharedSegment> segments_;  // peers' segments, by local index
  std::vector<RingWriter> outbound_;     // by local index
  Inbox inbox_;                          // our rings, by sender's local index
  std::vector<int> local_world_;         // local index -> world rank
  std::vector<pid_t> pids_;              // by local index
  std::vector<int> local_index_;         // world rank -> local index, -1 if remote
};

}  // namespace

std::unique_ptr<Transport> open_sm(int* error) {
  *error = 0;
  if (rte::job().local_size < 2) return nullptr;
  auto sm = std::make_unique<SharedMemoryTransport>();
  if ((*error = sm->open()) != 0) return nullptr;
  return sm;
}

}  // namespace axon::btl
