// POSIX side of MPI-IO: descriptors, views mapped onto file offsets, and
// positioned reads and writes (see io.h).
#include "io/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace axon::io {

int error_class_of_errno(int err) {
  switch (err) {
    case ENOENT:
      return MPI_ERR_NO_SUCH_FILE;
    case EEXIST:
      return MPI_ERR_FILE_EXISTS;
    case EACCES:
    case EPERM:
      return MPI_ERR_ACCESS;
    case EROFS:
      return MPI_ERR_READ_ONLY;
    case ENOSPC:
    case EFBIG:
      return MPI_ERR_NO_SPACE;
    case EDQUOT:
      return MPI_ERR_QUOTA;
    case ENAMETOOLONG:
    case ENOTDIR:
    case EISDIR:
    case ELOOP:
      return MPI_ERR_BAD_FILE;
    case ENOMEM:
      return MPI_ERR_NO_MEM;
    default:
      return MPI_ERR_IO;
  }
}

// ---- views ------------------------------------------------------------------------

View::View() {
  // The default view (MPI-4.1 14.3): displacement 0, etype and filetype
  // MPI_BYTE, "native".
  Datatype* byte = datatype_from_handle(MPI_BYTE);
  reset(0, byte, byte, Datarep::Native);
}

View::~View() {
  if (etype_) datatype_release(etype_);
  if (filetype_) datatype_release(filetype_);
}

void View::reset(int64_t disp, Datatype* etype, Datatype* filetype, Datarep rep, size_t user_esize) {
  datatype_retain(etype);
  datatype_retain(filetype);
  if (etype_) datatype_release(etype_);
  if (filetype_) datatype_release(filetype_);
  disp_ = disp;
  etype_ = etype;
  filetype_ = filetype;
  rep_ = rep;
  if (rep == Datarep::External32 || rep == Datarep::User) {
    size_t e = user_esize;
    if (rep == Datarep::External32) external32_size(*etype, 1, &e);
    esize_ = e;
    // The filetype is contiguous here (checked by the caller): its etypes
    // follow each other in the file.
    tile_bytes_ = esize_ * (filetype->size / etype->size);
    tile_extent_ = static_cast<int64_t>(tile_bytes_);
    tile_contiguous_ = true;
  } else {
    esize_ = etype->size;
    tile_bytes_ = filetype->size;
    tile_extent_ = filetype->extent;
    tile_contiguous_ = filetype->contiguous;
  }
}

bool View::rep_size(const Datatype& type, size_t count, size_t* bytes) const {
  if (rep_ == Datarep::External32) return external32_size(type, count, bytes);
  return bytes_for_count(type, count, bytes);
}

int64_t View::rep_extent(const Datatype& type) const {
  if (rep_ != Datarep::External32) return type.extent;
  // A type without holes takes its external32 size; the extent of one with
  // holes keeps its native value (no representation stretches holes).
  size_t bytes = 0;
  if (type.contiguous || type.size == static_cast<size_t>(type.extent)) {
    external32_size(type, 1, &bytes);
    return static_cast<int64_t>(bytes);
  }
  return type.extent;
}

std::vector<View::Piece> View::map(uint64_t pos, uint64_t len) const {
  std::vector<Piece> out;
  if (len == 0 || tile_bytes_ == 0) return out;
  auto emit = [&out](int64_t off, size_t n) {
    if (n == 0) return;
    if (!out.empty() && out.back().file_offset + static_cast<int64_t>(out.back().length) == off)
      out.back().length += n;
    else
      out.push_back(Piece{off, n});
  };
  // A dense view is one range.
  if (tile_contiguous_ && static_cast<int64_t>(tile_bytes_) == tile_extent_) {
    emit(disp_ + static_cast<int64_t>(pos), len);
    return out;
  }
  uint64_t tile = pos / tile_bytes_;
  uint64_t in = pos % tile_bytes_;
  if (tile_contiguous_) {
    while (len > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(len, tile_bytes_ - in));
      emit(disp_ + static_cast<int64_t>(tile) * tile_extent_ + static_cast<int64_t>(in), n);
      len -= n;
      in = 0;
      ++tile;
    }
    return out;
  }
  // The filetype's data in type-map order: `reps` units rep_stride apart,
  // each the blocks in order, each block `count` runs `stride` apart.
  const Datatype& ft = *filetype_;
  const size_t unit_bytes = tile_bytes_ / ft.reps;
  while (len > 0) {
    const int64_t base = disp_ + static_cast<int64_t>(tile) * tile_extent_;
    size_t r = static_cast<size_t>(in / unit_bytes);
    uint64_t uin = in % unit_bytes;
    for (; r < ft.reps && len > 0; ++r, uin = 0) {
      const int64_t ubase = base + static_cast<int64_t>(r) * ft.rep_stride;
      for (size_t b = 0; b < ft.block_count && len > 0; ++b) {
        const TypeBlock& blk = ft.blocks[b];
        if (blk.length == 0) continue;
        const uint64_t bbytes = static_cast<uint64_t>(blk.length) * blk.count;
        if (uin >= bbytes) {
          uin -= bbytes;
          continue;
        }
        size_t k = static_cast<size_t>(uin / blk.length);
        size_t bo = static_cast<size_t>(uin % blk.length);
        uin = 0;
        for (; k < blk.count && len > 0; ++k, bo = 0) {
          size_t n = static_cast<size_t>(std::min<uint64_t>(blk.length - bo, len));
          emit(ubase + blk.offset + static_cast<int64_t>(k) * blk.stride + static_cast<int64_t>(bo), n);
          len -= n;
        }
      }
    }
    in = 0;
    ++tile;
  }
  return out;
}

int64_t View::byte_offset(uint64_t pos) const {
  std::vector<Piece> p = map(pos, 1);
  return p.empty() ? disp_ : p.front().file_offset;
}

uint64_t View::stream_end(int64_t file_size) const {
  if (file_size <= disp_ || tile_bytes_ == 0 || tile_extent_ <= 0) return 0;
  const uint64_t span = static_cast<uint64_t>(file_size - disp_);
  const uint64_t tiles = span / static_cast<uint64_t>(tile_extent_);
  const int64_t rem = static_cast<int64_t>(span % static_cast<uint64_t>(tile_extent_));
  uint64_t bytes = tiles * tile_bytes_;
  if (tile_contiguous_) return bytes + std::min<uint64_t>(static_cast<uint64_t>(rem), tile_bytes_);
  // Data of the last, partial tile below `rem`.
  const Datatype& ft = *filetype_;
  for (size_t r = 0; r < ft.reps; ++r) {
    const int64_t ubase = static_cast<int64_t>(r) * ft.rep_stride;
    for (size_t b = 0; b < ft.block_count; ++b) {
      const TypeBlock& blk = ft.blocks[b];
      for (size_t k = 0; k < blk.count; ++k) {
        const int64_t lo = ubase + blk.offset + static_cast<int64_t>(k) * blk.stride;
        const int64_t hi = lo + static_cast<int64_t>(blk.length);
        if (rem >= hi) bytes += blk.length;
        else if (rem > lo) bytes += static_cast<uint64_t>(rem - lo);
      }
    }
  }
  return bytes;
}

bool view_type_valid(const Datatype& type, bool overlap_ok) {
  if (type.size == 0) return true;
  if (type.true_lb < 0) return false;
  // Walk the runs in type-map order: each must start at or after the
  // previous one's last start (non-decreasing) and, unless overlaps are
  // allowed, at or after its end.
  bool first = true;
  int64_t last_start = 0, last_end = 0;
  auto run = [&](int64_t start, size_t length) {
    if (!first && (start < last_start || (!overlap_ok && start < last_end))) return false;
    first = false;
    last_start = start;
    last_end = std::max(last_end, start + static_cast<int64_t>(length));
    return true;
  };
  for (size_t r = 0; r < type.reps; ++r) {
    const int64_t ubase = static_cast<int64_t>(r) * type.rep_stride;
    for (size_t b = 0; b < type.block_count; ++b) {
      const TypeBlock& blk = type.blocks[b];
      if (blk.length == 0) continue;
      if (blk.count > 1) {
        // A regular run: its first and last copies bound it.
        if (blk.stride < 0 || (!overlap_ok && blk.stride < static_cast<int64_t>(blk.length))) return false;
        if (!run(ubase + blk.offset, blk.length)) return false;
        if (!run(ubase + blk.offset + static_cast<int64_t>(blk.count - 1) * blk.stride, blk.length)) return false;
      } else if (!run(ubase + blk.offset, blk.length)) {
        return false;
      }
    }
  }
  return true;
}

// ---- files ------------------------------------------------------------------------

File::~File() { close(); }  // close()'s error has nobody to go to here

int File::open(const std::string& path, int amode, bool create, bool exclusive, int perm) {
  int flags = (amode & MPI_MODE_RDONLY) ? O_RDONLY : (amode & MPI_MODE_WRONLY) ? O_WRONLY : O_RDWR;
  if (create) flags |= O_CREAT;
  if (exclusive) flags |= O_EXCL;
  // Not O_APPEND: Linux pwrite on such a descriptor ignores the offset.
  // MPI_MODE_APPEND only places the initial file pointers (OpenFile::open).
  UniqueFd fd;
  do fd.reset(::open(path.c_str(), flags | O_CLOEXEC, perm));
  while (!fd && errno == EINTR);
  if (!fd) return error_class_of_errno(errno);
  struct stat st;
  if (fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) return MPI_ERR_BAD_FILE;
  fd_ = std::move(fd);
  amode_ = amode;
  path_ = path;
  return MPI_SUCCESS;
}

// Closed by hand, not by UniqueFd: MPI_File_close reports close()'s error
// (a write-back that failed on a network file system shows up here).
int File::close() {
  if (!fd_) return MPI_SUCCESS;
  int rc = ::close(fd_.release());
  return rc == 0 || errno == EINTR ? MPI_SUCCESS : error_class_of_errno(errno);
}

namespace {

// Atomic mode: a POSIX byte-range lock over the whole extent of an access,
// so that concurrent accesses of other processes see all or none of it.
class RangeLock {
 public:
  RangeLock(int fd, bool on, short type, const std::vector<View::Piece>& pieces) : fd_(fd) {
    if (!on || pieces.empty()) return;
    int64_t lo = pieces.front().file_offset, hi = lo;
    for (const View::Piece& p : pieces) {
      lo = std::min(lo, p.file_offset);
      hi = std::max(hi, p.file_offset + static_cast<int64_t>(p.length));
    }
    fl_.l_type = type;
    fl_.l_whence = SEEK_SET;
    fl_.l_start = lo;
    fl_.l_len = hi - lo;
    int rc;
    do rc = fcntl(fd_, F_SETLKW, &fl_);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) error_ = error_class_of_errno(errno);
    else held_ = true;
  }
  ~RangeLock() {
    if (!held_) return;
    fl_.l_type = F_UNLCK;
    fcntl(fd_, F_SETLK, &fl_);
  }
  int error() const { return error_; }

 private:
  int fd_;
  struct flock fl_ = {};
  bool held_ = false;
  int error_ = MPI_SUCCESS;
};

}  // namespace

int File::read(uint64_t pos, void* buf, size_t len, size_t* done) {
  *done = 0;
  std::vector<View::Piece> pieces = view_.map(pos, len);
  RangeLock lock(fd_.get(), atomic, F_RDLCK, pieces);
  if (lock.error()) return lock.error();
  auto* out = static_cast<unsigned char*>(buf);
  size_t total = 0;
  for (const View::Piece& p : pieces) {
    size_t got = 0;
    while (got < p.length) {
      ssize_t n = ::pread(fd_.get(), out + total + got, p.length - got, p.file_offset + static_cast<int64_t>(got));
      if (n < 0) {
        if (errno == EINTR) continue;
        *done = total + got;
        return error_class_of_errno(errno);
      }
      if (n == 0) {  // end of file: the data read so far is the result
        *done = total + got;
        return MPI_SUCCESS;
      }
      got += static_cast<size_t>(n);
    }
    total += got;
  }
  *done = total;
  return MPI_SUCCESS;
}

int File::write(uint64_t pos, const void* buf, size_t len) {
  std::vector<View::Piece> pieces = view_.map(pos, len);
  RangeLock lock(fd_.get(), atomic, F_WRLCK, pieces);
  if (lock.error()) return lock.error();
  const auto* in = static_cast<const unsigned char*>(buf);
  size_t total = 0;
  for (const View::Piece& p : pieces) {
    size_t put = 0;
    while (put < p.length) {
      ssize_t n = ::pwrite(fd_.get(), in + total + put, p.length - put, p.file_offset + static_cast<int64_t>(put));
      if (n < 0) {
        if (errno == EINTR) continue;
        return error_class_of_errno(errno);
      }
      put += static_cast<size_t>(n);
    }
    total += put;
  }
  return MPI_SUCCESS;
}

int File::size(int64_t* out) const {
  struct stat st;
  if (fstat(fd_.get(), &st) != 0) return error_class_of_errno(errno);
  *out = st.st_size;
  return MPI_SUCCESS;
}

int File::truncate(int64_t size) {
  int rc;
  do rc = ftruncate(fd_.get(), size);
  while (rc < 0 && errno == EINTR);
  return rc == 0 ? MPI_SUCCESS : error_class_of_errno(errno);
}

int File::preallocate(int64_t size) {
  if (size == 0) return MPI_SUCCESS;
  int rc = posix_fallocate(fd_.get(), 0, size);
  return rc == 0 ? MPI_SUCCESS : error_class_of_errno(rc);
}

int File::sync() {
  return ::fsync(fd_.get()) == 0 || errno == EINVAL ? MPI_SUCCESS : error_class_of_errno(errno);
}

}  // namespace axon::io
