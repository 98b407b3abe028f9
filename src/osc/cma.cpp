// Private window memory of other processes on this node (Win_create and
// dynamic windows): whether the ptrace policy lets CMA reach it, the
// single-copy process_vm_readv / writev transfers (and plain copies for
// mapped targets), and the queue that batches small Put / Get into one
// system call per target until the next synchronization.
#include "osc/internal.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "osc/am.h"  // for_each_run
#include "rte/rte.h"

namespace axon::osc {

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

// Read by the other ranks with process_vm_readv at window creation: tells
// whether the ptrace policy lets them reach this process's memory.
const uint64_t cma_probe = 0x43'4d'41'6f'6b'21'21'21ull;

namespace {

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

}  // namespace

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
      // The window's probe allowed CMA at creation; failing now (the target
      // died, or its ptrace policy changed) leaves nothing to fall back to
      // mid-epoch: windows choose active messages only when they are made.
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

}  // namespace axon::osc
