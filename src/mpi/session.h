// MPI Sessions (MPI-4.1 chapter 11.3): a session is a handle on the runtime
// from which groups of named process sets, and communicators from those
// groups, are made without MPI_Init. Several sessions may live at once, next
// to the World model or without it, and be created again after they were
// finalized (see docs/communicators.md, "Sessions").
//
// Communicators and groups made from a session remember it by id, never by
// pointer: a session finalized before them (erroneous, but possible) is then
// simply not found, instead of being read after it was freed.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "mpi/objects.h"

namespace axon::mpi {

constexpr uint32_t kSessionMagic = 0x53455353u;  // "SESS"
constexpr uint32_t kSessionFreed = 0xDEAD5345u;

struct Session {
  uint32_t magic = kSessionMagic;
  uint64_t id = 0;                 // never reused within the process
  Errhandler* errhandler = nullptr;
  int thread_level = MPI_THREAD_SINGLE;
  void* bsend_buffer = nullptr;    // MPI_Session_attach_buffer (src/mpi/bsend.cpp)
};

// The session behind a handle, or nullptr when the handle is not a live session.
Session* session_from_handle(MPI_Session handle);
// In an entry point: `var` is the session, or the call raises MPI_ERR_SESSION
// on MPI_COMM_SELF (there is no session to report through).
#define AXON_SESSION_OR_RAISE(var, handle, fn) \
  ::axon::mpi::Session* var = ::axon::mpi::session_from_handle(handle); \
  if (!var) return ::axon::mpi::raise_self(MPI_ERR_SESSION, fn, "invalid session")
// Calls the session's error handler (MPI_ERRORS_ARE_FATAL when `s` is null):
// returns `code` when the handler returns.
int session_raise(Session* s, int code, const char* function, const char* detail = nullptr);

// Buffered sends (src/mpi/bsend.cpp): the buffer attached to the session of
// `session_id`, or nullptr when none is attached or the session is gone.
// Called with the PML lock held.
void* session_bsend_buffer(uint64_t session_id);
// MPI_Session_finalize: waits until the messages in the session's buffer
// have left it, then drops the buffer's record.
void session_buffer_destroy(Session* s);

}  // namespace axon::mpi
