// Nonblocking send-receive (MPI_Isendrecv, MPI_Isendrecv_replace, MPI-4):
// one request that completes when both the send and the receive have.
//
// The user's request is a receive-kind pml::Request that sits in no queue
// (a "parent"); the two operations are ordinary pml requests whose
// completion callback reports to it. The parent takes the receive's result
// (source, tag, byte count, error) so MPI_Wait's status describes the
// receive, as for MPI_Sendrecv. _replace sends from a packed copy of the
// buffer, so the receive may land in the user's buffer at once.
#include <cstdint>
#include <vector>

#include "mpi/api.h"
#include "progress/progress.h"

using namespace axon;
using namespace axon::mpi;

namespace {

struct Composite {
  explicit Composite(pml::Request* p) : parent(p) {}
  pml::Request* parent;
  int pending = 2;
  std::vector<uint8_t> packed;  // _replace: the outgoing data
};

// Runs once per child, under the pml lock, when the child completes.
void child_done(pml::Request* child) {
  auto* k = static_cast<Composite*>(child->user_data);
  pml::Request* parent = k->parent;
  if (child->kind == pml::Request::Kind::Recv) {
    parent->source = child->source;
    parent->tag = child->tag;
    parent->bytes = child->bytes;
    parent->cancelled = child->cancelled;
    if (child->error != MPI_SUCCESS) parent->error = child->error;
  } else if (child->error != MPI_SUCCESS && parent->error == MPI_SUCCESS) {
    parent->error = child->error;
  }
  if (--k->pending > 0) return;
  parent->user_data = nullptr;
  delete k;
  pml::request_complete(parent);
}

// Hooks a started child to its parent; a child that completed inside the
// call that started it is accounted for at once. Caller holds the pml lock.
void adopt(pml::Request* child, Composite* k) {
  child->user_data = k;
  pml::release_when_complete(child, child_done);
}

int isendrecv_impl(const char* fn, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                   MPI_Comm comm, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  Datatype* stype = nullptr;
  Datatype* rtype = nullptr;
  AXON_TRY(c, fn, validate_send(c, sendbuf, sendcount, sendtype, dest, sendtag, &stype));
  AXON_TRY(c, fn, validate_recv(c, recvbuf, recvcount, recvtype, source, recvtag, &rtype));
  progress::Guard guard;
  pml::Request* parent = standalone_request(pml::Request::Kind::Recv, c);
  auto* k = new Composite(parent);
  parent->user_data = k;
  pml::Request* r = nullptr;
  pml::Request* s = nullptr;
  int rc = pml::irecv(recvbuf, recvcount, rtype, source, recvtag, &c->p2p, &r);
  if (rc == MPI_SUCCESS) {
    adopt(r, k);
    rc = pml::isend(sendbuf, sendcount, stype, dest, sendtag, &c->p2p, pml::SendMode::Standard, &s);
    if (rc == MPI_SUCCESS) {
      adopt(s, k);
    }
  }
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);  // arguments were checked: resources ran out
  *request = handle_of(parent);
  return MPI_SUCCESS;
}

int isendrecv_replace_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype, int dest,
                           int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, sendtag, &type));
  AXON_TRY(c, fn, validate_recv(c, buf, count, datatype, source, recvtag, &type));
  size_t bytes = 0;
  if (!bytes_for_count(*type, count, &bytes)) return raise(c, MPI_ERR_COUNT, fn, "message too large");
  progress::Guard guard;
  pml::Request* parent = standalone_request(pml::Request::Kind::Recv, c);
  auto* k = new Composite(parent);
  parent->user_data = k;
  k->packed.resize(bytes);
  if (bytes) pack_items(*type, buf, static_cast<size_t>(count), k->packed.data());
  // Send first: the packed copy is independent of the buffer the receive fills.
  pml::Request* s = nullptr;
  pml::Request* r = nullptr;
  int rc = pml::isend(k->packed.data(), static_cast<MPI_Count>(bytes), datatype_from_handle(MPI_BYTE), dest,
                      sendtag, &c->p2p, pml::SendMode::Standard, &s);
  if (rc == MPI_SUCCESS) {
    adopt(s, k);
    rc = pml::irecv(buf, count, type, source, recvtag, &c->p2p, &r);
    if (rc == MPI_SUCCESS) {
        adopt(r, k);
    }
  }
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  *request = handle_of(parent);
  return MPI_SUCCESS;
}

}  // namespace

AXON_API(int, MPI_Isendrecv, (const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                              MPI_Comm comm, MPI_Request* request)) {
  return isendrecv_impl("MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                        source, recvtag, comm, request);
}
AXON_API(int, MPI_Isendrecv_c, (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                                int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source,
                                int recvtag, MPI_Comm comm, MPI_Request* request)) {
  return isendrecv_impl("MPI_Isendrecv_c", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                        recvtype, source, recvtag, comm, request);
}
AXON_API(int, MPI_Isendrecv_replace, (void* buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                      int source, int recvtag, MPI_Comm comm, MPI_Request* request)) {
  return isendrecv_replace_impl("MPI_Isendrecv_replace", buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                request);
}
AXON_API(int, MPI_Isendrecv_replace_c, (void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                                        int source, int recvtag, MPI_Comm comm, MPI_Request* request)) {
  return isendrecv_replace_impl("MPI_Isendrecv_replace_c", buf, count, datatype, dest, sendtag, source, recvtag,
                                comm, request);
}
