// A file opened by the processes of a communicator (io.h, OpenFile): the
// collective open and close, the shared file pointer, views, seeks and
// size changes. Data access is in access.cpp.
//
// What is collective is written with the public interface, PMPI_ calls on
// the file's private duplicate of the user's communicator (error handler
// MPI_ERRORS_RETURN, so a failure comes back here as an error class): the
// agreement on open, the shared file pointer (one int64 in a window at
// rank 0, updated with MPI_Fetch_and_op) and the barriers that order a
// change of the file against the accesses before it.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "io/io.h"

namespace axon::io {

std::string system_path(const char* filename) {
  static const char* const kPrefixes[] = {"ufs:", "nfs:", "posix:", "file:"};
  for (const char* p : kPrefixes)
    if (std::strncmp(filename, p, std::strlen(p)) == 0) return filename + std::strlen(p);
  return filename;
}

int delete_file(const std::string& path) {
  return ::unlink(path.c_str()) == 0 ? MPI_SUCCESS : error_class_of_errno(errno);
}

// ---- open and close -----------------------------------------------------------------

int OpenFile::open(MPI_Comm comm, const std::string& path, int amode, int perm, const char** why) {
  int rc = PMPI_Comm_dup(comm, &comm_);
  if (rc != MPI_SUCCESS) {
    comm_ = MPI_COMM_NULL;
    *why = "cannot duplicate the communicator";
    return rc;
  }
  PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  PMPI_Comm_rank(comm_, &rank_);

  // The ranks must agree on the access mode (MPI-4.1 14.2.1).
  int modes[2] = {amode, ~amode}, agreed[2] = {0, 0};
  rc = PMPI_Allreduce(modes, agreed, 2, MPI_INT, MPI_BAND, comm_);
  int local = rc;
  if (local == MPI_SUCCESS && (agreed[0] != amode || agreed[1] != ~amode)) local = MPI_ERR_NOT_SAME;

  const bool create = amode & MPI_MODE_CREATE;
  if (local == MPI_SUCCESS) {
    // Rank 0 creates the file (alone, so that MPI_MODE_EXCL fails on no
    // other rank); the others open it once it exists.
    int first = MPI_SUCCESS;
    if (create) {
      if (rank_ == 0) first = local_.open(path, amode, true, amode & MPI_MODE_EXCL, perm);
      rc = PMPI_Bcast(&first, 1, MPI_INT, 0, comm_);
      local = rc != MPI_SUCCESS ? rc : first;
      if (local == MPI_SUCCESS && rank_ != 0) local = local_.open(path, amode, false, false, 0);
    } else {
      local = local_.open(path, amode, false, false, 0);
    }
  }
  // The shared file pointer: rank 0 holds it.
  int64_t* base = nullptr;
  rc = PMPI_Win_allocate(rank_ == 0 ? sizeof(int64_t) : 0, sizeof(int64_t), MPI_INFO_NULL, comm_, &base, &shared_);
  if (local == MPI_SUCCESS) local = rc;
  if (rc == MPI_SUCCESS && rank_ == 0) {
    PMPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, shared_);
    *base = 0;
    PMPI_Win_unlock(0, shared_);
  }
  // Every rank returns the same result: the largest error class any saw.
  int result = MPI_SUCCESS;
  rc = PMPI_Allreduce(&local, &result, 1, MPI_INT, MPI_MAX, comm_);
  if (rc != MPI_SUCCESS && result == MPI_SUCCESS) result = rc;
  if (result == MPI_SUCCESS && (amode & MPI_MODE_APPEND)) {
    // Both pointers start at the end of the file (the default view counts bytes).
    int64_t end = 0;
    result = local_.size(&end);
    fp_ = end;
    if (result == MPI_SUCCESS && rank_ == 0) result = shared_set(end);
    int r2 = PMPI_Barrier(comm_);
    if (result == MPI_SUCCESS) result = r2;
  }
  if (result != MPI_SUCCESS) {
    local_.close();
    if (shared_ != MPI_WIN_NULL) PMPI_Win_free(&shared_);
    PMPI_Comm_free(&comm_);
    // errno is still the failed system call's when this rank failed.
    *why = local != MPI_SUCCESS ? std::strerror(errno) : "another rank failed";
  }
  return result;
}

int OpenFile::close() {
  int rc = local_.close();
  // Every rank has closed before the file goes (MPI_MODE_DELETE_ON_CLOSE).
  int brc = PMPI_Barrier(comm_);
  if (rc == MPI_SUCCESS) rc = brc;
  if ((local_.amode() & MPI_MODE_DELETE_ON_CLOSE) && rank_ == 0) {
    if (::unlink(local_.path().c_str()) != 0 && rc == MPI_SUCCESS) rc = error_class_of_errno(errno);
  }
  PMPI_Win_free(&shared_);
  PMPI_Comm_free(&comm_);
  return rc;
}

// ---- the shared file pointer ----------------------------------------------------------

int OpenFile::shared_op(int64_t operand, MPI_Op op, int64_t* old) {
  int64_t dummy = 0;
  if (!old) old = &dummy;
  int rc = PMPI_Win_lock(MPI_LOCK_SHARED, 0, 0, shared_);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Fetch_and_op(&operand, old, MPI_INT64_T, 0, 0, op, shared_);
  int rc2 = PMPI_Win_unlock(0, shared_);
  return rc != MPI_SUCCESS ? rc : rc2;
}

int OpenFile::shared_position(int64_t* out) { return shared_get(out); }

// ---- size, sync, atomicity --------------------------------------------------------------

// One rank changes the file once every rank has finished its earlier
// accesses (a barrier), and no rank returns before it is done (an allreduce
// of the result, which every rank returns).
template <class Change>
int OpenFile::resize_collectively(Change change) {
  int rc = PMPI_Barrier(comm_);
  if (rc != MPI_SUCCESS) return rc;
  int local = rank_ == 0 ? change() : MPI_SUCCESS, result = MPI_SUCCESS;
  rc = PMPI_Allreduce(&local, &result, 1, MPI_INT, MPI_MAX, comm_);
  return rc != MPI_SUCCESS ? rc : result;
}

int OpenFile::set_size(int64_t size) {
  return resize_collectively([&] { return local_.truncate(size); });
}

int OpenFile::preallocate(int64_t size) {
  return resize_collectively([&] { return local_.preallocate(size); });
}

int OpenFile::sync() {
  int rc = local_.sync();
  int brc = PMPI_Barrier(comm_);
  return rc != MPI_SUCCESS ? rc : brc;
}

int OpenFile::set_atomicity(bool on) {
  int rc = PMPI_Barrier(comm_);
  if (rc != MPI_SUCCESS) return rc;
  local_.atomic = on;
  return MPI_SUCCESS;
}

// ---- views ----------------------------------------------------------------------------

int OpenFile::set_view(int64_t disp, Datatype* etype, Datatype* filetype, Datarep rep, const UserDatarep* urep,
                       size_t user_esize) {
  // Every rank's earlier accesses through the shared pointer are done
  // before it moves back to 0, and none starts before.
  int rc = PMPI_Barrier(comm_);
  if (rc == MPI_SUCCESS && rank_ == 0) rc = shared_set(0);
  int brc = PMPI_Barrier(comm_);
  if (rc != MPI_SUCCESS) return rc;
  if (brc != MPI_SUCCESS) return brc;
  local_.view().reset(disp, etype, filetype, rep, user_esize);
  urep_ = urep;
  fp_ = 0;
  return MPI_SUCCESS;
}

int OpenFile::current_displacement(int64_t* disp) {
  int64_t shared = 0;
  int rc = shared_get(&shared);
  if (rc != MPI_SUCCESS) return rc;
  *disp = byte_offset(shared);
  return MPI_SUCCESS;
}

// A user representation's extent function gives the extent of predefined
// types; derived ones take the sum over their signature.
int OpenFile::type_extent(const Datatype& type, int64_t* out) const {
  if (view().rep() != Datarep::User) {
    *out = view().rep_extent(type);
    return MPI_SUCCESS;
  }
  size_t bytes = 0;
  int rc = user_size(*urep_, type, 1, &bytes, nullptr);
  *out = static_cast<int64_t>(bytes);
  return rc;
}

int64_t OpenFile::byte_offset(int64_t offset) const {
  return view().byte_offset(static_cast<uint64_t>(offset) * view().esize());
}

// ---- seeks ----------------------------------------------------------------------------

// The new position of a seek, in etypes; MPI_ERR_ARG for a bad whence or a
// negative result.
int OpenFile::seek_target(int64_t offset, int whence, int64_t current, int64_t* out) const {
  int64_t target;
  switch (whence) {
    case MPI_SEEK_SET:
      target = offset;
      break;
    case MPI_SEEK_CUR:
      target = current + offset;
      break;
    case MPI_SEEK_END: {
      int64_t size = 0;
      int rc = local_.size(&size);
      if (rc != MPI_SUCCESS) return rc;
      target = static_cast<int64_t>(view().stream_end(size) / view().esize()) + offset;
      break;
    }
    default:
      return MPI_ERR_ARG;
  }
  if (target < 0) return MPI_ERR_ARG;
  *out = target;
  return MPI_SUCCESS;
}

int OpenFile::seek(int64_t offset, int whence) {
  int64_t target = 0;
  int rc = seek_target(offset, whence, fp_, &target);
  if (rc != MPI_SUCCESS) return rc;
  fp_ = target;
  return MPI_SUCCESS;
}

int OpenFile::seek_shared(int64_t offset, int whence) {
  int rc = PMPI_Barrier(comm_);
  if (rc == MPI_SUCCESS && rank_ == 0) {
    int64_t current = 0, target = 0;
    rc = shared_get(&current);
    if (rc == MPI_SUCCESS) rc = seek_target(offset, whence, current, &target);
    if (rc == MPI_SUCCESS) rc = shared_set(target);
  }
  int brc = PMPI_Bcast(&rc, 1, MPI_INT, 0, comm_);
  return brc != MPI_SUCCESS ? brc : rc;
}

}  // namespace axon::io
