// Stand-ins for what src/pml/rndv.cpp calls from the rest of the PML, btl
// and accel: each records what it was asked (rndv_fake.h).
#include <cstdlib>
#include <cstring>

#include "accel/accel.h"
#include "rndv_fake.h"

using rndv_test::controls;
using rndv_test::finished_recvs;
using rndv_test::finished_sends;
using rndv_test::pinned_frees;
using rndv_test::receive_non_contiguous;
using rndv_test::ticks;
using rndv_test::transport;

namespace axon::btl {
int Transport::send_packed(int, int, const void*, size_t, size_t, PackFn, void*) { return kInternal; }
namespace detail {
std::vector<Transport*> routes;
}  // namespace detail
}  // namespace axon::btl

namespace axon::accel {
void* pinned_alloc(size_t len) { return std::malloc(len); }
void pinned_free(void* p, size_t) {
  ++pinned_frees;
  std::free(p);
}
// The "device" buffer of the bounce case is host memory here.
int copy_from_host(void* device_dst, const void* host_src, size_t len) {
  std::memcpy(device_dst, host_src, len);
  return 0;
}
}  // namespace axon::accel

namespace axon::pml {
void send_reply(int dest_world, int am_id, uint64_t sender_request, uint64_t receiver_request) {
  ReplyInfo info{sender_request, receiver_request};
  send_control(dest_world, am_id, &info, sizeof info);
}
void send_control(int dest_world, int am_id, const void* info, size_t len) {
  auto* bytes = static_cast<const uint8_t*>(info);
  controls.push_back({dest_world, am_id, std::vector<uint8_t>(bytes, bytes + len), ++ticks});
}
const uint8_t* send_data(const Request* r) {
  return r->staging ? r->staging : static_cast<const uint8_t*>(r->buffer);
}
uint8_t* recv_data(Request* r) { return r->staging ? r->staging : static_cast<uint8_t*>(r->buffer); }
bool non_contiguous(const Request* r) { return r->kind == Request::Kind::Recv && receive_non_contiguous; }
// The real ones (protocol.cpp) with the segment size the case's transport asks for.
size_t send_segment(const Request* r, const btl::Caps& caps) {
  if (!caps.can_get && caps.can_put) return 0;
  return caps.expose_segment && r->length > 2 * caps.expose_segment ? caps.expose_segment : 0;
}
void pack_send_through(Request* r, size_t end) {
  rndv_test::packs.push_back({r, end, transport->exposed.size()});
}
void finish_recv(Request* r) { finished_recvs.push_back({r, ++ticks, transport->in_flight}); }
void finish_send(Request* r) { finished_sends.push_back({r, ++ticks, transport->in_flight}); }
}  // namespace axon::pml
