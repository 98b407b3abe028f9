// Buffered sends: the user's attached buffer and the messages in flight from it.
#pragma once

#include <mpi.h>

#include "datatype/datatype.h"
#include "mpi/objects.h"

namespace axon::mpi {

// Copies the message into the attached buffer and starts sending it; the
// caller's buffer is free on return. MPI_ERR_BUFFER when it does not fit.
int buffered_send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Comm* comm);

// Waits until every buffered message has left its buffer (MPI_Finalize does
// this, as if the buffer were detached).
void buffered_sends_flush();

}  // namespace axon::mpi
