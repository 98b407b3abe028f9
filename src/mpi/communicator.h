// Creating and destroying communicators (src/mpi/communicator.cpp,
// src/mpi/intercomm.cpp). See docs/communicators.md.
#pragma once

#include <memory>
#include <vector>

#include "mpi/context_id.h"
#include "mpi/objects.h"

namespace axon::mpi {

// The world ranks of the communicator's group (the local group of an
// intercommunicator), in rank order, and its size.
const std::vector<int>& local_world_ranks(const Comm* c);
int local_size(const Comm* c);

// A new heap communicator that inherits the parent's error handler (MPI-4.1
// 9.3: new communicators inherit the parent's handler). It has no contexts yet.
Comm* comm_alloc(const Comm* parent);
// A communicator made from groups, without a parent (MPI_Comm_create_from_group,
// MPI_Intercomm_create_from_groups): the error handler given, the groups' session.
Comm* comm_alloc_from_groups(Errhandler* errhandler, uint64_t session_id);
// Opens an intracommunicator's contexts on an agreed pool pair.
void comm_open_intra(Comm* c, int pair, int rank, std::vector<int> world);
// Opens an intercommunicator: p2p/coll on `pair` map remote ranks, `local`
// (the collective id of `local_pair`) carries local-group traffic.
void comm_open_inter(Comm* c, int pair, int local_pair, int rank, std::vector<int> local_world,
                     std::vector<int> remote_world);
// MPI_Comm_split's work on an intracommunicator (on an intercommunicator:
// on its local group, as MPI_Comm_split_type splits it), without argument
// checks: *out is the new intracommunicator, or nullptr where color is
// MPI_UNDEFINED. Topology constructors build on it (src/mpi/topology.cpp).
int comm_split(Comm* parent, int color, int key, Comm** out);
// Deallocates at once (error paths of a creation; nothing uses it yet).
void comm_destroy(Comm* c);
// MPI_Comm_free's work after the checks: runs the attribute delete callbacks,
// invalidates the handle and deallocates once nothing pending uses it.
int comm_free(Comm* c);
// MPI_Finalize: deallocates every communicator still waiting for its pending
// operations (nothing will drive them any more).
void comms_reap_all();

// Pair agreement among all processes of two groups joined by their leaders
// (intercommunicator creation, merge, dup). Each group runs a local AND over
// `local` among `members` (ranks in `local`, leader first), the leaders swap
// results over `bridge` with `bridge_peer`, and the leader broadcasts.
struct TwoGroups {
  pml::Context* local;
  std::vector<int> members;  // ranks in `local`; members[0] is the leader
  int me;                    // this process's index in members
  pml::Context* bridge;      // leaders only
  int bridge_peer;
  int tag;                   // on `local`
  int bridge_tag;            // on `bridge`
};
int agree_pair_two_groups(const TwoGroups& t, int* error);

// The same AND over both groups, nonblocking: drive it with step() (true once
// finished; then result() or error()). The leader's swap runs on `bridge`.
class TwoGroupAnd {
 public:
  explicit TwoGroupAnd(const TwoGroups& t);
  ~TwoGroupAnd();
  TwoGroupAnd(const TwoGroupAnd&) = delete;
  TwoGroupAnd& operator=(const TwoGroupAnd&) = delete;
  void start(std::vector<uint64_t> words);
  bool step();
  const std::vector<uint64_t>& result() const { return words_; }
  int error() const { return error_; }

 private:
  enum class Phase { LocalIn, Swap, LocalOut, Done };
  TwoGroups t_;
  MaskAllreduce reduce_;
  Phase phase_ = Phase::Done;
  std::vector<uint64_t> words_, theirs_;
  pml::Request* send_ = nullptr;  // the leader's swap
  pml::Request* recv_ = nullptr;
  int swap_error_ = 0;
  int error_ = 0;
};

// A context pair agreed by both groups, nonblocking (what
// agree_pair_two_groups waits for).
using TwoGroupPairAgreement = PairAgreement<TwoGroupAnd>;

// MPI_Comm_dup / MPI_Comm_idup of an intercommunicator, nonblocking: a pair
// for the local group, then the pair of the new intercommunicator. Consumes
// one creation sequence number of the parent when constructed (every member
// constructs it in the same order). After step() returned true with error()
// MPI_SUCCESS, open() gives `child` its contexts.
class IntercommDupAgreement {
 public:
  explicit IntercommDupAgreement(Comm* parent);
  ~IntercommDupAgreement();
  IntercommDupAgreement(const IntercommDupAgreement&) = delete;
  IntercommDupAgreement& operator=(const IntercommDupAgreement&) = delete;
  bool step();
  int error() const { return error_; }
  void open(Comm* parent, Comm* child) const;

 private:
  TwoGroups groups_;
  std::unique_ptr<ContextAgreement> local_;
  std::unique_ptr<TwoGroupPairAgreement> both_;
  int local_pair_ = -1;
  int error_ = 0;
  bool done_ = false;
};
// Broadcasts / exchanges vectors of ints within TwoGroups (leader swaps with
// the remote leader, then broadcasts what it received).
int swap_ints_two_groups(const TwoGroups& t, const std::vector<int>& mine, std::vector<int>* theirs);

}  // namespace axon::mpi
