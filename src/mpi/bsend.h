// Buffered sends: the user's attached buffer and the messages in flight from it.
#pragma once

#include <mpi.h>

#include "datatype/datatype.h"
#include "mpi/objects.h"

namespace axon::mpi {

// Copies the message into the attached buffer and starts sending it; the
// caller's buffer is free on return. MPI_ERR_BUFFER when it does not fit.
int buffered_send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Comm* comm);

// Waits until every buffered message has left its buffer, the process's and
// every communicator's (MPI_Finalize does this, as if they were detached).
void buffered_sends_flush();

// A communicator goes away: drops the bookkeeping of its own buffer
// (MPI_Comm_attach_buffer); messages still in flight keep it alive.
void comm_buffer_destroy(Comm* c);

}  // namespace axon::mpi
