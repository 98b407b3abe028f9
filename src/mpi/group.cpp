// Groups and the MPI_Group_* entry points; MPI_Comm_group and
// MPI_Comm_remote_group live here too because they only build groups.
// Group errors have no communicator: they are raised on MPI_COMM_SELF.
#include "mpi/group.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "mpi/api.h"
#include "mpi/communicator.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {
Group empty_group = [] {
  Group g;
  g.predefined = true;
  return g;
}();
}  // namespace

int Group::my_rank() const { return rank_of_world(rte::job().rank); }

int Group::rank_of_world(int world_rank) const {
  for (int i = 0; i < size(); ++i)
    if (world[i] == world_rank) return i;
  return MPI_UNDEFINED;
}

int group_compare(const Group& a, const Group& b) {
  if (a.world == b.world) return MPI_IDENT;
  if (a.size() != b.size()) return MPI_UNEQUAL;
  std::vector<int> x = a.world, y = b.world;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y ? MPI_SIMILAR : MPI_UNEQUAL;
}

Group* group_from_handle(MPI_Group h) {
  if (h == MPI_GROUP_EMPTY) return &empty_group;
  if (!may_be_object<Group>(h)) return nullptr;
  auto* g = reinterpret_cast<Group*>(h);
  return g->magic == kGroupMagic ? g : nullptr;
}

namespace {
RecycledObjects<Group> group_memory;
}

Group* group_new(std::vector<int> world_ranks) {
  if (world_ranks.empty()) return &empty_group;
  Group* g = group_memory.take();
  g->world = std::move(world_ranks);
  return g;
}

MPI_Group group_handle(Group* g) {
  return g == &empty_group ? MPI_GROUP_EMPTY : reinterpret_cast<MPI_Group>(g);
}

void group_release(Group* g) {
  if (!g || g->predefined) return;
  if (--g->refcount == 0) {
    group_memory.give_back(g, kGroupFreed);
  }
}

}  // namespace axon::mpi

using namespace axon::mpi;

namespace {

// Resolves a group argument or returns MPI_ERR_GROUP from the entry point.
#define GROUP_OR_RAISE(var, handle, fn) \
  Group* var = group_from_handle(handle); \
  if (!var) return raise_self(MPI_ERR_GROUP, fn, "invalid group")

int hand_out(Group* g, MPI_Group* out) {
  *out = group_handle(g);
  return MPI_SUCCESS;
}

// Membership set of a group's world ranks.
std::unordered_set<int> members(const Group& g) { return {g.world.begin(), g.world.end()}; }

// Expands (first, last, stride) triplets into group ranks, checking them as
// MPI-4.1 7.3.2 requires: stride 0 or a range that does not run from first
// towards last -> MPI_ERR_ARG; ranks outside the group or repeated ->
// MPI_ERR_RANK.
int expand_ranges(const Group& g, int n, const int ranges[][3], std::vector<int>* out) {
  std::vector<char> seen(g.size(), 0);
  for (int i = 0; i < n; ++i) {
    int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
    if (stride == 0) return MPI_ERR_ARG;
    if (first < 0 || first >= g.size() || last < 0 || last >= g.size()) return MPI_ERR_RANK;
    if ((stride > 0 && first > last) || (stride < 0 && first < last)) return MPI_ERR_ARG;
    for (long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      if (seen[r]) return MPI_ERR_RANK;
      seen[r] = 1;
      out->push_back(static_cast<int>(r));
    }
  }
  return MPI_SUCCESS;
}

// Distinct valid ranks of a group, for incl / excl.
int check_rank_list(const Group& g, int n, const int* ranks) {
  std::vector<char> seen(g.size(), 0);
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= g.size() || seen[ranks[i]]) return MPI_ERR_RANK;
    seen[ranks[i]] = 1;
  }
  return MPI_SUCCESS;
}

}  // namespace

AXON_API(int, MPI_Group_size, (MPI_Group group, int* size)) {
  GROUP_OR_RAISE(g, group, "MPI_Group_size");
  if (!size) return raise_self(MPI_ERR_ARG, "MPI_Group_size", "size is NULL");
  *size = g->size();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Group_rank, (MPI_Group group, int* rank)) {
  GROUP_OR_RAISE(g, group, "MPI_Group_rank");
  if (!rank) return raise_self(MPI_ERR_ARG, "MPI_Group_rank", "rank is NULL");
  *rank = g->my_rank();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Group_translate_ranks,
         (MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])) {
  const char* fn = "MPI_Group_translate_ranks";
  GROUP_OR_RAISE(g1, group1, fn);
  GROUP_OR_RAISE(g2, group2, fn);
  if (n < 0) return raise_self(MPI_ERR_ARG, fn, "n is negative");
  if (n > 0 && (!ranks1 || !ranks2)) return raise_self(MPI_ERR_ARG, fn, "rank array is NULL");
  for (int i = 0; i < n; ++i)
    if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= g1->size()))
      return raise_self(MPI_ERR_RANK, fn, "rank not in group1");
  std::unordered_map<int, int> rank_in_g2;
  for (int i = 0; i < g2->size(); ++i) rank_in_g2.emplace(g2->world[i], i);
  for (int i = 0; i < n; ++i) {
    if (ranks1[i] == MPI_PROC_NULL) {
      ranks2[i] = MPI_PROC_NULL;
      continue;
    }
    auto it = rank_in_g2.find(g1->world[ranks1[i]]);
    ranks2[i] = it == rank_in_g2.end() ? MPI_UNDEFINED : it->second;
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Group_compare, (MPI_Group group1, MPI_Group group2, int* result)) {
  GROUP_OR_RAISE(g1, group1, "MPI_Group_compare");
  GROUP_OR_RAISE(g2, group2, "MPI_Group_compare");
  if (!result) return raise_self(MPI_ERR_ARG, "MPI_Group_compare", "result is NULL");
  *result = group_compare(*g1, *g2);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Group_union, (MPI_Group group1, MPI_Group group2, MPI_Group* newgroup)) {
  GROUP_OR_RAISE(g1, group1, "MPI_Group_union");
  GROUP_OR_RAISE(g2, group2, "MPI_Group_union");
  if (!newgroup) return raise_self(MPI_ERR_ARG, "MPI_Group_union", "newgroup is NULL");
  // Group1's members in order, then group2's members that are not in group1.
  std::vector<int> out = g1->world;
  auto in1 = members(*g1);
  for (int w : g2->world)
    if (!in1.count(w)) out.push_back(w);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_intersection, (MPI_Group group1, MPI_Group group2, MPI_Group* newgroup)) {
  GROUP_OR_RAISE(g1, group1, "MPI_Group_intersection");
  GROUP_OR_RAISE(g2, group2, "MPI_Group_intersection");
  if (!newgroup) return raise_self(MPI_ERR_ARG, "MPI_Group_intersection", "newgroup is NULL");
  std::vector<int> out;
  auto in2 = members(*g2);
  for (int w : g1->world)
    if (in2.count(w)) out.push_back(w);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_difference, (MPI_Group group1, MPI_Group group2, MPI_Group* newgroup)) {
  GROUP_OR_RAISE(g1, group1, "MPI_Group_difference");
  GROUP_OR_RAISE(g2, group2, "MPI_Group_difference");
  if (!newgroup) return raise_self(MPI_ERR_ARG, "MPI_Group_difference", "newgroup is NULL");
  std::vector<int> out;
  auto in2 = members(*g2);
  for (int w : g1->world)
    if (!in2.count(w)) out.push_back(w);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_incl, (MPI_Group group, int n, const int ranks[], MPI_Group* newgroup)) {
  const char* fn = "MPI_Group_incl";
  GROUP_OR_RAISE(g, group, fn);
  if (!newgroup) return raise_self(MPI_ERR_ARG, fn, "newgroup is NULL");
  if (n < 0 || n > g->size()) return raise_self(MPI_ERR_ARG, fn, "n out of range");
  if (n > 0 && !ranks) return raise_self(MPI_ERR_ARG, fn, "ranks is NULL");
  if (int rc = check_rank_list(*g, n, ranks)) return raise_self(rc, fn, "invalid or repeated rank");
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = g->world[ranks[i]];
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_excl, (MPI_Group group, int n, const int ranks[], MPI_Group* newgroup)) {
  const char* fn = "MPI_Group_excl";
  GROUP_OR_RAISE(g, group, fn);
  if (!newgroup) return raise_self(MPI_ERR_ARG, fn, "newgroup is NULL");
  if (n < 0 || n > g->size()) return raise_self(MPI_ERR_ARG, fn, "n out of range");
  if (n > 0 && !ranks) return raise_self(MPI_ERR_ARG, fn, "ranks is NULL");
  if (int rc = check_rank_list(*g, n, ranks)) return raise_self(rc, fn, "invalid or repeated rank");
  std::vector<char> drop(g->size(), 0);
  for (int i = 0; i < n; ++i) drop[ranks[i]] = 1;
  std::vector<int> out;
  for (int i = 0; i < g->size(); ++i)
    if (!drop[i]) out.push_back(g->world[i]);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_range_incl, (MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup)) {
  const char* fn = "MPI_Group_range_incl";
  GROUP_OR_RAISE(g, group, fn);
  if (!newgroup) return raise_self(MPI_ERR_ARG, fn, "newgroup is NULL");
  if (n < 0) return raise_self(MPI_ERR_ARG, fn, "n is negative");
  if (n > 0 && !ranges) return raise_self(MPI_ERR_ARG, fn, "ranges is NULL");
  std::vector<int> picked;
  if (int rc = expand_ranges(*g, n, ranges, &picked)) return raise_self(rc, fn, "invalid range");
  std::vector<int> out;
  out.reserve(picked.size());
  for (int r : picked) out.push_back(g->world[r]);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_range_excl, (MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup)) {
  const char* fn = "MPI_Group_range_excl";
  GROUP_OR_RAISE(g, group, fn);
  if (!newgroup) return raise_self(MPI_ERR_ARG, fn, "newgroup is NULL");
  if (n < 0) return raise_self(MPI_ERR_ARG, fn, "n is negative");
  if (n > 0 && !ranges) return raise_self(MPI_ERR_ARG, fn, "ranges is NULL");
  std::vector<int> picked;
  if (int rc = expand_ranges(*g, n, ranges, &picked)) return raise_self(rc, fn, "invalid range");
  std::vector<char> drop(g->size(), 0);
  for (int r : picked) drop[r] = 1;
  std::vector<int> out;
  for (int i = 0; i < g->size(); ++i)
    if (!drop[i]) out.push_back(g->world[i]);
  return hand_out(group_new(std::move(out)), newgroup);
}

AXON_API(int, MPI_Group_free, (MPI_Group * group)) {
  if (!group) return raise_self(MPI_ERR_ARG, "MPI_Group_free", "group is NULL");
  GROUP_OR_RAISE(g, *group, "MPI_Group_free");
  group_release(g);
  *group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_group, (MPI_Comm comm, MPI_Group* group)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_group");
  if (!group) return raise(c, MPI_ERR_ARG, "MPI_Comm_group", "group is NULL");
  *group = group_handle(group_new(local_world_ranks(c)));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_remote_group, (MPI_Comm comm, MPI_Group* group)) {
  AXON_COMM_OR_RAISE(c, comm, "MPI_Comm_remote_group");
  if (!group) return raise(c, MPI_ERR_ARG, "MPI_Comm_remote_group", "group is NULL");
  if (!c->inter) return raise(c, MPI_ERR_COMM, "MPI_Comm_remote_group", "not an intercommunicator");
  *group = group_handle(group_new(c->p2p.world_of));
  return MPI_SUCCESS;
}
