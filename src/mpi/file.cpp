// MPI-IO entry points (MPI-4.1 chapter 14): opening, closing and deleting
// files, hints, sizes, views, data access with explicit offsets, individual
// and shared file pointers (independent, collective, split collective,
// ordered and nonblocking forms), atomicity, the file error handlers and
// user data representations.
//
// This file is the bindings: file handles, argument checks, hints, error
// handlers, statuses and requests. Everything else — the collective open
// and close, views, the file pointers, data access, size changes — is
// src/io's (io::OpenFile in src/io/io.h). docs/io.md describes the design
// and its limits.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "io/io.h"
#include "mpi/api.h"
#include "mpi/info.h"

namespace axon::mpi {

namespace {

constexpr uint32_t kFileMagic = 0x46494c45u;  // "FILE"

struct FileObj {
  uint32_t magic = kFileMagic;
  io::OpenFile file;
  Errhandler* errhandler = nullptr;
  InfoPtr hints;  // the hints in use (MPI_File_get_info)
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

// ---- data access ------------------------------------------------------------------

// The pointer of an access, as the generated entry points name it.
using Ptr = io::Pointer;

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
// (Whether the access fits the view is src/io's to say.)
int check_access(const Access& a, Datatype** type, const char** why) {
  FileObj* f = a.f;
  if (a.count < 0) return *why = "negative count", MPI_ERR_COUNT;
  if (check_datatype(a.datatype, type) != MPI_SUCCESS) return *why = "invalid or uncommitted datatype", MPI_ERR_TYPE;
  int amode = f->file.amode();
  // Reading a write-only file: MPI_ERR_ACCESS; writing a read-only one:
  // MPI_ERR_READ_ONLY (MPI-4.1 14.7, as MPICH reports them).
  if (!a.write && (amode & MPI_MODE_WRONLY)) return *why = "file opened MPI_MODE_WRONLY", MPI_ERR_ACCESS;
  if (a.write && (amode & MPI_MODE_RDONLY)) return *why = "file opened MPI_MODE_RDONLY", MPI_ERR_READ_ONLY;
  if ((amode & MPI_MODE_SEQUENTIAL) && (a.ptr == Ptr::Explicit || a.ptr == Ptr::Individual))
    return *why = "MPI_MODE_SEQUENTIAL allows only the shared file pointer", MPI_ERR_UNSUPPORTED_OPERATION;
  if (a.ptr == Ptr::Explicit && a.offset < 0) return *why = "negative offset", MPI_ERR_ARG;
  return MPI_SUCCESS;
}

// One data access; returns MPI_SUCCESS or the error class (not raised).
// `why` explains argument errors.
int do_access(const Access& a, const char** why) {
  Datatype* type = nullptr;
  int rc = check_access(a, &type, why);
  if (rc != MPI_SUCCESS) return rc;
  size_t done = 0;
  rc = a.f->file.access({a.write, a.ptr, a.offset, a.buf, static_cast<size_t>(a.count), type}, &done, why);
  if (rc != MPI_SUCCESS) return rc;
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
  progress::Guard guard;
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
  long long perm = 0666;
  if (const std::string* p = f->hints->find("file_perm")) perm = std::strtoll(p->c_str(), nullptr, 8);
  const char* why = nullptr;
  int rc = f->file.open(comm, io::system_path(filename), amode, static_cast<int>(perm), &why);
  if (rc != MPI_SUCCESS) {
    errhandler_release(f->errhandler);
    f->magic = 0;
    delete f;
    return file_raise(nullptr, rc, fn, why);
  }
  *fh = f->handle();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_close, (MPI_File * fh)) {
  const char* fn = "MPI_File_close";
  if (!fh) return file_raise(nullptr, MPI_ERR_ARG, fn, "fh is NULL");
  AXON_FILE_OR_RAISE(f, *fh, fn);
  int rc = f->file.close();
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
  int rc = io::delete_file(io::system_path(filename));
  if (rc != MPI_SUCCESS) return file_raise(nullptr, rc, fn, std::strerror(errno));
  return MPI_SUCCESS;
}

// ---- file attributes --------------------------------------------------------------

AXON_API(int, MPI_File_get_amode, (MPI_File fh, int* amode)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_amode");
  if (!amode) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_amode", "amode is NULL");
  *amode = f->file.amode();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_group, (MPI_File fh, MPI_Group* group)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_group");
  if (!group) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_group", "group is NULL");
  FILE_TRY(f, "MPI_File_get_group", PMPI_Comm_group(f->file.comm(), group));
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

AXON_API(int, MPI_File_set_size, (MPI_File fh, MPI_Offset size)) {
  const char* fn = "MPI_File_set_size";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (size < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative size");
  if (f->file.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  if (f->file.amode() & MPI_MODE_RDONLY) return file_raise(f, MPI_ERR_READ_ONLY, fn, "file opened MPI_MODE_RDONLY");
  return file_raise(f, f->file.set_size(size), fn);
}

AXON_API(int, MPI_File_preallocate, (MPI_File fh, MPI_Offset size)) {
  const char* fn = "MPI_File_preallocate";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (size < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative size");
  if (f->file.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  if (f->file.amode() & MPI_MODE_RDONLY) return file_raise(f, MPI_ERR_READ_ONLY, fn, "file opened MPI_MODE_RDONLY");
  return file_raise(f, f->file.preallocate(size), fn);
}

AXON_API(int, MPI_File_get_size, (MPI_File fh, MPI_Offset* size)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_size");
  if (!size) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_size", "size is NULL");
  int64_t s = 0;
  FILE_TRY(f, "MPI_File_get_size", f->file.size(&s));
  *size = s;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_sync, (MPI_File fh)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_sync");
  FILE_TRY(f, "MPI_File_sync", f->file.sync());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_set_atomicity, (MPI_File fh, int flag)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_set_atomicity");
  FILE_TRY(f, "MPI_File_set_atomicity", f->file.set_atomicity(flag != 0));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_atomicity, (MPI_File fh, int* flag)) {
  AXON_FILE_OR_RAISE(f, fh, "MPI_File_get_atomicity");
  if (!flag) return file_raise(f, MPI_ERR_ARG, "MPI_File_get_atomicity", "flag is NULL");
  *flag = f->file.atomic() ? 1 : 0;
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
  const bool overlap_ok = f->file.amode() & MPI_MODE_RDONLY;
  if (!io::view_type_valid(*et, overlap_ok))
    return file_raise(f, MPI_ERR_IO, fn, "etype displacements are negative, decreasing or overlapping");
  if (!io::view_type_valid(*ft, overlap_ok))
    return file_raise(f, MPI_ERR_IO, fn, "filetype displacements are negative, decreasing or overlapping");
  if (!datarep) return file_raise(f, MPI_ERR_ARG, fn, "datarep is NULL");
  io::Datarep rep;
  const io::UserDatarep* urep = nullptr;
  size_t user_esize = 0;
  if (std::strcmp(datarep, "native") == 0) rep = io::Datarep::Native;
  else if (std::strcmp(datarep, "internal") == 0) rep = io::Datarep::Internal;
  else if (std::strcmp(datarep, "external32") == 0) rep = io::Datarep::External32;
  else if ((urep = io::find_datarep(datarep)) != nullptr) rep = io::Datarep::User;
  else return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, datarep);
  if (rep == io::Datarep::External32) {
    size_t e = 0;
    if (!ft->contiguous) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "external32 needs a contiguous filetype");
    if (!external32_size(*et, 1, &e) || e == 0) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "etype");
  }
  if (rep == io::Datarep::User) {
    if (!ft->contiguous)
      return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "a user data representation needs a contiguous filetype");
    FILE_TRY(f, fn, io::user_size(*urep, *et, 1, &user_esize, nullptr));
    if (user_esize == 0) return file_raise(f, MPI_ERR_UNSUPPORTED_DATAREP, fn, "the etype has no size in the file");
  }
  Info* in = info == MPI_INFO_NULL ? nullptr : info_from_handle(info);
  if (info != MPI_INFO_NULL && !in) return file_raise(f, MPI_ERR_INFO, fn, "invalid info");
  const bool sequential = f->file.amode() & MPI_MODE_SEQUENTIAL;
  if (disp == MPI_DISPLACEMENT_CURRENT) {
    if (!sequential) return file_raise(f, MPI_ERR_ARG, fn, "MPI_DISPLACEMENT_CURRENT needs MPI_MODE_SEQUENTIAL");
    // The shared pointer's place in the file under the old view.
    int64_t current = 0;
    FILE_TRY(f, fn, f->file.current_displacement(&current));
    disp = current;
  } else if (disp < 0) {
    return file_raise(f, MPI_ERR_ARG, fn, "negative displacement");
  }
  FILE_TRY(f, fn, f->file.set_view(disp, et, ft, rep, urep, user_esize));
  keep_hints(f, in);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_view,
         (MPI_File fh, MPI_Offset* disp, MPI_Datatype* etype, MPI_Datatype* filetype, char* datarep)) {
  const char* fn = "MPI_File_get_view";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!disp || !etype || !filetype || !datarep) return file_raise(f, MPI_ERR_ARG, fn, "NULL argument");
  const io::View& v = f->file.view();
  FILE_TRY(f, fn, type_for_user(v.etype(), etype));
  FILE_TRY(f, fn, type_for_user(v.filetype(), filetype));
  *disp = v.disp();
  std::strcpy(datarep, v.rep() == io::Datarep::User ? f->file.user_datarep()->name.c_str() : datarep_name(v.rep()));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_type_extent, (MPI_File fh, MPI_Datatype datatype, MPI_Aint* extent)) {
  const char* fn = "MPI_File_get_type_extent";
  AXON_FILE_OR_RAISE(f, fh, fn);
  Datatype* t = datatype_from_handle(datatype);
  if (!t) return file_raise(f, MPI_ERR_TYPE, fn, "invalid datatype");
  if (!extent) return file_raise(f, MPI_ERR_ARG, fn, "extent is NULL");
  int64_t e = 0;
  FILE_TRY(f, fn, f->file.type_extent(*t, &e));
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
  FILE_TRY(f, fn, f->file.type_extent(*t, &e));
  *extent = e;
  return MPI_SUCCESS;
}

// ---- file pointers ----------------------------------------------------------------

AXON_API(int, MPI_File_seek, (MPI_File fh, MPI_Offset offset, int whence)) {
  const char* fn = "MPI_File_seek";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (f->file.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  int rc = f->file.seek(offset, whence);
  if (rc != MPI_SUCCESS) return file_raise(f, rc, fn, "bad whence or negative position");
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_position, (MPI_File fh, MPI_Offset* offset)) {
  const char* fn = "MPI_File_get_position";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!offset) return file_raise(f, MPI_ERR_ARG, fn, "offset is NULL");
  if (f->file.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  *offset = f->file.position();
  return MPI_SUCCESS;
}

// Collective: every rank passes the same offset and whence; rank 0 moves the
// pointer between two barriers, so no rank's shared access straddles it.
AXON_API(int, MPI_File_seek_shared, (MPI_File fh, MPI_Offset offset, int whence)) {
  const char* fn = "MPI_File_seek_shared";
  AXON_FILE_OR_RAISE(f, fh, fn);
  FILE_TRY(f, fn, f->file.seek_shared(offset, whence));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_position_shared, (MPI_File fh, MPI_Offset* offset)) {
  const char* fn = "MPI_File_get_position_shared";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!offset) return file_raise(f, MPI_ERR_ARG, fn, "offset is NULL");
  int64_t v = 0;
  FILE_TRY(f, fn, f->file.shared_position(&v));
  *offset = v;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_File_get_byte_offset, (MPI_File fh, MPI_Offset offset, MPI_Offset* disp)) {
  const char* fn = "MPI_File_get_byte_offset";
  AXON_FILE_OR_RAISE(f, fh, fn);
  if (!disp) return file_raise(f, MPI_ERR_ARG, fn, "disp is NULL");
  if (offset < 0) return file_raise(f, MPI_ERR_ARG, fn, "negative offset");
  if (f->file.amode() & MPI_MODE_SEQUENTIAL)
    return file_raise(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "file opened MPI_MODE_SEQUENTIAL");
  *disp = f->file.byte_offset(offset);
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
  int rc = io::register_datarep(name, read, write, extent, extra, large);
  return rc == MPI_SUCCESS ? rc : file_raise(nullptr, rc, fn, name);
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
