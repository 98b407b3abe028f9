// Datatype queries and MPI_Pack/MPI_Unpack. Only predefined datatypes exist
// so far; these calls are written against the Datatype object and work
// unchanged when derived types arrive.
#include <cstring>

#include "mpi/api.h"

using namespace axon;
using namespace axon::mpi;

namespace {
int type_or_raise(MPI_Datatype handle, Datatype** out, const char* fn) {
  Datatype* t = datatype_from_handle(handle);
  if (!t) return raise_self(MPI_ERR_TYPE, fn, "invalid datatype");
  *out = t;
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Type_size, (MPI_Datatype datatype, int* size)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_size")) return rc;
  if (!size) return raise_self(MPI_ERR_ARG, "MPI_Type_size", "size is NULL");
  *size = t->size > static_cast<size_t>(INT32_MAX) ? MPI_UNDEFINED : static_cast<int>(t->size);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_size_c, (MPI_Datatype datatype, MPI_Count* size)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_size_c")) return rc;
  if (!size) return raise_self(MPI_ERR_ARG, "MPI_Type_size_c", "size is NULL");
  *size = static_cast<MPI_Count>(t->size);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_extent, (MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_get_extent")) return rc;
  if (!lb || !extent) return raise_self(MPI_ERR_ARG, "MPI_Type_get_extent", "NULL argument");
  *lb = t->lb;
  *extent = t->extent;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_true_extent, (MPI_Datatype datatype, MPI_Aint* true_lb, MPI_Aint* true_extent)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_get_true_extent")) return rc;
  if (!true_lb || !true_extent) return raise_self(MPI_ERR_ARG, "MPI_Type_get_true_extent", "NULL argument");
  *true_lb = t->true_lb;
  *true_extent = t->true_extent;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Type_get_name, (MPI_Datatype datatype, char* type_name, int* resultlen)) {
  Datatype* t = nullptr;
  if (int rc = type_or_raise(datatype, &t, "MPI_Type_get_name")) return rc;
  if (!type_name || !resultlen) return raise_self(MPI_ERR_ARG, "MPI_Type_get_name", "NULL argument");
  size_t n = strnlen(t->name, MPI_MAX_OBJECT_NAME - 1);
  std::memcpy(type_name, t->name, n);
  type_name[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Pack_size, (int incount, MPI_Datatype datatype, MPI_Comm comm, int* size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Pack_size");
  Datatype* t = nullptr;
  AXON_TRY(c, "MPI_Pack_size", check_count(incount));
  AXON_TRY(c, "MPI_Pack_size", check_datatype(datatype, &t));
  if (!size) return raise(c, MPI_ERR_ARG, "MPI_Pack_size", "size is NULL");
  size_t bytes = 0;
  if (!bytes_for_count(*t, static_cast<MPI_Count>(incount), &bytes) || bytes > static_cast<size_t>(INT32_MAX))
    return raise(c, MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size");
  *size = static_cast<int>(bytes);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Pack, (const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
                         int* position, MPI_Comm comm)) {
  const char* fn = "MPI_Pack";
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* t = nullptr;
  AXON_TRY(c, fn, check_count(incount));
  AXON_TRY(c, fn, check_datatype(datatype, &t));
  AXON_TRY(c, fn, check_buffer(inbuf, incount, t));
  if (!position || outsize < 0 || *position < 0) return raise(c, MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!bytes_for_count(*t, static_cast<MPI_Count>(incount), &bytes)) return raise(c, MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(outsize))
    return raise(c, MPI_ERR_TRUNCATE, fn, "the output buffer is too small");
  if (bytes && !outbuf) return raise(c, MPI_ERR_BUFFER, fn, "outbuf is NULL");
  if (bytes) pack_items(*t, inbuf, static_cast<size_t>(incount), static_cast<char*>(outbuf) + *position);
  *position += static_cast<int>(bytes);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Unpack, (const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                           MPI_Datatype datatype, MPI_Comm comm)) {
  const char* fn = "MPI_Unpack";
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* t = nullptr;
  AXON_TRY(c, fn, check_count(outcount));
  AXON_TRY(c, fn, check_datatype(datatype, &t));
  AXON_TRY(c, fn, check_buffer(outbuf, outcount, t));
  if (!position || insize < 0 || *position < 0) return raise(c, MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!bytes_for_count(*t, static_cast<MPI_Count>(outcount), &bytes)) return raise(c, MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(insize))
    return raise(c, MPI_ERR_TRUNCATE, fn, "the input buffer holds less data than requested");
  if (bytes && !inbuf) return raise(c, MPI_ERR_BUFFER, fn, "inbuf is NULL");
  if (bytes) unpack_items(*t, static_cast<const char*>(inbuf) + *position, static_cast<size_t>(outcount), outbuf);
  *position += static_cast<int>(bytes);
  return MPI_SUCCESS;
}
