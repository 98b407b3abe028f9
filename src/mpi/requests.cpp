// Completion (Wait/Test and their any/all/some forms), cancellation,
// persistent requests, and the status queries.
#include <vector>

#include "coll/coll.h"
#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/bsend.h"
#include "mpi/grequest.h"
#include "mpi/partitioned.h"
#include "progress/progress.h"

namespace axon::mpi {
namespace {

Comm* comm_of(pml::Request* r) { return r->comm ? static_cast<Comm*>(r->comm) : comm_self(); }

// A handle that names no operation to wait for: MPI_REQUEST_NULL or an
// inactive persistent request.
bool is_inactive(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return true;
  pml::Request* r = request_of(h);
  return r->persistent && !r->active;
}

int check_request(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return MPI_SUCCESS;
  return pml::request_valid(request_of(h)) ? MPI_SUCCESS : MPI_ERR_REQUEST;
}

bool is_complete(MPI_Request h) { return request_of(h)->complete.load(std::memory_order_acquire); }

// Retires a completed request: fills the status, frees a non-persistent
// request (setting the handle to MPI_REQUEST_NULL), deactivates a persistent
// one. Returns the operation's error class.
// Inline: MPI_Wait and MPI_Waitall retire every request through it.
[[gnu::always_inline]] inline int retire(MPI_Request* h, MPI_Status* status) {
  pml::Request* r = request_of(*h);
  if (is_generalized(r)) [[unlikely]] return grequest_retire(h, status);
  if (status != MPI_STATUS_IGNORE) status_from_request(status, r);
  int error = r->error;
  if (r->persistent) {
    r->active = false;
  } else {
    progress::Guard guard;
    pml::request_release(r);
    *h = MPI_REQUEST_NULL;
  }
  return error;
}

int check_array(int count, const MPI_Request* requests, const char* fn) {
  if (count < 0) return raise_self(MPI_ERR_COUNT, fn, "negative count");
  if (count > 0 && !requests) return raise_self(MPI_ERR_REQUEST, fn, "requests is NULL");
  for (int i = 0; i < count; ++i)
    if (check_request(requests[i]) != MPI_SUCCESS) return raise_self(MPI_ERR_REQUEST, fn, "invalid request");
  return MPI_SUCCESS;
}

MPI_Status* status_at(MPI_Status* statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// The multiple-completion calls write the statuses' MPI_ERROR fields if and
// only if one operation failed, and then return MPI_ERR_IN_STATUS (MPI-4.1
// 3.2.5); otherwise the fields are left as they were.
int record_errors(const int* errors, size_t n, MPI_Status* statuses) {
  bool failed = false;
  for (size_t i = 0; i < n; ++i) failed |= errors[i] != MPI_SUCCESS;
  if (!failed) return MPI_SUCCESS;
  if (statuses != MPI_STATUSES_IGNORE)
    for (size_t i = 0; i < n; ++i) statuses[i].MPI_ERROR = errors[i];
  return MPI_ERR_IN_STATUS;
}
int record_errors(const std::vector<int>& errors, MPI_Status* statuses) {
  return record_errors(errors.data(), errors.size(), statuses);
}

// Retires every completed active request of the array.
int retire_completed(int count, MPI_Request* requests, MPI_Status* statuses, int* outcount, int* indices,
                     Comm** failed_comm) {
  std::vector<int> errors;
  int n = 0;
  for (int i = 0; i < count; ++i) {
    if (is_inactive(requests[i]) || !is_complete(requests[i])) continue;
    Comm* c = comm_of(request_of(requests[i]));
    int err = retire(&requests[i], status_at(statuses, n));
    if (err != MPI_SUCCESS) *failed_comm = c;
    errors.push_back(err);
    indices[n++] = i;
  }
  *outcount = n;
  return record_errors(errors, statuses);
}

}  // namespace

pml::Request* standalone_request(pml::Request::Kind kind, Comm* comm) {
  pml::Request* r = pml::request_alloc(kind);
  r->comm = comm;
  r->ctx = nullptr;  // in no queue: MPI_Cancel finds nothing to withdraw
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  r->error = MPI_SUCCESS;
  return r;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Wait, (MPI_Request * request, MPI_Status* status)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Wait", "request is NULL");
  if (check_request(*request)) return raise_self(MPI_ERR_REQUEST, "MPI_Wait", "invalid request");
  if (is_inactive(*request)) {
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  pml::Request* r = request_of(*request);
  {
    diag::hang::BlockedIn blocked("MPI_Wait", diag::hang::What::Wait, r->ctx);
    blocked.waits(request, 1).arm();
    pml::wait(r);
  }
  Comm* c = comm_of(r);
  int rc = retire(request, status);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, "MPI_Wait");
}

AXON_API(int, MPI_Test, (MPI_Request * request, int* flag, MPI_Status* status)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Test", "request is NULL");
  if (check_request(*request)) return raise_self(MPI_ERR_REQUEST, "MPI_Test", "invalid request");
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Test", "flag is NULL");
  if (is_inactive(*request)) {
    *flag = 1;
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  if (!is_complete(*request)) progress::progress();
  if (!is_complete(*request)) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  Comm* c = comm_of(request_of(*request));
  int rc = retire(request, status);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, "MPI_Test");
}

AXON_API(int, MPI_Waitall, (int count, MPI_Request requests[], MPI_Status statuses[])) {
  if (int rc = check_array(count, requests, "MPI_Waitall")) return rc;
  {
    diag::hang::BlockedIn blocked("MPI_Waitall", diag::hang::What::Wait, nullptr);
    blocked.waits(requests, count).arm();
    for (int i = 0; i < count; ++i)
      if (!is_inactive(requests[i])) pml::wait(request_of(requests[i]));
  }
  // The common window of requests keeps its error classes on the stack.
  constexpr int kOnStack = 64;
  int on_stack[kOnStack];
  std::vector<int> on_heap;
  int* errors = on_stack;
  if (count > kOnStack) {
    on_heap.resize(static_cast<size_t>(count));
    errors = on_heap.data();
  }
  Comm* failed = nullptr;
  for (int i = 0; i < count; ++i) {
    MPI_Status* s = status_at(statuses, i);
    errors[i] = MPI_SUCCESS;
    if (is_inactive(requests[i])) {
      set_empty_status(s);
      continue;
    }
    Comm* c = comm_of(request_of(requests[i]));  // before retire frees the request
    errors[i] = retire(&requests[i], s);
    if (errors[i] != MPI_SUCCESS) [[unlikely]] failed = c;
  }
  if (!failed) return MPI_SUCCESS;
  int rc = record_errors(errors, static_cast<size_t>(count), statuses);
  return rc == MPI_SUCCESS ? rc : raise(failed, rc, "MPI_Waitall");
}

AXON_API(int, MPI_Testall, (int count, MPI_Request requests[], int* flag, MPI_Status statuses[])) {
  if (int rc = check_array(count, requests, "MPI_Testall")) return rc;
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Testall", "flag is NULL");
  auto all_done = [&] {
    for (int i = 0; i < count; ++i)
      if (!is_inactive(requests[i]) && !is_complete(requests[i])) return false;
    return true;
  };
  if (!all_done()) progress::progress();
  if (!all_done()) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  return PMPI_Waitall(count, requests, statuses);
}

namespace {
// Index of a completed active request, -1 when none, MPI_UNDEFINED when no
// request is active.
int find_completed(int count, MPI_Request requests[]) {
  bool any_active = false;
  for (int i = 0; i < count; ++i) {
    if (is_inactive(requests[i])) continue;
    any_active = true;
    if (is_complete(requests[i])) return i;
  }
  return any_active ? -1 : MPI_UNDEFINED;
}

int finish_any(int i, MPI_Request requests[], int* index, MPI_Status* status, const char* fn) {
  *index = i;
  Comm* c = comm_of(request_of(requests[i]));
  int rc = retire(&requests[i], status);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
}
}  // namespace

AXON_API(int, MPI_Waitany, (int count, MPI_Request requests[], int* index, MPI_Status* status)) {
  if (int rc = check_array(count, requests, "MPI_Waitany")) return rc;
  if (!index) return raise_self(MPI_ERR_ARG, "MPI_Waitany", "index is NULL");
  int i = -1;
  {
    diag::hang::BlockedIn blocked("MPI_Waitany", diag::hang::What::WaitAny, nullptr);
    blocked.waits(requests, count).arm();
    progress::wait_until([&] { return (i = find_completed(count, requests)) != -1; });
  }
  if (i == MPI_UNDEFINED) {
    *index = MPI_UNDEFINED;
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  return finish_any(i, requests, index, status, "MPI_Waitany");
}

AXON_API(int, MPI_Testany, (int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status)) {
  if (int rc = check_array(count, requests, "MPI_Testany")) return rc;
  if (!index || !flag) return raise_self(MPI_ERR_ARG, "MPI_Testany", "NULL argument");
  int i = find_completed(count, requests);
  if (i == -1) {
    progress::progress();
    i = find_completed(count, requests);
  }
  if (i == MPI_UNDEFINED) {
    *flag = 1;
    *index = MPI_UNDEFINED;
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  if (i == -1) {
    *flag = 0;
    *index = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  *flag = 1;
  return finish_any(i, requests, index, status, "MPI_Testany");
}

AXON_API(int, MPI_Waitsome, (int incount, MPI_Request requests[], int* outcount, int indices[],
                             MPI_Status statuses[])) {
  if (int rc = check_array(incount, requests, "MPI_Waitsome")) return rc;
  if (!outcount || (incount > 0 && !indices)) return raise_self(MPI_ERR_ARG, "MPI_Waitsome", "NULL argument");
  int i = -1;
  {
    diag::hang::BlockedIn blocked("MPI_Waitsome", diag::hang::What::WaitAny, nullptr);
    blocked.waits(requests, incount).arm();
    progress::wait_until([&] { return (i = find_completed(incount, requests)) != -1; });
  }
  if (i == MPI_UNDEFINED) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  Comm* failed = nullptr;
  int rc = retire_completed(incount, requests, statuses, outcount, indices, &failed);
  return rc == MPI_SUCCESS ? rc : raise(failed, rc, "MPI_Waitsome");
}

AXON_API(int, MPI_Testsome, (int incount, MPI_Request requests[], int* outcount, int indices[],
                             MPI_Status statuses[])) {
  if (int rc = check_array(incount, requests, "MPI_Testsome")) return rc;
  if (!outcount || (incount > 0 && !indices)) return raise_self(MPI_ERR_ARG, "MPI_Testsome", "NULL argument");
  progress::progress();
  if (find_completed(incount, requests) == MPI_UNDEFINED) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  Comm* failed = nullptr;
  int rc = retire_completed(incount, requests, statuses, outcount, indices, &failed);
  return rc == MPI_SUCCESS ? rc : raise(failed, rc, "MPI_Testsome");
}

AXON_API(int, MPI_Request_get_status, (MPI_Request request, int* flag, MPI_Status* status)) {
  if (check_request(request)) return raise_self(MPI_ERR_REQUEST, "MPI_Request_get_status", "invalid request");
  if (!flag) return raise_self(MPI_ERR_ARG, "MPI_Request_get_status", "flag is NULL");
  if (is_inactive(request)) {
    *flag = 1;
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  if (!is_complete(request)) progress::progress();
  *flag = is_complete(request);
  if (*flag) {
    if (is_generalized(request_of(request))) return grequest_query(request_of(request), status);
    status_from_request(status, request_of(request));
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Request_free, (MPI_Request * request)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Request_free", "request is NULL");
  if (*request == MPI_REQUEST_NULL || check_request(*request))
    return raise_self(MPI_ERR_REQUEST, "MPI_Request_free", "invalid request");
  pml::Request* r = request_of(*request);
  if (is_generalized(r)) {
    *request = MPI_REQUEST_NULL;
    return grequest_free(r);
  }
  progress::Guard guard;
  if (r->partitioned && !r->active) {
    partitioned_free(r);
    pml::request_release(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
  }
  bool done = r->complete.load(std::memory_order_acquire);
  if (r->persistent && (!r->active || done))
    // Inactive, or started and already complete: nothing runs any more. A
    // persistent collective also owns its schedule (a completed one was
    // leaked here when freed after its wait).
    r->kind == pml::Request::Kind::Collective ? coll::request_free(r) : pml::request_release(r);
  else if (done)
    pml::request_release(r);
  else
    r->free_when_complete = true;  // the operation goes on; nobody will wait for it
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Cancel, (MPI_Request * request)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Cancel", "request is NULL");
  if (*request == MPI_REQUEST_NULL || check_request(*request))
    return raise_self(MPI_ERR_REQUEST, "MPI_Cancel", "invalid request");
  if (is_generalized(request_of(*request))) return grequest_cancel(request_of(*request));
  pml::cancel(request_of(*request));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Test_cancelled, (const MPI_Status* status, int* flag)) {
  if (!status || !flag) return raise_self(MPI_ERR_ARG, "MPI_Test_cancelled", "NULL argument");
  *flag = status->MPI_internal[2] != 0;
  return MPI_SUCCESS;
}

// ---- counts -----------------------------------------------------------------

namespace {
int count_of(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count, const char* fn) {
  if (!status || !count) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  Datatype* type = nullptr;
  if (check_datatype(datatype, &type)) return raise_self(MPI_ERR_TYPE, fn, "invalid datatype");
  size_t bytes = status_bytes(status);
  if (type->size == 0) *count = 0;
  else if (bytes % type->size) *count = MPI_UNDEFINED;
  else *count = static_cast<MPI_Count>(bytes / type->size);
  return MPI_SUCCESS;
}

int elements_of(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count, const char* fn) {
  if (!status || !count) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  Datatype* type = nullptr;
  if (check_datatype(datatype, &type)) return raise_self(MPI_ERR_TYPE, fn, "invalid datatype");
  size_t bytes = status_bytes(status);
  if (type->size == 0) {
    *count = 0;
    return MPI_SUCCESS;
  }
  // The engine walks the type signature: whole items, then the basic
  // elements of a partial item; MPI_UNDEFINED when the bytes end inside one.
  MPI_Count elements = 0;
  *count = count_elements(*type, bytes, &elements) ? elements : static_cast<MPI_Count>(MPI_UNDEFINED);
  return MPI_SUCCESS;
}

int narrow(MPI_Count value, int* out) {
  *out = value > INT32_MAX ? MPI_UNDEFINED : static_cast<int>(value);
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Get_count, (const MPI_Status* status, MPI_Datatype datatype, int* count)) {
  MPI_Count c = 0;
  if (int rc = count_of(status, datatype, &c, "MPI_Get_count")) return rc;
  if (!count) return raise_self(MPI_ERR_ARG, "MPI_Get_count", "count is NULL");
  return narrow(c, count);
}

AXON_API(int, MPI_Get_count_c, (const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count)) {
  return count_of(status, datatype, count, "MPI_Get_count_c");
}

AXON_API(int, MPI_Get_elements, (const MPI_Status* status, MPI_Datatype datatype, int* count)) {
  MPI_Count c = 0;
  if (int rc = elements_of(status, datatype, &c, "MPI_Get_elements")) return rc;
  if (!count) return raise_self(MPI_ERR_ARG, "MPI_Get_elements", "count is NULL");
  return narrow(c, count);
}

AXON_API(int, MPI_Get_elements_c, (const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count)) {
  return elements_of(status, datatype, count, "MPI_Get_elements_c");
}

AXON_API(int, MPI_Get_elements_x, (const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count)) {
  return elements_of(status, datatype, count, "MPI_Get_elements_x");
}

// ---- persistent requests ----------------------------------------------------

namespace {
int persistent(const char* fn, const void* buf, MPI_Count count, MPI_Datatype datatype, int peer, int tag, MPI_Comm comm,
               MPI_Request* request, bool is_send, pml::SendMode mode) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_REQUEST, fn, "request is NULL");
  Datatype* type = nullptr;
  if (is_send)
    AXON_TRY(c, fn, validate_send(c, buf, count, datatype, peer, tag, &type));
  else
    AXON_TRY(c, fn, validate_recv(c, buf, count, datatype, peer, tag, &type));
  pml::Request* r = is_send ? pml::send_init(buf, count, type, peer, tag, &c->p2p, mode)
                            : pml::recv_init(const_cast<void*>(buf), count, type, peer, tag, &c->p2p);
  if (!r) return raise(c, MPI_ERR_NO_MEM, fn);
  r->comm = c;
  *request = handle_of(r);
  return MPI_SUCCESS;
}

int start_one(MPI_Request* request, const char* fn) {
  if (!request) return raise_self(MPI_ERR_ARG, fn, "request is NULL");
  if (*request == MPI_REQUEST_NULL || check_request(*request))
    return raise_self(MPI_ERR_REQUEST, fn, "invalid request");
  pml::Request* r = request_of(*request);
  if (!r->persistent || r->active) return raise(comm_of(r), MPI_ERR_REQUEST, fn, "request is not an inactive persistent request");
  if (r->mode == pml::SendMode::Buffered && r->kind == pml::Request::Kind::Send) {
    // The data goes to the attached buffer now; the request completes at once.
    int rc = buffered_send(r->buffer, r->count, r->type, r->peer, r->match_tag, comm_of(r));
    if (rc != MPI_SUCCESS) return raise(comm_of(r), rc, fn);
    r->active = true;
    r->error = MPI_SUCCESS;
    r->complete.store(true, std::memory_order_release);
    return MPI_SUCCESS;
  }
  int rc = r->partitioned                              ? partitioned_start(r)
           : r->kind == pml::Request::Kind::Collective ? coll::start(r)
                                                       : pml::start(r);
  return rc == MPI_SUCCESS ? rc : raise(comm_of(r), rc, fn);
}
}  // namespace

AXON_API(int, MPI_Send_init, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                              MPI_Request* request)) {
  return persistent("MPI_Send_init", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Standard);
}
AXON_API(int, MPI_Ssend_init, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                               MPI_Request* request)) {
  return persistent("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, request, true,
                    pml::SendMode::Synchronous);
}
AXON_API(int, MPI_Rsend_init, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                               MPI_Request* request)) {
  return persistent("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Ready);
}
AXON_API(int, MPI_Bsend_init, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                               MPI_Request* request)) {
  return persistent("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Buffered);
}
AXON_API(int, MPI_Recv_init, (void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                              MPI_Request* request)) {
  return persistent("MPI_Recv_init", buf, count, datatype, source, tag, comm, request, false,
                    pml::SendMode::Standard);
}

AXON_API(int, MPI_Send_init_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request* request)) {
  return persistent("MPI_Send_init_c", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Standard);
}

AXON_API(int, MPI_Ssend_init_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request* request)) {
  return persistent("MPI_Ssend_init_c", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Synchronous);
}

AXON_API(int, MPI_Rsend_init_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request* request)) {
  return persistent("MPI_Rsend_init_c", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Ready);
}

AXON_API(int, MPI_Bsend_init_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request* request)) {
  return persistent("MPI_Bsend_init_c", buf, count, datatype, dest, tag, comm, request, true, pml::SendMode::Buffered);
}

AXON_API(int, MPI_Recv_init_c, (void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                                MPI_Comm comm, MPI_Request* request)) {
  return persistent("MPI_Recv_init_c", buf, count, datatype, source, tag, comm, request, false,
                    pml::SendMode::Standard);
}

AXON_API(int, MPI_Start, (MPI_Request * request)) { return start_one(request, "MPI_Start"); }

AXON_API(int, MPI_Startall, (int count, MPI_Request requests[])) {
  if (count < 0) return raise_self(MPI_ERR_COUNT, "MPI_Startall", "negative count");
  if (count > 0 && !requests) return raise_self(MPI_ERR_REQUEST, "MPI_Startall", "requests is NULL");
  for (int i = 0; i < count; ++i)
    if (int rc = start_one(&requests[i], "MPI_Startall")) return rc;
  return MPI_SUCCESS;
}

// ---- MPI-4.1 non-destructive multi-request status queries ------------------
// Like Testany/Testall/Testsome, but nothing is freed or deactivated: the
// requests stay valid and must still be completed by a Wait/Test/free.
namespace {
// The status of a completed request without retiring it.
int peek_status(MPI_Request h, MPI_Status* status) {
  pml::Request* r = request_of(h);
  if (is_generalized(r)) return grequest_query(r, status);
  status_from_request(status, r);
  return r->error;
}
}  // namespace

AXON_API(int, MPI_Request_get_status_any, (int count, const MPI_Request array_of_requests[], int* index, int* flag,
                                           MPI_Status* status)) {
  const char* fn = "MPI_Request_get_status_any";
  if (int rc = check_array(count, array_of_requests, fn)) return rc;
  if (!index || !flag) return raise_self(MPI_ERR_ARG, fn, "index or flag is NULL");
  progress::progress();
  bool any_active = false;
  for (int i = 0; i < count; ++i) {
    if (is_inactive(array_of_requests[i])) continue;
    any_active = true;
    if (!is_complete(array_of_requests[i])) continue;
    *index = i;
    *flag = 1;
    int err = peek_status(array_of_requests[i], status);
    if (err != MPI_SUCCESS) return raise(comm_of(request_of(array_of_requests[i])), err, fn);
    return MPI_SUCCESS;
  }
  *index = MPI_UNDEFINED;
  *flag = any_active ? 0 : 1;
  if (!any_active) set_empty_status(status);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Request_get_status_all, (int count, const MPI_Request array_of_requests[], int* flag,
                                           MPI_Status array_of_statuses[])) {
  const char* fn = "MPI_Request_get_status_all";
  if (int rc = check_array(count, array_of_requests, fn)) return rc;
  if (!flag) return raise_self(MPI_ERR_ARG, fn, "flag is NULL");
  progress::progress();
  for (int i = 0; i < count; ++i)
    if (!is_inactive(array_of_requests[i]) && !is_complete(array_of_requests[i])) {
      *flag = 0;
      return MPI_SUCCESS;
    }
  *flag = 1;
  std::vector<int> errors(static_cast<size_t>(count), MPI_SUCCESS);
  Comm* failed = nullptr;
  for (int i = 0; i < count; ++i) {
    MPI_Status* s = status_at(array_of_statuses, i);
    if (is_inactive(array_of_requests[i])) {
      set_empty_status(s);
      continue;
    }
    errors[static_cast<size_t>(i)] = peek_status(array_of_requests[i], s);
    if (errors[static_cast<size_t>(i)] != MPI_SUCCESS) failed = comm_of(request_of(array_of_requests[i]));
  }
  int rc = record_errors(errors, array_of_statuses);
  return rc == MPI_SUCCESS ? rc : raise(failed, rc, fn);
}

AXON_API(int, MPI_Request_get_status_some, (int incount, const MPI_Request array_of_requests[], int* outcount,
                                            int array_of_indices[], MPI_Status array_of_statuses[])) {
  const char* fn = "MPI_Request_get_status_some";
  if (int rc = check_array(incount, array_of_requests, fn)) return rc;
  if (!outcount || (incount > 0 && !array_of_indices)) return raise_self(MPI_ERR_ARG, fn, "NULL output argument");
  progress::progress();
  bool any_active = false;
  std::vector<int> errors;
  Comm* failed = nullptr;
  int n = 0;
  for (int i = 0; i < incount; ++i) {
    if (is_inactive(array_of_requests[i])) continue;
    any_active = true;
    if (!is_complete(array_of_requests[i])) continue;
    int err = peek_status(array_of_requests[i], status_at(array_of_statuses, n));
    if (err != MPI_SUCCESS) failed = comm_of(request_of(array_of_requests[i]));
    errors.push_back(err);
    array_of_indices[n++] = i;
  }
  *outcount = any_active ? n : MPI_UNDEFINED;
  int rc = record_errors(errors, array_of_statuses);
  return rc == MPI_SUCCESS ? rc : raise(failed, rc, fn);
}
