// Context ids for new communicators, agreed among the members without a
// global bottleneck (see docs/communicators.md).
//
// Every process keeps a bitmap of free context-id PAIRS: pair p gives the
// point-to-point id 2p and the collective id 2p+1. Pairs 0..7 (ids 0..15) are
// reserved for the predefined communicators. A new communicator's pair is
// agreed in two rounds, each a bitwise-AND allreduce among the members:
//   1. AND of (free & not reserved by a creation in flight here); every
//      member takes the lowest common pair as the candidate;
//   2. each member reserves the candidate if it is still free locally (a
//      concurrent creation on another thread, or an idup driven by progress,
//      may have taken it meanwhile) and the members AND their "reserved"
//      flags. All true: the pair is theirs. Otherwise everyone releases and
//      tries again.
// Nothing is held across a round, so creations on different parents from
// several threads, or an idup still in flight while the same process runs a
// blocking creation elsewhere, never wait for each other: they can only make
// each other retry. State is guarded by the PML lock (progress hooks hold it).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "pml/pml.h"

namespace axon::mpi {

constexpr int kContextPairs = 2048;
constexpr int kReservedPairs = 8;  // ids 0..15: predefined communicators, internal use
using ContextMask = std::array<uint64_t, kContextPairs / 64>;

// Local pool operations (all under the PML lock).
ContextMask context_candidates();         // free & not reserved
// Reserves the lowest pair set in `agreed` if it is still free here; returns
// the pair (or -1 when `agreed` is empty) and whether it could be reserved.
int context_try_reserve(const ContextMask& agreed, bool* reserved);
void context_unreserve(int pair);
void context_commit(int pair);            // reserved -> in use
void context_release(int pair);           // in use -> free (communicator freed)

// A nonblocking bitwise-AND allreduce of a few 64-bit words among some
// ranks of a pml context, tagged so concurrent ones on one context do not
// mix. Recursive doubling: log2(n) exchanges (members beyond the largest
// power of two first hand their words to a partner and get the result back),
// so a round costs log2(n) message latencies rather than the 2 log2(n) of a
// reduce followed by a broadcast.
class MaskAllreduce {
 public:
  // `members`: ranks in `ctx` taking part (same order everywhere), `me` the
  // index of this process among them.
  MaskAllreduce(pml::Context* ctx, std::vector<int> members, int me, int tag);
  ~MaskAllreduce();
  MaskAllreduce(const MaskAllreduce&) = delete;
  MaskAllreduce& operator=(const MaskAllreduce&) = delete;
  void start(std::vector<uint64_t> words);
  // Advances without blocking; true once the result is in `result()`.
  // Errors end the operation too: `error()` is then not MPI_SUCCESS.
  bool step();
  const std::vector<uint64_t>& result() const { return words_; }
  int error() const { return error_; }

 private:
  enum class Kind : uint8_t { Send, Recv, Exchange };
  struct Op {
    Kind kind;
    int peer;      // index in members_
    bool combine;  // received words: AND into words_, or replace them
  };
  pml::Context* ctx_;
  std::vector<int> members_;
  int tag_;
  std::vector<Op> plan_;
  size_t next_ = 0;
  pml::Request* send_ = nullptr;  // requests of the current op
  pml::Request* recv_ = nullptr;
  std::vector<uint64_t> words_, incoming_;
  int error_ = 0;
};

// Agreement on a new context pair among the members (the two rounds above),
// nonblocking: drive it with step(). `And` is the bitwise-AND allreduce the
// rounds run on: MaskAllreduce among ranks of one context (ContextAgreement),
// or TwoGroupAnd over both groups of an intercommunicator (communicator.h).
template <class And>
class PairAgreement {
 public:
  template <class... Args>
  explicit PairAgreement(Args&&... args) : and_(std::forward<Args>(args)...) {
    begin_round();
  }
  bool step();  // true when finished: pair() or error()
  int pair() const { return pair_; }
  int error() const { return error_; }

 private:
  enum class Phase { Candidates, Confirm, Done };
  void begin_round() {
    ContextMask m = context_candidates();
    and_.start({m.begin(), m.end()});
    phase_ = Phase::Candidates;
  }
  And and_;
  Phase phase_ = Phase::Candidates;
  int candidate_ = -1;
  bool reserved_ = false;
  int pair_ = -1;
  int error_ = 0;
};

template <class And>
bool PairAgreement<And>::step() {
  while (phase_ != Phase::Done) {
    if (!and_.step()) return false;
    if (and_.error() != MPI_SUCCESS) {
      if (reserved_) context_unreserve(candidate_);
      reserved_ = false;
      error_ = and_.error();
      phase_ = Phase::Done;
      break;
    }
    if (phase_ == Phase::Candidates) {
      ContextMask agreed;
      std::copy(and_.result().begin(), and_.result().end(), agreed.begin());
      candidate_ = context_try_reserve(agreed, &reserved_);
      if (candidate_ < 0) {  // the same at every member: nothing is free everywhere
        error_ = MPI_ERR_OTHER;
        phase_ = Phase::Done;
        break;
      }
      and_.start({reserved_ ? uint64_t{1} : uint64_t{0}});
      phase_ = Phase::Confirm;
    } else if (and_.result()[0] == 1) {
      context_commit(candidate_);
      pair_ = candidate_;
      phase_ = Phase::Done;
    } else {
      // Someone lost the candidate to a concurrent creation: try again.
      if (reserved_) context_unreserve(candidate_);
      reserved_ = false;
      begin_round();
    }
  }
  return true;
}

using ContextAgreement = PairAgreement<MaskAllreduce>;

// Blocking form: the pair agreed among all ranks of `ctx`, or -1 with *error set.
int agree_context_pair(pml::Context* ctx, int tag, int* error);
int agree_context_pair(pml::Context* ctx, std::vector<int> members, int me, int tag, int* error);

// Internal tags on a parent's collective context. User-visible collectives
// use small positive tags; these are negative. Every creation on a parent
// gets its own tag from the parent's creation counter (all members create in
// the same order), so an idup still in flight never exchanges messages with
// a later creation on the same parent. create_group and intercomm_create
// derive theirs from the user's tag (the standard makes concurrent calls use
// distinct tags).
constexpr int kTagSplitGather = -2;
// MPI_COMM_WORLD's at shut-down: every rank's part of the communication report to rank 0.
constexpr int kTagReport = -3;
inline int internal_tag_for_sequence(uint32_t seq) { return -0x100000 - static_cast<int>(seq & 0xfffff); }
inline int internal_tag_for_user(int user_tag) { return -0x200000 - (user_tag & 0x0fffffff); }
// MPI_Comm_create_from_group has no parent: its members agree on the world
// collective context, under a tag made from a hash of the user's string tag
// (concurrent calls must use different string tags).
inline int internal_tag_for_string(uint32_t hash) { return -0x30000000 - static_cast<int>(hash & 0x0fffffff); }
inline uint32_t string_tag_hash(const char* s) {  // FNV-1a
  uint32_t hash = 2166136261u;
  for (; *s; ++s) hash = (hash ^ static_cast<uint8_t>(*s)) * 16777619u;
  return hash;
}
// Neighbourhood collectives (src/mpi/neighbor.cpp hands kTagNeighbor to
// src/coll/neighbor.cpp) use kTagNeighbor - k for
// k below twice the number of cartesian dimensions: below every tag above.
constexpr int kTagNeighbor = -0x20000000;

}  // namespace axon::mpi
