// Shared by the files that implement the MPI_* entry points: how an entry
// point is defined and exported, how handles become objects, and how errors
// reach the error handler.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "datatype/datatype.h"
#include "mpi/objects.h"
#include "pml/pml.h"

// Defines PMPI_<name> and exports MPI_<name> as a weak alias of it (the MPI
// profiling interface: a tool may define MPI_<name> and call PMPI_<name>).
#define AXON_API(ret, name, params)                                                           \
  extern "C" __attribute__((visibility("default"), weak, alias("P" #name))) ret name params; \
  extern "C" __attribute__((visibility("default"))) ret P##name params

namespace axon::mpi {

// Raises `code` on the communicator's error handler: returns `code` when the
// handler returns, or ends the job (MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT).
// `detail` explains the cause in words.
int raise(Comm* comm, int code, const char* function, const char* detail = nullptr);
// Errors not tied to a communicator are raised on MPI_COMM_SELF (MPI-4), or on
// MPI_COMM_WORLD while SELF keeps its default handler and WORLD has another.
int raise_self(int code, const char* function, const char* detail = nullptr);
// True for MPI_SUCCESS, a predefined error class and a user-added class or code.
bool valid_error_code(int code);

// Whole-library state.
bool initialized();
bool finalized();
// The runtime shared by the World model and sessions (src/mpi/init.cpp):
// acquire starts it for the first user (collective over the job), release
// stops it after the last one (`world_ends`: the caller is MPI_Finalize).
void runtime_acquire(int thread_level_required);
void runtime_release(bool world_ends);
bool runtime_running();
// The thread support the running runtime gives: the highest level any of its
// users (MPI_Init_thread, sessions) asked for.
int runtime_thread_level();

// MPI_Status <-> request results. The ABI's status has five internal ints:
// [0],[1] the byte count (64 bits), [2] the cancelled flag.
void set_status(MPI_Status* status, int source, int tag, int error, size_t bytes, bool cancelled);
void set_empty_status(MPI_Status* status);
inline size_t status_bytes(const MPI_Status* s) {
  return static_cast<size_t>(static_cast<uint32_t>(s->MPI_internal[0])) |
         (static_cast<size_t>(static_cast<uint32_t>(s->MPI_internal[1])) << 32);
}
void status_from_request(MPI_Status* status, const pml::Request* r);

// A request that no queue knows and no transfer drives (composite, flush and
// partitioned requests): its owner completes it. Its result starts as the
// empty status. `comm` (may be nullptr: MPI_COMM_SELF) takes its errors.
// Caller holds the pml lock.
pml::Request* standalone_request(pml::Request::Kind kind, Comm* comm);

inline pml::Request* request_of(MPI_Request h) { return reinterpret_cast<pml::Request*>(h); }
inline MPI_Request handle_of(pml::Request* r) { return reinterpret_cast<MPI_Request>(r); }

// Largest user tag (the MPI_TAG_UB attribute). 2^30-1 rather than INT_MAX:
// partitioned communication carries its tags in the negative range below
// -2^30 on the point-to-point context (src/mpi/partitioned.cpp), disjoint
// from every user tag and every internal one.
constexpr int kTagUpperBound = 0x3fffffff;

// Common argument checks; each returns MPI_SUCCESS or the error class.
// Inline: every send and receive runs them, and as calls into another file
// they cost 30-40 instructions per message (callgrind, docs/performance.md).
// A predefined type is found inline; any other handle (derived, null,
// garbage) is checked by check_any_datatype.
int check_any_datatype(MPI_Datatype handle, Datatype** out);
inline int check_datatype(MPI_Datatype handle, Datatype** out) {
  if (Datatype* t = predefined_type(handle)) [[likely]] {
    *out = t;  // predefined types are always valid for communication
    return MPI_SUCCESS;
  }
  return check_any_datatype(handle, out);
}
inline int check_buffer(const void* buf, MPI_Count count, const Datatype* type) {
  // MPI_BOTTOM (NULL) is legal with derived types that hold absolute addresses.
  if (!buf && count > 0 && type->size > 0 && type->predefined) return MPI_ERR_BUFFER;
  return MPI_SUCCESS;
}
inline int check_count(MPI_Count count) { return count < 0 ? MPI_ERR_COUNT : MPI_SUCCESS; }
inline int check_send_tag(int tag) { return tag < 0 || tag > kTagUpperBound ? MPI_ERR_TAG : MPI_SUCCESS; }
inline int check_recv_tag(int tag) { return tag == MPI_ANY_TAG ? MPI_SUCCESS : check_send_tag(tag); }
// A valid rank or MPI_PROC_NULL.
inline int check_dest(const Comm* comm, int rank) {
  return rank == MPI_PROC_NULL || (rank >= 0 && rank < comm->size()) ? MPI_SUCCESS : MPI_ERR_RANK;
}
// Also MPI_ANY_SOURCE.
inline int check_source(const Comm* comm, int rank) {
  return rank == MPI_ANY_SOURCE ? MPI_SUCCESS : check_dest(comm, rank);
}

// The datatype of a point-to-point buffer. An empty message may name
// MPI_DATATYPE_NULL (count 0 moves no data, so no type map is needed): MPICH
// accepts this (its suite's pt2pt/recvnull test receives from MPI_PROC_NULL
// that way) and so does Axon, treating it as zero MPI_BYTEs.
inline int check_message_type(MPI_Datatype datatype, MPI_Count count, Datatype** type) {
  if (datatype == MPI_DATATYPE_NULL && count == 0) [[unlikely]] datatype = MPI_BYTE;
  return check_datatype(datatype, type);
}

// The checks a send and a receive share: count, datatype, buffer.
inline int check_message(const void* buf, MPI_Count count, MPI_Datatype datatype, Datatype** type) {
  int rc;
  if ((rc = check_count(count)) || (rc = check_message_type(datatype, count, type)) ||
      (rc = check_buffer(buf, count, *type)))
    [[unlikely]] return rc;
  return MPI_SUCCESS;
}

// All checks of a send's / receive's arguments, in the order the errors are
// reported (inline, as the checks they are made of).
inline int validate_send(Comm* c, const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                         Datatype** type) {
  int rc;
  if ((rc = check_message(buf, count, datatype, type)) || (rc = check_dest(c, dest)) || (rc = check_send_tag(tag)))
    [[unlikely]] return rc;
  return MPI_SUCCESS;
}
inline int validate_recv(Comm* c, const void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                         Datatype** type) {
  int rc;
  if ((rc = check_message(buf, count, datatype, type)) || (rc = check_source(c, source)) ||
      (rc = check_recv_tag(tag)))
    [[unlikely]] return rc;
  return MPI_SUCCESS;
}
}  // namespace axon::mpi

// Shorthands for the first lines of an entry point.
#define AXON_COMM_OR_RAISE(var, handle, fn)                                          \
  ::axon::mpi::Comm* var = ::axon::mpi::comm_from_handle(handle);                    \
  if (!var) return ::axon::mpi::raise_self(MPI_ERR_COMM, fn, "invalid communicator")

#define AXON_TRY(comm, fn, expr)                                 \
  do {                                                           \
    int axon_rc_ = (expr);                                       \
    if (axon_rc_ != MPI_SUCCESS) return ::axon::mpi::raise(comm, axon_rc_, fn); \
  } while (0)
