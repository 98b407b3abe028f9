// The rendezvous state machines of src/pml/rndv.cpp, driven by hand
// (rndv_fake.h): whole-buffer RGET and RPUT, stalls, failures, transfers
// that post nothing. The segmented protocols are in rndv_segments.cpp.
#include <algorithm>
#include <cstdio>

#include "rndv_fake.h"

namespace rndv_test {
namespace {

// 1. RGET of a whole buffer: 10,000 bytes, pieces of 4096, two in flight,
// completed out of order.
void check_rget_whole() {
  std::puts("RGET 10000 bytes, max_rdma 4096, depth 2: 3 pieces, <= 2 in flight, out-of-order completion, "
            "exact data, one FIN with the sender's id, finish_recv once after the last piece");
  const char* what = "rget whole";
  FakeTransport& t = fresh(rdma_caps(4096, 2));
  auto remote = pattern(10000, 1);
  std::vector<uint8_t> local(10000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x77);
  CHECK(pml::rndv_receive(r.get(), m, &t, local.size()), "%s: rndv_receive declined a readable RTS", what);
  CHECK(r->state == pml::kRecvReading && r->bytes == 10000 && r->dest_world == kPeer &&
            r->remote_id == kSenderRequest,
        "%s: request state %d bytes %zu dest %d remote %#llx", what, r->state, r->bytes, r->dest_world,
        static_cast<unsigned long long>(r->remote_id));
  CHECK(t.posts.size() == 2 && t.in_flight == 2, "%s: %zu posted, %d in flight after the start; want 2 and 2", what,
        t.posts.size(), t.in_flight);
  check_piece(what, 0, false, remote, 0, 4096, 0x77);
  check_piece(what, 1, false, remote, 4096, 4096, 0x77);
  CHECK(t.posts[0].local == local.data() && t.posts[1].local == local.data() + 4096,
        "%s: the pieces read into the wrong place", what);
  t.complete(1, kOk);  // the second piece first
  CHECK(t.posts.size() == 3 && t.in_flight == 2, "%s: after one completion %zu posted, %d in flight; want 3 and 2",
        what, t.posts.size(), t.in_flight);
  check_piece(what, 2, false, remote, 8192, 1808, 0x77);
  t.complete(2, kOk);
  CHECK(controls.empty() && finished_recvs.empty(), "%s: FIN or finish with the first piece still in flight", what);
  t.complete(0, kOk);
  CHECK(t.posts.size() == 3 && t.attempts == 3 && t.max_in_flight == 2,
        "%s: %zu pieces posted (%d attempts), at most %d in flight; want 3, 3, 2", what, t.posts.size(), t.attempts,
        t.max_in_flight);
  CHECK(local == remote, "%s: the received bytes differ", what);
  CHECK(r->error == MPI_SUCCESS, "%s: error %d, want MPI_SUCCESS", what, r->error);
  CHECK(controls.size() == 1, "%s: %zu control messages, want only the FIN", what, controls.size());
  check_fin_and_finish(what, r.get());
  check_nothing_stalled(what);
}

// 2. The transport's queue is full for the second piece.
void check_rget_stall() {
  std::puts("RGET, the 2nd piece refused with kAgain: the transfer stalls (axon_pml_rndv_stalls +1 per refusal), "
            "rndv_retry() posts it, the FIN waits for the retry");
  const char* what = "rget stall";
  FakeTransport& t = fresh(rdma_caps(4096, 2));
  auto remote = pattern(10000, 2);
  std::vector<uint8_t> local(10000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x78);
  const uint64_t stalls = counter_value("axon_pml_rndv_stalls");
  t.script = {kOk, kAgain};
  pml::rndv_receive(r.get(), m, &t, local.size());
  CHECK(t.attempts == 2 && t.posts.size() == 1 && t.in_flight == 1,
        "%s: %d attempts, %zu posted, %d in flight; want 2, 1, 1", what, t.attempts, t.posts.size(), t.in_flight);
  CHECK(counter_value("axon_pml_rndv_stalls") == stalls + 1, "%s: stalls counter %llu, want %llu", what,
        static_cast<unsigned long long>(counter_value("axon_pml_rndv_stalls")),
        static_cast<unsigned long long>(stalls + 1));
  // Still full at the first retry: nothing moves, the stall counts again.
  t.script = {kAgain};
  CHECK(pml::rndv_retry() == 0, "%s: a retry into a full queue reported progress", what);
  CHECK(t.attempts == 3 && t.posts.size() == 1, "%s: %d attempts, %zu posted after a refused retry; want 3, 1",
        what, t.attempts, t.posts.size());
  CHECK(counter_value("axon_pml_rndv_stalls") == stalls + 2, "%s: stalls counter %llu after a refused retry, want %llu",
        what, static_cast<unsigned long long>(counter_value("axon_pml_rndv_stalls")),
        static_cast<unsigned long long>(stalls + 2));
  // Room again: the retry posts the second piece (the third waits for depth).
  CHECK(pml::rndv_retry() == 1, "%s: the retry with room did not report one transfer moved", what);
  CHECK(t.posts.size() == 2 && t.in_flight == 2, "%s: after the retry %zu posted, %d in flight; want 2, 2", what,
        t.posts.size(), t.in_flight);
  check_piece(what, 1, false, remote, 4096, 4096, 0x78);
  t.complete(0, kOk);
  check_piece(what, 2, false, remote, 8192, 1808, 0x78);
  t.complete(2, kOk);
  t.complete(1, kOk);
  CHECK(local == remote, "%s: the received bytes differ", what);
  CHECK(r->error == MPI_SUCCESS, "%s: error %d", what, r->error);
  check_fin_and_finish(what, r.get());
  CHECK(counter_value("axon_pml_rndv_stalls") == stalls + 2, "%s: stalls counter moved without a refusal", what);

  // Every piece completes while the transfer is still queued as stalled
  // (posted from a completion): the FIN waits for rndv_retry().
  std::puts("RGET, stalled then completed from progress: the continuation runs from rndv_retry(), once");
  what = "rget stall, done before the retry";
  FakeTransport& t2 = fresh(rdma_caps(4096, 2));
  std::fill(local.begin(), local.end(), 0);
  auto r2 = recv_request(local);
  t2.script = {kOk, kAgain};
  pml::rndv_receive(r2.get(), m, &t2, local.size());
  t2.complete(0, kOk);  // posts pieces 2 and 3 from the completion
  CHECK(t2.posts.size() == 3, "%s: %zu posted after the completion, want 3", what, t2.posts.size());
  t2.complete(1, kOk);
  t2.complete(2, kOk);
  CHECK(controls.empty() && finished_recvs.empty(), "%s: FIN or finish before rndv_retry()", what);
  CHECK(pml::rndv_retry() == 1, "%s: rndv_retry() did not report the transfer moved", what);
  CHECK(local == remote, "%s: the received bytes differ", what);
  check_fin_and_finish(what, r2.get());
  check_nothing_stalled(what);
}

// 3. A piece fails while another is in flight.
void check_rget_failure() {
  std::puts("RGET, a piece completes with an error: MPI_ERR_OTHER, no further piece, the other in-flight piece "
            "drains before the FIN, FIN still sent, finish_recv once");
  const char* what = "rget failure";
  FakeTransport& t = fresh(rdma_caps(4096, 2));
  auto remote = pattern(10000, 3);
  std::vector<uint8_t> local(10000, 0);
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x79);
  pml::rndv_receive(r.get(), m, &t, local.size());
  t.complete(0, kIoError);
  CHECK(t.posts.size() == 2 && t.in_flight == 1, "%s: after the failure %zu posted, %d in flight; want 2, 1", what,
        t.posts.size(), t.in_flight);
  CHECK(controls.empty() && finished_recvs.empty(), "%s: FIN or finish with a piece still in flight", what);
  t.complete(1, kOk);
  CHECK(t.posts.size() == 2 && t.attempts == 2, "%s: %zu posted (%d attempts) in all, want 2", what, t.posts.size(),
        t.attempts);
  CHECK(r->error == MPI_ERR_OTHER, "%s: error %d, want MPI_ERR_OTHER (%d)", what, r->error, MPI_ERR_OTHER);
  check_fin_and_finish(what, r.get());

  std::puts("RGET, the 2nd piece refused with an error at post: the first drains, then FIN, MPI_ERR_OTHER");
  what = "rget error at the 2nd post";
  FakeTransport& t2 = fresh(rdma_caps(4096, 2));
  auto r2 = recv_request(local);
  t2.script = {kOk, kIoError};
  pml::rndv_receive(r2.get(), m, &t2, local.size());
  CHECK(t2.posts.size() == 1 && t2.attempts == 2 && finished_recvs.empty(),
        "%s: %zu posted, %d attempts, %zu finished; want 1, 2, 0", what, t2.posts.size(), t2.attempts,
        finished_recvs.size());
  t2.complete(0, kOk);
  CHECK(t2.attempts == 2, "%s: %d attempts after the error, want 2 (nothing more posted)", what, t2.attempts);
  CHECK(r2->error == MPI_ERR_OTHER, "%s: error %d, want MPI_ERR_OTHER", what, r2->error);
  check_fin_and_finish(what, r2.get());
  check_nothing_stalled(what);
}

// 4. RPUT: the receiver exposed its buffer (CTS-put); the sender writes it.
void check_rput() {
  std::puts("RPUT on_cts_put: the RTS exposure released, puts of 4096 into the receiver's buffer, exact bytes, "
            "PUT-FIN {0, receiver id}, finish_send once");
  const char* what = "rput";
  FakeTransport& t = fresh(rdma_caps(4096, 2));
  auto data = pattern(10000, 4);
  std::vector<uint8_t> remote(10000, 0);
  auto r = send_request(data);
  r->exposed_key = 0x4242;  // what rndv_send_rts exposed for a read that will not come
  pml::PutCtsInfo cts{pml::to_id(r.get()), kReceiverRequest, address(remote), 0x99, remote.size()};
  pml::on_cts_put(kPeer, &cts, sizeof cts);
  CHECK(t.unexposed.size() == 1 && t.unexposed[0].peer == kPeer && t.unexposed[0].key == 0x4242 &&
            r->exposed_key == 0,
        "%s: the RTS exposure was not released once (%zu unexposes)", what, t.unexposed.size());
  CHECK(t.posts.size() == 2 && t.in_flight == 2, "%s: %zu posted, %d in flight; want 2, 2", what, t.posts.size(),
        t.in_flight);
  check_piece(what, 0, true, remote, 0, 4096, 0x99);
  check_piece(what, 1, true, remote, 4096, 4096, 0x99);
  t.complete(0, kOk);
  check_piece(what, 2, true, remote, 8192, 1808, 0x99);
  t.complete(2, kOk);
  CHECK(controls.empty() && finished_sends.empty(), "%s: PUT-FIN or finish with a piece in flight", what);
  t.complete(1, kOk);
  CHECK(remote == data, "%s: the written bytes differ", what);
  CHECK(t.max_in_flight == 2 && t.posts.size() == 3, "%s: %zu posted, at most %d in flight", what, t.posts.size(),
        t.max_in_flight);
  CHECK(controls.size() == 1 && controls[0].am == pml::kAmPutFin && controls[0].dest == kPeer,
        "%s: want exactly one PUT-FIN to the receiver (%zu controls)", what, controls.size());
  if (!controls.empty()) {
    auto fin = controls[0].as<pml::ReplyInfo>();
    CHECK(fin.sender_request == 0 && fin.receiver_request == kReceiverRequest,
          "%s: PUT-FIN {%llu, %#llx}, want {0, %#llx}", what, static_cast<unsigned long long>(fin.sender_request),
          static_cast<unsigned long long>(fin.receiver_request), static_cast<unsigned long long>(kReceiverRequest));
  }
  CHECK(finished_sends.size() == 1 && finished_sends[0].r == r.get() && finished_sends[0].in_flight == 0 &&
            r->error == MPI_SUCCESS,
        "%s: finish_send ran %zu times, error %d", what, finished_sends.size(), r->error);

  std::puts("RPUT into a receive buffer shorter than the message (6000 of 10000): only 6000 bytes written");
  what = "rput short receive";
  FakeTransport& t2 = fresh(rdma_caps(4096, 2));
  std::fill(remote.begin(), remote.end(), 0xEE);
  auto r2 = send_request(data);
  pml::PutCtsInfo short_cts{pml::to_id(r2.get()), kReceiverRequest, address(remote), 0x9A, 6000};
  pml::on_cts_put(kPeer, &short_cts, sizeof short_cts);
  CHECK(t2.posts.size() == 2, "%s: %zu posted, want 2", what, t2.posts.size());
  check_piece(what, 1, true, remote, 4096, 1904, 0x9A);
  t2.complete(1, kOk);
  t2.complete(0, kOk);
  CHECK(std::equal(data.begin(), data.begin() + 6000, remote.begin()) &&
            std::all_of(remote.begin() + 6000, remote.end(), [](uint8_t b) { return b == 0xEE; }),
        "%s: wrong bytes written", what);
  CHECK(finished_sends.size() == 1 && controls.size() == 1 && controls[0].as<pml::ReplyInfo>().sender_request == 0,
        "%s: want one finish_send and one PUT-FIN 0", what);

  std::puts("RPUT, a put fails: the other drains, PUT-FIN {1, receiver id}, MPI_ERR_OTHER, finish_send once");
  what = "rput failure";
  FakeTransport& t3 = fresh(rdma_caps(4096, 2));
  auto r3 = send_request(data);
  pml::PutCtsInfo cts3{pml::to_id(r3.get()), kReceiverRequest, address(remote), 0x9B, remote.size()};
  pml::on_cts_put(kPeer, &cts3, sizeof cts3);
  t3.complete(1, kIoError);
  CHECK(t3.posts.size() == 2 && controls.empty() && finished_sends.empty(),
        "%s: %zu posted, %zu controls, %zu finished with a put still in flight; want 2, 0, 0", what,
        t3.posts.size(), controls.size(), finished_sends.size());
  t3.complete(0, kOk);
  CHECK(controls.size() == 1 && controls[0].am == pml::kAmPutFin, "%s: want one PUT-FIN (%zu controls)", what,
        controls.size());
  if (!controls.empty()) {
    auto fin = controls[0].as<pml::ReplyInfo>();
    CHECK(fin.sender_request == 1 && fin.receiver_request == kReceiverRequest,
          "%s: PUT-FIN {%llu, %#llx}, want {1, %#llx}", what, static_cast<unsigned long long>(fin.sender_request),
          static_cast<unsigned long long>(fin.receiver_request), static_cast<unsigned long long>(kReceiverRequest));
    CHECK(controls[0].tick > t3.last_completion_tick, "%s: PUT-FIN before the last completion", what);
  }
  CHECK(finished_sends.size() == 1 && finished_sends[0].in_flight == 0 && r3->error == MPI_ERR_OTHER,
        "%s: finish_send ran %zu times, error %d (want 1, MPI_ERR_OTHER)", what, finished_sends.size(), r3->error);
  check_nothing_stalled(what);
}

// 6. Transfers that post nothing.
void check_nothing_posted() {
  std::puts("zero-length RGET and RPUT: no get/put called, FIN / PUT-FIN 0 and finish at once");
  const char* what = "rget zero";
  FakeTransport& t = fresh(rdma_caps(4096, 2));
  std::vector<uint8_t> remote;
  std::vector<uint8_t> local;
  auto r = recv_request(local);
  pml::Message m;
  make_rts(m, remote, 0x7A);
  CHECK(pml::rndv_receive(r.get(), m, &t, 0), "%s: declined", what);
  CHECK(t.attempts == 0 && r->error == MPI_SUCCESS && r->bytes == 0, "%s: %d attempts, error %d, bytes %zu", what,
        t.attempts, r->error, r->bytes);
  check_fin_and_finish(what, r.get());

  what = "rput zero";
  FakeTransport& t2 = fresh(rdma_caps(4096, 2));
  auto data = pattern(100, 6);
  auto s = send_request(data);
  pml::PutCtsInfo cts{pml::to_id(s.get()), kReceiverRequest, 0, 0, 0};
  pml::on_cts_put(kPeer, &cts, sizeof cts);
  CHECK(t2.attempts == 0 && finished_sends.size() == 1 && controls.size() == 1 &&
            controls[0].am == pml::kAmPutFin && controls[0].as<pml::ReplyInfo>().sender_request == 0,
        "%s: %d attempts, %zu finished, %zu controls; want 0, 1, 1 PUT-FIN 0", what, t2.attempts,
        finished_sends.size(), controls.size());

  std::puts("RGET and RPUT whose first post fails: nothing in flight, FIN / PUT-FIN 1, MPI_ERR_OTHER, finish once");
  what = "rget error at post";
  FakeTransport& t3 = fresh(rdma_caps(4096, 2));
  remote = pattern(10000, 7);
  local.assign(10000, 0);
  auto r3 = recv_request(local);
  make_rts(m, remote, 0x7B);
  t3.script = {kIoError};
  pml::rndv_receive(r3.get(), m, &t3, local.size());
  CHECK(t3.attempts == 1 && t3.posts.empty() && r3->error == MPI_ERR_OTHER,
        "%s: %d attempts, %zu posted, error %d; want 1, 0, MPI_ERR_OTHER", what, t3.attempts, t3.posts.size(),
        r3->error);
  check_fin_and_finish(what, r3.get());

  what = "rput error at post";
  FakeTransport& t4 = fresh(rdma_caps(4096, 2));
  auto s4 = send_request(data);
  std::vector<uint8_t> target(100, 0);
  pml::PutCtsInfo cts4{pml::to_id(s4.get()), kReceiverRequest, address(target), 0x9C, target.size()};
  t4.script = {kIoError};
  pml::on_cts_put(kPeer, &cts4, sizeof cts4);
  CHECK(t4.attempts == 1 && t4.posts.empty() && finished_sends.size() == 1 && s4->error == MPI_ERR_OTHER &&
            controls.size() == 1 && controls[0].as<pml::ReplyInfo>().sender_request == 1,
        "%s: %d attempts, %zu posted, %zu finished, error %d; want 1, 0, 1, MPI_ERR_OTHER with PUT-FIN 1", what,
        t4.attempts, t4.posts.size(), finished_sends.size(), s4->error);
  check_nothing_stalled(what);
}

// A GPU receive of a host message: one read into a pinned buffer, copied up.
void check_rget_bounce() {
  std::puts("RGET into a device buffer: read into a pinned bounce buffer, copied up, bounce freed, FIN, finish");
  const char* what = "rget bounce";
  FakeTransport& t = fresh(rdma_caps(0, 1));  // max_rdma 0: one operation for the whole range
  auto remote = pattern(5000, 8);
  std::vector<uint8_t> device(5000, 0);
  auto r = recv_request(device);
  r->device = pml::kDeviceBuffer;
  pml::Message m;
  make_rts(m, remote, 0x7C);
  pml::rndv_receive(r.get(), m, &t, device.size());
  CHECK(t.posts.size() == 1 && t.posts[0].len == 5000 && t.posts[0].local != device.data(),
        "%s: want one 5000-byte read into a bounce buffer (%zu posted)", what, t.posts.size());
  t.complete(0, kOk);
  CHECK(device == remote && pinned_frees == 1 && r->error == MPI_SUCCESS,
        "%s: data %s, %d pinned frees, error %d", what, device == remote ? "exact" : "differs", pinned_frees,
        r->error);
  check_fin_and_finish(what, r.get());
}

}  // namespace
}  // namespace rndv_test

int main() {
  // A broken state machine may crash the program: the failures found
  // before that must still reach the log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  using namespace rndv_test;
  check_rget_whole();
  check_rget_stall();
  check_rget_failure();
  check_rput();
  check_rget_segments();
  check_rget_segment_key_early();
  check_rget_segment_sender();
  check_rput_segments();
  check_rput_segment_receiver();
  check_nothing_posted();
  check_rget_bounce();
  check_rails_weighted();
  check_rails_full();
  check_rails_join();
  check_pieces_aligned();
  return unit::finish("rndv_machine");
}
