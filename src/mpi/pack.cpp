// MPI_Pack / MPI_Unpack / MPI_Pack_size and the "external32" variants, in
// int and large-count bindings. Axon's packed format is the plain packed
// stream (no header), so MPI_Pack_size is size * count.
#include <cstring>
#include <limits>

#include "accel/kernels.h"
#include "mpi/api.h"

using namespace axon;
using namespace axon::mpi;

namespace {

// Common checks of a pack/unpack call; `bytes` is what count items take.
// Errors are returned as classes; the caller raises them.
int check_pack_args(MPI_Count count, MPI_Datatype datatype, const void* user, Datatype** type) {
  if (int rc = check_count(count)) return rc;
  if (int rc = check_datatype(datatype, type)) return rc;
  return check_buffer(user, count, *type);
}

template <typename P>
int pack(const char* fn, Comm* c, const void* inbuf, MPI_Count incount, MPI_Datatype datatype, void* outbuf,
         MPI_Count outsize, P* position) {
  Datatype* t = nullptr;
  AXON_TRY(c, fn, check_pack_args(incount, datatype, inbuf, &t));
  if (!position || outsize < 0 || *position < 0) return raise(c, MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!bytes_for_count(*t, incount, &bytes)) return raise(c, MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(outsize))
    return raise(c, MPI_ERR_TRUNCATE, fn, "the output buffer is too small");
  if (bytes && !outbuf) return raise(c, MPI_ERR_BUFFER, fn, "outbuf is NULL");
  if (bytes && (accel::on_device(inbuf) || accel::on_device(outbuf))) {
    // GPU buffers: a GPU kernel, or host copies (src/accel/kernels.h).
    AXON_TRY(c, fn, accel::device_pack(*t, inbuf, static_cast<size_t>(incount), static_cast<char*>(outbuf) + *position));
  } else if (bytes) {
    pack_items(*t, inbuf, static_cast<size_t>(incount), static_cast<char*>(outbuf) + *position);
  }
  *position += static_cast<P>(bytes);
  return MPI_SUCCESS;
}

template <typename P>
int unpack(const char* fn, Comm* c, const void* inbuf, MPI_Count insize, P* position, void* outbuf,
           MPI_Count outcount, MPI_Datatype datatype) {
  Datatype* t = nullptr;
  AXON_TRY(c, fn, check_pack_args(outcount, datatype, outbuf, &t));
  if (!position || insize < 0 || *position < 0) return raise(c, MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!bytes_for_count(*t, outcount, &bytes)) return raise(c, MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(insize))
    return raise(c, MPI_ERR_TRUNCATE, fn, "the input buffer holds less data than requested");
  if (bytes && !inbuf) return raise(c, MPI_ERR_BUFFER, fn, "inbuf is NULL");
  if (bytes && (accel::on_device(inbuf) || accel::on_device(outbuf))) {
    AXON_TRY(c, fn, accel::device_unpack(*t, static_cast<const char*>(inbuf) + *position, static_cast<size_t>(outcount), outbuf));
  } else if (bytes) {
    unpack_items(*t, static_cast<const char*>(inbuf) + *position, static_cast<size_t>(outcount), outbuf);
  }
  *position += static_cast<P>(bytes);
  return MPI_SUCCESS;
}

template <typename S>
int pack_size(const char* fn, MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, S* size) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* t = nullptr;
  AXON_TRY(c, fn, check_count(incount));
  AXON_TRY(c, fn, check_datatype(datatype, &t));
  if (!size) return raise(c, MPI_ERR_ARG, fn, "size is NULL");
  size_t bytes = 0;
  if (!bytes_for_count(*t, incount, &bytes) || bytes > static_cast<size_t>(std::numeric_limits<S>::max()))
    return raise(c, MPI_ERR_VALUE_TOO_LARGE, fn);
  *size = static_cast<S>(bytes);
  return MPI_SUCCESS;
}

// "external32" is the only representation the standard defines for these calls.
bool is_external32(const char* datarep) { return datarep && std::strcmp(datarep, "external32") == 0; }

template <typename P>
int pack_external(const char* fn, const char* datarep, const void* inbuf, MPI_Count incount, MPI_Datatype datatype,
                  void* outbuf, MPI_Count outsize, P* position) {
  if (!is_external32(datarep)) return raise_self(MPI_ERR_ARG, fn, "datarep must be \"external32\"");
  Datatype* t = nullptr;
  if (int rc = check_pack_args(incount, datatype, inbuf, &t)) return raise_self(rc, fn);
  if (!position || outsize < 0 || *position < 0) return raise_self(MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!external32_size(*t, static_cast<size_t>(incount), &bytes)) return raise_self(MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(outsize))
    return raise_self(MPI_ERR_TRUNCATE, fn, "the output buffer is too small");
  if (bytes && !outbuf) return raise_self(MPI_ERR_BUFFER, fn, "outbuf is NULL");
  if (bytes) {
    int rc = external32_pack(*t, inbuf, static_cast<size_t>(incount), static_cast<char*>(outbuf) + *position);
    if (rc) return raise_self(rc, fn);
  }
  *position += static_cast<P>(bytes);
  return MPI_SUCCESS;
}

template <typename P>
int unpack_external(const char* fn, const char* datarep, const void* inbuf, MPI_Count insize, P* position,
                    void* outbuf, MPI_Count outcount, MPI_Datatype datatype) {
  if (!is_external32(datarep)) return raise_self(MPI_ERR_ARG, fn, "datarep must be \"external32\"");
  Datatype* t = nullptr;
  if (int rc = check_pack_args(outcount, datatype, outbuf, &t)) return raise_self(rc, fn);
  if (!position || insize < 0 || *position < 0) return raise_self(MPI_ERR_ARG, fn, "invalid position or size");
  size_t bytes = 0;
  if (!external32_size(*t, static_cast<size_t>(outcount), &bytes)) return raise_self(MPI_ERR_COUNT, fn);
  if (static_cast<size_t>(*position) + bytes > static_cast<size_t>(insize))
    return raise_self(MPI_ERR_TRUNCATE, fn, "the input buffer holds less data than requested");
  if (bytes && !inbuf) return raise_self(MPI_ERR_BUFFER, fn, "inbuf is NULL");
  if (bytes) {
    int rc = external32_unpack(*t, static_cast<const char*>(inbuf) + *position, static_cast<size_t>(outcount), outbuf);
    if (rc) return raise_self(rc, fn);
  }
  *position += static_cast<P>(bytes);
  return MPI_SUCCESS;
}

template <typename S>
int pack_external_size(const char* fn, const char* datarep, MPI_Count incount, MPI_Datatype datatype, S* size) {
  if (!is_external32(datarep)) return raise_self(MPI_ERR_ARG, fn, "datarep must be \"external32\"");
  Datatype* t = nullptr;
  if (int rc = check_count(incount)) return raise_self(rc, fn);
  if (int rc = check_datatype(datatype, &t)) return raise_self(rc, fn);
  if (!size) return raise_self(MPI_ERR_ARG, fn, "size is NULL");
  size_t bytes = 0;
  if (!external32_size(*t, static_cast<size_t>(incount), &bytes) ||
      bytes > static_cast<size_t>(std::numeric_limits<S>::max()))
    return raise_self(MPI_ERR_VALUE_TOO_LARGE, fn);
  *size = static_cast<S>(bytes);
  return MPI_SUCCESS;
}

}  // namespace

AXON_API(int, MPI_Pack_size, (int incount, MPI_Datatype datatype, MPI_Comm comm, int* size)) {
  return pack_size("MPI_Pack_size", incount, datatype, comm, size);
}
AXON_API(int, MPI_Pack_size_c, (MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count* size)) {
  return pack_size("MPI_Pack_size_c", incount, datatype, comm, size);
}

AXON_API(int, MPI_Pack, (const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
                         int* position, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Pack");
  return pack("MPI_Pack", c, inbuf, incount, datatype, outbuf, outsize, position);
}
AXON_API(int, MPI_Pack_c, (const void* inbuf, MPI_Count incount, MPI_Datatype datatype, void* outbuf,
                           MPI_Count outsize, MPI_Count* position, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Pack_c");
  return pack("MPI_Pack_c", c, inbuf, incount, datatype, outbuf, outsize, position);
}

AXON_API(int, MPI_Unpack, (const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                           MPI_Datatype datatype, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Unpack");
  return unpack("MPI_Unpack", c, inbuf, insize, position, outbuf, outcount, datatype);
}
AXON_API(int, MPI_Unpack_c, (const void* inbuf, MPI_Count insize, MPI_Count* position, void* outbuf,
                             MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Unpack_c");
  return unpack("MPI_Unpack_c", c, inbuf, insize, position, outbuf, outcount, datatype);
}

AXON_API(int, MPI_Pack_external, (const char* datarep, const void* inbuf, int incount, MPI_Datatype datatype,
                                  void* outbuf, MPI_Aint outsize, MPI_Aint* position)) {
  return pack_external("MPI_Pack_external", datarep, inbuf, incount, datatype, outbuf, outsize, position);
}
AXON_API(int, MPI_Pack_external_c, (const char* datarep, const void* inbuf, MPI_Count incount,
                                    MPI_Datatype datatype, void* outbuf, MPI_Count outsize, MPI_Count* position)) {
  return pack_external("MPI_Pack_external_c", datarep, inbuf, incount, datatype, outbuf, outsize, position);
}
AXON_API(int, MPI_Unpack_external, (const char datarep[], const void* inbuf, MPI_Aint insize, MPI_Aint* position,
                                    void* outbuf, int outcount, MPI_Datatype datatype)) {
  return unpack_external("MPI_Unpack_external", datarep, inbuf, insize, position, outbuf, outcount, datatype);
}
AXON_API(int, MPI_Unpack_external_c, (const char datarep[], const void* inbuf, MPI_Count insize,
                                      MPI_Count* position, void* outbuf, MPI_Count outcount,
                                      MPI_Datatype datatype)) {
  return unpack_external("MPI_Unpack_external_c", datarep, inbuf, insize, position, outbuf, outcount, datatype);
}
AXON_API(int, MPI_Pack_external_size, (const char* datarep, int incount, MPI_Datatype datatype, MPI_Aint* size)) {
  return pack_external_size("MPI_Pack_external_size", datarep, incount, datatype, size);
}
AXON_API(int, MPI_Pack_external_size_c, (const char* datarep, MPI_Count incount, MPI_Datatype datatype,
                                         MPI_Count* size)) {
  return pack_external_size("MPI_Pack_external_size_c", datarep, incount, datatype, size);
}
