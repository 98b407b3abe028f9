// Helpers shared by the collective algorithms.
#include "coll/util.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace axon::coll {

const Datatype* byte_type() {
  static const Datatype* t = datatype_from_handle(MPI_BYTE);
  return t;
}

int copy_typed(const void* src, MPI_Count scount, const Datatype* stype, void* dst, MPI_Count rcount,
               const Datatype* rtype) {
  size_t bytes = std::min(payload_bytes(scount, stype), payload_bytes(rcount, rtype));
  if (bytes == 0) return MPI_SUCCESS;
  if (src == dst && stype == rtype) return MPI_SUCCESS;
  if (stype->contiguous && rtype->contiguous) {
    std::memmove(dst, src, bytes);
    return MPI_SUCCESS;
  }
  if (stype == rtype && scount == rcount) {
    copy_items_between(*stype, src, dst, static_cast<size_t>(scount));
    return MPI_SUCCESS;
  }
  // One side is a plain byte image: a single pack or unpack.
  if (rtype->contiguous && bytes == payload_bytes(scount, stype)) {
    pack_items(*stype, src, static_cast<size_t>(scount), dst);
    return MPI_SUCCESS;
  }
  if (stype->contiguous) {
    unpack_bytes(*rtype, src, bytes, dst);
    return MPI_SUCCESS;
  }
  std::unique_ptr<uint8_t[]> packed(new (std::nothrow) uint8_t[payload_bytes(scount, stype)]);
  if (!packed) return MPI_ERR_NO_MEM;
  pack_items(*stype, src, static_cast<size_t>(scount), packed.get());
  unpack_bytes(*rtype, packed.get(), bytes, dst);
  return MPI_SUCCESS;
}

Blocks::Blocks(MPI_Count count, int parts) : size(parts), offset(parts) {
  MPI_Count base = count / parts, extra = count % parts, at = 0;
  for (int i = 0; i < parts; ++i) {
    size[i] = base + (i < extra ? 1 : 0);
    offset[i] = at;
    at += size[i];
  }
}

}  // namespace axon::coll
