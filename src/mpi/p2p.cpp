// Point-to-point entry points: sends in every mode, receives, combined
// send-receive, and probes.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/bsend.h"

namespace axon::mpi {

namespace {

// Inlined into each entry point, so the mode and name are constants there
// (as separate calls they cost ~30 instructions per message in prologues).
[[gnu::always_inline]] inline int blocking_send(const char* fn, const void* buf, MPI_Count count,
                                                MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                                pml::SendMode mode) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, tag, &type));
  // A message that goes out at once never blocks: the hang doctor records
  // only the sends that may wait (pml::send tries the same first).
  if (mode != pml::SendMode::Synchronous && pml::try_send_now(buf, count, type, dest, tag, &c->p2p))
    return MPI_SUCCESS;
  diag::hang::BlockedIn blocked(fn, diag::hang::What::Send, &c->p2p);
  blocked.p2p(dest, tag, count, type->name).arm();
  AXON_TRY(c, fn, pml::send(buf, count, type, dest, tag, &c->p2p, mode));
  return MPI_SUCCESS;
}

[[gnu::always_inline]] inline int nonblocking_send(const char* fn, const void* buf, MPI_Count count,
                                                   MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                                   pml::SendMode mode, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_REQUEST, fn, "request is NULL");
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, tag, &type));
  pml::Request* r = mode == pml::SendMode::Standard ? pml::isend_now(buf, count, type, dest, tag, &c->p2p) : nullptr;
  if (!r) AXON_TRY(c, fn, pml::isend(buf, count, type, dest, tag, &c->p2p, mode, &r));
  r->comm = c;
  *request = handle_of(r);
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

namespace {
[[gnu::always_inline]] inline int recv_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype,
                                            int source, int tag, MPI_Comm comm, MPI_Status* status) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_recv(c, buf, count, datatype, source, tag, &type));
  diag::hang::BlockedIn blocked(fn, diag::hang::What::Recv, &c->p2p);
  blocked.p2p(source, tag, count, type->name).arm();
  pml::Request r;
  int rc = pml::recv(buf, count, type, source, tag, &c->p2p, &r);
  status_from_request(status, &r);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  return MPI_SUCCESS;
}

[[gnu::always_inline]] inline int irecv_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype,
                                             int source, int tag, MPI_Comm comm, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_REQUEST, fn, "request is NULL");
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_recv(c, buf, count, datatype, source, tag, &type));
  pml::Request* r = nullptr;
  AXON_TRY(c, fn, pml::irecv(buf, count, type, source, tag, &c->p2p, &r));
  r->comm = c;
  *request = handle_of(r);
  return MPI_SUCCESS;
}

int sendrecv_impl(const char* fn, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                             void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                             MPI_Comm comm, MPI_Status* status) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype *stype = nullptr, *rtype = nullptr;
  AXON_TRY(c, fn, validate_send(c, sendbuf, sendcount, sendtype, dest, sendtag, &stype));
  AXON_TRY(c, fn, validate_recv(c, recvbuf, recvcount, recvtype, source, recvtag, &rtype));
  diag::hang::BlockedIn blocked(fn, diag::hang::What::Sendrecv, &c->p2p);
  blocked.p2p(dest, sendtag, recvcount, rtype->name).second(source, recvtag).arm();
  pml::Request* s = nullptr;
  AXON_TRY(c, fn, pml::isend(sendbuf, sendcount, stype, dest, sendtag, &c->p2p, pml::SendMode::Standard, &s));
  pml::Request r;
  int rc = pml::recv(recvbuf, recvcount, rtype, source, recvtag, &c->p2p, &r);
  pml::wait(s);
  {
    progress::Guard guard;
    if (rc == MPI_SUCCESS) rc = s->error;
    pml::request_release(s);
  }
  status_from_request(status, &r);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  return MPI_SUCCESS;
}

int sendrecv_replace_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                                     int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, sendtag, &type));
  AXON_TRY(c, fn, validate_recv(c, buf, count, datatype, source, recvtag, &type));
  // The outgoing data is packed aside so the receive can overwrite the buffer.
  size_t bytes = 0;
  if (!bytes_for_count(*type, static_cast<MPI_Count>(count), &bytes)) return raise(c, MPI_ERR_COUNT, fn);
  diag::hang::BlockedIn blocked(fn, diag::hang::What::Sendrecv, &c->p2p);
  blocked.p2p(dest, sendtag, count, type->name).second(source, recvtag).arm();
  std::vector<uint8_t> packed(bytes);
  if (bytes) pack_items(*type, buf, static_cast<size_t>(count), packed.data());
  pml::Request* s = nullptr;
  AXON_TRY(c, fn, pml::isend(packed.data(), static_cast<MPI_Count>(bytes), datatype_from_handle(MPI_BYTE), dest,
                             sendtag, &c->p2p, pml::SendMode::Standard, &s));
  pml::Request r;
  int rc = pml::recv(buf, count, type, source, recvtag, &c->p2p, &r);
  pml::wait(s);
  {
    progress::Guard guard;
    if (rc == MPI_SUCCESS) rc = s->error;
    pml::request_release(s);
  }
  status_from_request(status, &r);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  return MPI_SUCCESS;
}
}  // namespace

// ---- probes ---------------------------------------------------------------

namespace {
int validate_probe(Comm* c, int source, int tag) {
  int rc;
  if ((rc = check_source(c, source)) || (rc = check_recv_tag(tag))) return rc;
  return MPI_SUCCESS;
}

// Single-completion calls leave MPI_ERROR alone (MPI-4.1 3.2.5), PROC_NULL included.
void proc_null_status(MPI_Status* status) {
  if (status) set_status(status, MPI_PROC_NULL, MPI_ANY_TAG, status->MPI_ERROR, 0, false);
}
}  // namespace

AXON_API(int, MPI_Iprobe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Iprobe");
  if (!flag) return raise(c, MPI_ERR_ARG, "MPI_Iprobe", "flag is NULL");
  AXON_TRY(c, "MPI_Iprobe", validate_probe(c, source, tag));
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  bool found = false;
  pml::Request info;
  pml::iprobe(source, tag, &c->p2p, &found, &info);
  *flag = found;
  if (found) status_from_request(status, &info);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Probe, (int source, int tag, MPI_Comm comm, MPI_Status* status)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Probe");
  AXON_TRY(c, "MPI_Probe", validate_probe(c, source, tag));
  if (source == MPI_PROC_NULL) {
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  bool found = false;
  pml::Request info;
  diag::hang::BlockedIn blocked("MPI_Probe", diag::hang::What::Probe, &c->p2p);
  blocked.p2p(source, tag, 0, nullptr).arm();
  progress::wait_until([&] {
    pml::iprobe(source, tag, &c->p2p, &found, &info);
    return found;
  });
  status_from_request(status, &info);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Improbe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                            MPI_Status* status)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Improbe");
  if (!flag || !message) return raise(c, MPI_ERR_ARG, "MPI_Improbe", "NULL argument");
  AXON_TRY(c, "MPI_Improbe", validate_probe(c, source, tag));
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    *message = MPI_MESSAGE_NO_PROC;
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  bool found = false;
  pml::Message* m = nullptr;
  pml::Request info;
  pml::improbe(source, tag, &c->p2p, &found, &m, &info);
  *flag = found;
  if (found) {
    *message = reinterpret_cast<MPI_Message>(m);
    status_from_request(status, &info);
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Mprobe");
  if (!message) return raise(c, MPI_ERR_ARG, "MPI_Mprobe", "message is NULL");
  AXON_TRY(c, "MPI_Mprobe", validate_probe(c, source, tag));
  if (source == MPI_PROC_NULL) {
    *message = MPI_MESSAGE_NO_PROC;
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  bool found = false;
  pml::Message* m = nullptr;
  pml::Request info;
  diag::hang::BlockedIn blocked("MPI_Mprobe", diag::hang::What::Probe, &c->p2p);
  blocked.p2p(source, tag, 0, nullptr).arm();
  progress::wait_until([&] {
    pml::improbe(source, tag, &c->p2p, &found, &m, &info);
    return found;
  });
  *message = reinterpret_cast<MPI_Message>(m);
  status_from_request(status, &info);
  return MPI_SUCCESS;
}

namespace {
int matched_receive(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                    pml::Request** out) {
  if (!message) return raise_self(MPI_ERR_ARG, fn, "message is NULL");
  if (*message == MPI_MESSAGE_NULL) return raise_self(MPI_ERR_REQUEST, fn, "MPI_MESSAGE_NULL");
  Datatype* type = nullptr;
  int rc;
  if ((rc = check_count(count)) || (rc = check_message_type(datatype, count, &type)) ||
      (rc = check_buffer(buf, count, type)))
    return raise_self(rc, fn);
  if (*message == MPI_MESSAGE_NO_PROC) {
    *out = nullptr;
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
  }
  auto* m = reinterpret_cast<pml::Message*>(*message);
  if (!pml::message_valid(m)) return raise_self(MPI_ERR_REQUEST, fn, "invalid message handle");
  *message = MPI_MESSAGE_NULL;
  return pml::imrecv(buf, count, type, m, out);
}

int mrecv_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message, MPI_Status* status) {
  pml::Request* r = nullptr;
  int rc = matched_receive(fn, buf, count, datatype, message, &r);
  if (rc != MPI_SUCCESS) return rc;
  if (!r) {
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  pml::wait(r);
  status_from_request(status, r);
  rc = r->error;
  {
    progress::Guard guard;
    pml::request_release(r);
  }
  return rc == MPI_SUCCESS ? rc : raise_self(rc, fn);
}

int imrecv_impl(const char* fn, void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                           MPI_Request* request) {
  if (!request) return raise_self(MPI_ERR_ARG, fn, "request is NULL");
  pml::Request* r = nullptr;
  int rc = matched_receive(fn, buf, count, datatype, message, &r);
  if (rc != MPI_SUCCESS) return rc;
  if (!r) {
    // A receive from MPI_PROC_NULL: an already complete request.
    pml::irecv(nullptr, 0, datatype_from_handle(MPI_BYTE), MPI_PROC_NULL, 0, nullptr, &r);
  }
  *request = handle_of(r);
  return MPI_SUCCESS;
}
}  // namespace

// ---- entry points ----------------------------------------------------------------
// The blocking and nonblocking sends and receives, send-receive and matched
// receives, each with its large-count variant, only forward to the functions
// above: generated from src/binding/c_entries.txt (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/p2p_entries.inc"
#include "progress/progress.h"
