// Intracommunicator creation and destruction: dup / idup, split,
// split_type, create, create_group, compare, free, and the info and query
// calls. Context ids come from src/mpi/context_id.h; intercommunicators are
// in src/mpi/intercomm.cpp.
#include "mpi/communicator.h"


#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "accel/accel.h"
#include "coll/coll.h"
#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/attributes.h"
#include "mpi/bsend.h"
#include "mpi/context_id.h"
#include "mpi/dpm.h"
#include "mpi/group.h"
#include "mpi/hardware.h"
#include "mpi/info.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {
constexpr uint32_t kCommFreed = 0xDEAD434Du;

// Freed communicators whose pending operations have not finished yet.
std::vector<Comm*> zombies;

bool in_use(const Comm* c) {
  return c->pending > 0 || pml::context_has_posted(&c->p2p) || pml::context_has_posted(&c->coll);
}

int reap_zombies() {
  int n = 0;
  for (size_t i = 0; i < zombies.size();) {
    if (in_use(zombies[i])) {
      ++i;
      continue;
    }
    Comm* c = zombies[i];
    zombies.erase(zombies.begin() + static_cast<long>(i));
    comm_destroy(c);
    ++n;
  }
  if (zombies.empty()) progress::remove_hook(reap_zombies);
  return n;
}
}  // namespace

const std::vector<int>& local_world_ranks(const Comm* c) { return c->inter ? c->local.world_of : c->p2p.world_of; }
int local_size(const Comm* c) { return static_cast<int>(local_world_ranks(c).size()); }

namespace {
RecycledObjects<Comm> comm_memory;
}

Comm* comm_alloc(const Comm* parent) {
  Comm* c = comm_memory.take();
  c->handle = reinterpret_cast<MPI_Comm>(c);
  c->errhandler = parent->errhandler;
  errhandler_retain(c->errhandler);
  c->session_id = parent->session_id;
  return c;
}

Comm* comm_alloc_from_groups(Errhandler* errhandler, uint64_t session_id) {
  Comm* c = comm_alloc(comm_world());
  errhandler_retain(errhandler);
  errhandler_release(c->errhandler);
  c->errhandler = errhandler;
  c->session_id = session_id;
  return c;
}

void comm_open_intra(Comm* c, int pair, int rank, std::vector<int> world) {
  c->context_pair = pair;
  pml::context_open(&c->coll, static_cast<uint32_t>(2 * pair + 1), rank, world);
  pml::context_open(&c->p2p, static_cast<uint32_t>(2 * pair), rank, std::move(world));
  diag::hang::comm_opened(c->p2p.id, c->coll.id, &c->name, c->size());
}

void comm_open_inter(Comm* c, int pair, int local_pair, int rank, std::vector<int> local_world,
                     std::vector<int> remote_world) {
  c->inter = true;
  c->context_pair = pair;
  c->local_pair = local_pair;
  pml::context_open(&c->local, static_cast<uint32_t>(2 * local_pair + 1), rank, std::move(local_world));
  pml::context_open(&c->coll, static_cast<uint32_t>(2 * pair + 1), rank, remote_world);
  pml::context_open(&c->p2p, static_cast<uint32_t>(2 * pair), rank, std::move(remote_world));
  diag::hang::comm_opened(c->p2p.id, c->coll.id, &c->name, c->size());
}

void comm_destroy(Comm* c) {
  if (c->p2p.queues) diag::hang::comm_closed(c->p2p.id);
  coll_comm_destroy(c);
  comm_buffer_destroy(c);
  if (c->p2p.queues) pml::context_close(&c->p2p);
  if (c->coll.queues) pml::context_close(&c->coll);
  if (c->local.queues) pml::context_close(&c->local);
  if (c->context_pair >= 0) context_release(c->context_pair);
  if (c->local_pair >= 0) context_release(c->local_pair);
  if (c->errhandler) errhandler_release(c->errhandler);
  comm_memory.give_back(c, kCommFreed);
}

int comm_free(Comm* c) {
  // The delete callbacks receive the handle, so they run while it is valid.
  int rc = comm_attributes_delete_all(c);
  if (rc != MPI_SUCCESS) return rc;
  c->freed = true;
  c->magic = kCommFreed;  // the handle is invalid from now on
  progress::Guard guard;
  if (!in_use(c)) {
    comm_destroy(c);
  } else {
    if (zombies.empty()) progress::add_hook(reap_zombies);
    zombies.push_back(c);
  }
  return MPI_SUCCESS;
}

void comms_reap_all() {
  progress::Guard guard;
  if (!zombies.empty()) progress::remove_hook(reap_zombies);
  for (Comm* c : zombies) comm_destroy(c);
  zombies.clear();
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

namespace {

std::vector<int> iota_ranks(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// The collective context over exactly the processes a split of `c`
// divides: its group, for an intercommunicator its local group
// (MPI_Comm_split_type partitions "the group associated with comm").
pml::Context* group_context(Comm* c) { return c->inter ? &c->local : &c->coll; }

// Agrees a pair over all of `parent`'s group (an intercommunicator: its local group).
int agree_on_parent(Comm* parent, int* pair) {
  int error = MPI_SUCCESS;
  int tag = internal_tag_for_sequence(parent->creation_seq++);
  pml::Context* group = group_context(parent);
  *pair = agree_context_pair(group, iota_ranks(group->size()), parent->rank(), tag, &error);
  return error;
}

void copy_hints(const Comm* from, Comm* to) { to->hints = from->hints; }

// The communicator hints Axon recognizes: the mpi_assert_* keys of MPI-4.1
// ("Communicator Info") and mpi_memory_alloc_kinds. Other keys are ignored,
// as the standard allows, so MPI_Comm_get_info does not return them (MPICH
// behaves the same; its test suite checks that an unknown key is dropped).
bool comm_hint_known(const std::string& key) {
  static const char* const known[] = {
      "mpi_assert_no_any_tag",       "mpi_assert_no_any_source",
      "mpi_assert_exact_length",     "mpi_assert_allow_overtaking",
      "mpi_assert_strict_persistent_collective_ordering", "mpi_memory_alloc_kinds",
  };
  for (const char* k : known)
    if (key == k) return true;
  return false;
}

// Adds (or replaces) the recognized hints of `info`; unknown keys are ignored.
void merge_hints(Comm* c, const Info& info) {
  for (const auto& [key, value] : info.entries) {
    if (!comm_hint_known(key)) continue;
    auto it = std::find_if(c->hints.begin(), c->hints.end(), [&](const auto& e) { return e.first == key; });
    if (it != c->hints.end()) it->second = value;
    else c->hints.emplace_back(key, value);
  }
}

void set_hints(Comm* c, MPI_Info info) {
  c->hints.clear();
  if (Info* i = info_from_handle(info)) merge_hints(c, *i);
}

// An intracommunicator with the same group as `parent` on a new pair.
int dup_intra(Comm* parent, Comm** out) {
  int pair = -1;
  int rc = agree_on_parent(parent, &pair);
  if (rc != MPI_SUCCESS) return rc;
  Comm* c = comm_alloc(parent);
  comm_open_intra(c, pair, parent->rank(), parent->p2p.world_of);
  *out = c;
  return MPI_SUCCESS;
}

int dup_inter(Comm* parent, Comm** out);

// Shared by dup and dup_with_info: the new communicator and its attributes.
int dup_common(const char* fn, MPI_Comm comm, MPI_Info info, bool with_info, MPI_Comm* newcomm) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!newcomm) return raise(c, MPI_ERR_ARG, fn, "newcomm is NULL");
  if (with_info && info != MPI_INFO_NULL && !info_from_handle(info))
    return raise(c, MPI_ERR_INFO, fn, "invalid info");
  Comm* n = nullptr;
  int rc = c->inter ? dup_inter(c, &n) : dup_intra(c, &n);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn, "no context id free at every member");
  n->topology = c->topology;
  if (with_info) set_hints(n, info);
  else copy_hints(c, n);
  rc = comm_attributes_copy(c, n);
  if (rc != MPI_SUCCESS) {
    comm_destroy(n);
    *newcomm = MPI_COMM_NULL;
    return raise(c, rc, fn, "an attribute copy callback failed");
  }
  *newcomm = n->handle;
  return MPI_SUCCESS;
}

}  // namespace

namespace axon::mpi {
// Intercommunicator dup (src/mpi/intercomm.cpp).
int intercomm_dup(Comm* parent, Comm** out);
}  // namespace axon::mpi

namespace {
int dup_inter(Comm* parent, Comm** out) { return intercomm_dup(parent, out); }
}  // namespace

AXON_API(int, MPI_Comm_dup, (MPI_Comm comm, MPI_Comm* newcomm)) {
  return dup_common("MPI_Comm_dup", comm, MPI_INFO_NULL, false, newcomm);
}

AXON_API(int, MPI_Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm)) {
  return dup_common("MPI_Comm_dup_with_info", comm, info, true, newcomm);
}

// ---------------------------------------------------------------------------
// MPI_Comm_idup: the agreement runs as a state machine driven by progress, so
// the caller may do anything (including point-to-point that other ranks only
// answer before their own idup) before waiting.

namespace {

struct PendingIdup {
  Comm* parent;
  Comm* child;
  pml::Request* request;
  std::unique_ptr<ContextAgreement> agreement;         // intracommunicator
  std::unique_ptr<IntercommDupAgreement> inter_agreement;  // intercommunicator
  bool step() { return agreement ? agreement->step() : inter_agreement->step(); }
  int error() const { return agreement ? agreement->error() : inter_agreement->error(); }
  void open() {
    if (agreement) comm_open_intra(child, agreement->pair(), parent->rank(), parent->p2p.world_of);
    else inter_agreement->open(parent, child);
  }
};
std::vector<std::unique_ptr<PendingIdup>> idups;

int idup_progress() {
  int advanced = 0;
  for (size_t i = 0; i < idups.size();) {
    PendingIdup& op = *idups[i];
    if (!op.step()) {
      ++i;
      continue;
    }
    ++advanced;
    op.request->source = MPI_ANY_SOURCE;
    op.request->tag = MPI_ANY_TAG;
    op.request->bytes = 0;
    op.request->error = op.error();
    if (op.request->error == MPI_SUCCESS) op.open();
    // On failure the child stays without contexts: the handle was already
    // returned, so it is left for the user to free (the request reports why).
    --op.parent->pending;
    pml::Request* r = op.request;
    idups.erase(idups.begin() + static_cast<long>(i));
    pml::request_complete(r);
  }
  if (idups.empty()) progress::remove_hook(idup_progress);
  return advanced;
}

int idup_common(const char* fn, MPI_Comm comm, MPI_Info info, bool with_info, MPI_Comm* newcomm,
                MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!newcomm || !request) return raise(c, MPI_ERR_ARG, fn, "NULL argument");
  if (with_info && info != MPI_INFO_NULL && !info_from_handle(info))
    return raise(c, MPI_ERR_INFO, fn, "invalid info");
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Collective);
  r->comm = c;
  Comm* child = comm_alloc(c);
  child->topology = c->topology;
  if (with_info) set_hints(child, info);
  else copy_hints(c, child);
  // Attributes are copied now: the standard fixes them at the call.
  int rc = comm_attributes_copy(c, child);
  if (rc != MPI_SUCCESS) {
    comm_destroy(child);
    pml::request_release(r);
    *newcomm = MPI_COMM_NULL;  // as MPI_Comm_dup leaves it on failure
    *request = MPI_REQUEST_NULL;
    return raise(c, rc, fn, "an attribute copy callback failed");
  }
  auto op = std::make_unique<PendingIdup>();
  op->parent = c;
  op->child = child;
  op->request = r;
  if (c->inter) {
    op->inter_agreement = std::make_unique<IntercommDupAgreement>(c);
  } else {
    int tag = internal_tag_for_sequence(c->creation_seq++);
    op->agreement = std::make_unique<ContextAgreement>(&c->coll, iota_ranks(c->size()), c->rank(), tag);
  }
  ++c->pending;
  {
    progress::Guard guard;
    if (idups.empty()) progress::add_hook(idup_progress);
    idups.push_back(std::move(op));
  }
  *newcomm = child->handle;
  *request = handle_of(r);
  progress::progress();
  return MPI_SUCCESS;
}

}  // namespace

AXON_API(int, MPI_Comm_idup, (MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request)) {
  return idup_common("MPI_Comm_idup", comm, MPI_INFO_NULL, false, newcomm, request);
}

AXON_API(int, MPI_Comm_idup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request)) {
  return idup_common("MPI_Comm_idup_with_info", comm, info, true, newcomm, request);
}

// ---------------------------------------------------------------------------
// Split and create: every member of the parent agrees one pair; the new
// communicators are disjoint, so they can all use it. Members that get
// MPI_COMM_NULL give it back at once.

namespace {

// Builds the communicator of `world` (which holds this process at `rank`)
// on `pair`, or releases the pair when this process is in no new communicator.
int finish_member(Comm* parent, int pair, int rank, std::vector<int> world, MPI_Comm* newcomm) {
  if (rank == MPI_UNDEFINED) {
    context_release(pair);
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  Comm* c = comm_alloc(parent);
  comm_open_intra(c, pair, rank, std::move(world));
  *newcomm = c->handle;
  return MPI_SUCCESS;
}

// Split of an intracommunicator by (color, key); ties in key keep parent
// order. Given an intercommunicator it splits the local group into
// intracommunicators (MPI_Comm_split_type).
int split_intra(Comm* parent, int color, int key, MPI_Comm* newcomm) {
  pml::Context* group = group_context(parent);
  int n = group->size();
  std::vector<int> mine{color, key}, all(2 * static_cast<size_t>(n));
  int rc = coll::allgather_bytes(mine.data(), 2 * sizeof(int), all.data(), group);
  if (rc != MPI_SUCCESS) return rc;
  int pair = -1;
  rc = agree_on_parent(parent, &pair);
  if (rc != MPI_SUCCESS) return rc;
  if (color == MPI_UNDEFINED) return finish_member(parent, pair, MPI_UNDEFINED, {}, newcomm);
  std::vector<int> same;  // parent ranks with my color
  for (int r = 0; r < n; ++r)
    if (all[2 * r] == color) same.push_back(r);
  std::stable_sort(same.begin(), same.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  std::vector<int> world(same.size());
  int rank = MPI_UNDEFINED;
  for (size_t i = 0; i < same.size(); ++i) {
    world[i] = group->world_of[same[i]];
    if (same[i] == parent->rank()) rank = static_cast<int>(i);
  }
  return finish_member(parent, pair, rank, std::move(world), newcomm);
}

}  // namespace

namespace axon::mpi {
int comm_split(Comm* parent, int color, int key, Comm** out) {
  MPI_Comm handle = MPI_COMM_NULL;
  int rc = split_intra(parent, color, key, &handle);
  *out = rc == MPI_SUCCESS ? comm_from_handle(handle) : nullptr;
  return rc;
}

int intercomm_split(Comm* parent, int color, int key, MPI_Comm* newcomm);
int intercomm_create_sub(Comm* parent, Group* group, MPI_Comm* newcomm);
}  // namespace axon::mpi

AXON_API(int, MPI_Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm* newcomm)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_split");
  if (!newcomm) return raise(c, MPI_ERR_ARG, "MPI_Comm_split", "newcomm is NULL");
  if (color < 0 && color != MPI_UNDEFINED) return raise(c, MPI_ERR_ARG, "MPI_Comm_split", "negative color");
  int rc = c->inter ? intercomm_split(c, color, key, newcomm) : split_intra(c, color, key, newcomm);
  if (rc != MPI_SUCCESS) return raise(c, rc, "MPI_Comm_split");
  return MPI_SUCCESS;
}

namespace {

// The color of MPI_COMM_TYPE_SHARED: the node, named by its lowest world rank.
int node_color() { return rte::job().local_peers.empty() ? rte::job().rank : rte::job().local_peers.front(); }

}  // namespace

namespace {

// MPI_COMM_TYPE_HW_GUIDED and MPI_COMM_TYPE_RESOURCE_GUIDED split by the
// resource the "mpi_hw_resource_type" hint names (MPI-4.1 7.4.2):
// "mpi_shared_memory" is MPI_COMM_TYPE_SHARED's split (*shared_memory set,
// nothing split yet); an hwloc object type splits by node, then by the
// object of that type holding this process's bound CPUs. A missing or
// unknown name, or a binding that spans several such objects, gives
// MPI_COMM_NULL.
int guided_split(Comm* c, int key, MPI_Info info, MPI_Comm* newcomm, bool* shared_memory) {
  const Info* i = info_from_handle(info);
  const std::string* value = i ? i->find("mpi_hw_resource_type") : nullptr;
  if (value && *value == "mpi_shared_memory") {
    *shared_memory = true;
    return MPI_SUCCESS;
  }
  int index = value ? hw_object_index(*value) : MPI_UNDEFINED;
  Comm* node = nullptr;
  int rc = comm_split(c, index == MPI_UNDEFINED ? MPI_UNDEFINED : node_color(), c->rank(), &node);
  if (rc != MPI_SUCCESS) return rc;
  // Everyone took part in the first split; only members of a node
  // communicator take part in the second.
  if (!node) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  Comm* level = nullptr;
  rc = comm_split(node, index, key, &level);
  comm_free(node);
  if (rc != MPI_SUCCESS) return rc;
  *newcomm = level->handle;
  return MPI_SUCCESS;
}

}  // namespace

// On an intercommunicator the split divides the local group (the group
// associated with comm, MPI-4.1 7.4.2) into intracommunicators, as MPICH
// does: group_context() is what every step below runs over.
AXON_API(int, MPI_Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_split_type";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!newcomm) return raise(c, MPI_ERR_ARG, fn, "newcomm is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise(c, MPI_ERR_INFO, fn, "invalid info");
  int color = MPI_UNDEFINED;
  bool shared_memory = split_type == MPI_COMM_TYPE_SHARED;  // the node's communicator
  const char* resource = nullptr;  // HW_UNGUIDED: the level split at
  switch (split_type) {
    case MPI_UNDEFINED:
    case MPI_COMM_TYPE_SHARED:
      break;
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED: {
      // RESOURCE_GUIDED (MPI-4.1) names its resource with the same hint;
      // the resources it knows are the hardware ones.
      int rc = guided_split(c, key, info, newcomm, &shared_memory);
      if (rc != MPI_SUCCESS) return raise(c, rc, fn);
      if (!shared_memory) return MPI_SUCCESS;
      break;
    }
    case MPI_COMM_TYPE_HW_UNGUIDED: {
      // The largest hardware level that splits the parent into strict
      // subsets: the node when the processes are on several nodes, else the
      // first level inside the node (package, NUMA node, caches, core, PU)
      // where every process is bound within one object and the objects
      // differ. Every process decides the same from allgathered indices.
      // No such level: MPI_COMM_NULL, as the standard allows. The level
      // goes back to the caller in the info argument (key
      // "mpi_hw_resource_type"), in a form MPI_COMM_TYPE_HW_GUIDED takes.
      pml::Context* group = group_context(c);
      const int n = group->size();
      color = node_color();
      std::vector<int> all(static_cast<size_t>(n));
      int rc = coll::allgather_bytes(&color, sizeof color, all.data(), group);
      if (rc != MPI_SUCCESS) return raise(c, rc, fn);
      if (std::count(all.begin(), all.end(), color) != n) {  // several nodes
        resource = "mpi_shared_memory";
        break;
      }
      color = MPI_UNDEFINED;
      for (const char* level : {"Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "PU"}) {
        int index = hw_object_index(level);
        rc = coll::allgather_bytes(&index, sizeof index, all.data(), group);
        if (rc != MPI_SUCCESS) return raise(c, rc, fn);
        if (std::count(all.begin(), all.end(), MPI_UNDEFINED) > 0) break;  // deeper levels cannot do better
        if (std::count(all.begin(), all.end(), index) < n) {
          color = index;
          resource = level;
          break;
        }
      }
      break;
    }
    default:
      return raise(c, MPI_ERR_ARG, fn, "unknown split type");
  }
  if (shared_memory) color = node_color();
  int rc = split_intra(c, color, key, newcomm);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  if (*newcomm != MPI_COMM_NULL && shared_memory) {
    set_hints(comm_from_handle(*newcomm), info);
  }
  if (*newcomm != MPI_COMM_NULL && resource && info != MPI_INFO_NULL)
    info_from_handle(info)->set("mpi_hw_resource_type", resource);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_create";
  AXON_COMM_OR_RAISE(c, comm, fn);
  Group* g = group_from_handle(group);
  if (!g) return raise(c, MPI_ERR_GROUP, fn, "invalid group");
  if (!newcomm) return raise(c, MPI_ERR_ARG, fn, "newcomm is NULL");
  if (c->inter) {
    int rc = intercomm_create_sub(c, g, newcomm);
    return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
  }
  // Every member of the group must belong to the communicator.
  for (int w : g->world)
    if (std::find(c->p2p.world_of.begin(), c->p2p.world_of.end(), w) == c->p2p.world_of.end())
      return raise(c, MPI_ERR_GROUP, fn, "group is not a subgroup of the communicator");
  int pair = -1;
  int rc = agree_on_parent(c, &pair);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn, "no context id free at every member");
  rc = finish_member(c, pair, g->my_rank(), g->world, newcomm);
  return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
}

AXON_API(int, MPI_Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_create_group";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (c->inter) return raise(c, MPI_ERR_COMM, fn, "intercommunicator");
  Group* g = group_from_handle(group);
  if (!g) return raise(c, MPI_ERR_GROUP, fn, "invalid group");
  if (!newcomm) return raise(c, MPI_ERR_ARG, fn, "newcomm is NULL");
  if (tag < 0) return raise(c, MPI_ERR_TAG, fn, "negative tag");
  // Only the group's members take part, over the parent's collective
  // context, addressed by their parent ranks.
  std::vector<int> members(g->size());
  for (int i = 0; i < g->size(); ++i) {
    auto it = std::find(c->p2p.world_of.begin(), c->p2p.world_of.end(), g->world[i]);
    if (it == c->p2p.world_of.end()) return raise(c, MPI_ERR_GROUP, fn, "group is not a subgroup of the communicator");
    members[i] = static_cast<int>(it - c->p2p.world_of.begin());
  }
  int me = g->my_rank();
  if (me == MPI_UNDEFINED) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  int error = MPI_SUCCESS;
  int pair = agree_context_pair(&c->coll, std::move(members), me, internal_tag_for_user(tag), &error);
  if (error != MPI_SUCCESS) return raise(c, error, fn, "no context id free at every member");
  return finish_member(c, pair, me, g->world, newcomm);
}

// MPI-4.1 11.3.4: a communicator straight from a group (of a session's
// process set, or any group), collective over the group's members only.
AXON_API(int, MPI_Comm_create_from_group,
         (MPI_Group group, const char* stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_create_from_group";
  // Errors go to the handler the new communicator would have had.
  Errhandler* e = errhandler_from_handle(errhandler);
  Comm on_error;
  on_error.errhandler = e ? e : errhandler_from_handle(MPI_ERRORS_ARE_FATAL);
  if (!e) return raise(&on_error, MPI_ERR_ERRHANDLER, fn, "invalid error handler");
  Group* g = group_from_handle(group);
  if (!g) return raise(&on_error, MPI_ERR_GROUP, fn, "invalid group");
  if (!stringtag || !newcomm) return raise(&on_error, MPI_ERR_ARG, fn, "NULL argument");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise(&on_error, MPI_ERR_INFO, fn, "invalid info");
  if (!runtime_running()) return raise(&on_error, MPI_ERR_OTHER, fn, "neither MPI_Init nor MPI_Session_init was called");
  int me = g->my_rank();
  if (me == MPI_UNDEFINED) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  // The members' world ranks are their ranks in the world's contexts.
  int error = MPI_SUCCESS;
  int pair = agree_context_pair(&comm_world()->coll, g->world, me, internal_tag_for_string(string_tag_hash(stringtag)),
                                &error);
  if (error != MPI_SUCCESS) return raise(&on_error, error, fn, "no context id free at every member");
  Comm* c = comm_alloc_from_groups(e, g->session_id);
  set_hints(c, info);
  comm_open_intra(c, pair, me, g->world);
  *newcomm = c->handle;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_compare, (MPI_Comm comm1, MPI_Comm comm2, int* result)) {
  AXON_COMM_OR_RAISE(a, comm1, "MPI_Comm_compare");
  AXON_COMM_OR_RAISE(b, comm2, "MPI_Comm_compare");
  if (!result) return raise(a, MPI_ERR_ARG, "MPI_Comm_compare", "result is NULL");
  if (a == b) {
    *result = MPI_IDENT;
    return MPI_SUCCESS;
  }
  if (a->inter != b->inter) {
    *result = MPI_UNEQUAL;
    return MPI_SUCCESS;
  }
  Group la, lb;
  la.world = local_world_ranks(a);
  lb.world = local_world_ranks(b);
  int local = group_compare(la, lb);
  int remote = MPI_IDENT;
  if (a->inter) {
    Group ra, rb;
    ra.world = a->p2p.world_of;
    rb.world = b->p2p.world_of;
    remote = group_compare(ra, rb);
  }
  if (local == MPI_UNEQUAL || remote == MPI_UNEQUAL) *result = MPI_UNEQUAL;
  else if (local == MPI_SIMILAR || remote == MPI_SIMILAR) *result = MPI_SIMILAR;
  else *result = MPI_CONGRUENT;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_free, (MPI_Comm * comm)) {
  if (!comm) return raise_self(MPI_ERR_ARG, "MPI_Comm_free", "comm is NULL");
  AXON_COMM_OR_RAISE(c, *comm, "MPI_Comm_free");
  if (c->predefined) return raise(c, MPI_ERR_COMM, "MPI_Comm_free", "predefined communicator");
  int rc = comm_free(c);
  if (rc != MPI_SUCCESS) return raise(c, rc, "MPI_Comm_free", "an attribute delete callback failed");
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

// MPI-4.1 11.10.4: collective; this rank's pending operations on the
// communicator complete first (its posted receives are matched, its
// nonblocking collectives finish), then every member has arrived (a barrier,
// so the peers' sends to us were all started and are delivered in order
// before it), and the communicator is freed. Without dynamic processes every
// communicator is one of this job's, so that is all there is to disconnect.
AXON_API(int, MPI_Comm_disconnect, (MPI_Comm * comm)) {
  const char* fn = "MPI_Comm_disconnect";
  if (!comm) return raise_self(MPI_ERR_ARG, fn, "comm is NULL");
  AXON_COMM_OR_RAISE(c, *comm, fn);
  if (c->predefined) return raise(c, MPI_ERR_COMM, fn, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected");
  progress::wait_until([c] { return !in_use(c); });
  if (int rc = PMPI_Barrier(*comm)) return rc;  // already raised on the communicator
  progress::wait_until([c] { return !in_use(c); });
  int rc = comm_free(c);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn, "an attribute delete callback failed");
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_test_inter, (MPI_Comm comm, int* flag)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_test_inter");
  if (!flag) return raise(c, MPI_ERR_ARG, "MPI_Comm_test_inter", "flag is NULL");
  *flag = c->inter;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_remote_size, (MPI_Comm comm, int* size)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_remote_size");
  // The NULL output is checked first, as MPICH does (errors/comm tests expect MPI_ERR_ARG).
  if (!size) return raise(c, MPI_ERR_ARG, "MPI_Comm_remote_size", "size is NULL");
  if (!c->inter) return raise(c, MPI_ERR_COMM, "MPI_Comm_remote_size", "not an intercommunicator");
  *size = c->size();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_get_parent, (MPI_Comm * parent)) {
  if (!parent) return raise_self(MPI_ERR_ARG, "MPI_Comm_get_parent", "parent is NULL");
  *parent = dpm_parent();  // src/mpi/dpm/spawn.cpp
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_set_info, (MPI_Comm comm, MPI_Info info)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_set_info");
  Info* i = info_from_handle(info);
  if (!i) return raise(c, MPI_ERR_INFO, "MPI_Comm_set_info", "invalid info");
  // Later values replace earlier ones; keys not given keep their value.
  merge_hints(c, *i);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_get_info, (MPI_Comm comm, MPI_Info* info_used)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_get_info");
  if (!info_used) return raise(c, MPI_ERR_ARG, "MPI_Comm_get_info", "info_used is NULL");
  Info* i = info_new();
  if (!i) return raise(c, MPI_ERR_NO_MEM, "MPI_Comm_get_info");
  i->entries = c->hints;
  // The memory allocation kinds this process supports (CUDA's with a usable
  // driver and device), unless the communicator was given its own value.
  if (!i->find("mpi_memory_alloc_kinds")) i->set("mpi_memory_alloc_kinds", accel::memory_alloc_kinds());
  *info_used = info_handle(i);
  return MPI_SUCCESS;
}
