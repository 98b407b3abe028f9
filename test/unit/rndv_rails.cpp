// Multi-rail striping of rendezvous pieces (src/pml/stripe.cpp, used by the
// transfer engine of src/pml/rndv.cpp), against the fake transport of
// rndv_fake.h given several rails: bytes split by the rails' weights, a
// full rail skipped without stalling the transfer, a rail that joins late
// taking its share rather than a burst; and pieces cut at the transport's
// alignment (Caps::rdma_align).
#include <cstdio>

#include "rndv_fake.h"

namespace rndv_test {
namespace {

// Completes every posted piece in posting order until the transfer posts
// no more; returns the bytes each rail carried.
std::vector<size_t> drain(FakeTransport& t) {
  std::vector<size_t> bytes(static_cast<size_t>(t.rail_count), 0);
  for (size_t i = 0; i < t.posts.size(); ++i) {
    if (!t.posts[i].done) t.complete(i, kOk);
  }
  for (const Post& p : t.posts) bytes[static_cast<size_t>(p.rail)] += p.len;
  return bytes;
}

}  // namespace

void check_rails_weighted() {
  std::puts("RGET 40000 bytes over 2 rails weighted 1000:3000, pieces of 1000, depth 4 per rail: rail 1 carries "
            "30000 bytes (+-1 piece), up to 8 in flight, exact data, one FIN, axon_pml_rail_pieces counts rail 1's");
  const char* what = "rails weighted";
  FakeTransport& t = fresh(rdma_caps(1000, 4));
  t.rail_count = 2;
  t.weights = {1000, 3000};
  uint64_t rail_pieces_before = counter_value("axon_pml_rail_pieces");
  auto remote = pattern(40000, 7);
  std::vector<uint8_t> local(40000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x91);
  CHECK(pml::rndv_receive(r.get(), m, &t, local.size()), "%s: rndv_receive declined a readable RTS", what);
  CHECK(t.posts.size() == 8, "%s: %zu pieces posted at the start, want 8 (depth 4 on each of 2 rails)", what,
        t.posts.size());
  std::vector<size_t> bytes = drain(t);
  CHECK(bytes[0] + bytes[1] == 40000, "%s: the rails carried %zu bytes, want 40000", what, bytes[0] + bytes[1]);
  CHECK(bytes[1] >= 29000 && bytes[1] <= 31000, "%s: rail 1 (weight 3000 of 4000) carried %zu bytes, want 30000+-1000",
        what, bytes[1]);
  CHECK(t.max_in_flight == 8, "%s: at most %d in flight, want 8", what, t.max_in_flight);
  CHECK(local == remote, "%s: the received bytes differ", what);
  uint64_t on_rail1 = 0;
  for (const Post& p : t.posts) on_rail1 += p.rail == 1;
  CHECK(counter_value("axon_pml_rail_pieces") - rail_pieces_before == on_rail1,
        "%s: axon_pml_rail_pieces rose by %llu, want %llu (the pieces on rail 1)", what,
        static_cast<unsigned long long>(counter_value("axon_pml_rail_pieces") - rail_pieces_before),
        static_cast<unsigned long long>(on_rail1));
  check_fin_and_finish(what, r.get());
  check_nothing_stalled(what);
}

void check_rails_full() {
  std::puts("RGET over 2 equal rails, rail 1's queue full: every piece goes on rail 0 with no stall; both full: "
            "the transfer stalls once and rndv_retry() finishes it when they drain");
  const char* what = "rails full";
  FakeTransport& t = fresh(rdma_caps(1000, 2));
  t.rail_count = 2;
  t.full_rails = 2u;
  uint64_t stalls_before = counter_value("axon_pml_rndv_stalls");
  auto remote = pattern(6000, 8);
  std::vector<uint8_t> local(6000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x92);
  CHECK(pml::rndv_receive(r.get(), m, &t, local.size()), "%s: rndv_receive declined a readable RTS", what);
  std::vector<size_t> bytes = drain(t);
  CHECK(bytes[0] == 6000 && bytes[1] == 0, "%s: rails carried %zu and %zu bytes, want 6000 and 0", what, bytes[0],
        bytes[1]);
  CHECK(t.refusals > 0, "%s: rail 1 was never tried", what);
  CHECK(counter_value("axon_pml_rndv_stalls") == stalls_before, "%s: a full rail 1 stalled the transfer", what);
  CHECK(local == remote, "%s: the received bytes differ", what);
  check_fin_and_finish(what, r.get());

  what = "rails both full";
  FakeTransport& u = fresh(rdma_caps(1000, 2));
  u.rail_count = 2;
  u.full_rails = 3u;
  stalls_before = counter_value("axon_pml_rndv_stalls");
  std::vector<uint8_t> local2(3000, 0);
  auto remote2 = pattern(3000, 9);
  auto r2 = recv_request(local2);
  make_rts(m, remote2, 0x93);
  CHECK(pml::rndv_receive(r2.get(), m, &u, local2.size()), "%s: rndv_receive declined a readable RTS", what);
  CHECK(u.posts.empty() && counter_value("axon_pml_rndv_stalls") == stalls_before + 1,
        "%s: %zu posted, stalls +%llu; want 0 and +1", what, u.posts.size(),
        static_cast<unsigned long long>(counter_value("axon_pml_rndv_stalls") - stalls_before));
  u.full_rails = 0;
  CHECK(pml::rndv_retry() == 1, "%s: rndv_retry() did not move the stalled transfer", what);
  drain(u);
  CHECK(local2 == remote2, "%s: the received bytes differ", what);
  check_fin_and_finish(what, r2.get());
  check_nothing_stalled(what);
}

void check_rails_join() {
  std::puts("RGET of 20 pieces: 4 go on the only rail, then a second equal rail joins: the next 8 pieces split "
            "4 and 4 (it starts level with the busy rail, no burst)");
  const char* what = "rails join";
  FakeTransport& t = fresh(rdma_caps(1000, 2));
  auto remote = pattern(20000, 10);
  std::vector<uint8_t> local(20000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x94);
  CHECK(pml::rndv_receive(r.get(), m, &t, local.size()), "%s: rndv_receive declined a readable RTS", what);
  for (size_t i = 0; i < 4; ++i) t.complete(i, kOk);  // posts 2..5 follow on rail 0
  t.rail_count = 2;                                   // the second rail's connection is up
  for (size_t i = 4; i < 12 && i < t.posts.size(); ++i) t.complete(i, kOk);
  int on_rail[2] = {0, 0};
  for (size_t i = 6; i < 14 && i < t.posts.size(); ++i) ++on_rail[t.posts[i].rail];
  CHECK(on_rail[0] == 4 && on_rail[1] == 4, "%s: pieces 6..13 went %d on rail 0 and %d on rail 1, want 4 and 4",
        what, on_rail[0], on_rail[1]);
  drain(t);
  CHECK(local == remote, "%s: the received bytes differ", what);
  check_fin_and_finish(what, r.get());
  check_nothing_stalled(what);
}

void check_pieces_aligned() {
  std::puts("RGET of 20000 bytes into a buffer 100 bytes past a 4 KiB boundary, max_rdma 4096, rdma_align 4096: "
            "every piece but the last ends on a 4 KiB boundary and is at most 4096 bytes, exact data");
  const char* what = "pieces aligned";
  btl::Caps caps = rdma_caps(4096, 2);
  caps.rdma_align = 4096;
  FakeTransport& t = fresh(caps);
  auto remote = pattern(20000, 11);
  std::vector<uint8_t> space(20000 + 2 * 4096, 0);
  uintptr_t base = (reinterpret_cast<uintptr_t>(space.data()) + 4095) & ~uintptr_t(4095);
  uint8_t* at = reinterpret_cast<uint8_t*>(base) + 100;
  auto r = std::make_unique<pml::Request>();
  r->kind = pml::Request::Kind::Recv;
  r->buffer = at;
  r->length = 20000;
  pml::Message m;
  make_rts(m, remote, 0x95);
  CHECK(pml::rndv_receive(r.get(), m, &t, 20000), "%s: rndv_receive declined a readable RTS", what);
  drain(t);
  size_t total = 0;
  for (size_t i = 0; i < t.posts.size(); ++i) {
    const Post& p = t.posts[i];
    bool last = i + 1 == t.posts.size();
    uintptr_t end = reinterpret_cast<uintptr_t>(p.local) + p.len;
    CHECK(p.local == at + total && p.len <= 4096 && (last || end % 4096 == 0),
          "%s: piece %zu at offset %lld, %zu bytes, ends %zu bytes past a 4 KiB boundary", what, i,
          static_cast<long long>(p.local - at), p.len, static_cast<size_t>(end % 4096));
    total += p.len;
  }
  CHECK(total == 20000 && t.posts.size() == 5, "%s: %zu pieces of %zu bytes in all, want 5 and 20000", what,
        t.posts.size(), total);
  CHECK(std::memcmp(at, remote.data(), 20000) == 0, "%s: the received bytes differ", what);
  check_fin_and_finish(what, r.get());
}

}  // namespace rndv_test
