// Collective operations on a communicator's collective context.
//
// The foundation provides barrier, broadcast, reduce and allreduce with
// simple tree and recursive-doubling algorithms over point-to-point; the full
// algorithm library, topology awareness and selection come later.
#pragma once

#include "datatype/datatype.h"
#include "op/op.h"
#include "pml/pml.h"

namespace axon::coll {

int barrier(pml::Context* ctx);
int bcast(void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx);
// `sendbuf` null means in place (the data is in recvbuf).
int reduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
           int root, pml::Context* ctx);
int allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
              pml::Context* ctx);
// Every rank contributes `bytes` bytes; recvbuf receives size*bytes, in rank order.
// `sendbuf` null means in place (own block already at recvbuf + rank*bytes).
int allgather_bytes(const void* sendbuf, size_t bytes, void* recvbuf, pml::Context* ctx);

}  // namespace axon::coll
