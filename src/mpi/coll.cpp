// Collective entry points: argument checks (error classes as MPICH reports
// them), then src/coll. Every collective has its blocking, nonblocking
// (MPI_I*) and persistent (*_init) form, each also with large counts (_c);
// the forms share one checking function per collective (do_*), and the
// entry points at the end of the file only forward to it (generated:
// src/mpi/entries/coll_entries.inc, from src/binding/c_entries.txt).
#include <cstdint>
#include <optional>
#include <vector>

#include "accel/accel.h"
#include "accel/kernels.h"
#include "coll/coll.h"
#include "diag/hang.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "mpi/report.h"

namespace axon::mpi {
namespace {

enum class Mode : uint8_t { Blocking, Nonblocking, Persistent };
struct Call {
  Mode mode;
  MPI_Request* request;
};
constexpr Call kBlocking{Mode::Blocking, nullptr};

coll::CommState* state_of(Comm* c) {
  if (!c->coll_state) [[unlikely]] {
    c->coll_state = coll::state_create(&c->coll, c->inter ? &c->local : nullptr);
    report_track(c);
  }
  return static_cast<coll::CommState*>(c->coll_state);
}

// A nonblocking collective keeps its communicator alive (MPI_Comm_free
// during it defers the deallocation).
void release_comm(pml::Request* r) { --static_cast<Comm*>(r->comm)->pending; }

bool rooted(coll::Kind kind) {
  using K = coll::Kind;
  return kind == K::bcast || kind == K::gather || kind == K::gatherv || kind == K::scatter || kind == K::scatterv ||
         kind == K::reduce;
}

// The hang doctor's view of one collective call (src/diag/hang.h): every
// collective started counts on its communicator (the doctor compares the
// ranks' counts; persistent ones are not counted), and a blocking one is
// recorded as the call the rank is blocked in, for as long as this lives.
// Taken once per call: by submit, or before the small-call shortcuts by
// the calls that have them (which then tell submit so).
class CollectiveEntry {
 public:
  CollectiveEntry(Comm* c, const char* fn, Mode mode, int root, MPI_Count count, const Datatype* type) {
    if (mode == Mode::Persistent) return;
    uint64_t seq = diag::hang::collective_entered(c->coll.id, fn);
    if (mode != Mode::Blocking) return;
    blocked_.emplace(fn, diag::hang::What::Collective, &c->coll);
    blocked_->collective(root, count, type ? type->name : nullptr, seq).arm();
  }
  CollectiveEntry(Comm* c, const char* fn, Mode mode, const coll::Args& a)
      : CollectiveEntry(c, fn, mode, rooted(a.kind) ? a.root : -1, a.recvtype ? a.recvcount : a.sendcount,
                        a.kind == coll::Kind::barrier ? nullptr : a.recvtype ? a.recvtype : a.sendtype) {}

 private:
  std::optional<diag::hang::BlockedIn> blocked_;
};

// The checked call to src/coll (which also stages GPU buffers through host
// copies, src/coll/device_staging.cpp). `entered`: the caller holds the
// call's CollectiveEntry already.
int submit(Comm* c, const char* fn, const coll::Args& args, Call call, bool entered = false) {
  int rc;
  std::optional<CollectiveEntry> entry;
  if (!entered) entry.emplace(c, fn, call.mode, args);
  if (call.mode == Mode::Blocking) {
    rc = coll::run(state_of(c), args);
    return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
  }
  pml::Request* r = nullptr;
  rc = call.mode == Mode::Nonblocking ? coll::post(state_of(c), args, &r) : coll::init(state_of(c), args, &r);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  progress::Guard guard;
  r->comm = c;
  if (call.mode == Mode::Nonblocking && !r->complete.load(std::memory_order_acquire)) {
    ++c->pending;
    r->on_complete = release_comm;
  }
  *call.request = handle_of(r);
  return MPI_SUCCESS;
}

int check_request_arg(Call call) {
  return call.mode != Mode::Blocking && !call.request ? MPI_ERR_ARG : MPI_SUCCESS;
}

// Root of a rooted collective: a rank; on an intercommunicator also
// MPI_ROOT (the root itself) or MPI_PROC_NULL (the root's other group members).
int check_root(const Comm* c, int root) {
  if (c->inter && (root == MPI_ROOT || root == MPI_PROC_NULL)) return MPI_SUCCESS;
  return root < 0 || root >= c->size() ? MPI_ERR_ROOT : MPI_SUCCESS;
}

int check_op(MPI_Op handle, const Datatype* type, Op** out) {
  Op* op = op_from_handle(handle);
  if (!op || !op_defined_for(*op, *type)) return MPI_ERR_OP;
  *out = op;
  return MPI_SUCCESS;
}

// count / datatype / buffer of one side.
int check_side(const void* buf, MPI_Count count, MPI_Datatype dt, Datatype** type) {
  int rc;
  if ((rc = check_count(count)) || (rc = check_datatype(dt, type))) return rc;
  return check_buffer(buf, count, *type);
}

template <class C>
int check_counts(const C* counts, int n, std::vector<MPI_Count>* out) {
  if (!counts) return MPI_ERR_ARG;
  out->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (counts[i] < 0) return MPI_ERR_COUNT;
    (*out)[i] = counts[i];
  }
  return MPI_SUCCESS;
}

template <class D>
int check_displs(const D* displs, int n, std::vector<MPI_Aint>* out) {
  if (!displs) return MPI_ERR_ARG;
  out->assign(displs, displs + n);
  return MPI_SUCCESS;
}

int check_types(const MPI_Datatype* types, int n, std::vector<const Datatype*>* out) {
  if (!types) return MPI_ERR_ARG;
  out->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Datatype* t = nullptr;
    if (int rc = check_datatype(types[i], &t)) return rc;
    (*out)[i] = t;
  }
  return MPI_SUCCESS;
}

// The size of the group that per-rank arrays describe: the communicator's
// (the remote group's on an intercommunicator).
int peers(const Comm* c) { return c->size(); }

#define CHECK(expr)                                  \
  do {                                               \
    int rc_ = (expr);                                \
    if (rc_ != MPI_SUCCESS) return raise(c, rc_, fn); \
  } while (0)
#define CHECK_MSG(cond, code, msg) \
  do {                             \
    if (cond) return raise(c, code, fn, msg); \
  } while (0)

// Whether a send and a receive buffer argument are certainly the same
// memory. MPI_BOTTOM is no buffer of its own: with it each side's data lie
// at the absolute addresses its datatype (and displacements) hold, so two
// MPI_BOTTOMs with different send and receive types are different buffers
// (and not MPI_IN_PLACE either). Reductions, whose two sides share one
// datatype, compare the pointers themselves.
bool same_buffer(const void* sendbuf, const void* recvbuf) { return sendbuf == recvbuf && sendbuf != MPI_BOTTOM; }

// Where rank `r`'s block starts in a buffer of per-rank blocks: block r of
// `count` items (displs null), or at displs[r] items.
const void* own_block(const void* buf, MPI_Count count, const std::vector<MPI_Aint>* displs, const Datatype* type,
                      int r) {
  MPI_Aint items = displs ? (*displs)[static_cast<size_t>(r)] : static_cast<MPI_Aint>(r * count);
  return static_cast<const char*>(buf) + items * type->extent;
}

// ---- the collectives -----------------------------------------------------------

int do_barrier(const char* fn, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  CHECK(check_request_arg(call));
  coll::Args a;
  a.kind = coll::Kind::barrier;
  return submit(c, fn, a, call);
}

// Whether this process supplies the root's data of a rooted collective.
bool at_root(const Comm* c, int root) { return c->inter ? root == MPI_ROOT : c->rank() == root; }
// Whether this process takes no part (intercommunicator: the root's group
// members other than the root). Only root (and the request) are significant
// there (MPI-4.1 6.2.2): nothing else may be checked, yet the call still
// goes to the collective layer, which keeps every process's sequence of
// collectives on the communicator (the tags) in step.
bool idle(const Comm* c, int root) { return c->inter && root == MPI_PROC_NULL; }

// The call of a process that takes no part: no buffers, counts, types or op.
int submit_idle(Comm* c, const char* fn, coll::Kind kind, Call call) {
  coll::Args a;
  a.kind = kind;
  a.root = MPI_PROC_NULL;
  return submit(c, fn, a, call);
}

int do_bcast(const char* fn, void* buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  CHECK(check_request_arg(call));
  CHECK(check_root(c, root));
  if (idle(c, root)) return submit_idle(c, fn, coll::Kind::bcast, call);
  Datatype* type = nullptr;
  CHECK(check_side(buf, count, dt, &type));
  // Small blocking bcasts that the previous call took to the node segment
  // skip the Args and the selection (about 350 of 820 instructions per
  // call at 8 bytes, docs/collectives.md "Small bcast shortcut").
  CollectiveEntry entry(c, fn, call.mode, root, count, type);
  if (int rc; call.mode == Mode::Blocking && !c->inter && !accel::on_device(buf) &&
              coll::bcast_shortcut(state_of(c), buf, count, type, root, &rc))
    return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
  coll::Args a;
  a.kind = coll::Kind::bcast;
  a.recvbuf = buf;
  a.recvcount = count;
  a.recvtype = type;
  a.root = root;
  return submit(c, fn, a, call, true);
}

int do_gather(const char* fn, coll::Kind kind, const void* sbuf, MPI_Count scount, MPI_Datatype stype, void* rbuf,
              MPI_Count rcount, const std::vector<MPI_Count>* rcounts, const std::vector<MPI_Aint>* rdispls,
              MPI_Datatype rtype, int root, Comm* c, Call call) {
  CHECK(check_request_arg(call));
  CHECK(check_root(c, root));
  coll::Args a;
  a.kind = kind;
  a.root = root;
  bool is_root = at_root(c, root);
  a.in_place = !c->inter && is_root && sbuf == MPI_IN_PLACE;
  if (!is_root && !idle(c, root)) {
    CHECK_MSG(sbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "MPI_IN_PLACE at a non-root rank");
    Datatype* t = nullptr;
    CHECK(check_side(sbuf, scount, stype, &t));
    a.sendbuf = sbuf, a.sendcount = scount, a.sendtype = t;
  }
  if (is_root) {
    CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE");
    if (!a.in_place && !c->inter) {
      Datatype* t = nullptr;
      CHECK(check_side(sbuf, scount, stype, &t));
      a.sendbuf = sbuf, a.sendcount = scount, a.sendtype = t;
    }
    Datatype* t = nullptr;
    if (rcounts) {
      CHECK(check_datatype(rtype, &t));
      a.recvcounts = *rcounts;
      a.rdispls = *rdispls;
    } else {
      CHECK(check_side(rbuf, rcount, rtype, &t));
    }
    a.recvbuf = rbuf, a.recvcount = rcount, a.recvtype = t;
    CHECK_MSG(!a.in_place && !c->inter && same_buffer(sbuf, rbuf) && scount > 0, MPI_ERR_BUFFER,
              "sendbuf and recvbuf are the same buffer");
    // The root's own block given as sendbuf: what MPI_IN_PLACE is for.
    CHECK_MSG(!a.in_place && !c->inter && scount > 0 &&
                  same_buffer(sbuf, own_block(rbuf, rcount, rdispls, t, c->rank())),
              MPI_ERR_BUFFER, "sendbuf is the root's own block of recvbuf (use MPI_IN_PLACE)");
  }
  return submit(c, fn, a, call);
}

template <class C, class D>
int do_gatherv(const char* fn, const void* sbuf, MPI_Count scount, MPI_Datatype stype, void* rbuf, const C* rcounts,
               const D* displs, MPI_Datatype rtype, int root, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> disp;
  if (check_root(c, root) == MPI_SUCCESS && at_root(c, root)) {
    CHECK(check_counts(rcounts, peers(c), &counts));
    CHECK(check_displs(displs, peers(c), &disp));
  }
  return do_gather(fn, coll::Kind::gatherv, sbuf, scount, stype, rbuf, 0, &counts, &disp, rtype, root, c, call);
}

int do_scatter(const char* fn, coll::Kind kind, const void* sbuf, MPI_Count scount,
               const std::vector<MPI_Count>* scounts, const std::vector<MPI_Aint>* sdispls, MPI_Datatype stype,
               void* rbuf, MPI_Count rcount, MPI_Datatype rtype, int root, Comm* c, Call call) {
  CHECK(check_request_arg(call));
  CHECK(check_root(c, root));
  coll::Args a;
  a.kind = kind;
  a.root = root;
  bool is_root = at_root(c, root);
  a.in_place = !c->inter && is_root && rbuf == MPI_IN_PLACE;
  if (!is_root && !idle(c, root)) {
    CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "MPI_IN_PLACE at a non-root rank");
    Datatype* t = nullptr;
    CHECK(check_side(rbuf, rcount, rtype, &t));
    a.recvbuf = rbuf, a.recvcount = rcount, a.recvtype = t;
  }
  if (is_root) {
    CHECK_MSG(sbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "sendbuf is MPI_IN_PLACE");
    if (!a.in_place && !c->inter) {
      Datatype* t = nullptr;
      CHECK(check_side(rbuf, rcount, rtype, &t));
      a.recvbuf = rbuf, a.recvcount = rcount, a.recvtype = t;
    }
    Datatype* t = nullptr;
    if (scounts) {
      CHECK(check_datatype(stype, &t));
      a.sendcounts = *scounts;
      a.sdispls = *sdispls;
    } else {
      CHECK(check_side(sbuf, scount, stype, &t));
    }
    a.sendbuf = sbuf, a.sendcount = scount, a.sendtype = t;
    CHECK_MSG(!a.in_place && !c->inter && same_buffer(sbuf, rbuf) && rcount > 0, MPI_ERR_BUFFER,
              "sendbuf and recvbuf are the same buffer");
    CHECK_MSG(!a.in_place && !c->inter && rcount > 0 &&
                  same_buffer(rbuf, own_block(sbuf, scount, sdispls, t, c->rank())),
              MPI_ERR_BUFFER, "recvbuf is the root's own block of sendbuf (use MPI_IN_PLACE)");
  }
  return submit(c, fn, a, call);
}

template <class C, class D>
int do_scatterv(const char* fn, const void* sbuf, const C* scounts, const D* displs, MPI_Datatype stype, void* rbuf,
                MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> disp;
  if (check_root(c, root) == MPI_SUCCESS && at_root(c, root)) {
    CHECK(check_counts(scounts, peers(c), &counts));
    CHECK(check_displs(displs, peers(c), &disp));
  }
  return do_scatter(fn, coll::Kind::scatterv, sbuf, 0, &counts, &disp, stype, rbuf, rcount, rtype, root, c, call);
}

// Allgather(v) and alltoall: sendbuf may be MPI_IN_PLACE (intracommunicators), recvbuf not.
int do_allgather(const char* fn, coll::Kind kind, const void* sbuf, MPI_Count scount, MPI_Datatype stype, void* rbuf,
                 MPI_Count rcount, const std::vector<MPI_Count>* rcounts, const std::vector<MPI_Aint>* rdispls,
                 MPI_Datatype rtype, Comm* c, Call call) {
  CHECK(check_request_arg(call));
  coll::Args a;
  a.kind = kind;
  CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE");
  CHECK_MSG(c->inter && sbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "MPI_IN_PLACE on an intercommunicator");
  a.in_place = sbuf == MPI_IN_PLACE;
  if (!a.in_place) {
    Datatype* t = nullptr;
    CHECK(check_side(sbuf, scount, stype, &t));
    a.sendbuf = sbuf, a.sendcount = scount, a.sendtype = t;
  }
  Datatype* t = nullptr;
  if (rcounts) {
    CHECK(check_datatype(rtype, &t));
    a.recvcounts = *rcounts;
    a.rdispls = *rdispls;
  } else {
    CHECK(check_side(rbuf, rcount, rtype, &t));
  }
  a.recvbuf = rbuf, a.recvcount = rcount, a.recvtype = t;
  CHECK_MSG(!a.in_place && same_buffer(sbuf, rbuf) && scount > 0, MPI_ERR_BUFFER,
            "sendbuf and recvbuf are the same buffer");
  // This process's own block given as sendbuf: what MPI_IN_PLACE is for
  // (every process of such a call sees it, so all of them return the error).
  CHECK_MSG(!a.in_place && !c->inter && scount > 0 &&
                same_buffer(sbuf, own_block(rbuf, rcount, rdispls, t, c->rank())),
            MPI_ERR_BUFFER, "sendbuf is this process's own block of recvbuf (use MPI_IN_PLACE)");
  return submit(c, fn, a, call);
}

template <class C, class D>
int do_allgatherv(const char* fn, const void* sbuf, MPI_Count scount, MPI_Datatype stype, void* rbuf,
                  const C* rcounts, const D* displs, MPI_Datatype rtype, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> disp;
  CHECK(check_counts(rcounts, peers(c), &counts));
  CHECK(check_displs(displs, peers(c), &disp));
  return do_allgather(fn, coll::Kind::allgatherv, sbuf, scount, stype, rbuf, 0, &counts, &disp, rtype, c, call);
}

// Alltoallv / alltoallw: whether some peer's send block and receive block
// begin at the same byte (the lowest byte each type map addresses), so that
// the two buffers overlap for sure. One base address for both sides is not
// enough: the displacements (bytes for alltoallw), or from MPI_BOTTOM the
// absolute addresses in the datatypes, may keep every block apart.
bool blocks_alias(const coll::Args& a) {
  auto first_byte = [](const void* base, MPI_Aint displ_bytes, const Datatype* type) {
    return reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(displ_bytes + type->true_lb);
  };
  bool w = a.kind == coll::Kind::alltoallw;
  for (size_t i = 0; i < a.sendcounts.size(); ++i) {
    const Datatype* st = w ? a.sendtypes[i] : a.sendtype;
    const Datatype* rt = w ? a.recvtypes[i] : a.recvtype;
    if (a.sendcounts[i] == 0 || a.recvcounts[i] == 0 || st->size == 0 || rt->size == 0) continue;
    MPI_Aint sd = w ? a.sdispls[i] : a.sdispls[i] * st->extent;
    MPI_Aint rd = w ? a.rdispls[i] : a.rdispls[i] * rt->extent;
    if (first_byte(a.sendbuf, sd, st) == first_byte(a.recvbuf, rd, rt)) return true;
  }
  return false;
}

// Alltoallv and alltoallw. Displacements: items (v) or bytes (w).
template <class C, class D>
int do_alltoallx(const char* fn, coll::Kind kind, const void* sbuf, const C* scounts, const D* sdispls,
                 const MPI_Datatype* stypes, void* rbuf, const C* rcounts, const D* rdispls,
                 const MPI_Datatype* rtypes, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  CHECK(check_request_arg(call));
  int n = peers(c);
  coll::Args a;
  a.kind = kind;
  CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE");
  CHECK_MSG(c->inter && sbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "MPI_IN_PLACE on an intercommunicator");
  a.in_place = sbuf == MPI_IN_PLACE;
  CHECK(check_counts(rcounts, n, &a.recvcounts));
  CHECK(check_displs(rdispls, n, &a.rdispls));
  if (kind == coll::Kind::alltoallw) {
    CHECK(check_types(rtypes, n, &a.recvtypes));
  } else {
    Datatype* t = nullptr;
    CHECK(check_datatype(*rtypes, &t));
    a.recvtype = t;
  }
  if (!a.in_place) {
    CHECK(check_counts(scounts, n, &a.sendcounts));
    CHECK(check_displs(sdispls, n, &a.sdispls));
    if (kind == coll::Kind::alltoallw) {
      CHECK(check_types(stypes, n, &a.sendtypes));
    } else {
      Datatype* t = nullptr;
      CHECK(check_datatype(*stypes, &t));
      a.sendtype = t;
    }
  }
  a.sendbuf = a.in_place ? nullptr : sbuf;
  a.recvbuf = rbuf;
  CHECK_MSG(!a.in_place && blocks_alias(a), MPI_ERR_BUFFER, "a send block and a receive block start at the same byte");
  return submit(c, fn, a, call);
}

int do_alltoall(const char* fn, const void* sbuf, MPI_Count scount, MPI_Datatype stype, void* rbuf, MPI_Count rcount,
                MPI_Datatype rtype, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  CHECK(check_request_arg(call));
  coll::Args a;
  a.kind = coll::Kind::alltoall;
  CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE");
  CHECK_MSG(c->inter && sbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "MPI_IN_PLACE on an intercommunicator");
  a.in_place = sbuf == MPI_IN_PLACE;
  if (!a.in_place) {
    Datatype* t = nullptr;
    CHECK(check_side(sbuf, scount, stype, &t));
    a.sendbuf = sbuf, a.sendcount = scount, a.sendtype = t;
  }
  Datatype* t = nullptr;
  CHECK(check_side(rbuf, rcount, rtype, &t));
  a.recvbuf = rbuf, a.recvcount = rcount, a.recvtype = t;
  CHECK_MSG(!a.in_place && same_buffer(sbuf, rbuf) && scount > 0, MPI_ERR_BUFFER,
            "sendbuf and recvbuf are the same buffer");
  return submit(c, fn, a, call);
}

// Reductions. `rooted`: reduce (recvbuf significant at the root only).
int do_reduction(const char* fn, coll::Kind kind, const void* sbuf, void* rbuf, MPI_Count count,
                 const std::vector<MPI_Count>* rcounts, MPI_Datatype dt, MPI_Op op, int root, Comm* c, Call call) {
  CHECK(check_request_arg(call));
  bool rooted = kind == coll::Kind::reduce;
  if (rooted) CHECK(check_root(c, root));
  if (rooted && idle(c, root)) return submit_idle(c, fn, kind, call);
  bool is_root = rooted ? at_root(c, root) : true;
  // sendbuf is not significant at an intercommunicator reduce's root,
  // recvbuf only at a reduce's root (count, datatype and op everywhere).
  bool sends = !(c->inter && rooted && is_root);
  Datatype* type = nullptr;
  CHECK(check_count(count));
  CHECK(check_datatype(dt, &type));
  if (sends) {
    CHECK_MSG(sbuf == MPI_IN_PLACE && (c->inter || !is_root), MPI_ERR_BUFFER, "MPI_IN_PLACE not allowed here");
    if (sbuf != MPI_IN_PLACE) CHECK(check_buffer(sbuf, rcounts ? 0 : count, type));
  }
  if (is_root) {
    CHECK_MSG(rbuf == MPI_IN_PLACE, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE");
    CHECK(check_buffer(rbuf, count, type));
  }
  Op* o = nullptr;
  CHECK(check_op(op, type, &o));
  bool in_place = sbuf == MPI_IN_PLACE && sends;
  // One datatype describes both buffers, so equal pointers (MPI_BOTTOM
  // included) are the same memory.
  CHECK_MSG(!in_place && sends && is_root && sbuf == rbuf && count > 0, MPI_ERR_BUFFER,
            "sendbuf and recvbuf are the same buffer");
  // Small blocking reduces and allreduces that the previous call took to
  // the node segment skip the Args and the selection, as small bcasts do.
  CollectiveEntry entry(c, fn, call.mode, rooted ? root : -1, count, type);
  if (int rc; call.mode == Mode::Blocking && !c->inter &&
              (kind == coll::Kind::reduce || kind == coll::Kind::allreduce) && !accel::on_device(sbuf) &&
              !accel::on_device(rbuf) &&
              coll::reduction_shortcut(state_of(c), kind, in_place ? nullptr : sbuf, rbuf, count, type, o, root, &rc))
    return rc == MPI_SUCCESS ? rc : raise(c, rc, fn);
  coll::Args a;
  a.kind = kind;
  a.root = root;
  a.in_place = in_place;
  a.sendbuf = a.in_place || !sends ? nullptr : sbuf;
  a.recvbuf = rbuf;
  a.recvcount = count;
  a.recvtype = type;
  a.sendtype = type;
  a.sendcount = count;
  a.op = o;
  if (rcounts) a.recvcounts = *rcounts;
  return submit(c, fn, a, call, true);
}

int do_reduce(const char* fn, const void* sbuf, void* rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
              MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  return do_reduction(fn, coll::Kind::reduce, sbuf, rbuf, count, nullptr, dt, op, root, c, call);
}

int do_allreduce(const char* fn, coll::Kind kind, const void* sbuf, void* rbuf, MPI_Count count, MPI_Datatype dt,
                 MPI_Op op, MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (kind == coll::Kind::reduce_scatter_block) {
    // Every rank gets `count` items: the general form with equal counts.
    std::vector<MPI_Count> counts(static_cast<size_t>(c->size()), count);
    CHECK(check_count(count));
    return do_reduction(fn, kind, sbuf, rbuf, count, &counts, dt, op, 0, c, call);
  }
  CHECK_MSG(c->inter && (kind == coll::Kind::scan || kind == coll::Kind::exscan), MPI_ERR_COMM,
            "not defined on an intercommunicator");
  return do_reduction(fn, kind, sbuf, rbuf, count, nullptr, dt, op, 0, c, call);
}

template <class C>
int do_reduce_scatter(const char* fn, const void* sbuf, void* rbuf, const C* rcounts, MPI_Datatype dt, MPI_Op op,
                      MPI_Comm comm, Call call) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  std::vector<MPI_Count> counts;
  CHECK(check_counts(rcounts, c->inter ? local_size(c) : c->size(), &counts));
  return do_reduction(fn, coll::Kind::reduce_scatter, sbuf, rbuf, counts[c->rank()], &counts, dt, op, 0, c, call);
}

// MPI_Reduce_local: errors on MPI_COMM_SELF (no communicator).
int reduce_local(const void* inbuf, void* inoutbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, const char* fn) {
  Datatype* type = nullptr;
  Op* o = nullptr;
  int rc = check_count(count);
  if (rc == MPI_SUCCESS) rc = check_datatype(datatype, &type);
  if (rc == MPI_SUCCESS && (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)) rc = MPI_ERR_BUFFER;
  // The two buffers must not alias (MPI-4.1 6.9.7).
  if (rc == MPI_SUCCESS && inbuf == inoutbuf && count > 0) rc = MPI_ERR_BUFFER;
  if (rc == MPI_SUCCESS) rc = check_buffer(inbuf, count, type);
  if (rc == MPI_SUCCESS) rc = check_buffer(inoutbuf, count, type);
  if (rc == MPI_SUCCESS) rc = check_op(op, type, &o);
  if (rc != MPI_SUCCESS) return raise_self(rc, fn);
  // GPU buffers: a GPU kernel, or host copies (src/accel/kernels.h).
  rc = accel::on_device(inbuf) || accel::on_device(inoutbuf)
           ? accel::device_op_apply(*o, inbuf, inoutbuf, static_cast<size_t>(count), *type)
           : op_apply(*o, inbuf, inoutbuf, static_cast<size_t>(count), *type);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, fn);
}

#undef CHECK
#undef CHECK_MSG

}  // namespace

coll::CommState* coll_state_of(Comm* c) { return state_of(c); }

// Called when a communicator is deallocated (src/mpi/communicator.cpp).
void coll_comm_destroy(Comm* c) {
  report_retire(c);
  coll::state_destroy(static_cast<coll::CommState*>(c->coll_state));
  c->coll_state = nullptr;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

// ---- entry points ----------------------------------------------------------------
// Every form of every collective only forwards to its do_* function: generated
// from src/binding/c_entries.txt (python3 src/binding/gen_c_entries.py).
#include "mpi/entries/coll_entries.inc"
#include "progress/progress.h"

// ---- user-defined reduction operations -------------------------------------

AXON_API(int, MPI_Op_create, (MPI_User_function * user_fn, int commute, MPI_Op* op)) {
  if (!user_fn || !op) return raise_self(MPI_ERR_ARG, "MPI_Op_create", "NULL argument");
  Op* o = op_create_user(user_fn, commute != 0);
  if (!o) return raise_self(MPI_ERR_NO_MEM, "MPI_Op_create");
  *op = to_handle(o);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Op_create_c, (MPI_User_function_c * user_fn, int commute, MPI_Op* op)) {
  if (!user_fn || !op) return raise_self(MPI_ERR_ARG, "MPI_Op_create_c", "NULL argument");
  Op* o = op_create_user_c(user_fn, commute != 0);
  if (!o) return raise_self(MPI_ERR_NO_MEM, "MPI_Op_create_c");
  *op = to_handle(o);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Op_free, (MPI_Op * op)) {
  if (!op) return raise_self(MPI_ERR_ARG, "MPI_Op_free", "op is NULL");
  Op* o = op_from_handle(*op);
  if (!o || o->predefined) return raise_self(MPI_ERR_OP, "MPI_Op_free", "not a user-defined operation");
  op_release(o);
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Op_commutative, (MPI_Op op, int* commute)) {
  Op* o = op_from_handle(op);
  if (!o) return raise_self(MPI_ERR_OP, "MPI_Op_commutative", "invalid operation");
  if (!commute) return raise_self(MPI_ERR_ARG, "MPI_Op_commutative", "commute is NULL");
  *commute = o->commutative;
  return MPI_SUCCESS;
}
