// Small helpers shared by the collective algorithms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "datatype/datatype.h"

namespace axon::coll {

// Bytes a buffer of `count` items of `type` spans from item 0's true lower
// bound to the last item's true upper bound.
inline size_t items_span(MPI_Count count, const Datatype* type) {
  if (count <= 0) return 0;
  return static_cast<size_t>(count - 1) * static_cast<size_t>(type->extent) + static_cast<size_t>(type->true_extent);
}

// Address of item `index` of a buffer of `type`.
inline void* item_at(const void* base, MPI_Count index, const Datatype* type) {
  return const_cast<uint8_t*>(static_cast<const uint8_t*>(base)) + index * static_cast<MPI_Count>(type->extent);
}
inline void* byte_at(const void* base, MPI_Aint offset) {
  return const_cast<uint8_t*>(static_cast<const uint8_t*>(base)) + offset;
}

// Signature size in bytes of `count` items.
inline size_t payload_bytes(MPI_Count count, const Datatype* type) {
  return count <= 0 ? 0 : static_cast<size_t>(count) * type->size;
}

// Copies between typed buffers whose type signatures agree (at most the
// smaller of the two payloads is moved).
int copy_typed(const void* src, MPI_Count scount, const Datatype* stype, void* dst, MPI_Count rcount,
               const Datatype* rtype);

const Datatype* byte_type();

// Splits `count` items into `parts` blocks as evenly as possible (the first
// count % parts blocks get one more): block i is [offset[i], offset[i]+size[i]).
struct Blocks {
  std::vector<MPI_Count> size, offset;
  Blocks(MPI_Count count, int parts);
};

}  // namespace axon::coll
