// MPI_Buffer_attach/detach/flush/iflush and MPI_Bsend/Ibsend.
//
// Each buffered message occupies [header | packed data] in the attached
// buffer, first-fit, with MPI_BSEND_OVERHEAD bytes of bookkeeping charged per
// message as the standard lets users budget. Space returns to the pool when
// the internal send completes; detach waits for all of them.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "mpi/api.h"
#include "mpi/bsend.h"

namespace axon::mpi {

namespace {

struct AttachedBuffer {
  bool automatic = false;  // MPI_BUFFER_AUTOMATIC: each message gets its own heap copy
  uint8_t* base = nullptr;
  size_t size = 0;
  std::map<size_t, size_t> used;  // offset -> length of blocks in use
  int in_flight = 0;
};
AttachedBuffer attached;

size_t align_up(size_t v) { return (v + 15) & ~size_t(15); }

// First fit between the blocks in use.
bool allocate(size_t length, size_t* offset) {
  size_t start = 0;
  for (auto& [off, len] : attached.used) {
    if (off - start >= length) break;
    start = align_up(off + len);
  }
  if (start + length > attached.size) return false;
  attached.used[start] = length;
  *offset = start;
  return true;
}

// MPI_Buffer_iflush requests waiting for the buffer to drain.
std::vector<pml::Request*> flush_waiters;

void one_message_left() {
  if (--attached.in_flight > 0) return;
  std::vector<pml::Request*> done;
  done.swap(flush_waiters);
  for (pml::Request* r : done) pml::request_complete(r);
}

void release_block(pml::Request* r) {
  size_t offset = reinterpret_cast<size_t>(r->user_data);
  attached.used.erase(offset);
  one_message_left();
}

void release_heap_copy(pml::Request* r) {
  free(r->user_data);
  one_message_left();
}

int automatic_send(const void* buf, MPI_Count count, const Datatype* type, size_t bytes, int dest, int tag,
                   Comm* comm) {
  auto* copy = static_cast<uint8_t*>(malloc(bytes ? bytes : 1));
  if (!copy) return MPI_ERR_NO_MEM;
  if (bytes) pack_items(*type, buf, static_cast<size_t>(count), copy);
  pml::Request* r = nullptr;
  int rc = pml::isend(copy, static_cast<MPI_Count>(bytes), datatype_from_handle(MPI_BYTE), dest, tag, &comm->p2p,
                      pml::SendMode::Standard, &r);
  if (rc != MPI_SUCCESS) {
    free(copy);
    return rc;
  }
  ++attached.in_flight;
  r->user_data = copy;
  if (r->complete.load(std::memory_order_acquire)) {
    release_heap_copy(r);
    pml::request_release(r);
  } else {
    r->on_complete = release_heap_copy;
    r->free_when_complete = true;
  }
  return MPI_SUCCESS;
}

}  // namespace

int buffered_send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Comm* comm) {
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  size_t bytes = 0;
  if (!bytes_for_count(*type, count, &bytes)) return MPI_ERR_COUNT;
  pml::Guard guard;
  if (attached.automatic) return automatic_send(buf, count, type, bytes, dest, tag, comm);
  size_t offset = 0;
  if (!attached.base || !allocate(bytes + MPI_BSEND_OVERHEAD, &offset)) return MPI_ERR_BUFFER;
  uint8_t* copy = attached.base + offset;
  if (bytes) pack_items(*type, buf, static_cast<size_t>(count), copy);
  pml::Request* r = nullptr;
  int rc = pml::isend(copy, static_cast<MPI_Count>(bytes), datatype_from_handle(MPI_BYTE), dest, tag, &comm->p2p,
                      pml::SendMode::Standard, &r);
  if (rc != MPI_SUCCESS) {
    attached.used.erase(offset);
    return rc;
  }
  ++attached.in_flight;
  r->user_data = reinterpret_cast<void*>(offset);
  // Nobody waits for this request: it frees itself and its space when done.
  if (r->complete.load(std::memory_order_acquire)) {
    release_block(r);
    pml::request_release(r);
  } else {
    r->on_complete = release_block;
    r->free_when_complete = true;
  }
  return MPI_SUCCESS;
}

void buffered_sends_flush() {
  pml::wait_until([] { return attached.in_flight == 0; });
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

namespace {
int attach(const char* fn, void* buffer, MPI_Count size) {
  if (size < 0) return raise_self(MPI_ERR_ARG, fn, "negative size");
  if (!buffer && size > 0) return raise_self(MPI_ERR_BUFFER, fn, "NULL buffer");
  pml::Guard guard;
  if (attached.base || attached.automatic) return raise_self(MPI_ERR_BUFFER, fn, "a buffer is already attached");
  if (buffer == MPI_BUFFER_AUTOMATIC) {
    attached.automatic = true;
    return MPI_SUCCESS;
  }
  attached.base = static_cast<uint8_t*>(buffer);
  attached.size = static_cast<size_t>(size);
  attached.used.clear();
  // A zero-size buffer is attached but holds nothing; keep base non-null.
  if (!attached.base) attached.base = reinterpret_cast<uint8_t*>(&attached);
  return MPI_SUCCESS;
}

int detach(const char* fn, void* buffer_addr, MPI_Count* size) {
  if (!buffer_addr || !size) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  {
    pml::Guard guard;
    if (!attached.base && !attached.automatic) return raise_self(MPI_ERR_BUFFER, fn, "no buffer is attached");
  }
  // Every message sent from the buffer must leave it first.
  pml::wait_until([] { return attached.in_flight == 0; });
  pml::Guard guard;
  uint8_t* base = attached.automatic ? static_cast<uint8_t*>(MPI_BUFFER_AUTOMATIC)
                  : attached.base == reinterpret_cast<uint8_t*>(&attached) ? nullptr
                                                                           : attached.base;
  *static_cast<void**>(buffer_addr) = base;
  *size = static_cast<MPI_Count>(attached.size);
  attached = AttachedBuffer{};
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Buffer_attach, (void* buffer, int size)) { return attach("MPI_Buffer_attach", buffer, size); }

AXON_API(int, MPI_Buffer_attach_c, (void* buffer, MPI_Count size)) {
  return attach("MPI_Buffer_attach_c", buffer, size);
}

AXON_API(int, MPI_Buffer_detach, (void* buffer_addr, int* size)) {
  if (!size) return raise_self(MPI_ERR_ARG, "MPI_Buffer_detach", "NULL argument");
  MPI_Count n = 0;
  int rc = detach("MPI_Buffer_detach", buffer_addr, &n);
  if (rc == MPI_SUCCESS) *size = static_cast<int>(n);
  return rc;
}

AXON_API(int, MPI_Buffer_detach_c, (void* buffer_addr, MPI_Count* size)) {
  return detach("MPI_Buffer_detach_c", buffer_addr, size);
}

namespace {
int bsend(const char* fn, const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
          MPI_Comm comm) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, tag, &type));
  AXON_TRY(c, fn, buffered_send(buf, count, type, dest, tag, c));
  return MPI_SUCCESS;
}

int ibsend(const char* fn, const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
           MPI_Comm comm, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_REQUEST, fn, "request is NULL");
  Datatype* type = nullptr;
  AXON_TRY(c, fn, validate_send(c, buf, count, datatype, dest, tag, &type));
  AXON_TRY(c, fn, buffered_send(buf, count, type, dest, tag, c));
  // The data is in the attached buffer: the user's request is complete at once.
  pml::Request* r = nullptr;
  pml::isend(nullptr, 0, datatype_from_handle(MPI_BYTE), MPI_PROC_NULL, 0, &c->p2p, pml::SendMode::Standard, &r);
  r->comm = c;
  *request = handle_of(r);
  return MPI_SUCCESS;
}
}  // namespace

AXON_API(int, MPI_Bsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)) {
  return bsend("MPI_Bsend", buf, count, datatype, dest, tag, comm);
}

AXON_API(int, MPI_Bsend_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm)) {
  return bsend("MPI_Bsend_c", buf, count, datatype, dest, tag, comm);
}

AXON_API(int, MPI_Ibsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                           MPI_Request* request)) {
  return ibsend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request);
}

AXON_API(int, MPI_Ibsend_c, (const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                             MPI_Comm comm, MPI_Request* request)) {
  return ibsend("MPI_Ibsend_c", buf, count, datatype, dest, tag, comm, request);
}

// MPI-4.1: wait (or get a request that completes) when every message buffered
// so far has left the attached buffer. Nothing attached: nothing to wait for.
AXON_API(int, MPI_Buffer_flush, (void)) {
  buffered_sends_flush();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Buffer_iflush, (MPI_Request * request)) {
  if (!request) return raise_self(MPI_ERR_ARG, "MPI_Buffer_iflush", "request is NULL");
  pml::Guard guard;
  // A receive-kind request in no queue, completed by the last buffered send.
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Recv);
  r->ctx = nullptr;
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  r->error = MPI_SUCCESS;
  if (attached.in_flight == 0) pml::request_complete(r);
  else flush_waiters.push_back(r);
  *request = handle_of(r);
  return MPI_SUCCESS;
}
