// MPI-IO below the MPI layer: a file opened by one process (a POSIX
// descriptor), its view (displacement, etype, filetype, data representation)
// and data access through the view with pread / pwrite. The MPI layer
// (src/mpi/file.cpp) owns everything collective — the file's communicator,
// the shared file pointer, error handlers — and calls in here for the bytes.
// docs/io.md explains the design.
//
// Terms: the view's *stream* is the sequence of data bytes the view makes
// visible (the filetype's data, tile after tile, holes removed), in the
// file's representation. A stream position is a byte offset into it; etype
// offsets of the MPI calls are stream positions divided by the etype's size
// in the file.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datatype/datatype.h"

namespace axon::io {

// The MPI error class of a failed system call's errno (MPI-4.1 14.7 classes:
// ENOENT -> MPI_ERR_NO_SUCH_FILE, EEXIST -> MPI_ERR_FILE_EXISTS, EACCES ->
// MPI_ERR_ACCESS, EROFS -> MPI_ERR_READ_ONLY, ENOSPC -> MPI_ERR_NO_SPACE,
// EDQUOT -> MPI_ERR_QUOTA, bad names -> MPI_ERR_BAD_FILE, else MPI_ERR_IO).
int error_class_of_errno(int err);

// User: a representation registered with MPI_Register_datarep; the MPI
// layer converts the data and gives the etype's size in the file.
enum class Datarep : uint8_t { Native, Internal, External32, User };

// A view. `etype` and `filetype` are retained by the view (released by
// View::reset / the destructor). Under external32 and user representations
// the filetype must be contiguous (MPI_File_set_view checks): the file then
// holds the etypes one after another, each esize bytes.
class View {
 public:
  View();
  ~View();
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  // Replaces the view; takes new references to etype and filetype.
  // `user_esize`: the etype's size in the file under Datarep::User.
  void reset(int64_t disp, Datatype* etype, Datatype* filetype, Datarep rep, size_t user_esize = 0);

  int64_t disp() const { return disp_; }
  Datatype* etype() const { return etype_; }
  Datatype* filetype() const { return filetype_; }
  Datarep rep() const { return rep_; }
  // Bytes of one etype in the file (its external32 size under external32).
  size_t esize() const { return esize_; }
  // One item of `type` in this view's representation: size in bytes (false
  // on overflow) and extent (MPI_File_get_type_extent). Native, internal
  // and external32 only (the MPI layer sizes user representations).
  bool rep_size(const Datatype& type, size_t count, size_t* bytes) const;
  int64_t rep_extent(const Datatype& type) const;

  struct Piece {
    int64_t file_offset;
    size_t length;
  };
  // The file ranges of stream bytes [pos, pos + len), in stream order,
  // adjacent ranges merged.
  std::vector<Piece> map(uint64_t pos, uint64_t len) const;
  // The absolute file offset of stream position `pos` (MPI_File_get_byte_offset).
  int64_t byte_offset(uint64_t pos) const;
  // Stream bytes that lie below file offset `file_size` (MPI_SEEK_END: the
  // end of the file as a position in the view).
  uint64_t stream_end(int64_t file_size) const;

 private:
  int64_t disp_ = 0;
  Datatype* etype_ = nullptr;
  Datatype* filetype_ = nullptr;
  Datarep rep_ = Datarep::Native;
  size_t esize_ = 1;
  // The tile: `tile_bytes` stream bytes spread over `tile_extent` file bytes.
  size_t tile_bytes_ = 1;
  int64_t tile_extent_ = 1;
  bool tile_contiguous_ = true;  // the tile's data is one run at offset 0
};

// MPI-4.1 14.3: the displacements of an etype's or filetype's type map must
// be non-negative and non-decreasing, and may overlap only in a file opened
// read-only. True when `type` respects that (`overlap_ok`: read-only file).
bool view_type_valid(const Datatype& type, bool overlap_ok);

// One process's open file.
class File {
 public:
  ~File();
  // Opens `path` with MPI access mode `amode` (checked by the caller);
  // `create` / `exclusive` say whether this process creates the file (in a
  // collective open only one process does). Returns an MPI error class.
  int open(const std::string& path, int amode, bool create, bool exclusive, int perm);
  int close();

  int fd() const { return fd_; }
  int amode() const { return amode_; }
  const std::string& path() const { return path_; }
  View& view() { return view_; }
  bool atomic = false;

  // Data access through the view at stream position `pos`. `buf` holds the
  // stream bytes (already in the file's representation). A read stops at
  // the end of the file: *done says how many bytes arrived.
  int read(uint64_t pos, void* buf, size_t len, size_t* done);
  int write(uint64_t pos, const void* buf, size_t len);

  int size(int64_t* out) const;
  int truncate(int64_t size);
  int preallocate(int64_t size);
  int sync();

 private:
  int fd_ = -1;
  int amode_ = 0;
  std::string path_;
  View view_;
};

}  // namespace axon::io
