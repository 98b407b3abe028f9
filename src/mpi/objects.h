// MPI objects owned by the MPI layer: communicators and error handlers.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/handle.h"
#include "pml/pml.h"

namespace axon::coll {
struct CommState;  // src/coll/internal.h
}

namespace axon::mpi {

// Memory for handle objects (communicators, groups) that is never returned
// to the heap: a freed object is destroyed, rebuilt empty with its magic set
// to `dead`, and kept for the next allocation. A freed handle the program
// still passes then points at an object whose magic says so, so the library
// can reject it with the right error class instead of reading freed memory.
template <typename T>
class RecycledObjects {
 public:
  T* take() {
    std::lock_guard<std::mutex> lock(lock_);
    if (free_.empty()) return new T;
    T* obj = free_.back();
    free_.pop_back();
    obj->~T();
    return new (obj) T;
  }
  void give_back(T* obj, uint32_t dead) {
    obj->~T();
    new (obj) T;
    obj->magic = dead;
    std::lock_guard<std::mutex> lock(lock_);
    free_.push_back(obj);
  }

 private:
  std::mutex lock_;
  // Never destroyed: a freed handle must stay recognisable (its dead magic)
  // until the process ends, even to code running after static destructors,
  // and the list keeps the pool reachable for LeakSanitizer.
  std::vector<T*>& free_ = *new std::vector<T*>;
};

constexpr uint32_t kErrhandlerMagic = 0x45525248u;  // "ERRH"
constexpr uint32_t kCommMagic = 0x434f4d4du;        // "COMM"

struct Errhandler {
  enum class Kind : uint8_t { Fatal, Return, Abort, User };
  uint32_t magic = kErrhandlerMagic;
  Kind kind = Kind::Fatal;
  bool predefined = false;
  MPI_Comm_errhandler_function* comm_fn = nullptr;
  int refcount = 1;
};

struct AttributeSet;  // cached attributes (src/mpi/attributes.h)
struct Topology;      // cartesian / graph / dist-graph (src/mpi/topology.h)

struct Comm {
  uint32_t magic = kCommMagic;
  bool predefined = false;
  pml::Context p2p;   // point-to-point traffic
  pml::Context coll;  // collective traffic: never matches user messages
  Errhandler* errhandler = nullptr;
  std::string name;
  MPI_Comm handle = MPI_COMM_NULL;
  AttributeSet* attributes = nullptr;  // owned; see src/mpi/attributes.h
  // Creation and destruction (src/mpi/communicator.h). An intercommunicator's
  // p2p / coll contexts map REMOTE ranks (rank() is the local rank, size() the
  // remote size); `local` carries traffic within the local group.
  bool inter = false;
  pml::Context local;
  int context_pair = -1;        // pool pair of p2p/coll, released at deallocation; -1 predefined
  int local_pair = -1;          // intercomm: pool pair of `local`
  uint32_t creation_seq = 0;    // communicators created from this one (internal tags)
  int pending = 0;              // nonblocking operations that still use it (delays deallocation)
  bool freed = false;           // MPI_Comm_free called; deallocated once nothing uses it
  std::shared_ptr<const Topology> topology;
  std::vector<std::pair<std::string, std::string>> hints;  // MPI_Comm_set_info
  void* bsend_buffer = nullptr;  // MPI_Comm_attach_buffer's buffer (src/mpi/bsend.cpp)
  void* coll_state = nullptr;  // coll::CommState, created on first collective; freed by coll_comm_destroy
  uint64_t session_id = 0;     // the session it derives from (src/mpi/session.h); 0: World model
  // MPI_Psend_init / MPI_Precv_init calls made so far on this communicator per
  // (is_send, peer, tag): the k-th initialization on one side pairs with the
  // k-th on the other (src/mpi/partitioned.cpp). Guarded by the pml lock.
  std::map<std::tuple<bool, int, int>, uint32_t> partitioned_inits;
  int rank() const { return p2p.rank; }
  int size() const { return p2p.size(); }
};

void coll_comm_destroy(Comm* c);  // src/mpi/coll.cpp: frees c->coll_state
coll::CommState* coll_state_of(Comm* c);  // src/mpi/coll.cpp: created on first use
// The communicator behind a handle, or nullptr (garbage, freed, or a
// predefined one outside MPI_Init..MPI_Finalize). Inline: every call on a
// communicator starts here.
namespace detail {
extern Comm world_comm, self_comm;  // comm.cpp
}  // namespace detail
inline Comm* comm_from_handle(MPI_Comm handle) {
  Comm* c;
  if (handle == MPI_COMM_WORLD) c = &detail::world_comm;
  else if (handle == MPI_COMM_SELF) c = &detail::self_comm;
  else {
    if (!may_be_object<Comm>(handle)) return nullptr;
    c = reinterpret_cast<Comm*>(handle);
    return c->magic == kCommMagic ? c : nullptr;
  }
  return c->magic == kCommMagic && c->size() > 0 ? c : nullptr;
}
Comm* comm_world();
Comm* comm_self();
// Sets up MPI_COMM_WORLD and MPI_COMM_SELF once the job is known.
void comms_init();
void comms_finalize();

Errhandler* errhandler_from_handle(MPI_Errhandler handle);
MPI_Errhandler errhandler_handle(Errhandler* e);
void errhandler_retain(Errhandler* e);
void errhandler_release(Errhandler* e);

}  // namespace axon::mpi
