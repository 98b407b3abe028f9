// MPI-IO entry points (MPI-4.1 chapter 14): opening, closing and deleting
// files, hints, sizes, views, data access with explicit offsets, individual
// and shared file pointers (independent, collective, split collective,
// ordered and nonblocking forms), atomicity and the file error handlers.
//
// The bytes go through src/io (one POSIX descriptor per process, the view
// mapped onto file offsets). What is collective lives here and uses the
// public interface through PMPI_ calls on a private duplicate of the user's
// communicator (error handler MPI_ERRORS_RETURN): agreement on open, the
// shared file pointer (one int64 in a window at rank 0, updated with
// MPI_Fetch_and_op) and the offsets of ordered accesses (an exscan).
// docs/io.md describes the design and its limits.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/io.h"
#include "mpi/api.h"
#include "mpi/info.h"

namespace axon::mpi {

namespace {

constexpr uint32_t kFileMagic = 0x46494c45u;  // "FILE"

// A data representation registered with MPI_Register_datarep (MPI-4.1
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

std::mutex datarep_lock;
std::vector<std::unique_ptr<UserDatarep>>& datareps() {
  static std::vector<std::unique_ptr<UserDatarep>> all;
  return all;
}

const UserDatarep* find_datarep(const char* name) {
  std::lock_guard<std::mutex> g(datarep_lock);
  for (const auto& r : datareps())
    if (r->name == name) return r.get();
  return nullptr;
}

// Bytes of `count` items of `type` in a user representation: the file
// extents its extent function gives for each predefined type of the
// signature. `elements` gets the number of predefined items.
int user_size(const UserDatarep& r, const Datatype& type, size_t count, size_t* bytes, size_t* elements) {
  size_t unit = 0, unit_elements = 0;
  for (size_t i = 0; i < type.signature_count; ++i) {
    const SignatureRun& run = type.signature[i];
    MPI_Aint ext = 0;
    int rc = r.extent(to_handle(run.basic), &ext, r.extra);
    if (rc != MPI_SUCCESS) return rc;
    if (ext < 0) return MPI_ERR_CONVERSION;
    unit += static_cast<size_t>(ext) * run.count;
    unit_elements += run.count;
  }
  *bytes = unit * type.reps * count;
  if (elements) *elements = unit_elements * type.reps * count;
  return MPI_SUCCESS;
}

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

struct FileObj {
  uint32_t magic = kFileMagic;
  io::File f;
  MPI_Comm comm = MPI_COMM_NULL;  // private duplicate, MPI_ERRORS_RETURN
  MPI_Win shared = MPI_WIN_NULL;  // the shared file pointer (etypes), an int64 at rank 0
  Errhandler* errhandler = nullptr;
  InfoPtr hints;  // the hints in use (MPI_File_get_info)
  const UserDatarep* urep = nullptr;  // the view's representation when user-defined
  int rank = 0;
  int size = 1;
  int64_t fp = 0;  // individual file pointer, in etypes of the view
  // Split collective in progress (MPI-4.1 14.4.5: at most one per file).
  bool split_active = false;
  bool split_read = false;
  const void* split_buf = nullptr;
  MPI_Status split_status{};
  MPI_File handle() { return reinterpret_cast<MPI_File>(this); }
};

FileObj* file_of(MPI_File h) {
  if (!may_be_object<FileObj>(h)) return nullptr;
  auto* f = reinterpret_cast<FileObj*>(h);
  return f->magic == kFileMagic ? f : nullptr;
}

// The handler of MPI_FILE_NULL: it takes the errors of MPI_File_open and
// MPI_File_delete and is the handler new files start with (MPI-4.1 9.3.4).
// The standard's default for files is MPI_ERRORS_RETURN.
std::mutex default_lock;
Errhandler* default_handler = nullptr;

Errhandler* default_errhandler() {
  std::lock_guard<std::mutex> g(default_lock);
  if (!default_handler) default_handler = errhandler_from_handle(MPI_ERRORS_RETURN);
  return default_handler;
}

// Raises `code` on the file's error handler (MPI_FILE_NULL's when `f` is
// null) and returns it (as a user handler left it) when the handler returns.
int file_raise(FileObj* f, int code, const char* fn, const char* detail = nullptr) {
  if (code == MPI_SUCCESS) return code;
  Errhandler* e = f ? f->errhandler : default_errhandler();
  switch (e->kind) {
    case Errhandler::Kind::Return:
      return code;
    case Errhandler::Kind::User: {
      MPI_File h = f ? f->handle() : MPI_FILE_NULL;
      int c = code;
      errhandler_retain(e);  // the handler may replace and free itself
      reinterpret_cast<MPI_File_errhandler_function*>(e->comm_fn)(&h, &c);
      errhandler_release(e);
      return c;  // the handler may have replaced the code (see raise())
    }
    default:
      return raise(nullptr, code, fn, detail);  // no communicator: ends the job
  }
}

#define AXON_FILE_OR_RAISE(var, handle, fn) \
  FileObj* var = file_of(handle);           \
  if (!var) return file_raise(nullptr, MPI_ERR_FILE, fn, "invalid file handle")

#define FILE_TRY(f, fn, expr)                                  \
  do {                                                         \
    int rc_ = (expr);                                          \
    if (rc_ != MPI_SUCCESS) return file_raise(f, rc_, fn);     \
  } while (0)

// ROMIO-style file system prefixes ("ufs:/path") name the same POSIX file.
std::string strip_prefix(const char* name) {
  static const char* const kPrefixes[] = {"ufs:", "nfs:", "posix:", "file:"};
  for (const char* p : kPrefixes)
    if (std::strncmp(name, p, std::strlen(p)) == 0) return name + std::strlen(p);
  return name;
}

// MPI-4.1 14.2.1: exactly one of RDONLY, RDWR, WRONLY; RDONLY with CREATE or
// EXCL is erroneous; so is RDWR with SEQUENTIAL.
bool amode_valid(int amode) {
  constexpr int kKnown = MPI_MODE_APPEND | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_EXCL |
                         MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL | MPI_MODE_UNIQUE_OPEN |
                         MPI_MODE_WRONLY;
  if (amode & ~kKnown) return false;
  int access = !!(amode & MPI_MODE_RDONLY) + !!(amode & MPI_MODE_RDWR) + !!(amode & MPI_MODE_WRONLY);
  if (access != 1) return false;
  if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL))) return false;
  if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL)) return false;
  return true;
}

// ---- the shared file pointer ------------------------------------------------------

int shared_op(FileObj* f, int64_t operand, MPI_Op op, int64_t* old) {
  int64_t dummy = 0;
  if (!old) old = &dummy;
  int rc = PMPI_Win_lock(MPI_LOCK_SHARED, 0, 0, f->shared);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Fetch_and_op(&operand, old, MPI_INT64_T, 0, 0, op, f->shared);
  int rc2 = PMPI_Win_unlock(0, f->shared);
  return rc != MPI_SUCCESS ? rc : rc2;
}
int shared_fetch_add(FileObj* f, int64_t delta, int64_t* old) { return shared_op(f, delta, MPI_SUM, old); }
int shared_get(FileObj* f, int64_t* value) { return shared_op(f, 0, MPI_NO_OP, value); }
int shared_set(FileObj* f, int64_t value) { return shared_op(f, value, MPI_REPLACE, nullptr); }

// ---- data access ------------------------------------------------------------------

enum class Ptr : uint8_t { Explicit, Individual, Shared, Ordered };

struct Access {
  FileObj* f;
  bool write;
  Ptr ptr;
  int64_t offset;  // Explicit: etypes of the view
  void* buf;
  MPI_Count count;
  MPI_Datatype datatype;
  MPI_Status* status;
  const char* fn;
};

// Checks the arguments of a data access; MPI_SUCCESS or the error class.
int check_access(const Access& a, Datatype** type, size_t* bytes, const char** why) {
  FileObj* f = a.f;
  if (a.count < 0) return *why = "negative count", MPI_ERR_COUNT;
  if (check_datatype(a.datatype, type) != MPI_SUCCESS) return *why = "invalid or uncommitted datatype", MPI_ERR_TYPE;
  int amode = f->f.amode();
  // Reading a write-only file: MPI_ERR_ACCESS; writing a read-only one:
  // MPI_ERR_READ_ONLY (MPI-4.1 14.7, as MPICH reports them).
  if (!a.write && (amode & MPI_MODE_WRONLY)) return *why = "file opened MPI_MODE_WRONLY", MPI_ERR_ACCESS;
  if (a.write && (amode & MPI_MODE_RDONLY)) return *why = "file opened MPI_MODE_RDONLY", MPI_ERR_READ_ONLY;
  if ((amode & MPI_MODE_SEQUENTIAL) && (a.ptr == Ptr::Explicit || a.ptr == Ptr::Individual))
    return *why = "MPI_MODE_SEQUENTIAL allows only the shared file pointer", MPI_ERR_UNSUPPORTED_OPERATION;
  if (a.ptr == Ptr::Explicit && a.offset < 0) return *why = "negative offset", MPI_ERR_ARG;
  const io::View& v = f->f.view();
  if (v.rep() == io::Datarep::User) {
    if (user_converts(*f->urep, a.write)) {
      int rc = user_size(*f->urep, **type, static_cast<size_t>(a.count), bytes, nullptr);
      if (rc != MPI_SUCCESS) return *why = "the data representation's extent function failed", rc;
    } else if (!bytes_for_count(**type, static_cast<size_t>(a.count), bytes)) {
      return *why = "count too large", MPI_ERR_COUNT;
    }
  } else if (!v.rep_size(**type, static_cast<size_t>(a.count), bytes)) {
    return *why = "count too large", MPI_ERR_COUNT;
  }
  if (*bytes % v.esize() != 0) return *why = "only whole etypes can be accessed", MPI_ERR_IO;
  return MPI_SUCCESS;
}

// Moves the bytes of one access at stream position `pos`; `done` gets the
// bytes of the user's data that were transferred (native representation),
// `file_done` the bytes of the file's stream.
int transfer(const Access& a, const Datatype& type, size_t bytes, uint64_t pos, size_t* done, size_t* file_done) {
  FileObj* f = a.f;
  const bool ext32 = f->f.view().rep() == io::Datarep::External32;
  const size_t count = static_cast<size_t>(a.count);
  *done = 0;
  *file_done = 0;
  if (bytes == 0) return MPI_SUCCESS;
  if (f->f.view().rep() == io::Datarep::User && user_converts(*f->urep, a.write)) {
    // The user's functions convert between the memory layout and the
    // file's representation of the predefined items.
    const UserDatarep& r = *f->urep;
    std::vector<unsigned char> filebuf(bytes);
    size_t elements = 0, ignored = 0;
    int rc = user_size(r, type, count, &ignored, &elements);
    if (rc != MPI_SUCCESS) return rc;
    if (a.write) {
      rc = user_convert(r, true, a.buf, type, elements, filebuf.data());
      if (rc != MPI_SUCCESS) return MPI_ERR_CONVERSION;
      rc = f->f.write(pos, filebuf.data(), bytes);
      if (rc == MPI_SUCCESS) *done = type.size * count, *file_done = bytes;
      return rc;
    }
    size_t got = 0;
    rc = f->f.read(pos, filebuf.data(), bytes, &got);
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
      int rc = f->f.write(pos, a.buf, bytes);
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
    int rc = f->f.write(pos, packed.data(), bytes);
    if (rc == MPI_SUCCESS) *done = type.size * count, *file_done = bytes;
    return rc;
  }
  if (direct) {
    int rc = f->f.read(pos, a.buf, bytes, done);
    *file_done = *done;
    return rc;
  }
  std::vector<unsigned char> packed(bytes);
  size_t got = 0;
  int rc = f->f.read(pos, packed.data(), bytes, &got);
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

// One data access; returns MPI_SUCCESS or the error class (not raised).
// `why` explains argument errors.
int do_access(const Access& a, const char** why) {
  FileObj* f = a.f;
  Datatype* type = nullptr;
  size_t bytes = 0;
  int rc = check_access(a, &type, &bytes, why);
  if (rc != MPI_SUCCESS) return rc;
  const size_t esize = f->f.view().esize();
  const int64_t etypes = static_cast<int64_t>(bytes / esize);
  int64_t start = 0;  // etypes
  switch (a.ptr) {
    case Ptr::Explicit:
      start = a.offset;
      break;
    case Ptr::Individual:
      start = f->fp;
      break;
    case Ptr::Shared:
      rc = shared_fetch_add(f, etypes, &start);
      if (rc != MPI_SUCCESS) return rc;
      break;
    case Ptr::Ordered: {
      // Rank order: each rank starts after the data of the lower ranks; the
      // pointer moves past all of it. Rank 0 updates the counter once.
      int64_t before = 0, total = 0, base = 0;
      rc = PMPI_Exscan(&etypes, &before, 1, MPI_INT64_T, MPI_SUM, f->comm);
      if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&etypes, &total, 1, MPI_INT64_T, MPI_SUM, f->comm);
      if (rc != MPI_SUCCESS) return rc;
      if (f->rank == 0) {
        before = 0;  // MPI_Exscan leaves rank 0's result undefined
        rc = shared_fetch_add(f, total, &base);
      }
      int brc = PMPI_Bcast(&base, 1, MPI_INT64_T, 0, f->comm);
      if (rc != MPI_SUCCESS) return rc;
      if (brc != MPI_SUCCESS) return brc;
      start = base + before;
      break;
    }
  }
  size_t done = 0, file_done = 0;
  rc = transfer(a, *type, bytes, static_cast<uint64_t>(start) * esize, &done, &file_done);
  if (rc != MPI_SUCCESS) return rc;
  // The individual pointer moves by the data accessed (a read stops at the
  // end of the file): whole etypes of what arrived.
  if (a.ptr == Ptr::Individual) f->fp = start + static_cast<int64_t>(file_done / esize);
  set_status(a.status, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, done, false);
  return MPI_SUCCESS;
}

int access(FileObj* f, bool write, Ptr ptr, int64_t offset, const void* buf, MPI_Count count,
           MPI_Datatype datatype, MPI_Status* status, const char* fn) {
  Access a{f, write, ptr, offset, const_cast<void*>(buf), count, datatype, status, fn};
  const char* why = nullptr;
  return file_raise(f, do_access(a, &why), fn, why);
}

// Nonblocking forms: the access completes during the call; the request is
// born complete and carries the status (MPI_Wait / MPI_Test return it).
int access_nb(FileObj* f, bool write, Ptr ptr, int64_t offset, const void* buf, MPI_Count count,
              MPI_Datatype datatype, MPI_Request* request, const char* fn) {
  if (!request) return file_raise(f, MPI_ERR_ARG, fn, "request is NULL");
  MPI_Status st{};
  Access a{f, write, ptr, offset, const_cast<void*>(buf), count, datatype, &st, fn};
  const char* why = nullptr;
  int rc = do_access(a, &why);
  if (rc != MPI_SUCCESS) return file_raise(f, rc, fn, why);
  pml::Guard guard;
  pml::Request* r = standalone_request(pml::Request::Kind::Recv, comm_self());
  r->bytes = status_bytes(&st);
  pml::request_complete(r);
  *request = handle_of(r);
  return MPI_SUCCESS;
}

// Split collectives: _begin does the access and keeps its status for _end.
int split_begin(FileObj* f, bool write, Ptr ptr, int64_t offset, const void* buf, MPI_Count count,
                MPI_Datatype datatype, const char* fn) {
  // A second split collective, or an _end without its _begin: MPI_ERR_IO (as MPICH).
  if (f->split_active) return file_raise(f, MPI_ERR_IO, fn, "a split collective is already active on this file");
  MPI_Status st{};
  Access a{f, write, ptr, offset, const_cast<void*>(buf), count, datatype, &st, fn};
  const char* why = nullptr;
  int rc = do_access(a, &why);
  if (rc != MPI_SUCCESS) return file_raise(f, rc, fn, why);
  f->split_active = true;
  f->split_read = !write;
  f->split_buf = buf;
  f->split_status = st;
  return MPI_SUCCESS;
}

int split_end(MPI_File fh, bool read, const void* buf, MPI_Status* status, const char* fn) {
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!f->split_active || f->split_read != read)
    return file_raise(f, MPI_ERR_IO, fn, "no matching split collective is active on this file");
  (void)buf;
  f->split_active = false;
  if (status) *status = f->split_status;
  return MPI_SUCCESS;
}

// ---- views ------------------------------------------------------------------------

const char* datarep_name(io::Datarep r) {
  switch (r) {
    case io::Datarep::Internal:
      return "internal";
    case io::Datarep::External32:
      return "external32";
    default:
      return "native";
  }
}

// A type for the user: predefined types as they are, derived ones as a new
// handle the caller frees (MPI-4.1 14.3: MPI_File_get_view).
int type_for_user(Datatype* t, MPI_Datatype* out) {
  MPI_Datatype h = to_handle(t);
  if (t->predefined) {
    *out = h;
    return MPI_SUCCESS;
  }
  return PMPI_Type_dup(h, out);
}

// Hints Axon understands and reports back through MPI_File_get_info.
void keep_hints(FileObj* f, const Info* info) {
  if (!info) return;
  static const char* const kKnown[] = {"access_style", "file_perm"};
  for (const char* key : kKnown)
    if (const std::string* v = info->find(key)) f->hints->set(key, *v);
}

}  // namespace

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

// ---- open / close / delete ----------------------------------------------------------

AXON_API(int, MPI_File_open, (MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh)) {
  const char* fn = "MPI_File_open";
  Comm* c = comm_from_handle(comm);
  if (!c) return file_raise(nullptr, MPI_ERR_COMM, fn, "invalid communicator");
  if (c->inter) return file_raise(nullptr, MPI_ERR_COMM, fn, "intercommunicator");
  if (!fh) return file_raise(nullptr, MPI_ERR_ARG, fn, "fh is NULL");
  if (!filename) return file_raise(nullptr, MPI_ERR_ARG, fn, "filename is NULL");
  Info* in = info == MPI_INFO_NULL ? nullptr : info_from_handle(info);
  if (info != MPI_INFO_NULL && !in) return file_raise(nullptr, MPI_ERR_INFO, fn, "invalid info");
  if (!amode_valid(amode)) return file_raise(nullptr, MPI_ERR_AMODE, fn, "invalid access mode");

  auto* f = new FileObj;
  f->errhandler = default_errhandler();
  errhandler_retain(f->errhandler);
  f->hints.reset(info_new());
  keep_hints(f, in);
  int rc = PMPI_Comm_dup(comm, &f->comm);
  if (rc != MPI_SUCCESS) {
    errhandler_release(f->errhandler);
    delete f;
    return file_raise(nullptr, rc, fn, "cannot duplicate the communicator");
  }
  PMPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
  PMPI_Comm_rank(f->comm, &f->rank);
  PMPI_Comm_size(f->comm, &f->size);

  // The ranks must agree on the access mode (MPI-4.1 14.2.1).
  int modes[2] = {amode, ~amode}, agreed[2] = {0, 0};
  rc = PMPI_Allreduce(modes, agreed, 2, MPI_INT, MPI_BAND, f->comm);
  int local = rc;
  if (local == MPI_SUCCESS && (agreed[0] != amode || agreed[1] != ~amode)) local = MPI_ERR_NOT_SAME;

  const std::string path = strip_prefix(filename);
  long long perm = 0666;
  if (const std::string* p = f->hints->find("file_perm")) perm = std::strtoll(p->c_str(), nullptr, 8);
  const bool create = amode & MPI_MODE_CREATE;
  if (local == MPI_SUCCESS) {
    // Rank 0 creates the file (alone, so that MPI_MODE_EXCL fails on no
    // other rank); the others open it once it exists.
    int first = MPI_SUCCESS;
    if (create) {
      if (f->rank == 0) first = f->f.open(path, amode, true, amode & MPI_MODE_EXCL, static_cast<int>(perm));
      rc = PMPI_Bcast(&first, 1, MPI_INT, 0, f->comm);
      local = rc != MPI_SUCCESS ? rc : first;
      if (local == MPI_SUCCESS && f->rank != 0) local = f->f.open(path, amode, false, false, 0);
    } else {
      local = f->f.open(path, amode, false, false, 0);
    }
  }
  // The shared file pointer: rank 0 holds it.
  int64_t* base = nullptr;
  rc = PMPI_Win_allocate(f->rank == 0 ? sizeof(int64_t) : 0, sizeof(int64_t), MPI_INFO_NULL, f->comm, &base,
                         &f->shared);
  if (local == MPI_SUCCESS) local = rc;
  if (rc == MPI_SUCCESS && f->rank == 0) {
    PMPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, f->shared);
    *base = 0;
    PMPI_Win_unlock(0, f->shared);
  }
  // Every rank returns the same result: the largest error class any saw.
  int result = MPI_SUCCESS;
  rc = PMPI_Allreduce(&local, &result, 1, MPI_INT, MPI_MAX, f->comm);
  if (rc != MPI_SUCCESS && result == MPI_SUCCESS) result = rc;
  if (result == MPI_SUCCESS && (amode & MPI_MODE_APPEND)) {
    // Both pointers start at the end of the file (the default view counts bytes).
    int64_t end = 0;
    result = f->f.size(&end);
    f->fp = end;
    if (result == MPI_SUCCESS && f->rank == 0) result = shared_set(f, end);
    int r2 = PMPI_Barrier(f->comm);
    if (result == MPI_SUCCESS) result = r2;
  }
  if (result != MPI_SUCCESS) {
    f->f.close();
    if (f->shared != MPI_WIN_NULL) PMPI_Win_free(&f->shared);
    PMPI_Comm_free(&f->comm);
    errhandler_release(f->errhandler);
    f->magic = 0;
    delete f;
    return file_raise(nullptr, result, fn, local != MPI_SUCCESS ? std::strerror(errno) : "another rank failed");
  }
  *fh = f->handle();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_close, (MPI_File * fh)) {
  const char* fn = "MPI_File_close";
  if (!fh) return file_raise(nullptr, MPI_ERR_ARG, fn, "fh is NULL");
  AXON_FILE_OR_RAISE(f, *fh, fn);
  int rc = f->f.close();
  // Every rank has closed before the file goes (MPI_MODE_DELETE_ON_CLOSE).
  int brc = PMPI_Barrier(f->comm);
  if (rc == MPI_SUCCESS) rc = brc;
  if ((f->f.amode() & MPI_MODE_DELETE_ON_CLOSE) && f->rank == 0) {
    if (::unlink(f->f.path().c_str()) != 0 && rc == MPI_SUCCESS) rc = io::error_class_of_errno(errno);
  }
  PMPI_Win_free(&f->shared);
  PMPI_Comm_free(&f->comm);
  if (rc != MPI_SUCCESS) file_raise(f, rc, fn);
  errhandler_release(f->errhandler);
  f->magic = 0;
  delete f;
  *fh = MPI_FILE_NULL;
  return rc;
}

AXON_API(int, MPI_File_delete, (const char* filename, MPI_Info info)) {
  const char* fn = "MPI_File_delete";
  if (!filename) return file_raise(nullptr, MPI_ERR_ARG, fn, "filename is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return file_raise(nullptr, MPI_ERR_INFO, fn, "invalid info");
  std::string path = strip_prefix(filename);
  if (::unlink(path.c_str()) != 0) return file_raise(nullptr, io::error_class_of_errno(errno), fn, std::strerror(errno));
  return MPI_SUCCESS;
}

// ---- file attributes --------------------------------------------------------------

AXON_API(int, MPI_File_get_amode, (MPI_File fh, int* amode)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_amode");
  if (!amode) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_amode", "amode is NULL");
  *amode = f->f.amode();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_group, (MPI_File fh, MPI_Group* group)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_group");
  if (!group) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_group", "group is NULL");
  FILE_TRY(f, "MPI_File_get_group", PMPI_Comm_group(f->comm, group));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_set_info, (MPI_File fh, MPI_Info info)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_set_info");
  Info* in = info == MPI_INFO_NULL ? nullptr : info_from_handle(info);
  if (info != MPI_INFO_NULL && !in) return file_raise(f, MPI_ERR_INFO, "MPI_File_set_info", "invalid info");
  keep_hints(f, in);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_info, (MPI_File fh, MPI_Info* info_used)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_info");
  if (!info_used) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_info", "info_used is NULL");
  *info_used = info_handle(info_dup(f->hints.get()));
  return MPI_SUCCESS;
}

namespace {
// set_size / preallocate: one rank changes the file once every rank has
// finished its earlier accesses (a barrier), and no rank returns before it
// is done (an allreduce of the result, which every rank returns).
template <class Change>
int resize_collectively(FileObj* f, Change change) {
  int rc = PMPI_Barrier(f->comm);
  if (rc != MPI_SUCCESS) return rc;
  int local = f->rank == 0 ? change() : MPI_SUCCESS, result = MPI_SUCCESS;
  rc = PMPI_Allreduce(&local, &result, 1, MPI_INT, MPI_MAX, f->comm);
  return rc != MPI_SUCCESS ? rc : result;
}
}  // namespace

AXON_API(int, MPI_File_set_size, (MPI_File fh, MPI_Offset size)) {
  const char* fn = "MPI_File_set_size";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (size < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative size");
  if (f->f.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  if (f->f.amode() & MPI_MODE_RDONLY) return file_raise(f, MPI_ERR_READ_ONLY, fn, "file opened MPI_MODE_RDONLY");
  return file_raise(f, resize_collectively(f, [&] { return f->f.truncate(size); }), fn);
}

AXON_API(int, MPI_File_preallocate, (MPI_File fh, MPI_Offset size)) {
  const char* fn = "MPI_File_preallocate";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (size < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative size");
  if (f->f.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  if (f->f.amode() & MPI_MODE_RDONLY) return file_raise(f, MPI_ERR_READ_ONLY, fn, "file opened MPI_MODE_RDONLY");
  return file_raise(f, resize_collectively(f, [&] { return f->f.preallocate(size); }), fn);
}

AXON_API(int, MPI_File_get_size, (MPI_File fh, MPI_Offset* size)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_size");
  if (!size) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_size", "size is NULL");
  int64_t s = 0;
  FILE_TRY(f, "MPI_File_get_size", f->f.size(&s));
  *size = s;
  return MPI_SUCCESS;
}

// Collective: each rank flushes its writes to the storage device; with a
// barrier after it (sync-barrier-sync, MPI-4.1 14.6.1) the data is visible.
AXON_API(int, MPI_File_sync, (MPI_File fh)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_sync");
  int rc = f->f.sync();
  int brc = PMPI_Barrier(f->comm);
  FILE_TRY(f, "MPI_File_sync", rc != MPI_SUCCESS ? rc : brc);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_set_atomicity, (MPI_File fh, int flag)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_set_atomicity");
  // Collective: accesses made before the change finish first everywhere.
  FILE_TRY(f, "MPI_File_set_atomicity", PMPI_Barrier(f->comm));
  f->f.atomic = flag != 0;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_atomicity, (MPI_File fh, int* flag)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_atomicity");
  if (!flag) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_atomicity", "flag is NULL");
  *flag = f->f.atomic ? 1 : 0;
  return MPI_SUCCESS;
}

// ---- views ------------------------------------------------------------------------

AXON_API(int, MPI_File_set_view,
         (MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char* datarep,
          MPI_Info info)) {
  const char* fn = "MPI_File_set_view";
  AXON_FILE_OR_RAISE(f, fh, fn);
  Datatype* et = nullptr;
  Datatype* ft = nullptr;
  if (check_datatype(etype, &et) != MPI_SUCCESS) return file_raise(f, MPI_ERR_TYPE, fn, "invalid or uncommitted etype");
  if (check_datatype(filetype, &ft) != MPI_SUCCESS)
    return file_raise(f, MPI_ERR_TYPE, fn, "invalid or uncommitted filetype");
  if (et->size == 0) return file_raise(f, MPI_ERR_TYPE, fn, "etype holds no data");
  if (ft->size == 0 || ft->size % et->size != 0)
    return file_raise(f, MPI_ERR_TYPE, fn, "the filetype is not made of whole etypes");
  // Negative, decreasing or (in a writable file) overlapping displacements:
  // MPI_ERR_IO, as MPICH reports them.
  const bool overlap_ok = f->f.amode() & MPI_MODE_RDONLY;
  if (!io::view_type_valid(*et, overlap_ok))
    return file_raise(f, MPI_ERR_IO, fn, "etype displacements are negative, decreasing or overlapping");
  if (!io::view_type_valid(*ft, overlap_ok))
    return file_raise(f, MPI_ERR_IO, fn, "filetype displacements are negative, decreasing or overlapping");
  if (!datarep) return file_raise(f, MPI_ERR_ARG, fn, "datarep is NULL");
  io::Datarep rep;
  const UserDatarep* urep = nullptr;
  size_t user_esize = 0;
  if (std::strcmp(datarep, "native") == 0) rep = io::Datarep::Native;
  else if (std::strcmp(datarep, "internal") == 0) rep = io::Datarep::Internal;
  else if (std::strcmp(datarep, "external32") == 0) rep = io::Datarep::External32;
  else if ((urep = find_datarep(datarep)) != nullptr) rep = io::Datarep::User;
  else return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, datarep);
  if (rep == io::Datarep::External32) {
    size_t e = 0;
    if (!ft->contiguous) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "external32 needs a contiguous filetype");
    if (!external32_size(*et, 1, &e) || e == 0) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "etype");
  }
  if (rep == io::Datarep::User) {
    if (!ft->contiguous)
      return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "a user data representation needs a contiguous filetype");
    FILE_TRY(f, fn, user_size(*urep, *et, 1, &user_esize, nullptr));
    if (user_esize == 0) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "the etype has no size in the file");
  }
  Info* in = info == MPI_INFO_NULL ? nullptr : info_from_handle(info);
  if (info != MPI_INFO_NULL && !in) return file_raise(f, MPI_ERR_INFO, fn, "invalid info");
  const bool sequential = f->f.amode() & MPI_MODE_SEQUENTIAL;
  if (disp == MPI_DISPLACEMENT_CURRENT) {
    if (!sequential) return file_raise(f, MPI_ERR_ARG, fn, "MPI_DISPLACEMENT_CURRENT needs MPI_MODE_SEQUENTIAL");
    // The shared pointer's place in the file under the old view.
    int64_t shared = 0;
    FILE_TRY(f, fn, shared_get(f, &shared));
    disp = f->f.view().byte_offset(static_cast<uint64_t>(shared) * f->f.view().esize());
  } else if (disp < 0) {
    return file_raise(f, MPI_ERR_ARG, fn, "negative displacement");
  }
  // Collective: every rank's earlier accesses through the shared pointer
  // are done before it moves back to 0, and none starts before.
  int rc = PMPI_Barrier(f->comm);
  if (rc == MPI_SUCCESS && f->rank == 0) rc = shared_set(f, 0);
  int brc = PMPI_Barrier(f->comm);
  FILE_TRY(f, fn, rc != MPI_SUCCESS ? rc : brc);
  f->f.view().reset(disp, et, ft, rep, user_esize);
  f->urep = urep;
  f->fp = 0;
  keep_hints(f, in);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_view,
         (MPI_File fh, MPI_Offset* disp, MPI_Datatype* etype, MPI_Datatype* filetype, char* datarep)) {
  const char* fn = "MPI_File_get_view";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!disp || !etype || !filetype || !datarep) return file_raise(f, MPI_ERR_ARG, fn, "NULL argument");
  const io::View& v = f->f.view();
  FILE_TRY(f, fn, type_for_user(v.etype(), etype));
  FILE_TRY(f, fn, type_for_user(v.filetype(), filetype));
  *disp = v.disp();
  std::strcpy(datarep, v.rep() == io::Datarep::User ? f->urep->name.c_str() : datarep_name(v.rep()));
  return MPI_SUCCESS;
}

namespace {
// The extent of a type in the file's current representation; a user
// representation's extent function gives it for predefined types, derived
// ones take the sum over their signature.
int file_type_extent(FileObj* f, const Datatype& t, int64_t* out) {
  if (f->f.view().rep() != io::Datarep::User) {
    *out = f->f.view().rep_extent(t);
    return MPI_SUCCESS;
  }
  size_t bytes = 0;
  int rc = user_size(*f->urep, t, 1, &bytes, nullptr);
  *out = static_cast<int64_t>(bytes);
  return rc;
}
}  // namespace

AXON_API(int, MPI_File_get_type_extent, (MPI_File fh, MPI_Datatype datatype, MPI_Aint* extent)) {
  const char* fn = "MPI_File_get_type_extent";
  AXON_FILE_OR_RAISE(f, fh, fn);
  Datatype* t = datatype_from_handle(datatype);
  if (!t) return file_raise(f, MPI_ERR_TYPE, fn, "invalid datatype");
  if (!extent) return file_raise(f, MPI_ERR_ARG, fn, "extent is NULL");
  int64_t e = 0;
  FILE_TRY(f, fn, file_type_extent(f, *t, &e));
  *extent = e;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_type_extent_c, (MPI_File fh, MPI_Datatype datatype, MPI_Count* extent)) {
  const char* fn = "MPI_File_get_type_extent_c";
  AXON_FILE_OR_RAISE(f, fh, fn);
  Datatype* t = datatype_from_handle(datatype);
  if (!t) return file_raise(f, MPI_ERR_TYPE, fn, "invalid datatype");
  if (!extent) return file_raise(f, MPI_ERR_ARG, fn, "extent is NULL");
  int64_t e = 0;
  FILE_TRY(f, fn, file_type_extent(f, *t, &e));
  *extent = e;
  return MPI_SUCCESS;
}

// ---- file pointers ----------------------------------------------------------------

namespace {
// The new position of a seek, in etypes; MPI_ERR_ARG for a bad whence or a
// negative result.
int seek_target(FileObj* f, MPI_Offset offset, int whence, int64_t current, int64_t* out) {
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
      int rc = f->f.size(&size);
      if (rc != MPI_SUCCESS) return rc;
      const io::View& v = f->f.view();
      target = static_cast<int64_t>(v.stream_end(size) / v.esize()) + offset;
      break;
    }
    default:
      return MPI_ERR_ARG;
  }
  if (target < 0) return MPI_ERR_ARG;
  *out = target;
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_File_seek, (MPI_File fh, MPI_Offset offset, int whence)) {
  const char* fn = "MPI_File_seek";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (f->f.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  int64_t target = 0;
  int rc = seek_target(f, offset, whence, f->fp, &target);
  if (rc != MPI_SUCCESS) return file_raise(f, rc, fn, "bad whence or negative position");
  f->fp = target;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_position, (MPI_File fh, MPI_Offset* offset)) {
  const char* fn = "MPI_File_get_position";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!offset) return file_raise(f, MPI_ERR_ARG, fn, "offset is NULL");
  if (f->f.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  *offset = f->fp;
  return MPI_SUCCESS;
}

// Collective: every rank passes the same offset and whence; rank 0 moves the
// pointer between two barriers, so no rank's shared access straddles it.
AXON_API(int, MPI_File_seek_shared, (MPI_File fh, MPI_Offset offset, int whence)) {
  const char* fn = "MPI_File_seek_shared";
  AXON_FILE_OR_RAISE(f, fh, fn);
  int rc = PMPI_Barrier(f->comm);
  if (rc == MPI_SUCCESS && f->rank == 0) {
    int64_t current = 0, target = 0;
    rc = shared_get(f, &current);
    if (rc == MPI_SUCCESS) rc = seek_target(f, offset, whence, current, &target);
    if (rc == MPI_SUCCESS) rc = shared_set(f, target);
  }
  int brc = PMPI_Bcast(&rc, 1, MPI_INT, 0, f->comm);
  FILE_TRY(f, fn, brc != MPI_SUCCESS ? brc : rc);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_position_shared, (MPI_File fh, MPI_Offset* offset)) {
  const char* fn = "MPI_File_get_position_shared";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!offset) return file_raise(f, MPI_ERR_ARG, fn, "offset is NULL");
  int64_t v = 0;
  FILE_TRY(f, fn, shared_get(f, &v));
  *offset = v;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_byte_offset, (MPI_File fh, MPI_Offset offset, MPI_Offset* disp)) {
  const char* fn = "MPI_File_get_byte_offset";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!disp) return file_raise(f, MPI_ERR_ARG, fn, "disp is NULL");
  if (offset < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative offset");
  if (f->f.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  const io::View& v = f->f.view();
  *disp = v.byte_offset(static_cast<uint64_t>(offset) * v.esize());
  return MPI_SUCCESS;
}

// ---- data access ------------------------------------------------------------------
// Every call exists with an int count and, as _c, with an MPI_Count count.
// Independent and collective forms: the collective ones move the same bytes
// (each rank's access is independent of the others'); ordered ones agree on
// their offsets. The entry points (explicit offsets, individual and shared
// file pointers, ordered, nonblocking and split collective forms) only check
// the file handle and forward to access, access_nb, split_begin or split_end:
// generated from src/binding/c_entries.txt (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/file_entries.inc"

// ---- error handlers ---------------------------------------------------------------

AXON_API(int, MPI_File_create_errhandler,
         (MPI_File_errhandler_function * function, MPI_Errhandler* errhandler)) {
  if (!function || !errhandler) return file_raise(nullptr, MPI_ERR_ARG, "MPI_File_create_errhandler", "NULL argument");
  auto* e = new Errhandler;
  e->kind = Errhandler::Kind::User;
  // Stored in the common slot; file_raise calls it with the file signature.
  e->comm_fn = reinterpret_cast<MPI_Comm_errhandler_function*>(function);
  *errhandler = errhandler_handle(e);
  return MPI_SUCCESS;
}

// MPI_FILE_NULL names the default handler of files (MPI-4.1 9.3.4).
AXON_API(int, MPI_File_set_errhandler, (MPI_File fh, MPI_Errhandler errhandler)) {
  const char* fn = "MPI_File_set_errhandler";
  FileObj* f = nullptr;
  if (fh != MPI_FILE_NULL) {
    f = file_of(fh);
    if (!f) return file_raise(nullptr, MPI_ERR_FILE, fn, "invalid file handle");
  }
  Errhandler* e = errhandler_from_handle(errhandler);
  if (!e) return file_raise(f, MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  errhandler_retain(e);
  if (f) {
    errhandler_release(f->errhandler);
    f->errhandler = e;
  } else {
    Errhandler* old = default_errhandler();
    {
      std::lock_guard<std::mutex> g(default_lock);
      default_handler = e;
    }
    errhandler_release(old);
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_errhandler, (MPI_File fh, MPI_Errhandler* errhandler)) {
  const char* fn = "MPI_File_get_errhandler";
  FileObj* f = nullptr;
  if (fh != MPI_FILE_NULL) {
    f = file_of(fh);
    if (!f) return file_raise(nullptr, MPI_ERR_FILE, fn, "invalid file handle");
  }
  if (!errhandler) return file_raise(f, MPI_ERR_ARG, fn, "errhandler is NULL");
  Errhandler* e = f ? f->errhandler : default_errhandler();
  errhandler_retain(e);
  *errhandler = errhandler_handle(e);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_call_errhandler, (MPI_File fh, int errorcode)) {
  FileObj* f = nullptr;
  if (fh != MPI_FILE_NULL) {
    f = file_of(fh);
    if (!f) return file_raise(nullptr, MPI_ERR_FILE, "MPI_File_call_errhandler", "invalid file handle");
  }
  file_raise(f, errorcode, "MPI_File_call_errhandler");
  return MPI_SUCCESS;
}

// ---- user data representations ----------------------------------------------------

namespace {
int register_datarep(const char* name, void* read, void* write, MPI_Datarep_extent_function* extent, void* extra,
                     bool large, const char* fn) {
  if (!name) return file_raise(nullptr, MPI_ERR_ARG, fn, "datarep is NULL");
  if (std::strlen(name) >= MPI_MAX_DATAREP_STRING)
    return file_raise(nullptr, MPI_ERR_ARG, fn, "name longer than MPI_MAX_DATAREP_STRING - 1");
  if (!extent) return file_raise(nullptr, MPI_ERR_ARG, fn, "dtype_file_extent_fn is NULL");
  static const char* const kPredefined[] = {"native", "internal", "external32"};
  for (const char* p : kPredefined)
    if (std::strcmp(name, p) == 0) return file_raise(nullptr, MPI_ERR_DUP_DATAREP, fn, name);
  std::unique_lock<std::mutex> g(datarep_lock);
  for (const auto& r : datareps())
    if (r->name == name) {
      g.unlock();
      return file_raise(nullptr, MPI_ERR_DUP_DATAREP, fn, name);
    }
  auto r = std::make_unique<UserDatarep>();
  r->name = name;
  r->large = large;
  if (large) {
    r->read_c = reinterpret_cast<MPI_Datarep_conversion_function_c*>(read);
    r->write_c = reinterpret_cast<MPI_Datarep_conversion_function_c*>(write);
  } else {
    r->read = reinterpret_cast<MPI_Datarep_conversion_function*>(read);
    r->write = reinterpret_cast<MPI_Datarep_conversion_function*>(write);
  }
  r->extent = extent;
  r->extra = extra;
  datareps().push_back(std::move(r));
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Register_datarep,
         (const char* datarep, MPI_Datarep_conversion_function* read_conversion_fn,
          MPI_Datarep_conversion_function* write_conversion_fn, MPI_Datarep_extent_function* dtype_file_extent_fn,
          void* extra_state)) {
  return register_datarep(datarep, reinterpret_cast<void*>(read_conversion_fn),
                          reinterpret_cast<void*>(write_conversion_fn), dtype_file_extent_fn, extra_state, false,
                          "MPI_Register_datarep");
}

AXON_API(int, MPI_Register_datarep_c,
         (const char* datarep, MPI_Datarep_conversion_function_c* read_conversion_fn,
          MPI_Datarep_conversion_function_c* write_conversion_fn, MPI_Datarep_extent_function* dtype_file_extent_fn,
          void* extra_state)) {
  return register_datarep(datarep, reinterpret_cast<void*>(read_conversion_fn),
                          reinterpret_cast<void*>(write_conversion_fn), dtype_file_extent_fn, extra_state, true,
                          "MPI_Register_datarep_c");
}
