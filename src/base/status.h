// Internal return codes. Layers below src/mpi return these; the MPI layer
// maps them to MPI error classes.
#pragma once

namespace axon {

enum Status : int {
  kOk = 0,
  kAgain = 1,        // resource temporarily exhausted (flow control): retry after progress
  kNoMemory = -1,
  kUnreachable = -2,  // no transport reaches that peer
  kUnsupported = -3,
  kIoError = -4,
  kInternal = -5,
};

}  // namespace axon
