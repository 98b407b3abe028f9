// Status accessors (MPI-4.1 adds getters and setters for the public fields so
// that bindings need not know the struct) and the element setters used by
// generalized requests (MPI_Status_set_elements / set_cancelled), plus the
// non-destructive multi-request status queries of MPI-4.1
// (MPI_Request_get_status_any / all / some).
#include <vector>

#include "mpi/api.h"

using namespace axon;
using namespace axon::mpi;

// MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE (include/mpi_fortran.h): only
// their addresses matter. Sized for MPI_F_STATUS_SIZE integers of 8 bytes,
// the widest Fortran INTEGER, so a Fortran side may point at them as statuses.
extern "C" {
__attribute__((visibility("default"), aligned(16))) char MPIX_F_status_ignore[MPI_F_STATUS_SIZE * 8];
__attribute__((visibility("default"), aligned(16))) char MPIX_F_statuses_ignore[MPI_F_STATUS_SIZE * 8];
}

namespace {

// Bytes of the first `elements` basic elements of a stream of `type` items,
// false when the type has no elements (and elements > 0) or on overflow. The
// datatype engine counts elements the way MPI_Get_elements does (a MINLOC
// pair is two), so MPI_Get_elements returns what was set.
bool bytes_for_elements(const Datatype& type, MPI_Count elements, size_t* bytes) {
  return bytes_of_elements(type, elements, bytes);
}

int set_elements(const char* fn, MPI_Status* status, MPI_Datatype datatype, MPI_Count count) {
  if (!status || status == MPI_STATUS_IGNORE) return raise_self(MPI_ERR_ARG, fn, "status is NULL");
  Datatype* type = datatype_from_handle(datatype);
  if (!type) return raise_self(MPI_ERR_TYPE, fn, "invalid datatype");
  if (count < 0) return raise_self(MPI_ERR_COUNT, fn, "negative count");
  size_t bytes = 0;
  if (!bytes_for_elements(*type, count, &bytes)) return raise_self(MPI_ERR_COUNT, fn, "count does not fit the datatype");
  bool cancelled = status->MPI_internal[2] != 0;
  set_status(status, status->MPI_SOURCE, status->MPI_TAG, status->MPI_ERROR, bytes, cancelled);
  return MPI_SUCCESS;
}

#define AXON_STATUS_ARG(fn, status) \
  if (!(status) || (status) == MPI_STATUS_IGNORE) return raise_self(MPI_ERR_ARG, fn, "status is NULL")

}  // namespace

AXON_API(int, MPI_Status_set_elements, (MPI_Status * status, MPI_Datatype datatype, int count)) {
  return set_elements("MPI_Status_set_elements", status, datatype, count);
}
AXON_API(int, MPI_Status_set_elements_c, (MPI_Status * status, MPI_Datatype datatype, MPI_Count count)) {
  return set_elements("MPI_Status_set_elements_c", status, datatype, count);
}
AXON_API(int, MPI_Status_set_elements_x, (MPI_Status * status, MPI_Datatype datatype, MPI_Count count)) {
  return set_elements("MPI_Status_set_elements_x", status, datatype, count);
}

AXON_API(int, MPI_Status_set_cancelled, (MPI_Status * status, int flag)) {
  AXON_STATUS_ARG("MPI_Status_set_cancelled", status);
  status->MPI_internal[2] = flag ? 1 : 0;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Status_set_source, (MPI_Status * status, int source)) {
  AXON_STATUS_ARG("MPI_Status_set_source", status);
  status->MPI_SOURCE = source;
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Status_set_tag, (MPI_Status * status, int tag)) {
  AXON_STATUS_ARG("MPI_Status_set_tag", status);
  status->MPI_TAG = tag;
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Status_set_error, (MPI_Status * status, int error)) {
  AXON_STATUS_ARG("MPI_Status_set_error", status);
  status->MPI_ERROR = error;
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Status_get_source, (const MPI_Status* status, int* source)) {
  AXON_STATUS_ARG("MPI_Status_get_source", status);
  if (!source) return raise_self(MPI_ERR_ARG, "MPI_Status_get_source", "source is NULL");
  *source = status->MPI_SOURCE;
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Status_get_tag, (const MPI_Status* status, int* tag)) {
  AXON_STATUS_ARG("MPI_Status_get_tag", status);
  if (!tag) return raise_self(MPI_ERR_ARG, "MPI_Status_get_tag", "tag is NULL");
  *tag = status->MPI_TAG;
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Status_get_error, (const MPI_Status* status, int* error)) {
  AXON_STATUS_ARG("MPI_Status_get_error", status);
  if (!error) return raise_self(MPI_ERR_ARG, "MPI_Status_get_error", "error is NULL");
  *error = status->MPI_ERROR;
  return MPI_SUCCESS;
}
