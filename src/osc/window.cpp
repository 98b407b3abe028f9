// Window creation and destruction: what the ranks exchange at creation, the
// shared control segment of each node (its lock words, PSCW counters and
// dynamic windows' region tables: layout in internal.h), how each flavor
// chooses the path to every target (osc.h, Path), the window's registration
// with the active-message engine, MPI_Win_attach / detach, MPI_Win_free and
// the AXON_OSC_PATH parameter. See osc.h for the contract, docs/rma.md for
// the design.
#include "osc/internal.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "base/shm_file.h"
#include "coll/coll.h"
#include "osc/am.h"
#include "osc/rdma.h"
#include "rte/rte.h"

namespace axon::osc {

namespace {

constexpr uint64_t kControlMagic = 0x4158304f53435731ull;

StringParam path_param{"AXON_OSC_PATH", "auto",
                       "How RMA reaches the other ranks of a window: auto (mapped memory or cross-memory "
                       "attach on this node; RDMA WRITE/READ to other nodes where the transport can, active "
                       "messages otherwise and where CMA is forbidden), am (active messages to every other "
                       "rank, for tests) or rdma (RDMA to every other rank the transport reaches with it, "
                       "even on this node, for tests)"};

// `dynamic`: with the region tables (sparse: pages are touched as regions are attached).
size_t control_bytes(int n, bool dynamic = false) {
  return round_up(regions_offset(n) + (dynamic ? sizeof(Region) * kMaxRegions * n : 0), 4096);
}

int exchange_info(pml::Context* ctx, void* base, uint64_t bytes, int disp_unit, std::vector<PeerInfo>* out) {
  PeerInfo me{static_cast<int64_t>(getpid()), reinterpret_cast<uint64_t>(base), bytes, disp_unit, 1,
              reinterpret_cast<uint64_t>(&cma_probe)};
  for (int r = 0; r < ctx->size(); ++r)
    if (!rte::is_local(ctx->world_of[r])) me.all_local = 0;
  out->assign(ctx->size(), PeerInfo{});
  return coll::allgather_bytes(&me, sizeof me, out->data(), ctx);
}

bool all_local(const std::vector<PeerInfo>& info) {
  for (const PeerInfo& p : info)
    if (!p.all_local) return false;  // same answer on every rank
  return true;
}

// Creates the window's segment of this node: the node's lowest window rank
// (its leader) creates and sizes it exclusively, mode 0600, under a random
// name (base/shm_file.h), the node's ranks map it after checking owner,
// mode and size, and the leader unlinks it once all have (mpirun removes
// the job's /dev/shm/axon.<nspace>.* if the job dies in between). On one
// node that is one segment for the whole window; across nodes each node
// has its own, laid out for every window rank (the slots of other nodes'
// ranks unused). `local_error`: an error class this rank found before
// (every rank then fails with the largest one).
int map_segment(Window* w, size_t len, int32_t local_error = MPI_SUCCESS) {
  static std::atomic<unsigned> counter{0};  // windows may be created by several threads
  struct Msg {
    int32_t status;
    char name[252];
  };
  int leader = w->rank;
  for (int r = 0; r < w->size; ++r)
    if (r == w->rank || rte::is_local(w->ctx->world_of[r])) {
      leader = r;
      break;
    }
  const rte::Job& job = rte::job();
  Msg mine{};
  shm::Mapping map;
  std::string name, why;
  if (leader == w->rank) {
    std::string what = "osc." + std::to_string(job.rank) + "." + std::to_string(counter++);
    if (shm::create(job.shm_prefix, what, len, &name, &map, &why) != 0 || name.size() >= sizeof mine.name) {
      log::error("osc: cannot create the shared segment of a window (%zu bytes): %s", len,
                 why.empty() ? "its name is too long" : why.c_str());
      if (map.base()) shm::unlink(name);
      map.reset();
      mine.status = MPI_ERR_NO_MEM;
    } else {
      std::memcpy(mine.name, name.c_str(), name.size() + 1);
    }
  }
  std::vector<Msg> all(w->size);
  int rc = coll::allgather_bytes(&mine, sizeof mine, all.data(), w->ctx);
  int32_t status = rc;
  for (const Msg& m : all)
    if (rc == MPI_SUCCESS && m.status != MPI_SUCCESS) status = m.status;  // same answer everywhere
  if (status != MPI_SUCCESS) {
    if (map.base()) shm::unlink(name);
    return status;
  }
  int32_t failed = local_error;
  if (leader != w->rank) {
    if (!shm::parse_name(all[leader].name, sizeof all[leader].name, job.shm_prefix, &name)) {
      log::error("osc: the window's leader on this node sent no usable segment name");
      failed = MPI_ERR_INTERN;
    } else if (shm::open_existing(name, len, &map, &why) != 0 || map.size() != len) {
      log::error("osc: cannot map the shared segment of a window: %s", why.empty() ? "its size is wrong" : why.c_str());
      map.reset();
      failed = MPI_ERR_NO_MEM;
    }
  }
  // Everyone has mapped (or failed): the name can go.
  int32_t any_failed = 0;
  rc = coll::allreduce(&failed, &any_failed, 1, datatype_from_handle(MPI_INT32_T), op_from_handle(MPI_MAX),
                       w->ctx);
  if (leader == w->rank) shm::unlink(name);
  if (rc != MPI_SUCCESS || any_failed) return rc != MPI_SUCCESS ? rc : any_failed;
  w->map_len = map.size();
  w->map = map.release();
  w->ctl = static_cast<Control*>(w->map);
  if (leader == w->rank) {
    w->ctl->magic = kControlMagic;
    w->ctl->n = static_cast<uint32_t>(w->size);
  }
  return MPI_SUCCESS;
}

Window* new_window(pml::Context* ctx, Flavor flavor) {
  auto* w = new Window;
  w->flavor = flavor;
  w->ctx = ctx;
  w->rank = ctx->rank;
  w->size = ctx->size();
  w->peers.resize(w->size);
  w->ep.locked.assign(w->size, kNotLocked);
  w->ep.posts_seen.assign(w->size, 0);
  return w;
}

void drop(Window* w) {
  rdma::release(w);  // the registration goes before the memory
  am::unregister_window(w);
  for (const Window::Mapping& m : w->peer_maps) munmap(m.addr, m.len);
  if (w->shared_own.addr) move_to_private(w->shared_own, w->shared_inode);
  if (w->map) munmap(w->map, w->map_len);
  delete w;  // its CmaQueue with it
}

// Last step of every creation: when some rank reaches another by active
// messages, every rank registers the window for them (before the barrier,
// so no message finds a target that does not know the window yet).
int finish_am(Window* w) {
  int32_t mine = 0, any = 0;
  for (const Peer& p : w->peers)
    if (p.path == Path::Am || p.path == Path::Rdma) mine = 1;  // Rdma: accumulates and sync by messages
  int rc = coll::allreduce(&mine, &any, 1, datatype_from_handle(MPI_INT32_T), op_from_handle(MPI_MAX), w->ctx);
  if (rc != MPI_SUCCESS || !any) return rc;
  w->id = w->ctx->id;
  am::register_window(w, true);
  return coll::barrier(w->ctx);
}

}  // namespace

bool force_am() {
  const std::string& v = path_param.get();
  if (v == "am") return true;
  if (v != "auto" && v != "rdma") {
    static bool warned = false;
    if (!warned) log::warn("AXON_OSC_PATH=%s is neither auto, am nor rdma: using auto", v.c_str());
    warned = true;
  }
  return false;
}
bool force_rdma() { return path_param.get() == "rdma"; }

// Whether [first, last) of rank r lies in memory attached to a dynamic
// window: in one region, or in regions attached separately that follow each
// other with no gap (MPICH accepts such accesses too).
bool attached(const Window* w, int r, uint64_t first, uint64_t last) {
  const Region* reg = regions(w, r);
  const uint32_t used = peer_ctl(w, r).regions_hi.load(std::memory_order_acquire);
  // Advance `first` through the regions that contain it until it passes
  // `last` (usually one step; one more per region boundary crossed).
  while (first < last) {
    bool advanced = false;
    for (uint32_t i = 0; i < used && !advanced; ++i) {
      const uint64_t size = reg[i].size.load(std::memory_order_acquire);
      const uint64_t base = reg[i].base.load(std::memory_order_relaxed);
      if (size && first >= base && first < base + size) {
        first = base + size;
        advanced = true;
      }
    }
    if (!advanced) return false;
  }
  return true;
}

// ---- creation ----------------------------------------------------------------------

int create(pml::Context* ctx, void* base, uint64_t bytes, int disp_unit, Window** out) {
  Window* w = new_window(ctx, Flavor::Create);
  w->base = base;
  w->bytes = bytes;
  w->disp_unit = disp_unit;
  std::vector<PeerInfo> info;
  int rc = exchange_info(ctx, base, bytes, disp_unit, &info);
  if (rc == MPI_SUCCESS) rc = map_segment(w, control_bytes(w->size));
  if (rc == MPI_SUCCESS) {
    set_private_peers(w, info);
    rc = share_create_memory(w, info);
    if (rc == MPI_SUCCESS && !force_am()) rc = rdma::setup(w, base, bytes, all_local(info), force_rdma());
    if (rc == MPI_SUCCESS) rc = finish_am(w);
  }
  if (rc != MPI_SUCCESS) {
    drop(w);
    return rc;
  }
  *out = w;
  return MPI_SUCCESS;
}

int create_dynamic(pml::Context* ctx, Window** out) {
  Window* w = new_window(ctx, Flavor::Dynamic);
  std::vector<PeerInfo> info;
  int rc = exchange_info(ctx, nullptr, 0, 1, &info);
  if (rc == MPI_SUCCESS) rc = map_segment(w, control_bytes(w->size, true));
  if (rc == MPI_SUCCESS) {
    set_private_peers(w, info);
    // Displacements are absolute addresses: no window base, no size limit.
    for (Peer& p : w->peers) p.base = 0, p.size = 0, p.disp_unit = 1;
    if (!force_am()) rdma::setup_dynamic(w, force_rdma());
    rc = finish_am(w);
  }
  if (rc != MPI_SUCCESS) {
    drop(w);
    return rc;
  }
  *out = w;
  return MPI_SUCCESS;
}

int allocate(pml::Context* ctx, uint64_t bytes, int disp_unit, bool shared, bool noncontig, Window** out) {
  Window* w = new_window(ctx, shared ? Flavor::Shared : Flavor::Allocate);
  std::vector<PeerInfo> info;
  int rc = exchange_info(ctx, nullptr, bytes, disp_unit, &info);
  if (rc == MPI_SUCCESS && shared && !all_local(info)) rc = MPI_ERR_RMA_SHARED;
  if (rc != MPI_SUCCESS) {
    drop(w);
    return rc;
  }
  // allocate_shared: the parts follow each other with no gap (MPI's default,
  // so that rank r+1's memory continues rank r's) unless the user allows
  // non-contiguous parts; Win_allocate: each part on its own cache line.
  // Across nodes a node's segment holds the memory of its own ranks only.
  const size_t align = shared ? (noncontig ? 4096 : 1) : 64;
  std::vector<size_t> offset(w->size);
  std::vector<bool> here(w->size);
  size_t data = control_bytes(w->size);
  for (int r = 0; r < w->size; ++r) {
    here[r] = r == w->rank || rte::is_local(ctx->world_of[r]);
    offset[r] = data;
    if (here[r]) data = round_up(data + info[r].bytes, align);
  }
  rc = map_segment(w, round_up(data, 64) + 64);
  if (rc != MPI_SUCCESS) {
    drop(w);
    return rc;
  }
  auto* map = static_cast<unsigned char*>(w->map);
  const bool am_only = force_am();
  for (int r = 0; r < w->size; ++r) {
    Peer& p = w->peers[r];
    p.same_node = here[r];
    // AXON_OSC_PATH=am: still mapped (Win_shared_query), but reached by messages.
    p.path = here[r] && (r == w->rank || !am_only) ? Path::Mapped : Path::Am;
    p.pid = static_cast<int>(info[r].pid);
    p.mapped = here[r] ? map + offset[r] : nullptr;
    p.base = p.path == Path::Am ? 0 : reinterpret_cast<uint64_t>(p.mapped);
    p.size = info[r].bytes;
    p.disp_unit = static_cast<int>(info[r].disp_unit);
  }
  w->base = w->peers[w->rank].mapped;
  w->bytes = bytes;
  w->disp_unit = disp_unit;
  rc = am_only || shared ? MPI_SUCCESS : rdma::setup(w, w->base, bytes, all_local(info), force_rdma());
  if (rc == MPI_SUCCESS) rc = finish_am(w);
  if (rc != MPI_SUCCESS) {
    drop(w);
    return rc;
  }
  *out = w;
  return MPI_SUCCESS;
}

int free_check(const Window* w) {
  if (w->ep.started || w->ep.posted || w->ep.lock_all || any_locked(w)) return MPI_ERR_RMA_SYNC;
  return MPI_SUCCESS;
}

void destroy(Window* w) {
  // No rank unmaps (or frees its Win_create memory) while another may still
  // access it in an epoch that ended with this collective call.
  cma_drain(w, -1);  // empty unless the last epoch was not closed (erroneous)
  std::atomic_thread_fence(std::memory_order_seq_cst);
  coll::barrier(w->ctx);
  drop(w);
}

int attach(Window* w, void* base, uint64_t bytes) {
  if (bytes == 0) return MPI_SUCCESS;
  Region* reg = regions(w, w->rank);
  std::atomic<uint32_t>& hi = peer_ctl(w, w->rank).regions_hi;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kMaxRegions); ++i) {
    if (reg[i].size.load(std::memory_order_relaxed)) continue;
    reg[i].base.store(reinterpret_cast<uint64_t>(base), std::memory_order_relaxed);
    reg[i].size.store(bytes, std::memory_order_release);
    if (hi.load(std::memory_order_relaxed) <= i) hi.store(i + 1, std::memory_order_release);
    rdma::attach_region(w, base, bytes);  // origins on other nodes: RDMA (its failure: active messages)
    return MPI_SUCCESS;
  }
  return MPI_ERR_RMA_ATTACH;
}

int detach(Window* w, const void* base) {
  Region* reg = regions(w, w->rank);
  const uint32_t hi = peer_ctl(w, w->rank).regions_hi.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < hi; ++i) {
    if (!reg[i].size.load(std::memory_order_relaxed)) continue;
    if (reg[i].base.load(std::memory_order_relaxed) != reinterpret_cast<uint64_t>(base)) continue;
    // Every origin that fetched the region's RDMA key drops it first.
    int rc = rdma::detach_region(w, reinterpret_cast<uint64_t>(base));
    reg[i].size.store(0, std::memory_order_release);
    return rc;
  }
  return MPI_ERR_RMA_RANGE;
}

void finalize() { am::finalize(); }

}  // namespace axon::osc
