// Data access through a file's view (io.h, OpenFile::access): the size of
// an access in the file's representation, the file pointer it starts at
// (explicit offset, individual, shared, ordered), and the bytes it moves —
// in place for a contiguous native memory type, else packed or unpacked
// through a staging buffer (native, external32, or a user representation's
// conversion functions).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "io/io.h"

namespace axon::io {

namespace {

// How many whole predefined items of a stream of `type` items fit in
// `bytes` of user-representation data.
int user_elements_in(const UserDatarep& r, const Datatype& type, size_t bytes, size_t* elements) {
  size_t item_bytes = 0, item_elements = 0;
  int rc = user_size(r, type, 1, &item_bytes, &item_elements);
  if (rc != MPI_SUCCESS || item_bytes == 0) {
    *elements = 0;
    return rc;
  }
  size_t n = bytes / item_bytes * item_elements;
  size_t rest = bytes % item_bytes;
  for (size_t u = 0; u < type.reps && rest > 0; ++u)
    for (size_t i = 0; i < type.signature_count && rest > 0; ++i) {
      const SignatureRun& run = type.signature[i];
      MPI_Aint ext = 0;
      r.extent(to_handle(run.basic), &ext, r.extra);
      if (ext <= 0) continue;
      size_t k = std::min(run.count, rest / static_cast<size_t>(ext));
      n += k;
      rest -= k * static_cast<size_t>(ext);
      if (k < run.count) rest = 0;
    }
  *elements = n;
  return MPI_SUCCESS;
}

int user_convert(const UserDatarep& r, bool to_file, void* userbuf, const Datatype& type, size_t elements,
                 void* filebuf) {
  MPI_Datatype h = to_handle(&type);
  int rc;
  if (r.large) {
    MPI_Datarep_conversion_function_c* fn = to_file ? r.write_c : r.read_c;
    rc = fn(userbuf, h, static_cast<MPI_Count>(elements), filebuf, 0, r.extra);
  } else {
    MPI_Datarep_conversion_function* fn = to_file ? r.write : r.read;
    if (elements > static_cast<size_t>(INT32_MAX)) return MPI_ERR_CONVERSION;
    rc = fn(userbuf, h, static_cast<int>(elements), filebuf, 0, r.extra);
  }
  return rc;
}

bool user_converts(const UserDatarep& r, bool to_file) {
  return r.large ? (to_file ? r.write_c : r.read_c) != nullptr : (to_file ? r.write : r.read) != nullptr;
}

}  // namespace

int OpenFile::file_bytes(const Access& a, size_t* bytes, const char** why) const {
  const View& v = view();
  if (v.rep() == Datarep::User) {
    if (user_converts(*urep_, a.write)) {
      int rc = user_size(*urep_, *a.type, a.count, bytes, nullptr);
      if (rc != MPI_SUCCESS) return *why = "the data representation's extent function failed", rc;
    } else if (!bytes_for_count(*a.type, a.count, bytes)) {
      return *why = "count too large", MPI_ERR_COUNT;
    }
  } else if (!v.rep_size(*a.type, a.count, bytes)) {
    return *why = "count too large", MPI_ERR_COUNT;
  }
  if (*bytes % v.esize() != 0) return *why = "only whole etypes can be accessed", MPI_ERR_IO;
  return MPI_SUCCESS;
}

// Moves the bytes of one access at stream position `pos`; `done` gets the
// bytes of the user's data that were transferred (native representation),
// `file_done` the bytes of the file's stream.
int OpenFile::transfer(const Access& a, size_t bytes, uint64_t pos, size_t* done, size_t* file_done) {
  const Datatype& type = *a.type;
  const bool ext32 = view().rep() == Datarep::External32;
  const size_t count = a.count;
  *done = 0;
  *file_done = 0;
  if (bytes == 0) return MPI_SUCCESS;
  if (view().rep() == Datarep::User && user_converts(*urep_, a.write)) {
    // The user's functions convert between the memory layout and the
    // file's representation of the predefined items.
    const UserDatarep& r = *urep_;
    std::vector<unsigned char> filebuf(bytes);
    size_t elements = 0, ignored = 0;
    int rc = user_size(r, type, count, &ignored, &elements);
    if (rc != MPI_SUCCESS) return rc;
    if (a.write) {
      rc = user_convert(r, true, a.buf, type, elements, filebuf.data());
      if (rc != MPI_SUCCESS) return MPI_ERR_CONVERSION;
      rc = local_.write(pos, filebuf.data(), bytes);
      if (rc == MPI_SUCCESS) *done = type.size * count, *file_done = bytes;
      return rc;
    }
    size_t got = 0;
    rc = local_.read(pos, filebuf.data(), bytes, &got);
    if (rc != MPI_SUCCESS) return rc;
    rc = user_elements_in(r, type, got, &elements);
    if (rc != MPI_SUCCESS) return rc;
    if (elements > 0 && user_convert(r, false, a.buf, type, elements, filebuf.data()) != MPI_SUCCESS)
      return MPI_ERR_CONVERSION;
    size_t native = 0;
    bytes_of_elements(type, static_cast<MPI_Count>(elements), &native);
    *done = native;
    *file_done = got;
    return MPI_SUCCESS;
  }
  // A contiguous memory type in native form is the stream itself.
  const bool direct = !ext32 && type.contiguous;
  if (a.write) {
    if (direct) {
      int rc = local_.write(pos, a.buf, bytes);
      if (rc == MPI_SUCCESS) *done = *file_done = bytes;
      return rc;
    }
    std::vector<unsigned char> packed(bytes);
    if (ext32) {
      int rc = external32_pack(type, a.buf, count, packed.data());
      if (rc != MPI_SUCCESS) return rc;
    } else {
      pack_items(type, a.buf, count, packed.data());
    }
    int rc = local_.write(pos, packed.data(), bytes);
    if (rc == MPI_SUCCESS) *done = type.size * count, *file_done = bytes;
    return rc;
  }
  if (direct) {
    int rc = local_.read(pos, a.buf, bytes, done);
    *file_done = *done;
    return rc;
  }
  std::vector<unsigned char> packed(bytes);
  size_t got = 0;
  int rc = local_.read(pos, packed.data(), bytes, &got);
  if (rc != MPI_SUCCESS) return rc;
  *file_done = got;
  if (ext32) {
    size_t item = 0;
    external32_size(type, 1, &item);
    size_t items = item ? got / item : 0;  // a partial item at the end of the file is not converted
    rc = external32_unpack(type, packed.data(), items, a.buf);
    if (rc != MPI_SUCCESS) return rc;
    *done = items * type.size;
  } else {
    unpack_bytes(type, packed.data(), got, a.buf);
    *done = got;
  }
  return MPI_SUCCESS;
}

int OpenFile::access(const Access& a, size_t* done, const char** why) {
  size_t bytes = 0;
  int rc = file_bytes(a, &bytes, why);
  if (rc != MPI_SUCCESS) return rc;
  const size_t esize = view().esize();
  const int64_t etypes = static_cast<int64_t>(bytes / esize);
  int64_t start = 0;  // etypes
  switch (a.ptr) {
    case Pointer::Explicit:
      start = a.offset;
      break;
    case Pointer::Individual:
      start = fp_;
      break;
    case Pointer::Shared:
      rc = shared_fetch_add(etypes, &start);
      if (rc != MPI_SUCCESS) return rc;
      break;
    case Pointer::Ordered: {
      // Rank order: each rank starts after the data of the lower ranks; the
      // pointer moves past all of it. Rank 0 updates the counter once.
      int64_t before = 0, total = 0, base = 0;
      rc = PMPI_Exscan(&etypes, &before, 1, MPI_INT64_T, MPI_SUM, comm_);
      if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&etypes, &total, 1, MPI_INT64_T, MPI_SUM, comm_);
      if (rc != MPI_SUCCESS) return rc;
      if (rank_ == 0) {
        before = 0;  // MPI_Exscan leaves rank 0's result undefined
        rc = shared_fetch_add(total, &base);
      }
      int brc = PMPI_Bcast(&base, 1, MPI_INT64_T, 0, comm_);
      if (rc != MPI_SUCCESS) return rc;
      if (brc != MPI_SUCCESS) return brc;
      start = base + before;
      break;
    }
  }
  size_t file_done = 0;
  *done = 0;
  rc = transfer(a, bytes, static_cast<uint64_t>(start) * esize, done, &file_done);
  if (rc != MPI_SUCCESS) return rc;
  // The individual pointer moves by the data accessed (a read stops at the
  // end of the file): whole etypes of what arrived.
  if (a.ptr == Pointer::Individual) fp_ = start + static_cast<int64_t>(file_done / esize);
  return MPI_SUCCESS;
}

}  // namespace axon::io
