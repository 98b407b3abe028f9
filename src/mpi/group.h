// MPI groups (MPI-4.1 section 7.3): an ordered set of processes, kept as the
// world ranks of its members in group-rank order.
//
// Handles: MPI_GROUP_EMPTY is a static empty group (freeing it is a no-op
// that sets the handle to MPI_GROUP_NULL, as MPICH and Open MPI accept);
// MPI_GROUP_NULL has no object; any other handle is a heap Group whose
// first field is a magic number. Groups are reference counted because a
// handle may be freed while the library still holds the object.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace axon::mpi {

constexpr uint32_t kGroupMagic = 0x47525550u;  // "GRUP"
constexpr uint32_t kGroupFreed = 0xDEAD4750u;

struct Group {
  uint32_t magic = kGroupMagic;
  bool predefined = false;
  int refcount = 1;
  std::vector<int> world;  // group rank -> world rank
  uint64_t session_id = 0; // MPI_Group_from_session_pset's session; 0 otherwise
  int size() const { return static_cast<int>(world.size()); }
  // This process's rank in the group, or MPI_UNDEFINED.
  int my_rank() const;
  // The group rank of a world rank, or MPI_UNDEFINED.
  int rank_of_world(int world_rank) const;
};

Group* group_from_handle(MPI_Group handle);  // nullptr when invalid
// A new heap group (refcount 1) or MPI_GROUP_EMPTY's object when empty.
Group* group_new(std::vector<int> world_ranks);
MPI_Group group_handle(Group* g);
void group_release(Group* g);

}  // namespace axon::mpi

namespace axon::mpi {
// MPI_IDENT (same members, same order), MPI_SIMILAR (same members) or MPI_UNEQUAL.
int group_compare(const Group& a, const Group& b);
}  // namespace axon::mpi
