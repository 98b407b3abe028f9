// Memory that other processes of the node load and store directly:
// MPI_Win_shared_query for every flavor, and Win_create memory moved into
// shared memory in place (AXON_OSC_SHARE_CREATE), so that the node's other
// ranks map it instead of reaching it with CMA. The allocate flavors'
// memory (MPI_Win_allocate / MPI_Win_allocate_shared) is laid out in the
// window's segment by allocate() in window.cpp.
#include "osc/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "coll/coll.h"
#include "osc/am.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::osc {

namespace {

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

}  // namespace

// contents, if the range still is our memfd (an erroneous program may have
// unmapped the memory meanwhile) and no other thread runs.
void move_to_private(const Window::Mapping& m, uint64_t inode) {
  const uint64_t lo = reinterpret_cast<uint64_t>(m.addr);
  progress::Guard guard;  // holds off the progress agent (it writes window memory)
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
    progress::Guard guard;  // holds off the progress agent (it writes window memory)
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

}  // namespace axon::osc
