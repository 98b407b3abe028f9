// Argument checks shared by the entry points.
#include "mpi/api.h"

namespace axon::mpi {

int check_any_datatype(MPI_Datatype handle, Datatype** out) {
  Datatype* t = datatype_from_handle(handle);
  if (!t || !is_valid_for_communication(t)) return MPI_ERR_TYPE;
  *out = t;
  return MPI_SUCCESS;
}

}  // namespace axon::mpi
