// The RDMA path of one-sided communication: see rdma.h for the contract and
// docs/rma.md for the design.
//
// Every transport call here holds the PML lock (progress::Guard): the progress
// agent thread polls the same completion queues through pml::progress.
#include "osc/rdma.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/backoff.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/status.h"
#include "btl/btl.h"
#include "coll/coll.h"
#include "osc/am.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::osc::rdma {

namespace {

// What each rank tells the others at creation.
struct Info {
  uint64_t base;     // our memory's address in our process
  uint64_t key;      // its registration, 0: none (not exposed, or failed)
  uint64_t bytes;
  int32_t exposed;   // 1: key valid or nothing to expose (0 bytes)
  int32_t all_nic;   // every other rank is reached by RDMA with atomics from here
  int32_t glob;      // our transport's atomics are coherent with CPU atomics
  int32_t pad;
};

btl::Transport* route_of(const Window* w, int target) { return btl::route(w->ctx->world_of[target]); }

bool capable(const btl::Transport* t) { return t && t->caps().rma && t->caps().can_put && t->caps().can_get; }

// Posts with `f` (under the PML lock), driving progress while the transport
// answers kAgain (connection being set up, send queue or staging full).
template <class F> int post(const char* what, int target, F f) {
  Backoff backoff(progress::spin_rounds());
  for (;;) {
    int rc;
    {
      progress::Guard guard;
      rc = f();
    }
    if (rc == kOk) return MPI_SUCCESS;
    if (rc != kAgain) {
      log::error("osc: RDMA %s to window rank %d failed (%d)", what, target, rc);
      return MPI_ERR_OTHER;
    }
    if (progress::progress() > 0) backoff.reset();
    else backoff.idle();
  }
}

// Runs up to this size are posted in pieces of kPiece bytes (the verbs
// transport stages those through registered slots, no registration of the
// origin buffer per operation); larger ones go in one call, which the
// transport pipelines with registration.
constexpr size_t kPiece = 16384, kPieceMax = 256 * 1024;
template <class Fn> void pieces(uint64_t a, size_t len, Fn fn) {
  if (len > kPieceMax) return fn(a, size_t{0}, len);
  for (size_t off = 0; off < len; off += kPiece) fn(a + off, off, std::min(kPiece, len - off));
}

// The rank that applies NIC atomics to our own memory for us (we have no
// RDMA connection to ourselves).
int helper_of(const Window* w) { return (w->rank + 1) % w->size; }

}  // namespace

int setup(Window* w, void* mem, uint64_t bytes, bool all_local, bool force) {
  if (all_local && !force) return MPI_SUCCESS;  // every rank knows it: no collective
  const int me = w->rank;
  // The peers we would reach by RDMA, and the transport (one RDMA-capable
  // transport per process: verbs) our memory is registered with.
  std::vector<bool> want(w->size, false);
  btl::Transport* t = nullptr;
  bool all_nic = w->size > 1;
  for (int r = 0; r < w->size; ++r) {
    if (r == me) continue;
    btl::Transport* rt = route_of(w, r);
    const bool candidate = force || !w->peers[r].same_node;
    want[r] = candidate && capable(rt);
    if (want[r] && !t) t = rt;
    if (!want[r] || !rt->caps().atomics) all_nic = false;
  }
  Info mine{reinterpret_cast<uint64_t>(mem), 0, bytes, 1, 0, 0, 0};
  if (t && bytes > 0) {
    progress::Guard guard;
    mine.key = t->expose_window(mem, bytes);
    if (!mine.key) {
      mine.exposed = 0;
      log::debug(1, "osc: cannot register %llu bytes of window memory for RDMA: other ranks reach it by "
                 "active messages", static_cast<unsigned long long>(bytes));
    }
  }
  if (mine.key) {
    w->rdma = t;
    w->rdma_key = mine.key;
  }
  mine.all_nic = all_nic && mine.exposed;
  mine.glob = t && t->caps().atomics_glob;
  std::vector<Info> all(w->size);
  int rc = coll::allgather_bytes(&mine, sizeof mine, all.data(), w->ctx);
  if (rc != MPI_SUCCESS) return rc;
  bool every_nic = true, every_glob = w->size > 1;
  for (int r = 0; r < w->size; ++r) {
    Peer& p = w->peers[r];
    if (!all[r].all_nic) every_nic = false;
    if (!all[r].glob || !all[r].exposed) every_glob = false;
    if (!want[r]) continue;
    if (!all[r].exposed) {
      log::debug(1, "osc: window rank %d could not register its memory: active messages reach it", r);
      continue;
    }
    p.path = Path::Rdma;
    p.base = all[r].base;
    p.key = all[r].key;
  }
  // NIC atomics (8-byte integer MPI_SUM, 8-byte compare-and-swap) are
  // atomic with each other but in general not with the CPU's atomics at the
  // target (IBV_ATOMIC_HCA) nor with accumulates the target applies for
  // active messages. MPI's default accumulate_ops=same_op_no_op lets us
  // assume concurrent accumulate-family calls on one location use one op
  // (or MPI_NO_OP, a read: harmless); so it is enough that every such call
  // with that op and type goes through the NIC, whichever rank issues it:
  //  - every rank reaches every other by RDMA with atomics (a rank's own
  //    memory goes through the NIC too, asked of a neighbour: proxy_atomic), or
  //  - every rank's device has IBV_ATOMIC_GLOB and the window memory is
  //    updated by the target only with CPU atomics (Win_allocate: mapped
  //    memory, hardware atomics for aligned 8-byte elements).
  const bool glob_ok = every_glob && w->flavor == Flavor::Allocate;
  w->nic_atomics = every_nic || glob_ok;
  // Case 1 without case 2: the CPU must not touch those words at all.
  w->nic_self_proxy = w->nic_atomics && !glob_ok;
  if (w->nic_atomics)
    log::debug(1, "osc: window %u: 8-byte fetch-and-add / compare-and-swap by NIC atomics (%s)", w->ctx->id,
               every_nic ? "every rank through the NIC" : "IBV_ATOMIC_GLOB");
  return MPI_SUCCESS;
}

void release(Window* w) {
  if (!w->rdma) return;
  progress::Guard guard;
  // Dynamic windows: the regions still attached at MPI_Win_free (every
  // origin is past the barrier of the free: none uses them any more).
  for (const Window::DynRegion& r : w->dyn_exposed)
    if (r.key) w->rdma->unexpose_window(r.key);
  w->dyn_exposed.clear();
  if (w->rdma_key) w->rdma->unexpose_window(w->rdma_key);
  w->rdma_key = 0;
  w->rdma = nullptr;
}

namespace {

// Posts one RDMA WRITE (`write`) or READ per piece of the target type's
// contiguous runs; `dense` is the origin data packed in run order.
int transfer(Window* w, int target, uint64_t key, uint64_t at, size_t tcount, const Datatype& ttype,
             unsigned char* dense, bool write) {
  btl::Transport* t = route_of(w, target);
  const int world = w->ctx->world_of[target];
  size_t done = 0;
  int rc = MPI_SUCCESS;
  for_each_run(ttype, tcount, [&](std::ptrdiff_t run_off, size_t len) {
    const uint64_t a = at + static_cast<uint64_t>(run_off);
    if (rc != MPI_SUCCESS) return;
    pieces(a, len, [&](uint64_t pa, size_t off, size_t n) {
      if (rc != MPI_SUCCESS) return;
      unsigned char* local = dense + done + off;
      rc = post(write ? "write" : "read", target, [&] {
        return write ? t->put_nb(world, local, n, pa, key) : t->get_nb(world, local, n, pa, key);
      });
    });
    done += len;
  });
  return rc;
}

}  // namespace

int put(Window* w, int target, uint64_t key, uint64_t at, size_t tcount, const Datatype& ttype,
        const unsigned char* dense) {
  // RDMA WRITE only reads `dense`; the shared walker takes a mutable pointer.
  return transfer(w, target, key, at, tcount, ttype, const_cast<unsigned char*>(dense), true);
}

int get(Window* w, int target, uint64_t key, uint64_t at, size_t tcount, const Datatype& ttype,
        unsigned char* dense) {
  return transfer(w, target, key, at, tcount, ttype, dense, false);
}

int flush(Window* w, int target) {
  const int lo = target < 0 ? 0 : target, hi = target < 0 ? w->size : target + 1;
  int rc = MPI_SUCCESS;
  for (int r = lo; r < hi; ++r) {
    if (w->peers[r].path != Path::Rdma) continue;
    btl::Transport* t = route_of(w, r);
    const int world = w->ctx->world_of[r];
    progress::wait_until([&] {
      progress::Guard guard;
      int s = t->flush_test(world);
      if (s < 0 && rc == MPI_SUCCESS) rc = MPI_ERR_OTHER;
      return s != 0;
    });
  }
  return rc;
}

bool nic(const Window* w, int target, const Datatype& basic, const Op* op) {
  if (!w->nic_atomics || basic.size != 8 || !basic.contiguous) return false;
  if (op) {
    if (op->kind != OpKind::sum || (basic.element != ElementKind::int64 && basic.element != ElementKind::uint64))
      return false;
  }
  const Peer& p = w->peers[target];
  if (p.path == Path::Rdma) return true;
  // Our own memory, when every access goes through the NIC (not the
  // IBV_ATOMIC_GLOB case, where local CPU atomics are coherent with it).
  return target == w->rank && w->nic_self_proxy;
}

namespace {

// One NIC atomic on an aligned word of `target`; `old` may be null.
int atomic_one(Window* w, int target, bool cas, uint64_t a, uint64_t value, uint64_t compare, void* old) {
  if (target == w->rank) {
    uint64_t prev = 0;
    int rc = am::proxy_atomic(w, helper_of(w), cas, a, value, compare, &prev);
    if (rc == MPI_SUCCESS && old) memcpy(old, &prev, 8);
    return rc;
  }
  btl::Transport* t = route_of(w, target);
  const int world = w->ctx->world_of[target];
  const uint64_t key = w->peers[target].key;
  return post("atomic", target, [&] { return t->atomic_nb(world, cas, a, key, value, compare, old); });
}

}  // namespace

int fetch_add(Window* w, int target, uint64_t at, size_t tcount, const Datatype& ttype, const unsigned char* in,
              unsigned char* old) {
  // Operations of this origin to this target stay in order (MPI's default
  // accumulate_ordering): active messages sent before are applied first.
  int rc = am::flush(w, target);
  size_t done = 0;
  for_each_run(ttype, tcount, [&](std::ptrdiff_t off, size_t len) {
    const uint64_t a = at + static_cast<uint64_t>(off);
    for (size_t k = 0; k < len && rc == MPI_SUCCESS; k += 8, done += 8) {
      uint64_t v;
      memcpy(&v, in + done, 8);
      rc = atomic_one(w, target, false, a + k, v, 0, old ? old + done : nullptr);
    }
  });
  if (rc == MPI_SUCCESS && old && target != w->rank) rc = rdma::flush(w, target);
  return rc;
}

int compare_and_swap(Window* w, int target, uint64_t at, const void* origin, const void* compare, void* result) {
  int rc = am::flush(w, target);
  uint64_t v, c;
  memcpy(&v, origin, 8);
  memcpy(&c, compare, 8);
  if (rc == MPI_SUCCESS) rc = atomic_one(w, target, true, at, v, c, result);
  if (rc == MPI_SUCCESS && target != w->rank) rc = rdma::flush(w, target);
  return rc;
}

int proxy_atomic(Window* w, int origin, bool cas, uint64_t at, uint64_t value, uint64_t compare, uint64_t* old) {
  // Runs in a handler, PML lock held: post, then poll this transport until
  // it completed (the NIC answers without the origin's CPU).
  if (origin < 0 || origin >= w->size || w->peers[origin].path != Path::Rdma) return MPI_ERR_OTHER;
  btl::Transport* t = route_of(w, origin);
  const int world = w->ctx->world_of[origin];
  int rc;
  Backoff backoff(progress::spin_rounds());
  while ((rc = t->atomic_nb(world, cas, at, w->peers[origin].key, value, compare, old)) == kAgain) {
    t->flush_test(world);
    backoff.idle();
  }
  if (rc != kOk) return MPI_ERR_OTHER;
  int s;
  while ((s = t->flush_test(world)) == 0) backoff.idle();
  return s == 1 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

// ---- dynamic windows ---------------------------------------------------------------

namespace {

Counter dyn_rdma_ops{"axon_osc_dynamic_rdma_ops", Counter::Class::Counter,
                     "Put / Get on dynamic windows moved by RDMA WRITE / READ (registered region of the target)"};
Counter dyn_am_ops{"axon_osc_dynamic_am_ops", Counter::Class::Counter,
                   "Put / Get on dynamic windows to ranks not reached by mapping or CMA that went by active "
                   "messages (no RDMA route, region not registered, or spanning regions)"};
Counter dyn_fetches{"axon_osc_dynamic_key_fetches", Counter::Class::Counter,
                    "Region keys of dynamic windows fetched from a target (first use of a region)"};
Counter dyn_drops{"axon_osc_dynamic_key_drops", Counter::Class::Counter,
                  "Cached region keys of dynamic windows dropped because their target detached the region"};

// The cached region of `target` that holds [first, last), or null.
const Window::DynKey* cached(const Window* w, int target, uint64_t first, uint64_t last, uint64_t* base) {
  const auto& cache = w->dyn_cache[target];
  auto it = cache.upper_bound(first);
  if (it == cache.begin()) return nullptr;
  --it;
  if (first < it->first || last - it->first > it->second.size) return nullptr;
  *base = it->first;
  return &it->second;
}

}  // namespace

void setup_dynamic(Window* w, bool force) {
  w->dyn_cache.resize(w->size);
  w->dyn_invalidations.assign(w->size, 0);
  for (int r = 0; r < w->size; ++r) {
    if (r == w->rank) continue;
    Peer& p = w->peers[r];
    btl::Transport* t = route_of(w, r);
    if (!(force || !p.same_node) || !capable(t)) continue;
    // Regions are registered with this transport at attach (one
    // RDMA-capable transport per process), keys fetched on first use.
    p.path = Path::Rdma;
    p.key = 0;
    if (!w->rdma) w->rdma = t;
  }
}

void attach_region(Window* w, void* base, uint64_t bytes) {
  if (!w->rdma) return;  // nobody reaches us by RDMA: kRegion answers "active messages"
  progress::Guard guard;
  Window::DynRegion r;
  r.base = reinterpret_cast<uint64_t>(base);
  r.size = bytes;
  r.key = w->rdma->expose_window(base, bytes);
  if (!r.key)
    log::debug(1, "osc: cannot register an attached region of %llu bytes for RDMA: other ranks reach it by "
               "active messages", static_cast<unsigned long long>(bytes));
  r.holders.assign(w->size, false);
  w->dyn_exposed.push_back(std::move(r));
}

int detach_region(Window* w, uint64_t base) {
  if (!w->rdma) return MPI_SUCCESS;
  Window::DynRegion r;
  {
    progress::Guard guard;
    auto it = std::find_if(w->dyn_exposed.begin(), w->dyn_exposed.end(),
                           [&](const Window::DynRegion& d) { return d.base == base; });
    if (it == w->dyn_exposed.end()) return MPI_SUCCESS;
    r = std::move(*it);
    w->dyn_exposed.erase(it);  // from now on no origin can fetch its key
  }
  // Every origin that holds the key drops it before the registration goes:
  // memory attached later at this address (or anywhere) gets a new key,
  // fetched anew. MPI allows detach only with no operation to the region
  // pending, so none is in flight with the old key.
  std::vector<int> origins;
  for (int o = 0; o < w->size; ++o)
    if (r.holders[o]) origins.push_back(o);
  int rc = am::region_detached(w, origins, base);
  if (r.key) {
    progress::Guard guard;
    w->rdma->unexpose_window(r.key);
  }
  return rc;
}

int dyn_key(Window* w, int target, uint64_t first, uint64_t last, uint64_t* key) {
  for (;;) {
    uint64_t seen;
    {
      progress::Guard guard;
      uint64_t base;
      if (const Window::DynKey* k = cached(w, target, first, last, &base)) {
        *key = k->key;
        return MPI_SUCCESS;
      }
      seen = w->dyn_invalidations[target];
      dyn_fetches.add();
    }
    uint64_t out[4];
    int rc = am::region(w, target, first, last, out);
    if (rc != MPI_SUCCESS) return rc;
    progress::Guard guard;
    // A detach notice from this target that arrived while we asked may be
    // about this very region (its answer came first): ask again.
    if (w->dyn_invalidations[target] != seen) continue;
    *key = out[2];
    if (out[3]) w->dyn_cache[target][out[0]] = Window::DynKey{out[1], out[2]};
    return MPI_SUCCESS;
  }
}

void count_dynamic(bool by_rdma) { (by_rdma ? dyn_rdma_ops : dyn_am_ops).add(); }

int region_query(Window* w, int origin, uint64_t first, uint64_t last, uint64_t out[4]) {
  if (origin < 0 || origin >= w->size) return MPI_ERR_OTHER;
  if (!w->rdma) {
    // We register nothing: every address of ours goes by active messages,
    // for good (never invalidated).
    Run run{first, last - first};
    int rc = detail::target_check(w, &run, 1);
    if (rc != MPI_SUCCESS) return rc;
    out[0] = 0, out[1] = ~uint64_t{0}, out[2] = 0, out[3] = 1;
    return MPI_SUCCESS;
  }
  for (Window::DynRegion& r : w->dyn_exposed) {
    if (first < r.base || last - r.base > r.size) continue;
    r.holders[origin] = true;
    out[0] = r.base, out[1] = r.size, out[2] = r.key, out[3] = 1;
    return MPI_SUCCESS;
  }
  // Not inside one region: inside adjacent ones (by active messages, not
  // cached) or outside attached memory.
  Run run{first, last - first};
  int rc = detail::target_check(w, &run, 1);
  if (rc != MPI_SUCCESS) return rc;
  out[0] = first, out[1] = last - first, out[2] = 0, out[3] = 0;
  return MPI_SUCCESS;
}

void region_detached(Window* w, int target, uint64_t base) {
  if (target < 0 || target >= w->size || w->dyn_cache.empty()) return;
  ++w->dyn_invalidations[target];
  if (w->dyn_cache[target].erase(base)) dyn_drops.add();
}

}  // namespace axon::osc::rdma
