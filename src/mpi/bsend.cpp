// MPI_Buffer_attach/detach/flush/iflush and MPI_Bsend/Ibsend.
//
// Each buffered message occupies [header | packed data] in the attached
// buffer, first-fit, with MPI_BSEND_OVERHEAD bytes of bookkeeping charged per
// message as the standard lets users budget. Space returns to the pool when
// the internal send completes; detach waits for all of them.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "base/backoff.h"
#include "mpi/api.h"
#include "mpi/bsend.h"
#include "mpi/session.h"
#include "progress/progress.h"

namespace axon::mpi {

// One buffer for buffered sends: the process's (MPI_Buffer_attach) or a
// communicator's (MPI_Comm_attach_buffer, MPI-4.1).
struct AttachedBuffer {
  bool automatic = false;  // MPI_BUFFER_AUTOMATIC: each message gets its own heap copy
  uint8_t* base = nullptr;
  size_t size = 0;
  std::map<size_t, size_t> used;  // offset -> length of blocks in use
  int in_flight = 0;
  std::vector<pml::Request*> flush_waiters;  // MPI_*_iflush requests waiting for in_flight == 0
  bool attached() const { return base || automatic; }
};

namespace {

AttachedBuffer process_buffer;
int all_in_flight = 0;  // over every buffer, for MPI_Finalize

// What a message in flight holds of its buffer, released when it completes.
struct Block {
  AttachedBuffer* owner;
  size_t offset;     // in owner's buffer, or
  void* heap_copy;   // automatic mode: its own copy
};

size_t align_up(size_t v) { return (v + 15) & ~size_t(15); }

// First fit between the blocks in use.
bool allocate(AttachedBuffer& b, size_t length, size_t* offset) {
  size_t start = 0;
  for (auto& [off, len] : b.used) {
    if (off - start >= length) break;
    start = align_up(off + len);
  }
  if (start + length > b.size) return false;
  b.used[start] = length;
  *offset = start;
  return true;
}

void one_message_left(AttachedBuffer& b) {
  --all_in_flight;
  if (--b.in_flight > 0) return;
  std::vector<pml::Request*> done;
  done.swap(b.flush_waiters);
  for (pml::Request* r : done) pml::request_complete(r);
}

// Completion callback of a buffered message's send (pml lock held).
void release(pml::Request* r) {
  auto* block = static_cast<Block*>(r->user_data);
  if (block->heap_copy) free(block->heap_copy);
  else block->owner->used.erase(block->offset);
  one_message_left(*block->owner);
  delete block;
}

// A communicator's own buffer if it has one, else its session's, else the
// process's (MPI-4.1 3.6: the most specific buffer attached).
AttachedBuffer& buffer_for(Comm* comm) {
  auto* own = static_cast<AttachedBuffer*>(comm->bsend_buffer);
  if (own && own->attached()) return *own;
  if (comm->session_id) {
    auto* of_session = static_cast<AttachedBuffer*>(session_bsend_buffer(comm->session_id));
    if (of_session && of_session->attached()) return *of_session;
  }
  return process_buffer;
}

}  // namespace

int buffered_send(const void* buf, MPI_Count count, const Datatype* type, int dest, int tag, Comm* comm) {
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  size_t bytes = 0;
  if (!bytes_for_count(*type, count, &bytes)) return MPI_ERR_COUNT;
  // Space of messages already delivered comes back when their completion is
  // seen, which needs progress: before reporting a full buffer, drive it
  // (for at most kReclaimTime) while messages of this buffer are in flight.
  // Users budget the buffer for the messages they have outstanding, not for
  // completions this process has not processed yet (MPICH's
  // threads/pt2pt/mt_bsendrecv_huge sizes it exactly so).
  constexpr auto kReclaimTime = std::chrono::milliseconds(200);
  const auto deadline = std::chrono::steady_clock::now() + kReclaimTime;
  Backoff backoff(progress::spin_rounds());
  std::optional<progress::Guard> guard;
  guard.emplace();
  AttachedBuffer* b = &buffer_for(comm);
  auto* block = new Block{b, 0, nullptr};
  uint8_t* copy = nullptr;
  if (b->automatic) {
    block->heap_copy = malloc(bytes ? bytes : 1);
    if (!block->heap_copy) {
      delete block;
      return MPI_ERR_NO_MEM;
    }
    copy = static_cast<uint8_t*>(block->heap_copy);
  } else {
    while (!b->base || !allocate(*b, bytes + MPI_BSEND_OVERHEAD, &block->offset)) {
      if (!b->base || b->in_flight == 0 || std::chrono::steady_clock::now() >= deadline) {
        delete block;
        return MPI_ERR_BUFFER;
      }
      guard.reset();  // other threads may be the ones to post the receives
      if (progress::progress() == 0) backoff.idle();
      guard.emplace();
      b = &buffer_for(comm);
      block->owner = b;
    }
    copy = b->base + block->offset;
  }
  if (bytes) pack_items(*type, buf, static_cast<size_t>(count), copy);
  pml::Request* r = nullptr;
  int rc = pml::isend(copy, static_cast<MPI_Count>(bytes), datatype_from_handle(MPI_BYTE), dest, tag, &comm->p2p,
                      pml::SendMode::Standard, &r);
  if (rc != MPI_SUCCESS) {
    if (block->heap_copy) free(block->heap_copy);
    else b->used.erase(block->offset);
    delete block;
    return rc;
  }
  ++b->in_flight;
  ++all_in_flight;
  r->user_data = block;
  // Nobody waits for this request: it frees itself and its space when done.
  pml::release_when_complete(r, release);
  return MPI_SUCCESS;
}

void buffered_sends_flush() {
  progress::wait_until([] { return all_in_flight == 0; });
}

void session_buffer_destroy(Session* s) {
  auto* own = static_cast<AttachedBuffer*>(s->bsend_buffer);
  if (!own) return;
  progress::wait_until([own] { return own->in_flight == 0; });
  progress::Guard guard;
  s->bsend_buffer = nullptr;
  delete own;
}

void comm_buffer_destroy(Comm* c) {
  auto* own = static_cast<AttachedBuffer*>(c->bsend_buffer);
  if (!own) return;
  c->bsend_buffer = nullptr;
  // Messages still in flight point at the record: it then stays (a few
  // bytes) so their completion can update it; the communicator does not wait.
  if (own->in_flight == 0) delete own;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

namespace {
// Whose buffer a call works on: a communicator's, a session's, or (both
// null) the process's. Errors go to that object's handler, the process
// buffer's to MPI_COMM_SELF's.
struct Owner {
  Comm* comm = nullptr;
  Session* session = nullptr;
};

int fail(Owner o, int code, const char* fn, const char* why) {
  if (o.comm) return raise(o.comm, code, fn, why);
  if (o.session) return session_raise(o.session, code, fn, why);
  return raise_self(code, fn, why);
}

int attach(const char* fn, AttachedBuffer& b, Owner c, void* buffer, MPI_Count size) {
  if (size < 0) return fail(c, MPI_ERR_ARG, fn, "negative size");
  if (!buffer && size > 0) return fail(c, MPI_ERR_BUFFER, fn, "NULL buffer");
  progress::Guard guard;
  if (b.attached()) return fail(c, MPI_ERR_BUFFER, fn, "a buffer is already attached");
  if (buffer == MPI_BUFFER_AUTOMATIC) {
    b.automatic = true;
    return MPI_SUCCESS;
  }
  b.base = static_cast<uint8_t*>(buffer);
  b.size = static_cast<size_t>(size);
  b.used.clear();
  // A zero-size buffer is attached but holds nothing; keep base non-null.
  if (!b.base) b.base = reinterpret_cast<uint8_t*>(&b);
  return MPI_SUCCESS;
}

int detach(const char* fn, AttachedBuffer& b, Owner c, void* buffer_addr, MPI_Count* size) {
  if (!buffer_addr || !size) return fail(c, MPI_ERR_ARG, fn, "NULL argument");
  {
    progress::Guard guard;
    if (!b.attached()) return fail(c, MPI_ERR_BUFFER, fn, "no buffer is attached");
  }
  // Every message sent from the buffer must leave it first.
  progress::wait_until([&b] { return b.in_flight == 0; });
  progress::Guard guard;
  uint8_t* base = b.automatic ? static_cast<uint8_t*>(MPI_BUFFER_AUTOMATIC)
                  : b.base == reinterpret_cast<uint8_t*>(&b) ? nullptr
                                                             : b.base;
  *static_cast<void**>(buffer_addr) = base;
  *size = static_cast<MPI_Count>(b.size);
  b = AttachedBuffer{};
  return MPI_SUCCESS;
}

int detach_int(const char* fn, AttachedBuffer& b, Owner c, void* buffer_addr, int* size) {
  if (!size) return fail(c, MPI_ERR_ARG, fn, "NULL argument");
  MPI_Count n = 0;
  int rc = detach(fn, b, c, buffer_addr, &n);
  if (rc == MPI_SUCCESS) *size = static_cast<int>(n);
  return rc;
}

// A receive-kind request in no queue that the buffer's last message completes.
int iflush(const char* fn, AttachedBuffer& b, Owner c, MPI_Request* request) {
  if (!request) return fail(c, MPI_ERR_ARG, fn, "request is NULL");
  progress::Guard guard;
  pml::Request* r = standalone_request(pml::Request::Kind::Recv, c.comm ? c.comm : comm_self());
  if (b.in_flight == 0) pml::request_complete(r);
  else b.flush_waiters.push_back(r);
  *request = handle_of(r);
  return MPI_SUCCESS;
}

// The communicator's buffer record, created on first attach.
AttachedBuffer& own_buffer(Comm* c) {
  if (!c->bsend_buffer) c->bsend_buffer = new AttachedBuffer;
  return *static_cast<AttachedBuffer*>(c->bsend_buffer);
}
}  // namespace

AXON_API(int, MPI_Buffer_attach, (void* buffer, int size)) {
  return attach("MPI_Buffer_attach", process_buffer, Owner{}, buffer, size);
}
AXON_API(int, MPI_Buffer_attach_c, (void* buffer, MPI_Count size)) {
  return attach("MPI_Buffer_attach_c", process_buffer, Owner{}, buffer, size);
}
AXON_API(int, MPI_Buffer_detach, (void* buffer_addr, int* size)) {
  return detach_int("MPI_Buffer_detach", process_buffer, Owner{}, buffer_addr, size);
}
AXON_API(int, MPI_Buffer_detach_c, (void* buffer_addr, MPI_Count* size)) {
  return detach("MPI_Buffer_detach_c", process_buffer, Owner{}, buffer_addr, size);
}

// MPI-4.1: wait (or get a request that completes) when every message buffered
// so far has left the buffer. Nothing attached: nothing to wait for.
AXON_API(int, MPI_Buffer_flush, (void)) {
  progress::wait_until([] { return process_buffer.in_flight == 0; });
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Buffer_iflush, (MPI_Request * request)) {
  return iflush("MPI_Buffer_iflush", process_buffer, Owner{}, request);
}

// MPI-4.1 communicator buffers: buffered sends on the communicator use its
// own buffer when one is attached, the process's otherwise.
AXON_API(int, MPI_Comm_attach_buffer, (MPI_Comm comm, void* buffer, int size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_attach_buffer");
  return attach("MPI_Comm_attach_buffer", own_buffer(c), Owner{c, nullptr}, buffer, size);
}
AXON_API(int, MPI_Comm_attach_buffer_c, (MPI_Comm comm, void* buffer, MPI_Count size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_attach_buffer_c");
  return attach("MPI_Comm_attach_buffer_c", own_buffer(c), Owner{c, nullptr}, buffer, size);
}
AXON_API(int, MPI_Comm_detach_buffer, (MPI_Comm comm, void* buffer_addr, int* size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_detach_buffer");
  return detach_int("MPI_Comm_detach_buffer", own_buffer(c), Owner{c, nullptr}, buffer_addr, size);
}
AXON_API(int, MPI_Comm_detach_buffer_c, (MPI_Comm comm, void* buffer_addr, MPI_Count* size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_detach_buffer_c");
  return detach("MPI_Comm_detach_buffer_c", own_buffer(c), Owner{c, nullptr}, buffer_addr, size);
}
AXON_API(int, MPI_Comm_flush_buffer, (MPI_Comm comm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_flush_buffer");
  AttachedBuffer& b = own_buffer(c);
  progress::wait_until([&b] { return b.in_flight == 0; });
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Comm_iflush_buffer, (MPI_Comm comm, MPI_Request* request)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_iflush_buffer");
  return iflush("MPI_Comm_iflush_buffer", own_buffer(c), Owner{c, nullptr}, request);
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


// MPI-4.1 session buffers: used by buffered sends on communicators derived
// from the session that have no buffer of their own.
namespace {
AttachedBuffer& own_buffer(Session* s) {
  if (!s->bsend_buffer) s->bsend_buffer = new AttachedBuffer;
  return *static_cast<AttachedBuffer*>(s->bsend_buffer);
}
}  // namespace

AXON_API(int, MPI_Session_attach_buffer, (MPI_Session session, void* buffer, int size)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_attach_buffer");
  return attach("MPI_Session_attach_buffer", own_buffer(s), Owner{nullptr, s}, buffer, size);
}
AXON_API(int, MPI_Session_attach_buffer_c, (MPI_Session session, void* buffer, MPI_Count size)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_attach_buffer_c");
  return attach("MPI_Session_attach_buffer_c", own_buffer(s), Owner{nullptr, s}, buffer, size);
}
AXON_API(int, MPI_Session_detach_buffer, (MPI_Session session, void* buffer_addr, int* size)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_detach_buffer");
  return detach_int("MPI_Session_detach_buffer", own_buffer(s), Owner{nullptr, s}, buffer_addr, size);
}
AXON_API(int, MPI_Session_detach_buffer_c, (MPI_Session session, void* buffer_addr, MPI_Count* size)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_detach_buffer_c");
  return detach("MPI_Session_detach_buffer_c", own_buffer(s), Owner{nullptr, s}, buffer_addr, size);
}
AXON_API(int, MPI_Session_flush_buffer, (MPI_Session session)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_flush_buffer");
  AttachedBuffer& b = own_buffer(s);
  progress::wait_until([&b] { return b.in_flight == 0; });
  return MPI_SUCCESS;
}
AXON_API(int, MPI_Session_iflush_buffer, (MPI_Session session, MPI_Request* request)) {
  AXON_SESSION_OR_RAISE(s, session, "MPI_Session_iflush_buffer");
  return iflush("MPI_Session_iflush_buffer", own_buffer(s), Owner{nullptr, s}, request);
}
