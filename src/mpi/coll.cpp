// Collective entry points: argument checks, then src/coll.
#include "coll/coll.h"
#include "mpi/api.h"

namespace axon::mpi {
namespace {

int check_root(const Comm* c, int root) { return root < 0 || root >= c->size() ? MPI_ERR_ROOT : MPI_SUCCESS; }

int check_op(MPI_Op handle, const Datatype* type, Op** out) {
  Op* op = op_from_handle(handle);
  if (!op || !op_defined_for(*op, *type)) return MPI_ERR_OP;
  *out = op;
  return MPI_SUCCESS;
}

int check_reduction(const void* sendbuf, const void* recvbuf, bool needs_recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op_handle, Datatype** type, Op** op) {
  int rc;
  if ((rc = check_count(count)) || (rc = check_datatype(datatype, type))) return rc;
  if (sendbuf != MPI_IN_PLACE && (rc = check_buffer(sendbuf, count, *type))) return rc;
  if (needs_recvbuf && (rc = check_buffer(recvbuf, count, *type))) return rc;
  if (sendbuf == MPI_IN_PLACE && !needs_recvbuf) return MPI_ERR_BUFFER;
  return check_op(op_handle, *type, op);
}

}  // namespace
}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Barrier, (MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Barrier");
  AXON_TRY(c, "MPI_Barrier", coll::barrier(&c->coll));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Bcast, (void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Bcast");
  Datatype* type = nullptr;
  AXON_TRY(c, "MPI_Bcast", check_count(count));
  AXON_TRY(c, "MPI_Bcast", check_datatype(datatype, &type));
  AXON_TRY(c, "MPI_Bcast", check_buffer(buffer, count, type));
  AXON_TRY(c, "MPI_Bcast", check_root(c, root));
  AXON_TRY(c, "MPI_Bcast", coll::bcast(buffer, count, type, root, &c->coll));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Reduce, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           int root, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Reduce");
  AXON_TRY(c, "MPI_Reduce", check_root(c, root));
  bool is_root = c->rank() == root;
  Datatype* type = nullptr;
  Op* o = nullptr;
  // MPI_IN_PLACE is valid only at the root; elsewhere recvbuf is not significant.
  if (!is_root && sendbuf == MPI_IN_PLACE) return raise(c, MPI_ERR_BUFFER, "MPI_Reduce", "MPI_IN_PLACE at a non-root rank");
  AXON_TRY(c, "MPI_Reduce", check_reduction(sendbuf, recvbuf, is_root, count, datatype, op, &type, &o));
  const void* in = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
  AXON_TRY(c, "MPI_Reduce", coll::reduce(in, recvbuf, count, type, o, root, &c->coll));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Allreduce, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Allreduce");
  Datatype* type = nullptr;
  Op* o = nullptr;
  AXON_TRY(c, "MPI_Allreduce", check_reduction(sendbuf, recvbuf, true, count, datatype, op, &type, &o));
  const void* in = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
  AXON_TRY(c, "MPI_Allreduce", coll::allreduce(in, recvbuf, count, type, o, &c->coll));
  return MPI_SUCCESS;
}

// ---- user-defined reduction operations -------------------------------------

AXON_API(int, MPI_Op_create, (MPI_User_function * user_fn, int commute, MPI_Op* op)) {
  if (!user_fn || !op) return raise_self(MPI_ERR_ARG, "MPI_Op_create", "NULL argument");
  Op* o = op_create_user(user_fn, commute != 0);
  if (!o) return raise_self(MPI_ERR_NO_MEM, "MPI_Op_create");
  *op = to_handle(o);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Op_free, (MPI_Op * op)) {
  if (!op) return raise_self(MPI_ERR_ARG, "MPI_Op_free", "op is NULL");
  Op* o = op_from_handle(*op);
  if (!o || o->predefined) return raise_self(MPI_ERR_OP, "MPI_Op_free", "not a user-defined operation");
  op_release(o);
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Op_commutative, (MPI_Op op, int* commute)) {
  Op* o = op_from_handle(op);
  if (!o) return raise_self(MPI_ERR_OP, "MPI_Op_commutative", "invalid operation");
  if (!commute) return raise_self(MPI_ERR_ARG, "MPI_Op_commutative", "commute is NULL");
  *commute = o->commutative;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Reduce_local, (const void* inbuf, void* inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)) {
  Datatype* type = nullptr;
  Op* o = nullptr;
  int rc = check_reduction(inbuf, inoutbuf, true, count, datatype, op, &type, &o);
  if (inbuf == MPI_IN_PLACE) rc = MPI_ERR_BUFFER;
  if (rc != MPI_SUCCESS) return raise_self(rc, "MPI_Reduce_local");
  rc = op_apply(*o, inbuf, inoutbuf, static_cast<size_t>(count), *type);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, "MPI_Reduce_local");
}
