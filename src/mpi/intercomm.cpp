// Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge, and dup /
// split / create of an intercommunicator. Both groups agree one context pair
// for the intercommunicator's traffic (TwoGroups: a local AND in each group,
// the leaders swap results, the leader hands the combined value to its
// group); each group also agrees a pair of its own for local-group traffic.
#include <algorithm>
#include <vector>

#include "coll/coll.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "mpi/context_id.h"
#include "mpi/dpm.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {

const Datatype* bytes_type() { return datatype_from_handle(MPI_BYTE); }

// Leaders swap messages over the bridge.
int leader_swap(const TwoGroups& t, const void* mine, size_t my_bytes, void* theirs, size_t their_bytes) {
  pml::Request* s = nullptr;
  int rc = pml::isend(mine, static_cast<MPI_Count>(my_bytes), bytes_type(), t.bridge_peer, t.bridge_tag, t.bridge,
                      pml::SendMode::Standard, &s);
  if (rc != MPI_SUCCESS) return rc;
  pml::Request status;
  rc = pml::recv(theirs, static_cast<MPI_Count>(their_bytes), bytes_type(), t.bridge_peer, t.bridge_tag,
                 t.bridge, &status);
  pml::wait(s);
  progress::Guard guard;
  if (rc == MPI_SUCCESS) rc = s->error;
  pml::request_release(s);
  return rc;
}

std::vector<int> iota_ranks(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// TwoGroups over an existing intercommunicator: local leader is rank 0,
// the bridge is the intercommunicator's collective context to remote rank 0.
TwoGroups over_intercomm(Comm* c) {
  int tag = internal_tag_for_sequence(c->creation_seq++);
  return TwoGroups{&c->local, iota_ranks(c->local.size()), c->rank(), &c->coll, 0, tag, tag};
}

}  // namespace

// ---------------------------------------------------------------------------
// Nonblocking AND over both groups: a local AND, the leaders swap their
// results over the bridge, and a second local AND hands the leader's combined
// value to its group (the others contribute all ones). A failed swap makes
// the leader contribute zeros, which every member then sees as "nothing
// agreed".

TwoGroupAnd::TwoGroupAnd(const TwoGroups& t) : t_(t), reduce_(t.local, t.members, t.me, t.tag) {}

TwoGroupAnd::~TwoGroupAnd() {
  progress::Guard guard;
  for (pml::Request* r : {send_, recv_}) {
    if (!r) continue;
    if (r->complete.load()) pml::request_release(r);
    else r->free_when_complete = true;  // only when torn down after an error
  }
}

void TwoGroupAnd::start(std::vector<uint64_t> words) {
  reduce_.start(std::move(words));
  phase_ = Phase::LocalIn;
  swap_error_ = MPI_SUCCESS;
  error_ = MPI_SUCCESS;
}

bool TwoGroupAnd::step() {
  progress::Guard guard;
  for (;;) {
    switch (phase_) {
      case Phase::LocalIn: {
        if (!reduce_.step()) return false;
        if (reduce_.error() != MPI_SUCCESS) {
          error_ = reduce_.error();
          phase_ = Phase::Done;
          return true;
        }
        words_ = reduce_.result();
        if (t_.me != 0) {
          reduce_.start(std::vector<uint64_t>(words_.size(), ~uint64_t{0}));  // the leader's value wins
          phase_ = Phase::LocalOut;
          break;
        }
        theirs_.assign(words_.size(), 0);
        MPI_Count bytes = static_cast<MPI_Count>(words_.size() * sizeof(uint64_t));
        int rc = pml::irecv(theirs_.data(), bytes, bytes_type(), t_.bridge_peer, t_.bridge_tag, t_.bridge, &recv_);
        if (rc == MPI_SUCCESS)
          rc = pml::isend(words_.data(), bytes, bytes_type(), t_.bridge_peer, t_.bridge_tag, t_.bridge,
                          pml::SendMode::Standard, &send_);
        swap_error_ = rc;
        phase_ = Phase::Swap;
        break;
      }
      case Phase::Swap: {
        for (pml::Request* r : {send_, recv_})
          if (r && !r->complete.load(std::memory_order_acquire)) return false;
        for (pml::Request** r : {&send_, &recv_}) {
          if (!*r) continue;
          if (swap_error_ == MPI_SUCCESS) swap_error_ = (*r)->error;
          pml::request_release(*r);
          *r = nullptr;
        }
        if (swap_error_ == MPI_SUCCESS)
          for (size_t i = 0; i < words_.size(); ++i) words_[i] &= theirs_[i];
        else
          words_.assign(words_.size(), 0);
        reduce_.start(words_);
        phase_ = Phase::LocalOut;
        break;
      }
      case Phase::LocalOut:
        if (!reduce_.step()) return false;
        words_ = reduce_.result();
        error_ = swap_error_ != MPI_SUCCESS ? swap_error_ : reduce_.error();
        phase_ = Phase::Done;
        return true;
      case Phase::Done:
        return true;
    }
  }
}

int agree_pair_two_groups(const TwoGroups& t, int* error) {
  TwoGroupPairAgreement agreement(t);
  bool done = false;
  progress::wait_until([&] { return done || (done = agreement.step()); });
  *error = agreement.error();
  return agreement.pair();
}

int swap_ints_two_groups(const TwoGroups& t, const std::vector<int>& mine, std::vector<int>* theirs) {
  // The leader learns the remote vector (length first), then broadcasts it
  // to its group over `local` (rooted at the leader's rank there).
  int root = t.members[0];
  int count = 0;
  int rc = MPI_SUCCESS;
  if (t.me == 0) {
    int my_count = static_cast<int>(mine.size());
    rc = leader_swap(t, &my_count, sizeof my_count, &count, sizeof count);
    if (rc != MPI_SUCCESS) count = -1;
    else {
      theirs->resize(count);
      rc = leader_swap(t, mine.data(), mine.size() * sizeof(int), theirs->data(), theirs->size() * sizeof(int));
      if (rc != MPI_SUCCESS) count = -1;
    }
  }
  int brc = coll::bcast(&count, 1, datatype_from_handle(MPI_INT), root, t.local);
  if (brc != MPI_SUCCESS) return brc;
  if (count < 0) return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
  theirs->resize(count);
  return coll::bcast(theirs->data(), count, datatype_from_handle(MPI_INT), root, t.local);
}

}  // namespace axon::mpi

namespace axon::mpi {

// ---------------------------------------------------------------------------
// Dup of an intercommunicator: the local group agrees a pair for its own
// traffic, then both groups agree the pair of the new intercommunicator.

IntercommDupAgreement::IntercommDupAgreement(Comm* parent) : groups_(over_intercomm(parent)) {
  local_ = std::make_unique<ContextAgreement>(groups_.local, groups_.members, groups_.me, groups_.tag);
}

IntercommDupAgreement::~IntercommDupAgreement() = default;

bool IntercommDupAgreement::step() {
  if (done_) return true;
  if (!both_) {
    if (!local_->step()) return false;
    if (local_->error() != MPI_SUCCESS) {
      error_ = local_->error();
      done_ = true;
      return true;
    }
    local_pair_ = local_->pair();
    both_ = std::make_unique<TwoGroupPairAgreement>(groups_);
  }
  if (!both_->step()) return false;
  error_ = both_->error();
  if (error_ != MPI_SUCCESS) {
    context_release(local_pair_);
    local_pair_ = -1;
  }
  done_ = true;
  return true;
}

void IntercommDupAgreement::open(Comm* parent, Comm* child) const {
  comm_open_inter(child, both_->pair(), local_pair_, parent->rank(), parent->local.world_of, parent->p2p.world_of);
}

int intercomm_dup(Comm* parent, Comm** out) {
  IntercommDupAgreement agreement(parent);
  bool done = false;
  progress::wait_until([&] { return done || (done = agreement.step()); });
  if (agreement.error() != MPI_SUCCESS) return agreement.error();
  Comm* c = comm_alloc(parent);
  agreement.open(parent, c);
  *out = c;
  return MPI_SUCCESS;
}

int intercomm_split(Comm* parent, int color, int key, MPI_Comm* newcomm) {
  // Each group gathers its (color, key) pairs; the leaders swap them with
  // their world ranks. A new intercommunicator exists for a color present
  // on both sides; its groups are ordered by key, then by old rank.
  int n = parent->local.size();
  std::vector<int> mine{color, key}, local_ck(2 * static_cast<size_t>(n));
  int rc = coll::allgather_bytes(mine.data(), 2 * sizeof(int), local_ck.data(), &parent->local);
  if (rc != MPI_SUCCESS) return rc;
  TwoGroups t = over_intercomm(parent);
  std::vector<int> remote_ck;
  rc = swap_ints_two_groups(t, local_ck, &remote_ck);
  if (rc != MPI_SUCCESS) return rc;
  auto pick = [color](const std::vector<int>& ck, const std::vector<int>& world) {
    std::vector<int> idx;
    for (size_t r = 0; r < world.size(); ++r)
      if (ck[2 * r] == color) idx.push_back(static_cast<int>(r));
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return ck[2 * a + 1] < ck[2 * b + 1]; });
    return idx;
  };
  int error = MPI_SUCCESS;
  int local_pair = agree_context_pair(&parent->local, t.members, t.me, t.tag, &error);
  if (error != MPI_SUCCESS) return error;
  int pair = agree_pair_two_groups(t, &error);
  if (error != MPI_SUCCESS) {
    context_release(local_pair);
    return error;
  }
  std::vector<int> lidx, ridx;
  if (color != MPI_UNDEFINED) {
    lidx = pick(local_ck, parent->local.world_of);
    ridx = pick(remote_ck, parent->p2p.world_of);
  }
  if (lidx.empty() || ridx.empty()) {
    context_release(local_pair);
    context_release(pair);
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  std::vector<int> lworld, rworld;
  int rank = 0;
  for (size_t i = 0; i < lidx.size(); ++i) {
    lworld.push_back(parent->local.world_of[lidx[i]]);
    if (lidx[i] == parent->rank()) rank = static_cast<int>(i);
  }
  for (int r : ridx) rworld.push_back(parent->p2p.world_of[r]);
  Comm* c = comm_alloc(parent);
  comm_open_inter(c, pair, local_pair, rank, std::move(lworld), std::move(rworld));
  *newcomm = c->handle;
  return MPI_SUCCESS;
}

int intercomm_create_sub(Comm* parent, Group* group, MPI_Comm* newcomm) {
  // Members of the local group must be in the local group of the
  // intercommunicator; the result keeps the group's order: a split with
  // key = rank in the group.
  for (int w : group->world)
    if (std::find(parent->local.world_of.begin(), parent->local.world_of.end(), w) == parent->local.world_of.end())
      return MPI_ERR_GROUP;
  int rank = group->my_rank();
  return intercomm_split(parent, rank == MPI_UNDEFINED ? MPI_UNDEFINED : 0, rank, newcomm);
}

}  // namespace axon::mpi

using namespace axon::mpi;

AXON_API(int, MPI_Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                     int remote_leader, int tag, MPI_Comm* newintercomm)) {
  const char* fn = "MPI_Intercomm_create";
  AXON_COMM_OR_RAISE(lc, local_comm, fn);
  if (lc->inter) return raise(lc, MPI_ERR_COMM, fn, "local_comm is an intercommunicator");
  if (!newintercomm) return raise(lc, MPI_ERR_ARG, fn, "newintercomm is NULL");
  if (local_leader < 0 || local_leader >= lc->size()) return raise(lc, MPI_ERR_RANK, fn, "local_leader out of range");
  if (tag < 0) return raise(lc, MPI_ERR_TAG, fn, "negative tag");
  bool leader = lc->rank() == local_leader;
  Comm* pc = nullptr;
  if (leader) {
    // peer_comm is significant only at the leader.
    pc = comm_from_handle(peer_comm);
    if (!pc) return raise(lc, MPI_ERR_COMM, fn, "invalid peer_comm");
    if (remote_leader < 0 || remote_leader >= pc->size())
      return raise(lc, MPI_ERR_RANK, fn, "remote_leader out of range");
    if (pc->p2p.world_of[remote_leader] == local_world_ranks(pc)[pc->rank()])  // peer_comm may be an intercomm
      return raise(lc, MPI_ERR_RANK, fn, "remote_leader is the local leader");
  }
  std::vector<int> members{local_leader};
  for (int r = 0; r < lc->size(); ++r)
    if (r != local_leader) members.push_back(r);
  int me = static_cast<int>(std::find(members.begin(), members.end(), lc->rank()) - members.begin());
  TwoGroups t{&lc->coll, members, me, pc ? &pc->coll : nullptr, remote_leader,
              internal_tag_for_sequence(lc->creation_seq++), internal_tag_for_user(tag)};
  int error = MPI_SUCCESS;
  int local_pair = agree_context_pair(&lc->coll, t.members, t.me, t.tag, &error);
  if (error != MPI_SUCCESS) return raise(lc, error, fn, "no context id free in the local group");
  std::vector<int> remote_world;
  int rc = dpm_swap_groups(t, lc->p2p.world_of, &remote_world);  // groups of two jobs too (src/mpi/dpm/connect.cpp)
  int pair = rc == MPI_SUCCESS ? agree_pair_two_groups(t, &rc) : -1;
  if (rc != MPI_SUCCESS) {
    context_release(local_pair);
    return raise(lc, rc, fn, "agreement with the remote group failed");
  }
  Comm* c = comm_alloc(lc);
  comm_open_inter(c, pair, local_pair, lc->rank(), lc->p2p.world_of, std::move(remote_world));
  *newintercomm = c->handle;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm* newintracomm)) {
  const char* fn = "MPI_Intercomm_merge";
  AXON_COMM_OR_RAISE(c, intercomm, fn);
  if (!c->inter) return raise(c, MPI_ERR_COMM, fn, "not an intercommunicator");
  if (!newintracomm) return raise(c, MPI_ERR_ARG, fn, "newintracomm is NULL");
  TwoGroups t = over_intercomm(c);
  // The group that passed high = false comes first; when both passed the
  // same value, the group whose leader has the lower (job, rank) does — the
  // job's nspace hash first, so groups of two jobs (dynamic processes,
  // docs/dpm.md) agree too; within one job that is the lower world rank.
  uint32_t job_hash = 0;
  int leader_rank = 0;
  axon::rte::global_name(c->local.world_of[0], &job_hash, &leader_rank);
  std::vector<int> mine{high ? 1 : 0, static_cast<int>(job_hash), leader_rank}, theirs;
  int rc = swap_ints_two_groups(t, mine, &theirs);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  if (theirs.size() != mine.size()) return raise(c, MPI_ERR_INTERN, fn);
  bool first = mine[0] != theirs[0]                                        ? mine[0] == 0
               : static_cast<uint32_t>(mine[1]) != static_cast<uint32_t>(theirs[1]) ? static_cast<uint32_t>(mine[1]) < static_cast<uint32_t>(theirs[1])
                                                                            : mine[2] < theirs[2];
  std::vector<int> world = first ? c->local.world_of : c->p2p.world_of;
  const std::vector<int>& second = first ? c->p2p.world_of : c->local.world_of;
  world.insert(world.end(), second.begin(), second.end());
  int pair = agree_pair_two_groups(t, &rc);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn, "no context id free at every member");
  int rank = c->rank() + (first ? 0 : c->size());
  Comm* n = comm_alloc(c);
  comm_open_intra(n, pair, rank, std::move(world));
  *newintracomm = n->handle;
  return MPI_SUCCESS;
}

// MPI-4.1 7.6.2: an intercommunicator from two disjoint groups, without a
// parent communicator (the Sessions model's way). Every process knows both
// groups, so only the context ids need agreeing: each group runs its
// reductions over the world's collective context among its own members (the
// groups are disjoint, so their messages never meet), and the leaders bridge
// over the same context under a second tag.
AXON_API(int, MPI_Intercomm_create_from_groups,
         (MPI_Group local_group, int local_leader, MPI_Group remote_group, int remote_leader, const char* stringtag,
          MPI_Info info, MPI_Errhandler errhandler, MPI_Comm* newintercomm)) {
  const char* fn = "MPI_Intercomm_create_from_groups";
  Errhandler* e = errhandler_from_handle(errhandler);
  Comm on_error;  // errors go to the handler the new communicator would have had
  on_error.errhandler = e ? e : errhandler_from_handle(MPI_ERRORS_ARE_FATAL);
  if (!e) return raise(&on_error, MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  Group* lg = group_from_handle(local_group);
  Group* rg = group_from_handle(remote_group);
  if (!lg || !rg) return raise(&on_error, MPI_ERR_GROUP, fn, "invalid group");
  if (!stringtag || !newintercomm) return raise(&on_error, MPI_ERR_ARG, fn, "NULL argument");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise(&on_error, MPI_ERR_INFO, fn, "invalid info");
  if (!runtime_running()) return raise(&on_error, MPI_ERR_OTHER, fn, "neither MPI_Init nor MPI_Session_init was called");
  if (local_leader < 0 || local_leader >= lg->size()) return raise(&on_error, MPI_ERR_RANK, fn, "local_leader out of range");
  if (remote_leader < 0 || remote_leader >= rg->size())
    return raise(&on_error, MPI_ERR_RANK, fn, "remote_leader out of range");
  int my_rank = lg->my_rank();
  if (my_rank == MPI_UNDEFINED) return raise(&on_error, MPI_ERR_GROUP, fn, "this process is not in local_group");
  for (int w : lg->world)
    if (rg->rank_of_world(w) != MPI_UNDEFINED) return raise(&on_error, MPI_ERR_GROUP, fn, "the groups overlap");
  uint32_t hash = string_tag_hash(stringtag);
  Comm* world = comm_world();
  std::vector<int> members{lg->world[local_leader]};
  for (int r = 0; r < lg->size(); ++r)
    if (r != local_leader) members.push_back(lg->world[r]);
  int me = static_cast<int>(std::find(members.begin(), members.end(), lg->world[my_rank]) - members.begin());
  TwoGroups t{&world->coll, members, me, &world->coll, rg->world[remote_leader],
              internal_tag_for_string(hash), internal_tag_for_string(hash ^ 0x5a5a5a5au)};
  int error = MPI_SUCCESS;
  int local_pair = agree_context_pair(&world->coll, t.members, t.me, t.tag, &error);
  if (error != MPI_SUCCESS) return raise(&on_error, error, fn, "no context id free in the local group");
  int rc = MPI_SUCCESS;
  int pair = agree_pair_two_groups(t, &rc);
  if (rc != MPI_SUCCESS) {
    context_release(local_pair);
    return raise(&on_error, rc, fn, "agreement with the remote group failed");
  }
  Comm* c = comm_alloc_from_groups(e, lg->session_id);
  comm_open_inter(c, pair, local_pair, my_rank, lg->world, rg->world);
  *newintercomm = c->handle;
  return MPI_SUCCESS;
}
