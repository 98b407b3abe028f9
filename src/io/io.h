// MPI-IO below the entry points: a file opened by the processes of a
// communicator (OpenFile: the open and close they agree on, the shared and
// the individual file pointer, data access through the view, resizing),
// one process's POSIX descriptor (File), its view (displacement, etype,
// filetype, data representation) with pread / pwrite through it, and the
// data representations users register. The MPI layer (src/mpi/file.cpp)
// keeps the handles, the argument checks, the hints and the error handlers
// and calls in here for everything else. What is collective is written
// with PMPI_ calls on the file's private duplicate of the user's
// communicator (error handler MPI_ERRORS_RETURN); src/io includes nothing
// of src/mpi. docs/io.md explains the design.
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

#include "base/unique_fd.h"
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

  int fd() const { return fd_.get(); }
  int amode() const { return amode_; }
  const std::string& path() const { return path_; }
  View& view() { return view_; }
  const View& view() const { return view_; }
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
  UniqueFd fd_;
  int amode_ = 0;
  std::string path_;
  View view_;
};

// ---- user data representations (datarep.cpp) ----------------------------------------

// A data representation registered with MPI_Register_datarep[_c] (MPI-4.1
// 14.5.3). Registrations last until the end of the process.
struct UserDatarep {
  std::string name;
  MPI_Datarep_conversion_function* read = nullptr;  // int-count callbacks, or
  MPI_Datarep_conversion_function* write = nullptr;
  MPI_Datarep_conversion_function_c* read_c = nullptr;  // the large-count ones
  MPI_Datarep_conversion_function_c* write_c = nullptr;
  MPI_Datarep_extent_function* extent = nullptr;
  void* extra = nullptr;
  bool large = false;
};

// Registers `name` (checked by the caller: not NULL, short enough, an
// extent function given). `read` / `write` are the conversion functions of
// the int-count (`large` false) or the MPI_Count interface. MPI_SUCCESS, or
// MPI_ERR_DUP_DATAREP when the name is predefined or registered already.
int register_datarep(const char* name, void* read, void* write, MPI_Datarep_extent_function* extent, void* extra,
                     bool large);
// The registration of that name, or nullptr.
const UserDatarep* find_datarep(const char* name);
// Bytes of `count` items of `type` in the representation: the file extents
// its extent function gives for each predefined type of the signature.
// `elements` (may be null) gets the number of predefined items.
int user_size(const UserDatarep& r, const Datatype& type, size_t count, size_t* bytes, size_t* elements);

// ---- a file opened by a group of processes (open_file.cpp, access.cpp) ----------------

// The POSIX path of an MPI file name: ROMIO-style file system prefixes
// ("ufs:/path") name the same file.
std::string system_path(const char* filename);
// MPI_File_delete: MPI_SUCCESS, or the class of unlink's errno (errno kept).
int delete_file(const std::string& path);

// Which file pointer an access uses.
enum class Pointer : uint8_t { Explicit, Individual, Shared, Ordered };

// One data access, its arguments checked by the caller (count, a committed
// datatype, the access mode allows it, a non-negative explicit offset).
struct Access {
  bool write;
  Pointer ptr;
  int64_t offset;  // Explicit: etypes of the view
  void* buf;       // read from only, when `write`
  size_t count;
  const Datatype* type;
};

// A file opened collectively over a communicator. Every method that says
// "collective" must be called by every process of the file, as the MPI call
// that makes it; they all return the same result everywhere unless a rank
// failed in a way the others cannot see (as MPI allows).
class OpenFile {
 public:
  OpenFile() = default;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  // Collective over `comm`: duplicates it, agrees on the access mode
  // (MPI_ERR_NOT_SAME), creates the file at rank 0 alone under
  // MPI_MODE_CREATE (so MPI_MODE_EXCL fails for everybody), opens it
  // everywhere, allocates the shared file pointer and places both pointers
  // (at the end under MPI_MODE_APPEND). `perm`: the permissions of a created
  // file. Returns the largest error class any rank saw, with *why for the
  // message; on failure everything is released again.
  int open(MPI_Comm comm, const std::string& path, int amode, int perm, const char** why);
  // Collective: closes the descriptor, waits for every rank, deletes the file
  // under MPI_MODE_DELETE_ON_CLOSE (rank 0) and frees the communicator and
  // the shared pointer. The first error class met, or MPI_SUCCESS.
  int close();

  int amode() const { return local_.amode(); }
  MPI_Comm comm() const { return comm_; }
  const View& view() const { return local_.view(); }
  // The view's representation when it is user-defined, else nullptr.
  const UserDatarep* user_datarep() const { return urep_; }

  int size(int64_t* out) const { return local_.size(out); }
  // Collective: rank 0 truncates / preallocates once every rank has finished
  // its earlier accesses; no rank returns before it is done.
  int set_size(int64_t size);
  int preallocate(int64_t size);
  // Collective: each rank flushes its writes to the storage device, then a
  // barrier (so that sync-barrier-sync makes the data visible, MPI-4.1 14.6.1).
  int sync();
  // Collective: accesses made before the change finish first everywhere.
  int set_atomicity(bool on);
  bool atomic() const { return local_.atomic; }

  // Collective: the new view (checked by the caller), once every rank's
  // earlier accesses are done; both file pointers go back to 0.
  // `user_esize`: the etype's size in the file under a user representation.
  int set_view(int64_t disp, Datatype* etype, Datatype* filetype, Datarep rep, const UserDatarep* urep,
               size_t user_esize);
  // MPI_DISPLACEMENT_CURRENT: the shared file pointer's place in the file,
  // as an absolute byte offset under the current view.
  int current_displacement(int64_t* disp);
  // The extent of `type` in the view's representation (MPI_File_get_type_extent).
  int type_extent(const Datatype& type, int64_t* out) const;
  // The absolute byte offset of etype offset `offset` of the view.
  int64_t byte_offset(int64_t offset) const;

  // The individual file pointer, in etypes of the view.
  int64_t position() const { return fp_; }
  // Moves it (MPI_SEEK_SET / _CUR / _END); MPI_ERR_ARG for another whence
  // or a negative result.
  int seek(int64_t offset, int whence);
  // Collective: the same for the shared file pointer (every rank passes the
  // same arguments); rank 0 moves it between two barriers.
  int seek_shared(int64_t offset, int whence);
  int shared_position(int64_t* out);

  // One access through the view (the ordered pointer: collective). MPI_SUCCESS
  // and *done, the bytes of the user's data transferred (native
  // representation; a read stops at the end of the file), or the error
  // class with *why when the access itself is wrong (not whole etypes, too
  // large, a failing extent function).
  int access(const Access& a, size_t* done, const char** why);

 private:
  // The shared file pointer: one int64 at rank 0 of comm_, in etypes.
  int shared_op(int64_t operand, MPI_Op op, int64_t* old);
  int shared_fetch_add(int64_t delta, int64_t* old) { return shared_op(delta, MPI_SUM, old); }
  int shared_get(int64_t* value) { return shared_op(0, MPI_NO_OP, value); }
  int shared_set(int64_t value) { return shared_op(value, MPI_REPLACE, nullptr); }
  int seek_target(int64_t offset, int whence, int64_t current, int64_t* out) const;
  template <class Change>
  int resize_collectively(Change change);
  // access.cpp: the access's size in the file, and the bytes it moves.
  int file_bytes(const Access& a, size_t* bytes, const char** why) const;
  int transfer(const Access& a, size_t bytes, uint64_t pos, size_t* done, size_t* file_done);

  File local_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // private duplicate, MPI_ERRORS_RETURN
  MPI_Win shared_ = MPI_WIN_NULL;  // the shared file pointer, an int64 at rank 0
  const UserDatarep* urep_ = nullptr;
  int rank_ = 0;
  int64_t fp_ = 0;  // the individual file pointer, in etypes of the view
};

}  // namespace axon::io
