// The segmented rendezvous protocols of src/pml/rndv.cpp (wire.h
// kRtsSegmented, kAmPutSegAck), driven by hand (rndv_fake.h): both sides of
// a segmented RGET and of a segmented RPUT.
#include <cstdio>

#include "rndv_fake.h"

namespace rndv_test {

// 5. Segmented RGET: four segments of 8192 (the last 1000 bytes), pieces of 4096.
void check_rget_segments() {
  std::puts("segmented RGET, 4 segments of 8192 (last 1000): segment 0 read and acked (index 0), segment 2's key "
            "arriving while segment 1 moves starts nothing, each segment under its own key, FIN after the last");
  const char* what = "rget segments";
  btl::Caps caps = rdma_caps(4096, 2);
  caps.expose_segment = 8192;
  FakeTransport& t = fresh(caps);
  const size_t seg = 8192, total = 3 * seg + 1000;
  const uint64_t keys[4] = {0x100, 0x101, 0x102, 0x103};
  auto remote = pattern(total, 5);
  std::vector<uint8_t> local(total, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, keys[0]);
  m.segment = seg;
  m.key1 = keys[1];
  auto acks = [&] {
    std::vector<uint64_t> v;
    for (const Control& c : controls)
      if (c.am == pml::kAmSegAck) v.push_back(c.as<pml::SegInfo>().index);
    return v;
  };
  pml::rndv_receive(r.get(), m, &t, total);
  CHECK(r->state == pml::kRecvSegments && r->seg_size == seg, "%s: state %d seg_size %llu", what, r->state,
        static_cast<unsigned long long>(r->seg_size));
  CHECK(t.posts.size() == 2, "%s: %zu posted at the start, want segment 0's 2 pieces", what, t.posts.size());
  check_piece(what, 0, false, remote, 0, 4096, keys[0]);
  check_piece(what, 1, false, remote, 4096, 4096, keys[0]);
  t.complete(1, kOk);
  CHECK(t.posts.size() == 2 && acks().empty(), "%s: segment 1 started or acked before segment 0 was read", what);
  t.complete(0, kOk);
  CHECK(acks() == std::vector<uint64_t>{0}, "%s: want exactly the ack of segment 0 now (%zu acks)", what,
        acks().size());
  const Control& ack0 = controls.back();
  auto info = ack0.as<pml::SegInfo>();
  CHECK(ack0.dest == kPeer && info.sender_request == kSenderRequest && info.receiver_request == pml::to_id(r.get()) &&
            info.key == total,
        "%s: ack 0 is to %d {%#llx, %#llx, %llu, %llu}", what, ack0.dest,
        static_cast<unsigned long long>(info.sender_request), static_cast<unsigned long long>(info.receiver_request),
        static_cast<unsigned long long>(info.index), static_cast<unsigned long long>(info.key));
  CHECK(t.posts.size() == 4 && t.in_flight == 2, "%s: segment 1 not started (%zu posted, %d in flight)", what,
        t.posts.size(), t.in_flight);
  check_piece(what, 2, false, remote, 8192, 4096, keys[1]);
  check_piece(what, 3, false, remote, 12288, 4096, keys[1]);
  t.complete(2, kOk);  // segment 1 still moving: one piece in flight
  pml::SegInfo key2{kSenderRequest, pml::to_id(r.get()), 2, keys[2]};
  pml::on_seg_key(kPeer, &key2, sizeof key2);
  CHECK(t.posts.size() == 4 && t.in_flight == 1 && t.attempts == 4,
        "%s: segment 2's key during segment 1 posted something (%zu posted, %d in flight, %d attempts)", what,
        t.posts.size(), t.in_flight, t.attempts);
  t.complete(3, kOk);
  CHECK(acks() == (std::vector<uint64_t>{0, 1}), "%s: want acks 0, 1 after segment 1", what);
  CHECK(t.posts.size() == 6, "%s: segment 2 not started after segment 1 (%zu posted)", what, t.posts.size());
  check_piece(what, 4, false, remote, 16384, 4096, keys[2]);
  check_piece(what, 5, false, remote, 20480, 4096, keys[2]);
  t.complete(5, kOk);
  t.complete(4, kOk);
  // Segment 3's key has not come: the receiver waits, nothing in flight.
  CHECK(acks() == (std::vector<uint64_t>{0, 1, 2}) && t.posts.size() == 6 && t.in_flight == 0 &&
            finished_recvs.empty(),
        "%s: after segment 2 want acks 0-2, nothing posted, no finish", what);
  pml::SegInfo key3{kSenderRequest, pml::to_id(r.get()), 3, keys[3]};
  pml::on_seg_key(kPeer, &key3, sizeof key3);
  CHECK(t.posts.size() == 7, "%s: segment 3's key did not start it (%zu posted)", what, t.posts.size());
  check_piece(what, 6, false, remote, 24576, 1000, keys[3]);
  CHECK(finished_recvs.empty(), "%s: finished before the last segment moved", what);
  t.complete(6, kOk);
  CHECK(acks() == (std::vector<uint64_t>{0, 1, 2}), "%s: the last segment was acked (%zu acks)", what,
        acks().size());
  CHECK(!t.keys_mixed && t.max_in_flight == 2, "%s: two segments moved at once (mixed %d, max in flight %d)", what,
        t.keys_mixed, t.max_in_flight);
  CHECK(local == remote, "%s: the received bytes differ", what);
  CHECK(r->error == MPI_SUCCESS, "%s: error %d", what, r->error);
  check_fin_and_finish(what, r.get());
  check_nothing_stalled(what);
}

// Why on_seg_key checks seg_moving: a key that reaches the receiver while
// a segment of the same slot (index % 2) is still moving must wait for it.
// In protocol order that cannot happen (segment k+2's key follows the ack of
// k, sent before k+1 starts: the other slot); here segment 2's key is fed
// while segment 0 moves, the one order in which starting at once would read
// segment 0 a second time under segment 2's key.
void check_rget_segment_key_early() {
  std::puts("segmented RGET, segment 2's key delivered while segment 0 still moves: kept, nothing posted, "
            "segment 2 later read under it");
  const char* what = "rget segment key early";
  btl::Caps caps = rdma_caps(0, 1);  // one operation per segment
  caps.expose_segment = 4096;
  FakeTransport& t = fresh(caps);
  const size_t total = 3 * 4096;
  auto remote = pattern(total, 9);
  std::vector<uint8_t> local(total, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x200);
  m.segment = 4096;
  m.key1 = 0x201;
  pml::rndv_receive(r.get(), m, &t, total);
  pml::SegInfo key2{kSenderRequest, pml::to_id(r.get()), 2, 0x202};
  pml::on_seg_key(kPeer, &key2, sizeof key2);
  CHECK(t.posts.size() == 1 && t.in_flight == 1, "%s: the early key posted something (%zu posted, %d in flight)",
        what, t.posts.size(), t.in_flight);
  t.complete(0, kOk);
  check_piece(what, 1, false, remote, 4096, 4096, 0x201);
  t.complete(1, kOk);
  check_piece(what, 2, false, remote, 8192, 4096, 0x202);
  t.complete(2, kOk);
  CHECK(t.posts.size() == 3 && t.max_in_flight == 1 && local == remote,
        "%s: %zu posted, at most %d in flight, data %s; want 3, 1, exact", what, t.posts.size(), t.max_in_flight,
        local == remote ? "exact" : "differs");
  check_fin_and_finish(what, r.get());
}

// The exposing side of a segmented RGET: the sender announces two segments
// and, on each ack, releases that one and exposes the one two further.
void check_rget_segment_sender() {
  std::puts("segmented RGET sender: RTS exposes segments 0 and 1; ack k releases k's key and exposes k+2 "
            "(kAmSegKey with its index and key) while k+2 lies within what the receiver reads");
  const char* what = "rget segment sender";
  btl::Caps caps = rdma_caps(4096, 2);
  caps.expose_segment = 8192;
  FakeTransport& t = fresh(caps);
  const size_t seg = 8192, total = 3 * seg + 1000;
  auto data = pattern(total, 10);
  auto s = send_request(data);
  pml::MatchHeader h{7, 0, 5, 0, total};
  CHECK(pml::rndv_send_rts(s.get(), &t, h) == kOk, "%s: rndv_send_rts failed", what);
  CHECK(t.sent_ams == std::vector<int>{pml::kAmRts} && s->state == pml::kSendWaitFin && s->seg_size == seg,
        "%s: want one kAmRts, state kSendWaitFin, seg_size %zu", what, seg);
  CHECK(t.exposed.size() == 2 && t.exposed[0].addr == data.data() && t.exposed[0].len == seg &&
            t.exposed[1].addr == data.data() + seg && t.exposed[1].len == seg,
        "%s: the RTS did not expose exactly segments 0 and 1 (%zu exposures)", what, t.exposed.size());
  const uint64_t key0 = t.exposed[0].key, key1 = t.exposed[1].key;
  pml::SegInfo ack0{pml::to_id(s.get()), kReceiverRequest, 0, total};
  pml::on_seg_ack(kPeer, &ack0, sizeof ack0);
  CHECK(t.unexposed.size() == 1 && t.unexposed[0].key == key0, "%s: ack 0 did not release segment 0's key", what);
  CHECK(t.exposed.size() == 3 && t.exposed[2].addr == data.data() + 2 * seg && t.exposed[2].len == seg,
        "%s: ack 0 did not expose segment 2", what);
  // Non-contiguous data is packed up to the end of segment 2 before it is exposed.
  CHECK(packs.size() == 1 && packs[0].r == s.get() && packs[0].end == 3 * seg && packs[0].exposures == 2,
        "%s: ack 0 packed %zu time(s) (want once, through byte %zu, before segment 2's exposure)", what,
        packs.size(), 3 * seg);
  CHECK(controls.size() == 1 && controls[0].am == pml::kAmSegKey && controls[0].dest == kPeer,
        "%s: want one kAmSegKey after ack 0 (%zu controls)", what, controls.size());
  if (controls.size() == 1) {
    auto key = controls[0].as<pml::SegInfo>();
    CHECK(key.index == 2 && key.key == t.exposed[2].key && key.sender_request == pml::to_id(s.get()) &&
              key.receiver_request == kReceiverRequest,
          "%s: kAmSegKey {index %llu, key %#llx}", what, static_cast<unsigned long long>(key.index),
          static_cast<unsigned long long>(key.key));
  }
  pml::SegInfo ack1{pml::to_id(s.get()), kReceiverRequest, 1, total};
  pml::on_seg_ack(kPeer, &ack1, sizeof ack1);
  CHECK(t.unexposed.size() == 2 && t.unexposed[1].key == key1 && t.exposed.size() == 4 &&
            t.exposed[3].addr == data.data() + 3 * seg && t.exposed[3].len == 1000,
        "%s: ack 1 did not release segment 1 and expose the 1000-byte segment 3", what);
  CHECK(packs.size() == 2 && packs[1].end == total && packs[1].exposures == 3,
        "%s: ack 1 did not pack through the end (byte %zu) before exposing segment 3", what, total);
  pml::SegInfo ack2{pml::to_id(s.get()), kReceiverRequest, 2, total};
  pml::on_seg_ack(kPeer, &ack2, sizeof ack2);
  CHECK(t.unexposed.size() == 3 && t.exposed.size() == 4 && controls.size() == 2,
        "%s: ack 2 exposed beyond the message (%zu exposures, %zu keys sent)", what, t.exposed.size(),
        controls.size());
  pml::release_exposure(s.get());  // at FIN: segment 3 is still exposed
  CHECK(t.unexposed.size() == 4 && t.unexposed[3].key == t.exposed[3].key && s->seg_keys[0] == 0 &&
            s->seg_keys[1] == 0,
        "%s: release_exposure left a key (%zu released)", what, t.unexposed.size());
}

// The moving side of a segmented RPUT: the sender writes the receiver's
// segments in order as their keys come and acknowledges each but the last
// (kAmPutSegAck, ids the other way round from kAmSegAck).
void check_rput_segments() {
  std::puts("segmented RPUT sender, 4 segments of 8192 (last 1000): writes segment 0, acks it (kAmPutSegAck "
            "{sender, receiver, 0, total}), segment 2's key during segment 1 starts nothing, PUT-FIN 0 after the last");
  const char* what = "rput segments";
  btl::Caps caps = rdma_caps(4096, 2);
  caps.can_get = false;
  caps.expose_segment = 8192;
  FakeTransport& t = fresh(caps);
  const size_t seg = 8192, total = 3 * seg + 1000;
  const uint64_t keys[4] = {0x300, 0x301, 0x302, 0x303};
  auto data = pattern(total, 11);
  std::vector<uint8_t> remote(total, 0);
  auto s = send_request(data);
  struct {
    pml::PutCtsInfo cts;
    pml::SegRtsInfo seg;
  } cts{{pml::to_id(s.get()), kReceiverRequest, address(remote), keys[0], total}, {seg, keys[1]}};
  auto acks = [&] {
    std::vector<uint64_t> v;
    for (const Control& c : controls)
      if (c.am == pml::kAmPutSegAck) {
        auto info = c.as<pml::SegInfo>();
        CHECK(c.dest == kPeer && info.sender_request == pml::to_id(s.get()) &&
                  info.receiver_request == kReceiverRequest && info.key == total,
              "%s: ack %llu is to %d {%#llx, %#llx, key %llu}", what, static_cast<unsigned long long>(info.index),
              c.dest, static_cast<unsigned long long>(info.sender_request),
              static_cast<unsigned long long>(info.receiver_request), static_cast<unsigned long long>(info.key));
        v.push_back(info.index);
      }
    return v;
  };
  pml::on_cts_put(kPeer, &cts, sizeof cts);
  CHECK(s->seg_size == seg && s->message_length == total, "%s: seg_size %llu, message_length %zu", what,
        static_cast<unsigned long long>(s->seg_size), s->message_length);
  CHECK(t.posts.size() == 2, "%s: %zu posted at the start, want segment 0's 2 pieces", what, t.posts.size());
  check_piece(what, 0, true, remote, 0, 4096, keys[0]);
  check_piece(what, 1, true, remote, 4096, 4096, keys[0]);
  t.complete(0, kOk);
  t.complete(1, kOk);
  CHECK(acks() == std::vector<uint64_t>{0} && t.posts.size() == 4, "%s: after segment 0 want ack 0 and segment 1 "
        "started (%zu acks, %zu posted)", what, acks().size(), t.posts.size());
  check_piece(what, 2, true, remote, 8192, 4096, keys[1]);
  check_piece(what, 3, true, remote, 12288, 4096, keys[1]);
  pml::SegInfo key2{pml::to_id(s.get()), kReceiverRequest, 2, keys[2]};
  pml::on_put_seg_key(kPeer, &key2, sizeof key2);
  CHECK(t.posts.size() == 4 && t.in_flight == 2, "%s: segment 2's key during segment 1 posted something", what);
  t.complete(3, kOk);
  t.complete(2, kOk);
  CHECK(acks() == (std::vector<uint64_t>{0, 1}) && t.posts.size() == 6, "%s: after segment 1 want acks 0, 1 and "
        "segment 2 started", what);
  check_piece(what, 4, true, remote, 16384, 4096, keys[2]);
  check_piece(what, 5, true, remote, 20480, 4096, keys[2]);
  t.complete(4, kOk);
  t.complete(5, kOk);
  CHECK(t.posts.size() == 6 && t.in_flight == 0 && controls.size() == 3, "%s: moved on without segment 3's key",
        what);
  pml::SegInfo key3{pml::to_id(s.get()), kReceiverRequest, 3, keys[3]};
  pml::on_put_seg_key(kPeer, &key3, sizeof key3);
  check_piece(what, 6, true, remote, 24576, 1000, keys[3]);
  CHECK(finished_sends.empty(), "%s: finished before the last segment moved", what);
  t.complete(6, kOk);
  CHECK(acks() == (std::vector<uint64_t>{0, 1, 2}), "%s: want acks 0-2 only (%zu acks)", what, acks().size());
  CHECK(!t.keys_mixed && t.max_in_flight == 2 && remote == data,
        "%s: segments overlapped (%d), at most %d in flight, data %s", what, t.keys_mixed, t.max_in_flight,
        remote == data ? "exact" : "differs");
  const Control& fin = controls.back();
  CHECK(controls.size() == 4 && fin.am == pml::kAmPutFin && fin.as<pml::ReplyInfo>().sender_request == 0 &&
            fin.as<pml::ReplyInfo>().receiver_request == kReceiverRequest,
        "%s: want PUT-FIN {0, receiver} last (%zu controls)", what, controls.size());
  CHECK(finished_sends.size() == 1 && finished_sends[0].r == s.get() && finished_sends[0].in_flight == 0 &&
            fin.tick < finished_sends[0].tick && s->error == MPI_SUCCESS && s->seg_keys[0] == 0 && s->seg_keys[1] == 0,
        "%s: finish_send ran %zu times, error %d", what, finished_sends.size(), s->error);
  CHECK(t.unexposed.empty(), "%s: the sender released the receiver's keys (%zu)", what, t.unexposed.size());
  check_nothing_stalled(what);
}

// The exposing side of a segmented RPUT: the receiver exposes two
// segments, then one more on each ack, and completes on PUT-FIN.
void check_rput_segment_receiver() {
  std::puts("segmented RPUT receiver: CTS-put carries segments 0 and 1; ack k releases k and exposes k+2 "
            "(kAmPutSegKey); PUT-FIN releases the rest and completes (PUT-FIN 1: MPI_ERR_OTHER)");
  for (unsigned failed = 0; failed < 2; ++failed) {
    const char* what = failed ? "rput segment receiver, PUT-FIN 1" : "rput segment receiver";
    btl::Caps caps = rdma_caps(4096, 2);
    caps.can_get = false;
    caps.expose_segment = 8192;
    FakeTransport& t = fresh(caps);
    const size_t seg = 8192, total = 3 * seg + 1000;
    std::vector<uint8_t> local(total, 0);
    auto r = recv_request(local);
    pml::Message m;
    std::vector<uint8_t> none;
    make_rts(m, none, 0);
    m.readable = false;
    CHECK(pml::rndv_receive(r.get(), m, &t, total), "%s: declined", what);
    CHECK(r->state == pml::kRecvWaitPut && r->seg_size == seg && t.posts.empty(), "%s: state %d seg_size %llu",
          what, r->state, static_cast<unsigned long long>(r->seg_size));
    CHECK(t.exposed.size() == 2 && t.exposed[0].addr == local.data() && t.exposed[0].len == seg &&
              t.exposed[1].addr == local.data() + seg && t.exposed[1].len == seg,
          "%s: want segments 0 and 1 exposed (%zu exposures)", what, t.exposed.size());
    CHECK(controls.size() == 1 && controls[0].am == pml::kAmCtsPut &&
              controls[0].bytes.size() == sizeof(pml::PutCtsInfo) + sizeof(pml::SegRtsInfo),
          "%s: want one CTS-put with segment info (%zu controls)", what, controls.size());
    if (controls.size() != 1 || t.exposed.size() != 2) continue;
    auto cts = controls[0].as<pml::PutCtsInfo>();
    pml::SegRtsInfo info{};
    std::memcpy(&info, controls[0].bytes.data() + sizeof cts, sizeof info);
    CHECK(cts.sender_request == kSenderRequest && cts.receiver_request == pml::to_id(r.get()) &&
              cts.address == address(local) && cts.key == t.exposed[0].key && cts.length == total &&
              info.segment == seg && info.key1 == t.exposed[1].key,
          "%s: CTS-put fields wrong", what);
    for (uint64_t k = 0; k < 3; ++k) {
      pml::SegInfo ack{kSenderRequest, pml::to_id(r.get()), k, total};
      pml::on_put_seg_ack(kPeer, &ack, sizeof ack);
      CHECK(t.unexposed.size() == k + 1 && t.unexposed.back().key == t.exposed[k].key,
            "%s: ack %llu did not release segment %llu's key", what, static_cast<unsigned long long>(k),
            static_cast<unsigned long long>(k));
    }
    CHECK(t.exposed.size() == 4 && t.exposed[2].addr == local.data() + 2 * seg && t.exposed[2].len == seg &&
              t.exposed[3].addr == local.data() + 3 * seg && t.exposed[3].len == 1000,
          "%s: want segments 2 and 3 (1000 bytes) exposed on acks 0 and 1 only (%zu exposures)", what,
          t.exposed.size());
    CHECK(controls.size() == 3 && controls[1].am == pml::kAmPutSegKey && controls[2].am == pml::kAmPutSegKey &&
              controls[1].as<pml::SegInfo>().index == 2 && controls[2].as<pml::SegInfo>().index == 3 &&
              t.exposed.size() == 4 && controls[1].as<pml::SegInfo>().key == t.exposed[2].key &&
              controls[2].as<pml::SegInfo>().key == t.exposed[3].key,
          "%s: want kAmPutSegKey for segments 2 and 3 with their keys (%zu controls)", what, controls.size());
    CHECK(finished_recvs.empty(), "%s: finished before PUT-FIN", what);
    pml::ReplyInfo fin{failed, pml::to_id(r.get())};
    pml::on_put_fin(kPeer, &fin, sizeof fin);
    CHECK(t.unexposed.size() == 4 && t.exposed.size() == 4 && t.unexposed[3].key == t.exposed[3].key,
          "%s: PUT-FIN did not release segment 3 (%zu released)", what, t.unexposed.size());
    CHECK(finished_recvs.size() == 1 && finished_recvs[0].r == r.get() &&
              r->error == (failed ? MPI_ERR_OTHER : MPI_SUCCESS),
          "%s: finish_recv ran %zu times, error %d", what, finished_recvs.size(), r->error);
  }
}

}  // namespace rndv_test
