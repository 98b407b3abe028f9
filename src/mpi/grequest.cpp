// Generalized requests (MPI-4.1 section 13.2). The request is a pml::Request
// of kind Generalized that no transport touches: MPI_Grequest_complete marks
// it complete (from any thread), and MPI_Wait/Test see that like any other
// completion. The user's functions are kept in the request's user_data.
#include "mpi/grequest.h"

#include "mpi/api.h"
#include "progress/progress.h"

namespace axon::mpi {
namespace {

struct Callbacks {
  MPI_Grequest_query_function* query;
  MPI_Grequest_free_function* free;
  MPI_Grequest_cancel_function* cancel;
  void* extra_state;
};

Callbacks* callbacks_of(pml::Request* r) { return static_cast<Callbacks*>(r->user_data); }

// What a user callback returned, as the MPI call's result: a value that is no
// MPI error code (a user's own number) would reach the caller as a code that
// MPI_Error_class rejects, so it becomes MPI_ERR_OTHER, as in MPICH.
int user_code(int rc) { return valid_error_code(rc) ? rc : MPI_ERR_OTHER; }

// Calls the free function and gives the request back; its result.
int release(pml::Request* r) {
  Callbacks* cb = callbacks_of(r);
  int rc = cb->free ? user_code(cb->free(cb->extra_state)) : MPI_SUCCESS;
  delete cb;
  r->user_data = nullptr;
  progress::Guard guard;
  pml::request_release(r);
  return rc;
}

// A request freed by MPI_Request_free before it completed: the free function
// runs when MPI_Grequest_complete completes it (pml then releases it).
void free_on_complete(pml::Request* r) {
  Callbacks* cb = callbacks_of(r);
  if (cb->free) cb->free(cb->extra_state);
  delete cb;
  r->user_data = nullptr;
}

}  // namespace

int grequest_query(pml::Request* r, MPI_Status* status) {
  Callbacks* cb = callbacks_of(r);
  MPI_Status scratch;
  MPI_Status* target = status == MPI_STATUS_IGNORE ? &scratch : status;
  // What the status says when the query function leaves fields alone.
  set_status(target, MPI_ANY_SOURCE, MPI_ANY_TAG, target->MPI_ERROR, 0, false);
  return cb->query ? user_code(cb->query(cb->extra_state, target)) : MPI_SUCCESS;
}

int grequest_retire(MPI_Request* handle, MPI_Status* status) {
  pml::Request* r = request_of(*handle);
  int rc = grequest_query(r, status);
  int free_rc = release(r);
  *handle = MPI_REQUEST_NULL;
  return rc != MPI_SUCCESS ? rc : free_rc;
}

int grequest_cancel(pml::Request* r) {
  Callbacks* cb = callbacks_of(r);
  int complete = r->complete.load(std::memory_order_acquire) ? 1 : 0;
  return cb->cancel ? user_code(cb->cancel(cb->extra_state, complete)) : MPI_SUCCESS;
}

int grequest_free(pml::Request* r) {
  {
    progress::Guard guard;
    if (!r->complete.load(std::memory_order_acquire)) {
      r->on_complete = free_on_complete;
      r->free_when_complete = true;
      return MPI_SUCCESS;
    }
  }
  return release(r);
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Grequest_start, (MPI_Grequest_query_function * query_fn, MPI_Grequest_free_function* free_fn,
                                   MPI_Grequest_cancel_function* cancel_fn, void* extra_state,
                                   MPI_Request* request)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Grequest_start", "request is NULL");
  progress::Guard guard;
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Generalized);
  r->user_data = new Callbacks{query_fn, free_fn, cancel_fn, extra_state};
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  *request = handle_of(r);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Grequest_complete, (MPI_Request request)) {
  pml::Request* r = request_of(request);
  if (request == MPI_REQUEST_NULL || !pml::request_valid(r) || !is_generalized(r))
    return raise_self(MPI_ERR_REQUEST, "MPI_Grequest_complete", "not a generalized request");
  progress::Guard guard;
  if (r->complete.load(std::memory_order_acquire))
    return raise_self(MPI_ERR_REQUEST, "MPI_Grequest_complete", "request completed already");
  pml::request_complete(r);
  return MPI_SUCCESS;
}
