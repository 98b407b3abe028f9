// Shared by the rendezvous unit tests (rndv_machine.cpp, rndv_segments.cpp):
// a fake transport and what the stand-ins of rndv_fake.cpp recorded.
//
// src/pml/rndv.cpp is compiled into the program against stand-ins for what
// it calls from the rest of the PML (send_control, send_reply, finish_recv,
// finish_send, send_data, recv_data, non_contiguous), from btl (route) and
// from accel (the pinned bounce buffer). Each stand-in records what it was
// asked to do. The fake transport records every get()/put() it is handed
// and answers kOk, or what the case scripted (kAgain, an error); the case
// then completes the posted operations in whatever order it wants by
// calling op->done itself, as a transport's progress() would, after copying
// the bytes between the "local" buffer and a "remote" one in this process.
// So every check is on exact bytes, exact messages and exact counts,
// without MPI_Init, a launcher or a second process.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "base/counter.h"
#include "base/status.h"
#include "pml/internal.h"
#include "unit_check.h"

namespace rndv_test {

namespace pml = axon::pml;
namespace btl = axon::btl;
using axon::kAgain;
using axon::kIoError;
using axon::kOk;

// A logical clock: every recorded event gets the next tick, so a case can
// check what happened before what.
inline int ticks = 0;

// One get()/put() the fake transport accepted.
struct Post {
  bool write = false;
  int peer = -1;
  uint8_t* local = nullptr;
  uint64_t remote = 0;
  uint64_t key = 0;
  size_t len = 0;
  btl::RdmaOp* op = nullptr;
  bool done = false;
  int rail = 0;  // op->rail when it was posted
};

class FakeTransport : public btl::Transport {
 public:
  explicit FakeTransport(const btl::Caps& caps) : caps_(caps) {}
  const char* name() const override { return "fake"; }
  const btl::Caps& caps() const override { return caps_; }
  bool reaches(int) const override { return true; }
  int send(int, int am_id, const void*, size_t, const void*, size_t) override {
    sent_ams.push_back(am_id);
    return kOk;
  }
  int progress() override { return 0; }
  int rails(int) const override { return rail_count; }
  uint32_t rail_weight(int, int rail) const override {
    return static_cast<size_t>(rail) < weights.size() ? weights[static_cast<size_t>(rail)] : 1;
  }
  uint64_t expose(int peer, const void* addr, size_t len) override { return record_expose(peer, addr, len); }
  uint64_t expose_writable(int peer, void* addr, size_t len) override { return record_expose(peer, addr, len); }
  void unexpose(int peer, uint64_t key) override { unexposed.push_back({peer, key}); }
  int get(int peer, void* local, uint64_t remote, uint64_t key, size_t len, btl::RdmaOp* op) override {
    return post(false, peer, static_cast<uint8_t*>(local), remote, key, len, op);
  }
  int put(int peer, const void* local, uint64_t remote, uint64_t key, size_t len, btl::RdmaOp* op) override {
    return post(true, peer, const_cast<uint8_t*>(static_cast<const uint8_t*>(local)), remote, key, len, op);
  }

  // Completes accepted post `i` as progress() would: on success the bytes
  // move first (remote addresses are plain pointers in this process).
  void complete(size_t i, int status) {
    CHECK(i < posts.size() && !posts[i].done, "post %zu completed but it was never posted or already completed",
          i);
    if (i >= posts.size() || posts[i].done) return;
    Post& p = posts[i];
    p.done = true;
    --in_flight;
    ++ticks;
    last_completion_tick = ticks;
    if (status == kOk && p.len) {
      void* remote = reinterpret_cast<void*>(p.remote);
      if (p.write) std::memcpy(remote, p.local, p.len);
      else std::memcpy(p.local, remote, p.len);
    }
    p.op->done(p.op, status);
  }

  std::deque<int> script;  // answers for the next get()/put() calls; none left: kOk
  int rail_count = 1;       // rails(): one unless the case says otherwise
  std::vector<uint32_t> weights;  // rail_weight() by rail; missing: 1
  unsigned full_rails = 0;  // bit k: a post on rail k answers kAgain (before the script)
  int refusals = 0;         // posts refused because their rail was in full_rails
  std::vector<Post> posts;  // accepted ones, in posting order
  int attempts = 0;         // calls to get()/put(), accepted or not
  int in_flight = 0;
  int max_in_flight = 0;
  bool keys_mixed = false;  // a post while a piece under another key was in flight
  int last_completion_tick = 0;
  std::vector<int> sent_ams;
  struct Exposure {
    int peer;
    const void* addr;
    size_t len;
    uint64_t key;
  };
  std::vector<Exposure> exposed;
  struct Unexposure {
    int peer;
    uint64_t key;
  };
  std::vector<Unexposure> unexposed;
  uint64_t next_key = 0x5000;

 private:
  int post(bool write, int peer, uint8_t* local, uint64_t remote, uint64_t key, size_t len, btl::RdmaOp* op) {
    ++attempts;
    CHECK(op->rail >= 0 && op->rail < rail_count, "a piece was posted on rail %d of %d", op->rail, rail_count);
    if (full_rails & (1u << op->rail)) {
      ++refusals;
      return kAgain;
    }
    int rc = kOk;
    if (!script.empty()) {
      rc = script.front();
      script.pop_front();
    }
    if (rc != kOk) return rc;
    for (const Post& p : posts)
      if (!p.done && p.key != key) keys_mixed = true;
    posts.push_back({write, peer, local, remote, key, len, op, false, op->rail});
    max_in_flight = std::max(max_in_flight, ++in_flight);
    return kOk;
  }
  uint64_t record_expose(int peer, const void* addr, size_t len) {
    exposed.push_back({peer, addr, len, next_key});
    return next_key++;
  }
  btl::Caps caps_;
};

// ---- what the stand-ins recorded ------------------------------------------------

struct Control {
  int dest;
  int am;
  std::vector<uint8_t> bytes;
  int tick;
  template <class T> T as() const {
    T v{};
    CHECK(bytes.size() >= sizeof v, "control message %d has %zu bytes, want at least %zu", am, bytes.size(),
          sizeof v);
    std::memcpy(&v, bytes.data(), std::min(bytes.size(), sizeof v));
    return v;
  }
};

struct Finish {
  pml::Request* r;
  int tick;
  int in_flight;  // the transport's operations still in flight at the call
};

// pack_send_through calls: the request, the byte packed up to, and how many
// exposures the transport had seen at the call.
struct Pack {
  pml::Request* r;
  size_t end;
  size_t exposures;
};
inline std::vector<Pack> packs;

inline std::unique_ptr<FakeTransport> transport;
// Every world rank a case names is routed to the fake transport.
inline constexpr size_t kFakeRanks = 64;
inline std::vector<Control> controls;
inline std::vector<Finish> finished_recvs;
inline std::vector<Finish> finished_sends;
inline bool receive_non_contiguous = false;
inline int pinned_frees = 0;

// A fresh transport and empty records for the next case.
inline FakeTransport& fresh(const btl::Caps& caps) {
  transport = std::make_unique<FakeTransport>(caps);
  btl::detail::routes.assign(kFakeRanks, transport.get());  // btl::route() reads it
  pml::reset_rails();  // the new transport may reuse the old one's address
  controls.clear();
  packs.clear();
  finished_recvs.clear();
  finished_sends.clear();
  receive_non_contiguous = false;
  pinned_frees = 0;
  return *transport;
}

inline btl::Caps rdma_caps(size_t max_rdma, int depth) {
  btl::Caps c;
  c.can_get = true;
  c.can_put = true;
  c.max_rdma = max_rdma;
  c.rdma_depth = depth;
  return c;
}

inline uint64_t counter_value(const char* name) {
  for (const axon::Counter* c : axon::Counter::all())
    if (std::strcmp(c->name(), name) == 0) return c->value();
  CHECK(false, "no counter named %s", name);
  return 0;
}

inline std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return v;
}

inline uint64_t address(const std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }

constexpr int kPeer = 3;
constexpr uint64_t kSenderRequest = 0xABCD0123;    // the sender's request id, as the RTS carried it
constexpr uint64_t kReceiverRequest = 0x7E570456;  // the receiver's, as a CTS-put carries it

// A matched RTS for `bytes` bytes at `remote`.
inline void make_rts(pml::Message& m, const std::vector<uint8_t>& remote, uint64_t key) {
  m.source_world = kPeer;
  m.am_id = pml::kAmRts;
  m.sender_request = kSenderRequest;
  m.address = address(remote);
  m.key = key;
  m.readable = true;
}

inline std::unique_ptr<pml::Request> recv_request(std::vector<uint8_t>& buffer) {
  auto r = std::make_unique<pml::Request>();
  r->kind = pml::Request::Kind::Recv;
  r->buffer = buffer.data();
  r->length = buffer.size();
  return r;
}

inline std::unique_ptr<pml::Request> send_request(const std::vector<uint8_t>& data) {
  auto r = std::make_unique<pml::Request>();
  r->kind = pml::Request::Kind::Send;
  r->buffer = const_cast<uint8_t*>(data.data());
  r->length = data.size();
  r->dest_world = kPeer;
  return r;
}

// Checks that the case ended with exactly one FIN to the sender for
// kSenderRequest and one finish_recv of `r`, the FIN before the finish and
// both after the transport's last completion with nothing in flight.
inline void check_fin_and_finish(const char* what, pml::Request* r) {
  int fins = 0;
  const Control* fin = nullptr;
  for (const Control& c : controls)
    if (c.am == pml::kAmFin) fin = &c, ++fins;
  CHECK(fins == 1, "%s: %d FIN messages, want 1", what, fins);
  CHECK(finished_recvs.size() == 1, "%s: finish_recv ran %zu times, want 1", what, finished_recvs.size());
  if (fins != 1 || finished_recvs.size() != 1) return;
  auto reply = fin->as<pml::ReplyInfo>();
  CHECK(fin->dest == kPeer, "%s: FIN went to %d, want %d", what, fin->dest, kPeer);
  CHECK(reply.sender_request == kSenderRequest, "%s: FIN carries request %#llx, want %#llx", what,
        static_cast<unsigned long long>(reply.sender_request), static_cast<unsigned long long>(kSenderRequest));
  CHECK(finished_recvs[0].r == r, "%s: finish_recv got another request", what);
  CHECK(fin->tick < finished_recvs[0].tick, "%s: finish_recv ran before the FIN was sent", what);
  CHECK(finished_recvs[0].in_flight == 0, "%s: finish_recv ran with %d operations in flight", what,
        finished_recvs[0].in_flight);
  CHECK(fin->tick > transport->last_completion_tick, "%s: FIN sent before the last completion", what);
}

inline void check_piece(const char* what, size_t i, bool write, const std::vector<uint8_t>& remote, size_t offset,
                 size_t len, uint64_t key) {
  CHECK(i < transport->posts.size(), "%s: piece %zu was never posted", what, i);
  if (i >= transport->posts.size()) return;
  const Post& p = transport->posts[i];
  CHECK(p.write == write && p.peer == kPeer && p.remote == address(remote) + offset && p.len == len && p.key == key,
        "%s: piece %zu is %s peer %d offset %lld len %zu key %#llx; want %s peer %d offset %zu len %zu key %#llx",
        what, i, p.write ? "put" : "get", p.peer, static_cast<long long>(p.remote - address(remote)), p.len,
        static_cast<unsigned long long>(p.key), write ? "put" : "get", kPeer, offset, len,
        static_cast<unsigned long long>(key));
}

inline void check_nothing_stalled(const char* what) {
  CHECK(pml::rndv_retry() == 0, "%s: a transfer was left stalled", what);
}

// The segmented cases (rndv_segments.cpp).
void check_rget_segments();
void check_rget_segment_key_early();
void check_rget_segment_sender();
void check_rput_segments();
void check_rput_segment_receiver();
// Multi-rail striping (rndv_rails.cpp).
void check_rails_weighted();
void check_rails_full();
void check_rails_join();
void check_pieces_aligned();

}  // namespace rndv_test
