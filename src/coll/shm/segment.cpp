// The node segment: its size (slots per rank and step), its layout in
// bytes, and how the node's members create, map and unlink it (see
// internal.h, "Segment").
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/log.h"
#include "base/param.h"
#include "base/shm_file.h"
#include "coll/shm/internal.h"
#include "rte/rte.h"

namespace axon::coll {

namespace nodelevel {

namespace {

SizeParam chunk_param{"AXON_COLL_SHM_CHUNK", 0,
                      "Bytes per rank and step of the node-level shared-memory collectives (slot size of the "
                      "per-communicator segment); 0 = by the node's rank count (512 KiB up to 4 ranks, less "
                      "above, at least 64 KiB). Must be the same on every rank."};

// Slot size (see chunk_param). Larger slots mean fewer steps, so fewer
// hand-offs between ranks (each a context switch when oversubscribed);
// the data sets, 2 x (ranks + 1) slots, should stay cache-sized. Measured
// (docs/collectives.md, "Slot size"): 256-512 KiB beat 64 KiB for
// 128 KiB - 4 MiB allgather / alltoall / allreduce / reduce at 2 and 4
// ranks; 1 MiB slots fall off a cliff.
constexpr size_t kMinChunk = 64 * 1024;
constexpr size_t kMaxChunk = 512 * 1024;
constexpr size_t kDataSetBudget = 2560 * 1024;  // bytes of one data set, (ranks + 1) slots
int64_t chunk_setting() {
  // (The parameter is read once anyway; this spares the call per collective.)
  static const int64_t c = chunk_param.get();
  return c;
}
// Whole cache lines: the lines after the data sets stay aligned.
size_t whole_lines(size_t b) { return (b + 63) & ~size_t{63}; }
size_t chunk_for(int n) {
  int64_t c = chunk_setting();
  if (c > 0) return c < 4096 ? size_t{4096} : whole_lines(static_cast<size_t>(c));
  size_t fit = kDataSetBudget / (static_cast<size_t>(n) + 1) & ~size_t{4095};
  return std::clamp(fit, kMinChunk, kMaxChunk);
}

// Header, flag lines, small areas, two data sets, then one sleepers count
// per flag line (futex wait mode: how many ranks sleep on that line).
size_t segment_bytes(int n, size_t chunk) {
  return sizeof(Header) + (kFlagSets + 2) * static_cast<size_t>(n) * sizeof(Flag) + kFlagSets * kSmall +
         2 * (static_cast<size_t>(n) + 1) * chunk + (kFlagSets + 2) * static_cast<size_t>(n) * sizeof(uint32_t);
}

// What the node's leader sends the other members at the first node-level call.
struct SegmentName {
  int32_t status;  // MPI_SUCCESS, or why the leader has no segment
  char name[252];  // NUL-terminated
};

}  // namespace

size_t least_chunk() {
  int64_t c = chunk_setting();
  return c > 0 ? chunk_for(1) : kMinChunk;
}

int attach_segment(CommState* st) {
  NodeState& ns = *st->node;
  const Topology& t = ns.topo;
  int n = static_cast<int>(t.members.size());
  size_t chunk = chunk_for(n);
  size_t bytes = segment_bytes(n, chunk);
  const std::string& prefix = rte::job().shm_prefix;
  shm::Mapping map;
  std::string name, why;
  SegmentName msg{};
  if (t.me == 0) {
    if (shm::create(prefix, "coll." + std::to_string(st->coll->id), bytes, &name, &map, &why) != 0 ||
        name.size() >= sizeof msg.name) {
      log::error("coll: cannot create the node segment (%zu bytes): %s", bytes,
                 why.empty() ? "its name is too long" : why.c_str());
      if (map.base()) shm::unlink(name);
      msg.status = MPI_ERR_NO_MEM;
    } else {
      std::memcpy(msg.name, name.c_str(), name.size() + 1);
    }
    for (int i = 1; i < n; ++i) {
      int rc = pml::send(&msg, sizeof msg, byte_type(), t.members[i], kTagSegment, st->coll, pml::SendMode::Standard);
      if (rc != MPI_SUCCESS && msg.status == MPI_SUCCESS) msg.status = rc;
    }
    if (msg.status != MPI_SUCCESS) return msg.status;
  } else {
    pml::Request r;
    if (int rc = pml::recv(&msg, sizeof msg, byte_type(), t.members[0], kTagSegment, st->coll, &r); rc != MPI_SUCCESS)
      return rc;
    if (msg.status != MPI_SUCCESS) return msg.status;
    if (!shm::parse_name(msg.name, sizeof msg.name, prefix, &name)) {
      log::error("coll: the node's leader sent no usable segment name");
      return MPI_ERR_INTERN;
    }
    if (shm::open_existing(name, bytes, &map, &why) != 0 || map.size() != bytes) {
      log::error("coll: cannot map the node segment: %s", why.empty() ? "its size is wrong" : why.c_str());
      return MPI_ERR_NO_MEM;
    }
  }
  ns.bytes = map.size();
  ns.base = map.release();  // NodeState unmaps it
  ns.chunk = chunk;
  ns.futex = use_futex();
  auto* h = static_cast<Header*>(ns.base);
  if (h->attached.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n)) shm::unlink(name);
  return MPI_SUCCESS;
}

}  // namespace nodelevel

NodeState::~NodeState() {
  if (base) munmap(base, bytes);
}

}  // namespace axon::coll
