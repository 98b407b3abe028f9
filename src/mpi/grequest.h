// Generalized requests (MPI_Grequest_start / MPI_Grequest_complete): a
// request whose operation the user runs; the library calls the user's query,
// free and cancel functions. requests.cpp routes Wait/Test/Cancel/Free of
// such requests here.
#pragma once

#include <mpi.h>

#include "pml/pml.h"

namespace axon::mpi {

inline bool is_generalized(const pml::Request* r) { return r->kind == pml::Request::Kind::Generalized; }

// Fills `status` through the user's query function (status may be
// MPI_STATUS_IGNORE: a scratch status is queried); returns its error code.
int grequest_query(pml::Request* r, MPI_Status* status);
// Wait/Test retiring a completed generalized request: query, then free, then
// the handle becomes MPI_REQUEST_NULL. Returns the first error of the two.
int grequest_retire(MPI_Request* handle, MPI_Status* status);
// MPI_Cancel: calls the cancel function with whether it already completed.
int grequest_cancel(pml::Request* r);
// MPI_Request_free: frees now if complete, else when MPI_Grequest_complete runs.
int grequest_free(pml::Request* r);

}  // namespace axon::mpi
