// One-sided communication on one node: the shared control segment, window
// memory, data movement (mapped memory or CMA), accumulate atomicity and the
// synchronization epochs. See osc.h for the contract, docs/rma.md for the
// design.
#include "osc/osc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/backoff.h"
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
constexpr int kMaxRegions = 4096;         // attached regions per rank (dynamic windows)
constexpr uint32_t kExclusive = 0x80000000u;

// Per target, in the control segment. Fresh shared memory is zero: every
// word starts unlocked and every counter at zero.
struct alignas(64) PeerCtl {
  std::atomic<uint32_t> lock;         // passive target: kExclusive, or the number of shared holders
  std::atomic<uint32_t> acc;          // accumulate mutex (read-modify-write done under it)
  std::atomic<uint64_t> completions;  // PSCW: MPI_Win_complete calls aimed at this rank
  std::atomic<uint32_t> regions_hi;   // dynamic windows: slots [0, regions_hi) of the region table may be used
};
// An attached region of a dynamic window (a table of kMaxRegions per rank
// after the post counters, in dynamic windows' segments only).
struct Region {
  std::atomic<uint64_t> base;
  std::atomic<uint64_t> size;  // 0: free slot
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "control words are shared between processes");

StringParam path_param{"AXON_OSC_PATH", "auto",
                       "How RMA reaches the other ranks of a window: auto (mapped memory or cross-memory "
                       "attach on this node; RDMA WRITE/READ to other nodes where the transport can, active "
                       "messages otherwise and where CMA is forbidden), am (active messages to every other "
                       "rank, for tests) or rdma (RDMA to every other rank the transport reaches with it, "
                       "even on this node, for tests)"};

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

// Our markers in Epochs::locked.
constexpr int8_t kNotLocked = 0, kLockedShared = 1, kLockedExclusive = 2, kLockedNoCheck = 3;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

// Small contiguous-origin Put / Get to Path::Cma targets. MPI lets them
// complete at the next flush / unlock / fence / complete (the origin buffer
// of a Put must not change and that of a Get must not be read before), so
// instead of one process_vm_writev / readv per operation (≈ 2 µs each, the
// system call itself) they wait here, origin pointer and target runs, and
// go out as one call with many iovecs per target. Order: a target's queue
// holds writes or reads, never both; an operation of the other kind, a
// large or non-contiguous one, an accumulate or CAS to that target first
// issues the queue, so everything reaches the target in program order.
struct CmaQueue {
  struct Target {
    std::vector<iovec> local, remote;
    size_t bytes = 0;
    bool write = false;
    bool listed = false;      // in `pending`
    int error = MPI_SUCCESS;  // of an issued batch, returned by the next synchronization
  };
  std::mutex mu;  // operations may come from several threads (MPI_THREAD_MULTIPLE)
  std::vector<Target> targets;
  std::vector<int> pending;  // targets listed (queue not empty, or an error to report)
};

void CmaQueueDelete::operator()(CmaQueue* q) const { delete q; }

// Segment layout: Control header, PeerCtl[n], post counters[n*n], then the
// region tables (dynamic windows) or the data (allocate flavors).
struct Control {
  uint64_t magic;
  uint32_t n;
};

namespace {

size_t peers_offset() { return round_up(sizeof(Control), 64); }
size_t posts_offset(int n) { return peers_offset() + sizeof(PeerCtl) * static_cast<size_t>(n); }
size_t regions_offset(int n) { return round_up(posts_offset(n) + 4ull * n * n, 64); }
// `dynamic`: with the region tables (sparse: pages are touched as regions are attached).
size_t control_bytes(int n, bool dynamic = false) {
  return round_up(regions_offset(n) + (dynamic ? sizeof(Region) * kMaxRegions * n : 0), 4096);
}

PeerCtl& peer_ctl(const Window* w, int r) {
  return reinterpret_cast<PeerCtl*>(reinterpret_cast<unsigned char*>(w->ctl) + peers_offset())[r];
}
Region* regions(const Window* w, int r) {
  return reinterpret_cast<Region*>(reinterpret_cast<unsigned char*>(w->ctl) + regions_offset(w->size)) +
         static_cast<size_t>(r) * kMaxRegions;
}
// Posts of `target` towards `origin` (PSCW): written by the target, read by the origin.
std::atomic<uint32_t>& post_counter(const Window* w, int origin, int target) {
  auto* p = reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<unsigned char*>(w->ctl) +
                                                     posts_offset(w->size));
  return p[static_cast<size_t>(origin) * w->size + target];
}

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

// What each rank tells the others at creation.
struct PeerInfo {
  int64_t pid;
  uint64_t base;
  uint64_t bytes;
  int64_t disp_unit;
  int64_t all_local;  // every rank of the window is on this rank's node
  uint64_t probe;     // address of cma_probe in this process
};

// Read by the other ranks with process_vm_readv at window creation: tells
// whether the ptrace policy lets them reach this process's memory.
const uint64_t cma_probe = 0x43'4d'41'6f'6b'21'21'21ull;

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

// Which ranks of this node CMA reaches (Win_create / dynamic windows read
// and write their memory with it). The ptrace policy may forbid it: those
// targets are then reached by active messages (am.h).
std::vector<bool> probe_cma(const pml::Context* ctx, const std::vector<PeerInfo>& info, int me) {
  std::vector<bool> ok(info.size(), false);
  for (size_t r = 0; r < info.size(); ++r) {
    if (static_cast<int>(r) == me || !rte::is_local(ctx->world_of[r])) continue;
    uint64_t value = 0;
    iovec local{&value, sizeof value}, remote{reinterpret_cast<void*>(info[r].probe), sizeof value};
    ssize_t n = process_vm_readv(static_cast<pid_t>(info[r].pid), &local, 1, &remote, 1, 0);
    ok[r] = n == static_cast<ssize_t>(sizeof value) && value == cma_probe;
    if (!ok[r])
      log::debug(1, "osc: cannot read rank %zu's memory with process_vm_readv (%s): active messages reach it",
                 r, n < 0 ? strerror(errno) : "wrong data");
  }
  return ok;
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

void move_to_private(const Window::Mapping& m, uint64_t inode);

void drop(Window* w) {
  rdma::release(w);  // the registration goes before the memory
  am::unregister_window(w);
  for (const Window::Mapping& m : w->peer_maps) munmap(m.addr, m.len);
  if (w->shared_own.addr) move_to_private(w->shared_own, w->shared_inode);
  if (w->map) munmap(w->map, w->map_len);
  delete w;  // its CmaQueue with it
}

// Private memory: our own is read directly, the others' on this node through
// CMA where permitted, the rest by active messages.
void set_private_peers(Window* w, const std::vector<PeerInfo>& info) {
  const bool am_only = force_am();
  const std::vector<bool> cma = am_only ? std::vector<bool>(w->size) : probe_cma(w->ctx, info, w->rank);
  for (int r = 0; r < w->size; ++r) {
    Peer& p = w->peers[r];
    p.same_node = r == w->rank || rte::is_local(w->ctx->world_of[r]);
    p.path = r == w->rank ? Path::Self : cma[r] ? Path::Cma : Path::Am;
    p.pid = static_cast<int>(info[r].pid);
    p.base = p.path == Path::Am ? 0 : info[r].base;  // Am: displacements are offsets at the target
    p.size = info[r].bytes;
    p.disp_unit = static_cast<int>(info[r].disp_unit);
    if (p.path == Path::Cma && !w->cma) w->cma.reset(new CmaQueue);
  }
  if (w->cma) w->cma->targets.resize(w->size);
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

// ---- shared Win_create memory ----------------------------------------------------
//
// One process_vm_writev / readv costs 2-5 µs here (the system call and the
// walk of the target's page tables), so a Put + flush on Win_create memory
// cost that much, while on Win_allocate memory, which every rank of the node
// maps, it is a memcpy. So MPI_Win_create moves the pages holding a rank's
// memory into a memfd *in place* (same address, same contents: copied, then
// the shared pages mremap'ed over the private ones) and the node's other
// ranks map that memfd (open /proc/<pid>/fd/<n>: the same ptrace permission
// CMA needs). Put, Get and accumulates to that rank are then loads, stores
// and hardware atomics, exactly as on Win_allocate memory (Path::Mapped).
// Only when it is safe (else CMA as before):
// - every page is private anonymous read-write memory (malloc / heap /
//   anonymous mmap; not the stack, not a file, not already shared);
// - no thread but ours runs in the process: the copy and the remap are not
//   atomic for a concurrent writer of those pages (the progress agent is held
//   off with the PML lock meanwhile);
// - at most AXON_OSC_SHARE_CREATE_MAX bytes (the pages are copied twice);
// - every rank of the node that reaches the target could map it (else every
//   origin keeps CMA, so accumulates stay atomic with each other).
// MPI_Win_free makes the pages private anonymous memory again (same test on
// threads; if other threads run then, the pages stay shared memory, which
// behaves the same for this process except across fork()).
// Off by default: it changes the application's own mappings (after a fork()
// the child would share these pages, heap neighbours of the window included,
// instead of getting a copy), which no application asked for.
BoolParam share_param{"AXON_OSC_SHARE_CREATE", false,
                      "Win_create: move each rank's window pages into shared memory in place (same address and "
                      "contents) so that the node's other ranks map them: Put / Get / accumulates become loads, "
                      "stores and atomics instead of one process_vm_writev / readv each (docs/rma.md); 0 (default): CMA"};
SizeParam share_max_param{"AXON_OSC_SHARE_CREATE_MAX", int64_t{1} << 30,
                          "Win_create windows larger than this many bytes stay private memory reached with CMA "
                          "(moving them into shared memory copies them at creation and at MPI_Win_free)"};

// Calls fn(perms, inode, name) for each mapping of this process overlapping
// [lo, hi); false when [lo, hi) is not fully mapped or fn said no.
template <class Fn> bool each_mapping(uint64_t lo, uint64_t hi, Fn fn) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return false;
  char* line = nullptr;
  size_t cap = 0;
  uint64_t covered = lo;  // [lo, covered) checked
  bool ok = true;
  while (ok && covered < hi && getline(&line, &cap, f) > 0) {
    unsigned long long a = 0, b = 0, off = 0, inode = 0;
    unsigned dev_major = 0, dev_minor = 0;
    char perms[8] = {};
    int name_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &a, &b, perms, &off, &dev_major, &dev_minor, &inode,
               &name_at) < 7) {
      ok = false;
      break;
    }
    if (b <= covered) continue;
    if (a > covered) {
      ok = false;  // a hole
      break;
    }
    std::string name = name_at > 0 ? line + name_at : "";
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    ok = fn(perms, static_cast<uint64_t>(inode), name);
    covered = b;
  }
  free(line);
  fclose(f);
  return ok && covered >= hi;
}

// Threads of the application (ours excepted), or -1 when unknown.
int app_threads() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - am::agent_threads() - rte::job().library_threads;
}

// Moves the private anonymous pages [lo, lo+len) into a new memfd in place.
// Returns its descriptor, or -1 with nothing changed.
int move_to_memfd(uint64_t lo, size_t len, uint64_t* inode) {
  int fd = memfd_create("axon-osc-window", MFD_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  void* tmp = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(len)) == 0 && fstat(fd, &st) == 0)
    tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (tmp == MAP_FAILED) {
    close(fd);
    return -1;
  }
  memcpy(tmp, reinterpret_cast<void*>(lo), len);
  // mremap over an existing mapping replaces it in one step: there is no
  // moment at which the address range is unmapped.
  if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(lo)) == MAP_FAILED) {
    munmap(tmp, len);
    close(fd);
    return -1;
  }
  *inode = st.st_ino;
  return fd;
}

// The reverse, at MPI_Win_free: private anonymous pages with the same
// contents, if the range still is our memfd (an erroneous program may have
// unmapped the memory meanwhile) and no other thread runs.
void move_to_private(const Window::Mapping& m, uint64_t inode) {
  const uint64_t lo = reinterpret_cast<uint64_t>(m.addr);
  pml::Guard guard;  // holds off the progress agent (it writes window memory)
  if (app_threads() != 1) return;
  if (!each_mapping(lo, lo + m.len, [&](const char*, uint64_t ino, const std::string&) { return ino == inode; }))
    return;
  void* tmp = mmap(nullptr, m.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return;  // stays shared memory: the same memory for this process
  memcpy(tmp, m.addr, m.len);
  if (mremap(tmp, m.len, m.len, MREMAP_MAYMOVE | MREMAP_FIXED, m.addr) == MAP_FAILED) munmap(tmp, m.len);
}

// Collective over the window, after set_private_peers: turns the node's
// ranks whose memory could be shared into Path::Mapped on every rank of the
// node (and for ourselves), as described above.
int share_create_memory(Window* w, const std::vector<PeerInfo>& info) {
  if (!share_param.get() || force_am() || force_rdma()) return MPI_SUCCESS;  // the same on every rank
#if defined(__SANITIZE_ADDRESS__)
  // The page copies read neighbouring heap bytes that AddressSanitizer
  // considers freed: sanitizer builds keep CMA (the same on every rank).
  return MPI_SUCCESS;
#endif
  struct Shared {
    int64_t fd;  // -1: not shared
    uint64_t lo;
    uint64_t len;
  };
  Shared mine{-1, 0, 0};
  bool local_peer = false;
  for (int r = 0; r < w->size; ++r)
    if (r != w->rank && w->peers[r].same_node) local_peer = true;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t base = reinterpret_cast<uint64_t>(w->base);
  if (local_peer && w->base && w->bytes && w->bytes <= static_cast<uint64_t>(share_max_param.get())) {
    const uint64_t lo = base / page * page, hi = (base + w->bytes + page - 1) / page * page;
    pml::Guard guard;  // holds off the progress agent (it writes window memory)
    uint64_t inode = 0;
    if (app_threads() == 1 &&
        each_mapping(lo, hi, [](const char* perms, uint64_t ino, const std::string& name) {
          return strcmp(perms, "rw-p") == 0 && ino == 0 && (name.empty() || name == "[heap]");
        })) {
      int fd = move_to_memfd(lo, hi - lo, &inode);
      if (fd >= 0) {
        mine = Shared{fd, lo, hi - lo};
        w->shared_own = Window::Mapping{reinterpret_cast<void*>(lo), hi - lo};
        w->shared_inode = inode;
      }
    }
  }
  std::vector<Shared> all(w->size);
  int rc = coll::allgather_bytes(&mine, sizeof mine, all.data(), w->ctx);
  if (rc != MPI_SUCCESS) return rc;
  // Map every shared rank of the node; vote per rank whether we could.
  std::vector<void*> maps(w->size, nullptr);
  std::vector<int32_t> vote(w->size, 1), agreed(w->size, 0);
  for (int r = 0; r < w->size; ++r) {
    if (all[r].fd < 0) {
      vote[r] = 0;
      continue;
    }
    if (r == w->rank || !w->peers[r].same_node) continue;
    const std::string path = "/proc/" + std::to_string(info[r].pid) + "/fd/" + std::to_string(all[r].fd);
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    void* m = fd < 0 ? MAP_FAILED : mmap(nullptr, all[r].len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd);
    if (m == MAP_FAILED) {
      log::debug(1, "osc: cannot map rank %d's Win_create memory (%s): CMA reaches it", r, strerror(errno));
      vote[r] = 0;
    } else {
      maps[r] = m;
    }
  }
  rc = coll::allreduce(vote.data(), agreed.data(), w->size, datatype_from_handle(MPI_INT32_T),
                       op_from_handle(MPI_MIN), w->ctx);
  if (mine.fd >= 0) close(static_cast<int>(mine.fd));  // every rank opened it (or gave up) before the allreduce
  if (rc != MPI_SUCCESS) agreed.assign(w->size, 0);
  for (int r = 0; r < w->size; ++r) {
    Peer& p = w->peers[r];
    if (!agreed[r]) {
      if (maps[r]) munmap(maps[r], all[r].len);
      continue;
    }
    if (r == w->rank) {
      p.path = Path::Mapped;
      p.mapped = static_cast<unsigned char*>(w->base);
    } else if (maps[r]) {
      p.path = Path::Mapped;
      p.mapped = static_cast<unsigned char*>(maps[r]) + (info[r].base - all[r].lo);
      w->peer_maps.push_back(Window::Mapping{maps[r], all[r].len});
    }
  }
  if (w->shared_own.addr && !agreed[w->rank]) {
    move_to_private(w->shared_own, w->shared_inode);
    w->shared_own = Window::Mapping{nullptr, 0};
  }
  return rc;
}

// ---- data movement -------------------------------------------------------------

// The bytes [lo, hi) that `count` items of `t` touch, from their displacement.
void span_of(size_t count, const Datatype& t, std::ptrdiff_t* lo, std::ptrdiff_t* hi) {
  *lo = t.true_lb, *hi = t.true_lb + t.true_extent;
  if (count > 1) {
    std::ptrdiff_t span = static_cast<std::ptrdiff_t>(count - 1) * t.extent;
    (span < 0 ? *lo : *hi) += span;
  }
  if (count == 0 || t.size == 0) *lo = *hi = 0;
}

// Where `count` items of `t` at displacement `disp` of `target` are: checks
// the range and returns the address (local for Mapped / Self, the target's
// for Cma).
int locate(const Window* w, int target, MPI_Aint disp, size_t count, const Datatype& t, uint64_t* at) {
  const Peer& p = w->peers[target];
  std::ptrdiff_t lo, hi;
  span_of(count, t, &lo, &hi);
  if (w->flavor == Flavor::Dynamic) {
    // Absolute addresses: the whole access must lie in attached memory.
    uint64_t first = static_cast<uint64_t>(disp + lo), last = static_cast<uint64_t>(disp + hi);
    if (lo == hi || !p.same_node) {
      // Another node's regions are not visible here: that target checks.
      *at = static_cast<uint64_t>(disp);
      return MPI_SUCCESS;
    }
    if (!attached(w, target, first, last)) return MPI_ERR_RMA_RANGE;
    *at = static_cast<uint64_t>(disp);
    return MPI_SUCCESS;
  }
  if (disp < 0) return MPI_ERR_RMA_RANGE;
  __int128 off = static_cast<__int128>(disp) * p.disp_unit;
  if (lo != hi && (off + lo < 0 || off + hi > static_cast<__int128>(p.size))) return MPI_ERR_RMA_RANGE;
  uint64_t start = p.path == Path::Mapped ? reinterpret_cast<uint64_t>(p.mapped) : p.base;
  *at = start + static_cast<uint64_t>(off);
  return MPI_SUCCESS;
}

// Moves the packed stream `dense` to (write) or from target memory holding
// `count` items of `t` at `at`.
int transfer(const Window* w, int target, uint64_t at, size_t count, const Datatype& t, unsigned char* dense,
             bool write) {
  const Peer& p = w->peers[target];
  if (p.path != Path::Cma) {
    size_t done = 0;
    for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
      auto* mem = reinterpret_cast<unsigned char*>(at + off);
      if (write) memcpy(mem, dense + done, len);
      else memcpy(dense + done, mem, len);
      done += len;
    });
    return MPI_SUCCESS;
  }
  std::vector<iovec> remote;
  size_t done = 0, batch = 0;
  int rc = MPI_SUCCESS;
  auto flush_batch = [&] {
    if (remote.empty() || rc != MPI_SUCCESS) return;
    iovec local{dense + done, batch};
    ssize_t n = write ? process_vm_writev(p.pid, &local, 1, remote.data(), remote.size(), 0)
                      : process_vm_readv(p.pid, &local, 1, remote.data(), remote.size(), 0);
    if (n != static_cast<ssize_t>(batch)) {
      // EPERM: the ptrace policy forbids CMA; the active-message path that
      // would replace it is not implemented yet (docs/rma.md).
      log::error("osc: %s of %zu bytes at rank %d failed: %s", write ? "process_vm_writev" : "process_vm_readv",
                 batch, target, n < 0 ? strerror(errno) : "short transfer");
      rc = n < 0 && errno == EFAULT ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
    }
    done += batch;
    batch = 0;
    remote.clear();
  };
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    remote.push_back(iovec{reinterpret_cast<void*>(at + off), len});
    batch += len;
    if (remote.size() == 1024) flush_batch();
  });
  flush_batch();
  return rc;
}

constexpr size_t kCmaIov = 1024;            // IOV_MAX: per side of one system call
constexpr size_t kCmaOpMax = 64 * 1024;     // larger operations go out at once
constexpr size_t kCmaBudget = 1024 * 1024;  // bytes queued per target before issuing
constexpr size_t kCmaOpRuns = 64;           // target runs of one queued operation

// Issues target t's queue (the caller holds q.mu).
void cma_issue(const Window* w, CmaQueue& q, int t) {
  CmaQueue::Target& x = q.targets[t];
  if (x.local.empty()) return;
  const pid_t pid = w->peers[t].pid;
  ssize_t n = x.write ? process_vm_writev(pid, x.local.data(), x.local.size(), x.remote.data(), x.remote.size(), 0)
                      : process_vm_readv(pid, x.local.data(), x.local.size(), x.remote.data(), x.remote.size(), 0);
  if (n != static_cast<ssize_t>(x.bytes)) {
    log::error("osc: %s of %zu bytes (%zu operations) at rank %d failed: %s",
               x.write ? "process_vm_writev" : "process_vm_readv", x.bytes, x.local.size(), t,
               n < 0 ? strerror(errno) : "short transfer");
    if (x.error == MPI_SUCCESS) x.error = n < 0 && errno == EFAULT ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
  }
  x.local.clear();
  x.remote.clear();
  x.bytes = 0;
}

// Issues the queue of `target` (-1: every target) and returns the first
// error one of its batches had since the last call.
int cma_drain(Window* w, int target) {
  CmaQueue* q = w->cma.get();
  if (!q) return MPI_SUCCESS;
  std::lock_guard<std::mutex> guard(q->mu);
  int rc = MPI_SUCCESS;
  auto finish = [&](int t) {
    cma_issue(w, *q, t);
    CmaQueue::Target& x = q->targets[t];
    if (rc == MPI_SUCCESS) rc = x.error;
    x.error = MPI_SUCCESS;
    x.listed = false;
  };
  if (target >= 0) {
    if (!q->targets[target].listed) return MPI_SUCCESS;
    finish(target);
    for (size_t i = 0; i < q->pending.size(); ++i)
      if (q->pending[i] == target) {
        q->pending[i] = q->pending.back();
        q->pending.pop_back();
        break;
      }
    return rc;
  }
  for (int t : q->pending) finish(t);
  q->pending.clear();
  return rc;
}

// Issues the queue of `target` before an operation that must come after it
// (its errors stay for the next synchronization).
void cma_order(Window* w, int target) {
  if (!w->cma) return;
  std::lock_guard<std::mutex> guard(w->cma->mu);
  cma_issue(w, *w->cma, target);
}

// Queues a Put (write) or Get of the contiguous origin buffer `buf` to the
// runs of `count` items of `t` at target address `at`. False: not queued
// (too large, too many runs): the caller transfers it now, after issuing
// the queue.
bool cma_enqueue(Window* w, int target, uint64_t at, size_t count, const Datatype& t, unsigned char* buf,
                 bool write) {
  CmaQueue* q = w->cma.get();
  const size_t bytes = t.size * count;
  if (!q || bytes > kCmaOpMax) return false;
  iovec runs[kCmaOpRuns];
  size_t n = 0;
  bool fits = true;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    if (n == kCmaOpRuns) fits = false;
    else runs[n++] = iovec{reinterpret_cast<void*>(at + off), len};
  });
  if (!fits) return false;
  std::lock_guard<std::mutex> guard(q->mu);
  CmaQueue::Target& x = q->targets[target];
  if (!x.listed) {
    q->pending.push_back(target);
    x.listed = true;
  }
  if (!x.local.empty() && (x.write != write || x.local.size() == kCmaIov || x.remote.size() + n > kCmaIov ||
             x.bytes + bytes > kCmaBudget))
    cma_issue(w, *q, target);  // stays listed: its error, if any, goes to the next synchronization
  x.write = write;
  x.local.push_back(iovec{buf, bytes});
  x.remote.insert(x.remote.end(), runs, runs + n);
  x.bytes += bytes;
  return true;
}

// The basic type every element of `t` has, or nullptr (mixed / empty).
const Datatype* basic_of(const Datatype& t) {
  if (t.predefined) return &t;
  if (t.signature_count == 0) return nullptr;
  const Datatype* b = t.signature[0].basic;
  for (size_t i = 1; i < t.signature_count; ++i)
    if (t.signature[i].basic != b) return nullptr;
  return b;
}

// inout = in op inout on `count` packed elements of `basic`. op_apply works
// on elements laid out with their extent: pair types with padding
// (MPI_DOUBLE_INT ...) are unpacked around it.
int apply_packed(const Op& op, const unsigned char* in, unsigned char* inout, size_t count, const Datatype& basic) {
  if (basic.contiguous) return op_apply(op, in, inout, count, basic);
  const size_t extent = static_cast<size_t>(basic.extent);
  std::vector<unsigned char> a(count * extent), b(count * extent);
  unpack_items(basic, in, count, a.data());
  unpack_items(basic, inout, count, b.data());
  int rc = op_apply(op, a.data(), b.data(), count, basic);
  if (rc == MPI_SUCCESS) pack_items(basic, b.data(), count, inout);
  return rc;
}

// The accumulate lock of a target (held only for the read-modify-write).
class AccLock {
 public:
  AccLock(const Window* w, int target) : word_(peer_ctl(w, target).acc) {
    Backoff backoff(pml::spin_rounds());
    for (;;) {
      uint32_t expected = 0;
      if (word_.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return;
      backoff.idle();
    }
  }
  ~AccLock() { word_.store(0, std::memory_order_release); }
  AccLock(const AccLock&) = delete;
  AccLock& operator=(const AccLock&) = delete;

 private:
  std::atomic<uint32_t>& word_;
};

// One element updated atomically: *addr = in op *addr; the old value to `old`.
template <class U> void atomic_element(U* addr, const void* in, void* old_out, const Op& op, const Datatype& basic) {
  U old;
  if (op.kind == OpKind::no_op) {
    old = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
  } else if (op.kind == OpKind::replace) {
    U v;
    memcpy(&v, in, sizeof v);
    old = __atomic_exchange_n(addr, v, __ATOMIC_ACQ_REL);
  } else {
    old = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
    for (;;) {
      U v = old;
      op_apply(op, in, &v, 1, basic);
      if (__atomic_compare_exchange_n(addr, &old, v, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
    }
  }
  if (old_out) memcpy(old_out, &old, sizeof old);
}

// Compare-and-swap of one aligned 4- or 8-byte word in memory other
// processes map too; `result` receives the old value.
void atomic_compare_and_swap(void* word, size_t size, const void* origin, const void* compare, void* result) {
  if (size == 4) {
    uint32_t expected, desired;
    memcpy(&expected, compare, 4);
    memcpy(&desired, origin, 4);
    __atomic_compare_exchange_n(static_cast<uint32_t*>(word), &expected, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    memcpy(result, &expected, 4);
  } else {
    uint64_t expected, desired;
    memcpy(&expected, compare, 8);
    memcpy(&desired, origin, 8);
    __atomic_compare_exchange_n(static_cast<uint64_t*>(word), &expected, desired, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    memcpy(result, &expected, 8);
  }
}

// Whether accesses of `basic` elements at these runs use hardware atomics:
// mapped memory, 4- or 8-byte elements, every element aligned. The choice
// depends only on the window flavor, the type and the address, so concurrent
// accumulates on the same location with the same basic type always take the
// same path (their atomicity is what MPI requires).
bool use_atomics(const Peer& p, const Datatype& basic, uint64_t at, const Datatype& t, size_t count) {
  if (p.path != Path::Mapped || (basic.size != 4 && basic.size != 8) || !basic.contiguous) return false;
  bool aligned = true;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    if ((at + off) % basic.size || len % basic.size) aligned = false;
  });
  return aligned;
}

// Every element of `t` at `at` on an 8-byte boundary (NIC atomics).
bool aligned8(uint64_t at, const Datatype& t, size_t count) {
  bool aligned = true;
  for_each_run(t, count, [&](std::ptrdiff_t off, size_t len) {
    if ((at + off) % 8 || len % 8) aligned = false;
  });
  return aligned;
}

// Active messages name target memory by its offset from the target's base;
// locate() gives Rdma peers' absolute addresses.
uint64_t am_at(const Peer& p, uint64_t at) { return p.path == Path::Rdma ? at - p.base : at; }

// The registration key of a Path::Rdma target's memory at `at` (0: reach
// it by active messages: a dynamic window's region that is not registered,
// or an access spanning regions), or MPI_ERR_RMA_RANGE (dynamic windows:
// not attached there). Counts dynamic windows' operations by path.
int rdma_key(Window* w, int target, uint64_t at, size_t count, const Datatype& t, uint64_t* key) {
  if (w->flavor != Flavor::Dynamic) {
    *key = w->peers[target].key;
    return MPI_SUCCESS;
  }
  std::ptrdiff_t lo, hi;
  span_of(count, t, &lo, &hi);
  int rc = rdma::dyn_key(w, target, at + static_cast<uint64_t>(lo), at + static_cast<uint64_t>(hi), key);
  if (rc == MPI_SUCCESS) rdma::count_dynamic(*key != 0);
  return rc;
}

// Waits for what this rank sent to `target` (-1: all) by messages and RDMA.
int flush_ops(Window* w, int target) {
  int crc = cma_drain(w, target);
  int rc = am::flush(w, target);
  if (rc == MPI_SUCCESS) rc = crc;
  int rrc = rdma::flush(w, target);
  return rc != MPI_SUCCESS ? rc : rrc;
}

bool holds_passive(const Window* w, int target) {
  return w->ep.lock_all || w->ep.locked[target] != kNotLocked;
}

bool any_locked(const Window* w) {
  for (int8_t l : w->ep.locked)
    if (l != kNotLocked) return true;
  return false;
}

}  // namespace

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

namespace {
// Where this process can load and store `rank`'s window memory directly, or
// null: memory mapped here (the allocate flavors' segment, Win_create memory
// moved to shared memory) and our own Win_create memory. A dynamic window
// has no memory of its own (what is attached is not its size).
const void* addressable_memory(const Window* w, int rank) {
  const Peer& p = w->peers[rank];
  if (w->flavor == Flavor::Dynamic || p.size == 0) return nullptr;
  if (p.mapped) return p.mapped;
  return rank == w->rank ? w->base : nullptr;
}
}  // namespace

int shared_query(const Window* w, int rank, uint64_t* bytes, int* disp_unit, void** base) {
  // MPI-4.1 12.2.3: every flavor may be queried; memory that is not directly
  // addressable here answers size 0 and NULL (a Win_allocate window's ranks
  // on other nodes, other ranks' private Win_create memory, dynamic windows).
  if (rank == MPI_PROC_NULL) {
    // The lowest rank that has memory (for allocate_shared windows every
    // rank's is addressable), as MPICH and Open MPI read it for the other
    // flavors too: the lowest such rank whose memory is addressable here.
    rank = -1;
    for (int r = 0; r < w->size && rank < 0; ++r)
      if (addressable_memory(w, r)) rank = r;
    if (rank < 0) {
      *bytes = 0;
      *disp_unit = 1;
      *base = nullptr;
      return MPI_SUCCESS;
    }
  }
  // A rank that has no memory has none to point to: NULL, as MPICH returns
  // (its test win_shared_noncontig_put asserts it).
  const void* memory = addressable_memory(w, rank);
  *bytes = memory ? w->peers[rank].size : 0;
  *disp_unit = w->peers[rank].disp_unit;
  *base = const_cast<void*>(memory);
  return MPI_SUCCESS;
}

// ---- operations -------------------------------------------------------------------

int check_access(const Window* w, int target) {
  if (w->ep.fence || holds_passive(w, target)) return MPI_SUCCESS;
  if (w->ep.started)
    for (int t : w->ep.start_group)
      if (t == target) return MPI_SUCCESS;
  return MPI_ERR_RMA_SYNC;
}

int check_passive(const Window* w, int target) {
  return holds_passive(w, target) ? MPI_SUCCESS : MPI_ERR_RMA_SYNC;
}

int put(Window* w, const void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype) {
  if (otype.size * ocount != ttype.size * tcount) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS || ttype.size * tcount == 0) return rc;
  const Peer& p = w->peers[target];
  if (otype.contiguous && ttype.contiguous && p.path <= Path::Self) {
    memcpy(reinterpret_cast<void*>(at), origin, otype.size * ocount);  // the common case
    return MPI_SUCCESS;
  }
  std::vector<unsigned char> packed;
  const unsigned char* dense = static_cast<const unsigned char*>(origin);
  if (!otype.contiguous) {
    packed.resize(otype.size * ocount);
    pack_items(otype, origin, ocount, packed.data());
    dense = packed.data();
  }
  if (p.path == Path::Rdma) {
    uint64_t key;
    rc = rdma_key(w, target, at, tcount, ttype, &key);
    if (rc != MPI_SUCCESS) return rc;
    if (key) return rdma::put(w, target, key, at, tcount, ttype, dense);
    return am::put(w, target, at, tcount, ttype, dense);  // dynamic: this region by active messages
  }
  if (p.path == Path::Am) {
    if (w->flavor == Flavor::Dynamic) rdma::count_dynamic(false);
    return am::put(w, target, at, tcount, ttype, dense);
  }
  if (p.path == Path::Cma) {
    // Contiguous origin: queued (the buffer is ours to read until the
    // synchronization); otherwise after what is queued, now.
    if (otype.contiguous && cma_enqueue(w, target, at, tcount, ttype, const_cast<unsigned char*>(dense), true))
      return MPI_SUCCESS;
    cma_order(w, target);
  }
  return transfer(w, target, at, tcount, ttype, const_cast<unsigned char*>(dense), true);
}

int get(Window* w, void* origin, size_t ocount, const Datatype& otype, int target, MPI_Aint disp,
        size_t tcount, const Datatype& ttype) {
  if (otype.size * ocount != ttype.size * tcount) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS || ttype.size * tcount == 0) return rc;
  uint64_t key = 0;
  if (w->peers[target].path == Path::Rdma) {
    rc = rdma_key(w, target, at, tcount, ttype, &key);
    if (rc != MPI_SUCCESS) return rc;
  }
  if (key) {
    // Straight into the origin buffer, complete at the next flush; a
    // non-contiguous origin type is unpacked from a buffer filled now.
    if (otype.contiguous) return rdma::get(w, target, key, at, tcount, ttype, static_cast<unsigned char*>(origin));
    std::vector<unsigned char> packed(otype.size * ocount);
    rc = rdma::get(w, target, key, at, tcount, ttype, packed.data());
    if (rc == MPI_SUCCESS) rc = rdma::flush(w, target);
    if (rc == MPI_SUCCESS) unpack_items(otype, packed.data(), ocount, origin);
    return rc;
  }
  // Path::Rdma without a key: a dynamic window's region reached by messages.
  const bool by_am = w->peers[target].path == Path::Am || w->peers[target].path == Path::Rdma;
  if (w->peers[target].path == Path::Am && w->flavor == Flavor::Dynamic) rdma::count_dynamic(false);
  if (w->peers[target].path == Path::Cma) {
    // Contiguous origin: the data lands at the synchronization (MPI allows
    // it); otherwise read now, after what is queued.
    if (otype.contiguous && cma_enqueue(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin), false))
      return MPI_SUCCESS;
    cma_order(w, target);
  }
  if (otype.contiguous)
    return by_am ? am::get(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin))
                 : transfer(w, target, at, tcount, ttype, static_cast<unsigned char*>(origin), false);
  std::vector<unsigned char> packed(otype.size * ocount);
  rc = by_am ? am::get(w, target, at, tcount, ttype, packed.data())
             : transfer(w, target, at, tcount, ttype, packed.data(), false);
  if (rc == MPI_SUCCESS) unpack_items(otype, packed.data(), ocount, origin);
  return rc;
}

int accumulate(Window* w, const void* origin, size_t ocount, const Datatype* otype, void* result,
               size_t rcount, const Datatype* rtype, int target, MPI_Aint disp, size_t tcount,
               const Datatype& ttype, const Op& op) {
  const Datatype* basic = basic_of(ttype);
  const size_t bytes = ttype.size * tcount;
  if (bytes == 0) return MPI_SUCCESS;
  if (!basic || basic->size == 0) return MPI_ERR_TYPE;
  if (!op_defined_for(op, *basic)) return MPI_ERR_OP;
  const bool no_op = op.kind == OpKind::no_op;
  if (!no_op) {
    const Datatype* obasic = otype ? basic_of(*otype) : nullptr;
    if (!obasic || obasic->element != basic->element || otype->size * ocount != bytes) return MPI_ERR_TYPE;
  }
  if (result && rtype->size * rcount != bytes) return MPI_ERR_TYPE;
  uint64_t at;
  int rc = locate(w, target, disp, tcount, ttype, &at);
  if (rc != MPI_SUCCESS) return rc;

  // Origin data and fetched data as packed streams of basic elements.
  std::vector<unsigned char> in_buf, old_buf;
  const unsigned char* in = nullptr;
  if (!no_op) {
    in = static_cast<const unsigned char*>(origin);
    if (!otype->contiguous) {
      in_buf.resize(bytes);
      pack_items(*otype, origin, ocount, in_buf.data());
      in = in_buf.data();
    }
  }
  unsigned char* old = nullptr;
  if (result) {
    if (rtype->contiguous) old = static_cast<unsigned char*>(result);
    else old_buf.resize(bytes), old = old_buf.data();
  }

  const Peer& p = w->peers[target];
  if (rdma::nic(w, target, *basic, &op) && aligned8(at, ttype, tcount)) {
    rc = rdma::fetch_add(w, target, at, tcount, ttype, in, old);
  } else if (p.path == Path::Am || p.path == Path::Rdma) {
    // After this origin's NIC atomics to the target (accumulate ordering).
    if (p.path == Path::Rdma && w->nic_atomics) rc = rdma::flush(w, target);
    if (rc == MPI_SUCCESS) rc = am::accumulate(w, target, am_at(p, at), tcount, ttype, *basic, op, in, old);
  } else if (use_atomics(p, *basic, at, ttype, tcount)) {
    size_t done = 0;
    const size_t es = basic->size;
    for_each_run(ttype, tcount, [&](std::ptrdiff_t off, size_t len) {
      auto* mem = reinterpret_cast<unsigned char*>(at + off);
      for (size_t i = 0; i < len; i += es, done += es) {
        const void* src = in ? in + done : nullptr;
        void* dst = old ? old + done : nullptr;
        if (es == 4) atomic_element(reinterpret_cast<uint32_t*>(mem + i), src, dst, op, *basic);
        else atomic_element(reinterpret_cast<uint64_t*>(mem + i), src, dst, op, *basic);
      }
    });
  } else {
    std::vector<unsigned char> cur(bytes);
    if (p.path == Path::Cma) cma_order(w, target);  // after this origin's queued Put / Get
    AccLock lock(w, target);
    rc = transfer(w, target, at, tcount, ttype, cur.data(), false);
    if (rc == MPI_SUCCESS && old) memcpy(old, cur.data(), bytes);
    if (rc == MPI_SUCCESS && !no_op) {
      rc = apply_packed(op, in, cur.data(), bytes / basic->size, *basic);
      if (rc == MPI_SUCCESS) rc = transfer(w, target, at, tcount, ttype, cur.data(), true);
    }
  }
  if (rc == MPI_SUCCESS && result && !rtype->contiguous) unpack_items(*rtype, old, rcount, result);
  return rc;
}

int compare_and_swap(Window* w, const void* origin, const void* compare, void* result, const Datatype& type,
                     int target, MPI_Aint disp) {
  uint64_t at;
  int rc = locate(w, target, disp, 1, type, &at);
  if (rc != MPI_SUCCESS) return rc;
  const Peer& p = w->peers[target];
  if (rdma::nic(w, target, type, nullptr) && at % 8 == 0)
    return rdma::compare_and_swap(w, target, at, origin, compare, result);
  if (p.path == Path::Am || p.path == Path::Rdma) {
    if (p.path == Path::Rdma && w->nic_atomics) rc = rdma::flush(w, target);
    return rc != MPI_SUCCESS ? rc : am::compare_and_swap(w, target, am_at(p, at), type, origin, compare, result);
  }
  if (use_atomics(p, type, at, type, 1)) {
    atomic_compare_and_swap(reinterpret_cast<void*>(at), type.size, origin, compare, result);
    return MPI_SUCCESS;
  }
  std::vector<unsigned char> cur(type.size);
  if (p.path == Path::Cma) cma_order(w, target);
  AccLock lock(w, target);
  rc = transfer(w, target, at, 1, type, cur.data(), false);
  if (rc != MPI_SUCCESS) return rc;
  memcpy(result, cur.data(), type.size);
  if (memcmp(cur.data(), compare, type.size) == 0)
    rc = transfer(w, target, at, 1, type, const_cast<unsigned char*>(static_cast<const unsigned char*>(origin)),
                  true);
  return rc;
}

// ---- synchronization ----------------------------------------------------------------

int fence(Window* w, int assert_bits) {
  if (w->ep.started || w->ep.posted || w->ep.lock_all || any_locked(w)) return MPI_ERR_RMA_SYNC;
  // Operations on mapped / CMA targets completed at their call, those sent
  // as active messages once acknowledged: then the barrier ends the epoch
  // everywhere.
  int frc = flush_ops(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  int rc = coll::barrier(w->ctx);
  if (rc == MPI_SUCCESS) rc = frc;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  w->ep.fence = !(assert_bits & MPI_MODE_NOSUCCEED);
  return rc;
}

int post(Window* w, const std::vector<int>& origins, int assert_bits) {
  if (w->ep.posted) return MPI_ERR_RMA_SYNC;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!(assert_bits & MPI_MODE_NOCHECK))
    for (int o : origins) {
      if (w->peers[o].same_node) post_counter(w, o, w->rank).fetch_add(1, std::memory_order_release);
      else if (int rc = am::post(w, o); rc != MPI_SUCCESS) return rc;
    }
  w->ep.post_group = origins;
  w->ep.completions_expected += origins.size();
  w->ep.posted = true;
  return MPI_SUCCESS;
}

int start(Window* w, const std::vector<int>& targets, int assert_bits) {
  if (w->ep.started || w->ep.lock_all || any_locked(w)) return MPI_ERR_RMA_SYNC;
  if (!(assert_bits & MPI_MODE_NOCHECK)) {
    for (int t : targets) {
      std::atomic<uint32_t>& posts = post_counter(w, w->rank, t);
      uint32_t seen = w->ep.posts_seen[t];
      pml::wait_until([&] { return posts.load(std::memory_order_acquire) != seen; });
      w->ep.posts_seen[t] = seen + 1;
    }
  }
  w->ep.start_group = targets;
  w->ep.started = true;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int complete(Window* w) {
  if (!w->ep.started) return MPI_ERR_RMA_SYNC;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  int rc = MPI_SUCCESS;
  for (int t : w->ep.start_group) {
    // Our active messages to t are applied before t learns we completed.
    int frc = w->peers[t].path >= Path::Cma ? flush_ops(w, t) : MPI_SUCCESS;
    if (w->peers[t].same_node) peer_ctl(w, t).completions.fetch_add(1, std::memory_order_release);
    else if (int crc = am::complete(w, t); crc != MPI_SUCCESS) frc = crc;
    if (rc == MPI_SUCCESS) rc = frc;
  }
  w->ep.started = false;
  w->ep.start_group.clear();
  return rc;
}

int test(Window* w, bool* done) {
  if (!w->ep.posted) return MPI_ERR_RMA_SYNC;
  *done = peer_ctl(w, w->rank).completions.load(std::memory_order_acquire) >= w->ep.completions_expected;
  if (*done) {
    w->ep.posted = false;
    w->ep.post_group.clear();
  }
  return MPI_SUCCESS;
}

void wait_ready(const Window* w) {
  // Only post / wait / test change these, and only one thread may wait on
  // an exposure epoch; the counter is atomic.
  if (!w->ep.posted) return;
  const std::atomic<uint64_t>& done = peer_ctl(w, w->rank).completions;
  const uint64_t expected = w->ep.completions_expected;
  pml::wait_until([&] { return done.load(std::memory_order_acquire) >= expected; });
}

int wait(Window* w) {
  if (!w->ep.posted) return MPI_ERR_RMA_SYNC;
  std::atomic<uint64_t>& done = peer_ctl(w, w->rank).completions;
  const uint64_t expected = w->ep.completions_expected;
  pml::wait_until([&] { return done.load(std::memory_order_acquire) >= expected; });
  w->ep.posted = false;
  w->ep.post_group.clear();
  return MPI_SUCCESS;
}

namespace {

void acquire_shared(std::atomic<uint32_t>& word) {
  pml::wait_until([&] {
    uint32_t v = word.load(std::memory_order_relaxed);
    return !(v & kExclusive) && word.compare_exchange_weak(v, v + 1, std::memory_order_acquire);
  });
}

void acquire_exclusive(std::atomic<uint32_t>& word) {
  pml::wait_until([&] {
    uint32_t v = 0;
    return word.compare_exchange_weak(v, kExclusive, std::memory_order_acquire);
  });
}

void release(std::atomic<uint32_t>& word, int8_t how) {
  if (how == kLockedExclusive) word.store(0, std::memory_order_release);
  else if (how == kLockedShared) word.fetch_sub(1, std::memory_order_release);
}

}  // namespace

int lock(Window* w, int lock_type, int target, int assert_bits) {
  if (w->ep.lock_all || w->ep.started || w->ep.locked[target] != kNotLocked) return MPI_ERR_RMA_SYNC;
  std::atomic<uint32_t>& word = peer_ctl(w, target).lock;
  int8_t how = lock_type == MPI_LOCK_EXCLUSIVE ? kLockedExclusive : kLockedShared;
  if (assert_bits & MPI_MODE_NOCHECK) how = kLockedNoCheck;
  else if (!w->peers[target].same_node) {
    if (int rc = am::lock(w, &target, 1, how == kLockedExclusive); rc != MPI_SUCCESS) return rc;
  } else if (how == kLockedExclusive) acquire_exclusive(word);
  else acquire_shared(word);
  w->ep.locked[target] = how;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int unlock(Window* w, int target) {
  if (w->ep.lock_all || w->ep.locked[target] == kNotLocked) return MPI_ERR_RMA_SYNC;
  int rc = w->peers[target].path >= Path::Cma ? flush_ops(w, target) : MPI_SUCCESS;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const int8_t how = w->ep.locked[target];
  w->ep.locked[target] = kNotLocked;
  if (w->peers[target].same_node) release(peer_ctl(w, target).lock, how);
  else if (how != kLockedNoCheck) {
    int urc = am::unlock(w, &target, 1, how == kLockedExclusive);
    if (rc == MPI_SUCCESS) rc = urc;
  }
  return rc;
}

int lock_all(Window* w, int assert_bits) {
  if (w->ep.lock_all || w->ep.started || any_locked(w)) return MPI_ERR_RMA_SYNC;
  w->ep.lock_all_nocheck = assert_bits & MPI_MODE_NOCHECK;
  if (!w->ep.lock_all_nocheck) {
    std::vector<int> remote;
    for (int t = 0; t < w->size; ++t) {
      if (w->peers[t].same_node) acquire_shared(peer_ctl(w, t).lock);
      else remote.push_back(t);
    }
    if (!remote.empty())
      if (int rc = am::lock(w, remote.data(), remote.size(), false); rc != MPI_SUCCESS) return rc;
  }
  w->ep.lock_all = true;
  w->ep.fence = false;
  return MPI_SUCCESS;
}

int unlock_all(Window* w) {
  if (!w->ep.lock_all) return MPI_ERR_RMA_SYNC;
  int rc = flush_ops(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  w->ep.lock_all = false;
  if (!w->ep.lock_all_nocheck) {
    std::vector<int> remote;
    for (int t = w->size - 1; t >= 0; --t) {
      if (w->peers[t].same_node) release(peer_ctl(w, t).lock, kLockedShared);
      else remote.push_back(t);
    }
    if (!remote.empty()) {
      int urc = am::unlock(w, remote.data(), remote.size(), false);
      if (rc == MPI_SUCCESS) rc = urc;
    }
  }
  return rc;
}

int flush(Window* w, int target) {
  if (target >= 0 ? !holds_passive(w, target) : !(w->ep.lock_all || any_locked(w))) return MPI_ERR_RMA_SYNC;
  // Operations on mapped / CMA targets completed when they were called:
  // make their stores visible in order before anything this rank does next;
  // wait for the acknowledgements of those sent as active messages.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return flush_ops(w, target);
}

int complete_get(Window* w, int target) {
  if (w->peers[target].path == Path::Cma) return cma_drain(w, target);
  return w->peers[target].path == Path::Rdma ? rdma::flush(w, target) : MPI_SUCCESS;
}

int complete_put(Window* w, int target) {
  return w->peers[target].path == Path::Cma ? cma_drain(w, target) : MPI_SUCCESS;
}

void sync(Window* w) {
  // Queued CMA operations go out too (not required: Win_sync orders memory,
  // it does not complete operations; but it costs nothing when empty).
  cma_drain(w, -1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void finalize() { am::finalize(); }

// ---- target side of the active-message path (am.h) ---------------------------------

namespace detail {

namespace {
unsigned char* own(const Window* w, uint64_t off) {
  const uint64_t base = w->flavor == Flavor::Dynamic ? 0 : reinterpret_cast<uint64_t>(w->base);
  return reinterpret_cast<unsigned char*>(base + off);
}
}  // namespace

int target_check(const Window* w, const Run* runs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Run& r = runs[i];
    if (r.len == 0) continue;
    if (w->flavor != Flavor::Dynamic) {
      if (r.off > w->bytes || r.len > w->bytes - r.off) return MPI_ERR_RMA_RANGE;
      continue;
    }
    if (!attached(w, w->rank, r.off, r.off + r.len)) return MPI_ERR_RMA_RANGE;
  }
  return MPI_SUCCESS;
}

void target_write(Window* w, const Run* runs, size_t n, const unsigned char* data) {
  for (size_t i = 0; i < n; data += runs[i].len, ++i) memcpy(own(w, runs[i].off), data, runs[i].len);
}

void target_read(const Window* w, const Run* runs, size_t n, unsigned char* data) {
  for (size_t i = 0; i < n; data += runs[i].len, ++i) memcpy(data, own(w, runs[i].off), runs[i].len);
}

int target_accumulate(Window* w, const Run* runs, size_t n, const Datatype& basic, const Op& op,
                      const unsigned char* in, unsigned char* old) {
  const size_t es = basic.size;
  // The same choice as use_atomics for a local origin on this memory.
  bool atomics = w->peers[w->rank].path == Path::Mapped && (es == 4 || es == 8) && basic.contiguous;
  for (size_t i = 0; i < n && atomics; ++i)
    if (reinterpret_cast<uint64_t>(own(w, runs[i].off)) % es || runs[i].len % es) atomics = false;
  size_t done = 0;
  if (atomics) {
    for (size_t i = 0; i < n; ++i) {
      unsigned char* mem = own(w, runs[i].off);
      for (size_t k = 0; k < runs[i].len; k += es, done += es) {
        const void* src = in ? in + done : nullptr;
        void* dst = old ? old + done : nullptr;
        if (es == 4) atomic_element(reinterpret_cast<uint32_t*>(mem + k), src, dst, op, basic);
        else atomic_element(reinterpret_cast<uint64_t*>(mem + k), src, dst, op, basic);
      }
    }
    return MPI_SUCCESS;
  }
  // Read-modify-write of the packed elements (an element may span runs:
  // pair types), under the accumulate lock as for a local origin.
  for (size_t i = 0; i < n; ++i) done += runs[i].len;
  std::vector<unsigned char> cur(done);
  AccLock lock(w, w->rank);
  target_read(w, runs, n, cur.data());
  if (old) memcpy(old, cur.data(), done);
  if (op.kind == OpKind::no_op) return MPI_SUCCESS;
  int rc = apply_packed(op, in, cur.data(), done / es, basic);
  if (rc == MPI_SUCCESS) target_write(w, runs, n, cur.data());
  return rc;
}

void target_cas(Window* w, uint64_t off, const Datatype& type, const void* origin, const void* compare,
                void* result) {
  unsigned char* mem = own(w, off);
  const size_t es = type.size;
  if (w->peers[w->rank].path == Path::Mapped && (es == 4 || es == 8) && reinterpret_cast<uint64_t>(mem) % es == 0) {
    atomic_compare_and_swap(mem, es, origin, compare, result);
    return;
  }
  AccLock lock(w, w->rank);
  memcpy(result, mem, es);
  if (memcmp(mem, compare, es) == 0) memcpy(mem, origin, es);
}

bool target_try_lock(Window* w, bool exclusive) {
  std::atomic<uint32_t>& word = peer_ctl(w, w->rank).lock;
  uint32_t v = word.load(std::memory_order_relaxed);
  if (exclusive) {
    v = 0;
    return word.compare_exchange_strong(v, kExclusive, std::memory_order_acquire);
  }
  while (!(v & kExclusive))
    if (word.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) return true;
  return false;
}

void target_unlock(Window* w, bool exclusive) {
  release(peer_ctl(w, w->rank).lock, exclusive ? kLockedExclusive : kLockedShared);
}

void post_arrived(Window* w, int target) {
  post_counter(w, w->rank, target).fetch_add(1, std::memory_order_release);
}

void complete_arrived(Window* w) { peer_ctl(w, w->rank).completions.fetch_add(1, std::memory_order_release); }

}  // namespace detail

}  // namespace axon::osc
