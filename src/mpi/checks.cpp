// Argument checks shared by the entry points.
#include "mpi/api.h"

namespace axon::mpi {

int check_count(MPI_Count count) { return count < 0 ? MPI_ERR_COUNT : MPI_SUCCESS; }

int check_datatype(MPI_Datatype handle, Datatype** out) {
  Datatype* t = datatype_from_handle(handle);
  if (!t || !is_valid_for_communication(t)) return MPI_ERR_TYPE;
  *out = t;
  return MPI_SUCCESS;
}

int check_buffer(const void* buf, MPI_Count count, const Datatype* type) {
  // MPI_BOTTOM (NULL) is legal with derived types that hold absolute addresses.
  if (!buf && count > 0 && type->size > 0 && type->predefined) return MPI_ERR_BUFFER;
  return MPI_SUCCESS;
}

int check_send_tag(int tag) { return tag < 0 || tag > kTagUpperBound ? MPI_ERR_TAG : MPI_SUCCESS; }

int check_recv_tag(int tag) {
  return tag == MPI_ANY_TAG ? MPI_SUCCESS : check_send_tag(tag);
}

int check_dest(const Comm* comm, int rank) {
  return rank == MPI_PROC_NULL || (rank >= 0 && rank < comm->size()) ? MPI_SUCCESS : MPI_ERR_RANK;
}

int check_source(const Comm* comm, int rank) {
  return rank == MPI_ANY_SOURCE ? MPI_SUCCESS : check_dest(comm, rank);
}

}  // namespace axon::mpi
