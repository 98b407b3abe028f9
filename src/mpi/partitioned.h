// Partitioned communication (src/mpi/partitioned.cpp): what MPI_Start and
// MPI_Request_free do with a partitioned request (pml::Request::partitioned).
#pragma once

#include "pml/pml.h"

namespace axon::mpi {

// MPI_Start: clears the ready partitions; a receive is posted at once, a
// send waits for its last MPI_Pready.
int partitioned_start(pml::Request* r);
// MPI_Request_free of an inactive partitioned request: releases its state
// (the caller then releases the request).
void partitioned_free(pml::Request* r);

}  // namespace axon::mpi
