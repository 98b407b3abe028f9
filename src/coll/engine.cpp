// The layer's entry points: a call becomes a schedule (select.cpp picks the
// builder), which runs to completion (blocking), from pml progress
// (nonblocking) or at every MPI_Start (persistent). A call on GPU buffers
// runs on host copies (device_staging.cpp) with the copies around it, or,
// for a reduction the GPU kernels can do, on the device buffers themselves
// (device_reduce.cpp).
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "accel/kernels.h"
#include "base/log.h"
#include "base/param.h"
#include "progress/progress.h"
#include "rte/rte.h"

#include "coll/internal.h"
#include "coll/select.h"

namespace axon::coll {

CommState* state_create(pml::Context* coll, pml::Context* local) {
  auto* st = new CommState;
  st->coll = coll;
  st->local = local;
  return st;
}

void state_destroy(CommState* state) { delete state; }

const CallTally* tallies(const CommState* state) { return state->tallies; }

void CallTally::note_algorithm(const char* algorithm) {
  for (const char*& slot : algorithms) {
    if (slot == algorithm) return;
    if (!slot) {
      slot = algorithm;
      return;
    }
  }
}

// What "direct" runs count as in the report (one pointer for every call,
// so that CallTally::add compares one).
constexpr const char* kDirect = "direct";

namespace {

void retain_types(Schedule& s, const Args& a) {
  s.retain(a.sendtype);
  s.retain(a.recvtype);
  for (const Datatype* t : a.sendtypes) s.retain(t);
  for (const Datatype* t : a.recvtypes) s.retain(t);
}

// `chosen`: the intracommunicator algorithm when the caller selected it already.
// `before` / `after`: local steps in rounds of their own around the
// algorithm's (init with staging hooks).
int build(CommState* st, const Args& a, std::unique_ptr<Schedule>* out, const Algorithm* chosen = nullptr,
          std::function<int()>* before = nullptr, std::function<int()>* after = nullptr) {
  // Intercommunicator schedules run within the local group by default and
  // name the remote context for traffic between the groups.
  auto s = std::make_unique<Schedule>(st->inter() ? st->local : st->coll, a.op);
  s->state = st;
  s->device_combine = a.device_combine;
  s->device_resident = a.device_resident;
  retain_types(*s, a);
  if (before) {
    s->local(std::move(*before));
    s->round();
  }
  s->tally = &st->tally(a.kind);
  s->tally_bytes = report_bytes(a, st->inter() ? st->local->rank : st->coll->rank);
  if (st->inter()) {
    s->tally_algorithm = "intercommunicator";
    if (!build_inter(*s, a, st)) {
      log::error("MPI_%s is not implemented on intercommunicators yet", kind_name(a.kind));
      return MPI_ERR_OTHER;
    }
    if (explain() && st->local->rank == 0 && explain_due(st, a.kind, "intercommunicator"))
      std::fprintf(stderr, "axon coll: %s (intercommunicator): leaders + local trees\n", kind_name(a.kind));
  } else {
    const Algorithm* alg = chosen;
    if (!alg) {
      Choice c;
      if (int rc = select_algorithm(a, st, false, &c); rc != MPI_SUCCESS) return rc;
      explain_choice(a, st, c);
      alg = c.alg;
    }
    s->tally_algorithm = alg->name;
    int rank = st->coll->rank, size = st->coll->size();
    Build b{*s, a, rank, size, knomial_radix()};
    alg->build(b);
  }
  s->round();
  if (after) {
    s->local(std::move(*after));
    s->round();
  }
  *out = std::move(s);
  return MPI_SUCCESS;
}

pml::Request* new_request(Schedule* s, bool persistent) {
  pml::Request* r = pml::request_alloc(pml::Request::Kind::Collective);
  r->persistent = persistent;
  r->active = !persistent;
  r->user_data = s;
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  r->error = MPI_SUCCESS;
  r->bytes = 0;
  r->complete.store(persistent, std::memory_order_relaxed);
  return r;
}

// Small blocking barrier / bcast / reduce / allreduce on an
// intracommunicator with a predefined contiguous type skip the schedule
// machinery: the direct blocking versions of basic.cpp (binomial trees,
// recursive doubling, dissemination; operand order kept) cost a fraction of
// building a schedule when the message itself takes well under a
// microsecond. Not taken when an algorithm is forced.
constexpr size_t kDirectLimit = 2048;

IntParam flat_reduce_param{"AXON_COLL_REDUCE_FLAT", -1,
                           "Small blocking MPI_Reduce (the direct path: predefined contiguous types, at most 2048 "
                           "bytes, or 16 KiB when flat; algorithm not forced): every rank sends its operand straight "
                           "to the root. 1 = always, 0 = never (binomial tree), -1 = on one-node communicators of at "
                           "most 8 ranks when the node is oversubscribed."};
IntParam flat_bcast_param{"AXON_COLL_BCAST_FLAT", -1,
                          "Small blocking MPI_Bcast (the direct path: predefined contiguous types, at most 2048 "
                          "bytes, or 16 KiB when flat; algorithm not forced): the root sends straight to every rank. "
                          "1 = always, 0 = never (binomial tree), -1 = as AXON_COLL_REDUCE_FLAT."};

// Whether a direct reduce or bcast goes flat (`mode`: the parameter).
// Measured at 4 ranks on 2 cores (docs/collectives.md, "Oversubscribed"):
// reduce 4 B - 16 KiB 20-50 % faster than the binomial tree, bcast 4 B -
// 16 KiB 25-45 % faster (no rank waits for a forwarder descheduled behind
// the root on the root's core).
// Every rank must decide alike: the automatic choice is taken on one-node
// communicators only, whose ranks share the node's oversubscription (the
// topology is known: run() computes it before the direct path, and the
// shortcuts run only what run() chose before).
// (The parameters and the oversubscription are read once: this runs on
// the per-call path of the smallest collectives.)
bool flat_direct(int64_t mode, const CommState* st) {
  if (mode >= 0) return mode > 0;
  static const bool oversubscribed = rte::job().oversubscribed;
  return oversubscribed && st->coll->size() <= 8 && st->node && st->node->topo.known && st->node->topo.nodes == 1;
}
bool flat_reduce(const CommState* st) {
  static const int64_t mode = flat_reduce_param.get();
  return flat_direct(mode, st);
}
bool flat_bcast(const CommState* st) {
  static const int64_t mode = flat_bcast_param.get();
  return flat_direct(mode, st);
}

// Whether a bcast / reduce / allreduce of `bytes` of `type` is small and
// simple enough for the direct basic versions: up to kDirectLimit, and the
// flat versions up to the node's eager limit (at most kFlatLimit), where
// the senders still leave at once. (The flat rule is looked at only above
// kDirectLimit: the smallest calls pay nothing for it here.)
constexpr size_t kFlatLimit = 16 * 1024;
bool direct_fits(const CommState* st, Kind kind, const Datatype* type, size_t bytes) {
  if (!type->predefined || !type->contiguous) return false;
  if (bytes <= kDirectLimit) return true;
  bool flat = (kind == Kind::reduce && flat_reduce(st)) || (kind == Kind::bcast && flat_bcast(st));
  return flat && bytes <= std::min(kFlatLimit, pml::node_eager_limit());
}

// The direct basic version of a barrier, bcast (`buf`), reduce or
// allreduce (`send`: null when in place; `buf`: the receive buffer).
int run_direct(CommState* st, Kind kind, const void* send, void* buf, MPI_Count count, const Datatype* type,
               const Op* op, int root) {
  switch (kind) {
    case Kind::barrier:
      return barrier(st->coll);
    case Kind::bcast:
      return flat_bcast(st) ? bcast_flat(buf, count, type, root, st->coll) : bcast(buf, count, type, root, st->coll);
    case Kind::reduce:
      return flat_reduce(st) ? reduce_flat(send, buf, count, type, op, root, st->coll)
                             : reduce(send, buf, count, type, op, root, st->coll);
    default:
      return allreduce(send, buf, count, type, op, st->coll);
  }
}

// `forced`: the caller's choice was forced by AXON_COLL_<NAME>_ALGORITHM.
bool direct(CommState* st, const Args& a, bool forced, int* rc) {
  if (st->inter()) return false;
  switch (a.kind) {
    case Kind::barrier:
    case Kind::bcast:
    case Kind::reduce:
    case Kind::allreduce:
      break;
    default:
      return false;
  }
  if (a.kind != Kind::barrier && !direct_fits(st, a.kind, a.recvtype, payload_bytes(a.recvcount, a.recvtype)))
    return false;
  if (forced) return false;
  if (explain() && st->coll->rank == 0 && explain_due(st, a.kind, kDirect)) {
    const char* flat = a.kind == Kind::reduce && flat_reduce(st)  ? ", flat: every rank sends to the root"
                       : a.kind == Kind::bcast && flat_bcast(st) ? ", flat: the root sends to every rank"
                                                                 : "";
    std::fprintf(stderr, "axon coll: %s on %d ranks, %zu bytes: direct (blocking basic version%s): small message\n",
                 kind_name(a.kind), st->coll->size(), payload_bytes(a.recvcount, a.recvtype), flat);
  }
  st->tally(a.kind).add(report_bytes(a, st->coll->rank), kDirect);
  if (__builtin_expect(a.device_combine, 0)) {
    DeviceCombineScope scope;
    *rc = run_direct(st, a.kind, a.in_place ? nullptr : a.sendbuf, a.recvbuf, a.recvcount, a.recvtype, a.op, a.root);
  } else {
    *rc = run_direct(st, a.kind, a.in_place ? nullptr : a.sendbuf, a.recvbuf, a.recvcount, a.recvtype, a.op, a.root);
  }
  return true;
}

// What the shortcuts below run: the algorithm remembered for a blocking
// call of `kind` with a non-zero count of a contiguous predefined type on
// an intracommunicator (see remembered()), or null.
const Algorithm* remembered_call(const CommState* st, Kind kind, MPI_Count count, const Datatype* type,
                                 const Op* op) {
  if (st->inter() || count <= 0 || !type->predefined || !type->contiguous) return nullptr;
  return remembered(st, kind, payload_bytes(count, type), type, op);
}

// The blocking call on host memory.
int run_host(CommState* state, const Args& args) {
  const Algorithm* alg = nullptr;
  if (!state->inter()) {
    // Blocking barrier / bcast / reduce / allreduce (and, on one node,
    // allgather(v) / gather / scatter / alltoall) may run node-level
    // (src/coll/shm/); that needs the communicator's nodes.
    switch (args.kind) {
      case Kind::barrier:
      case Kind::bcast:
      case Kind::reduce:
      case Kind::allreduce:
      case Kind::allgather:
      case Kind::allgatherv:
      case Kind::gather:
      case Kind::scatter:
      case Kind::alltoall:
        if (!state->node || !state->node->topo.known)
          if (int rc = node_topology(state); rc != MPI_SUCCESS) return rc;
        break;
      default:
        break;
    }
    if (args.kind == Kind::bcast) note_bcast_root(state->node.get(), args.root);
    Choice c;
    if (int rc = select_algorithm(args, state, true, &c); rc != MPI_SUCCESS) return rc;
    alg = c.alg;
    // The choice must not depend on where the buffers are (every rank
    // chooses alike, and a call's ranks may mix device and host buffers).
    if (alg->node()) {
      explain_choice(args, state, c);
      state->tally(args.kind).add(report_bytes(args, state->coll->rank), alg->name);
      // The node segment's combine steps (shm/reduce.cpp) run on the CPU.
      if (args.device_combine) accel::count_collective_combine(kind_name(args.kind), "node-level algorithm");
      return alg->level == Algorithm::Level::shm ? shm_run(state, args) : hier_run(state, args);
    }
    if (args.device_combine) accel::count_collective_combine(kind_name(args.kind), nullptr);
    if (int rc; direct(state, args, c.why == nullptr, &rc)) return rc;
    explain_choice(args, state, c);
  } else if (args.device_combine) {
    accel::count_collective_combine(kind_name(args.kind), nullptr);
  }
  std::unique_ptr<Schedule> s;
  if (int rc = build(state, args, &s, alg); rc != MPI_SUCCESS) return rc;
  int tag;
  {
    progress::Guard guard;
    tag = state->next_tag();
  }
  return run_to_completion(*s, tag);
}

// The size of the group that a call's per-rank blocks refer to (the remote
// group's on an intercommunicator).
int peers(const CommState* st) { return st->coll->size(); }

// A blocking reducing call on GPU buffers that runs resident
// (device_reduce.cpp); false when it is to be staged. "all": the schedule
// of the nonblocking choice (build() selects it). "matched": the algorithm
// a host rank of this call runs, as run_host picks it, unless that is the
// node segment or a direct version (host memory only).
bool run_resident(CommState* state, const Args& args, int* rc) {
  const Resident mode = device_resident_mode(args, state);
  if (mode == Resident::off) return false;
  const Algorithm* alg = nullptr;
  *rc = MPI_SUCCESS;
  if (mode == Resident::matched) {
    const bool rooted = args.kind == Kind::reduce || args.kind == Kind::allreduce;
    // (As run_host: every rank computes the topology at the same call.)
    if (rooted && (!state->node || !state->node->topo.known))
      if ((*rc = node_topology(state)) != MPI_SUCCESS) return true;
    Choice c;
    if ((*rc = select_algorithm(args, state, true, &c)) != MPI_SUCCESS) return true;
    if (c.alg->node()) return false;
    if (rooted && c.why && direct_fits(state, args.kind, args.recvtype, payload_bytes(args.recvcount, args.recvtype)))
      return false;
    explain_choice(args, state, c);
    alg = c.alg;
  }
  Args dev = args;
  dev.device_resident = true;
  count_device_resident(dev);
  std::unique_ptr<Schedule> s;
  if ((*rc = build(state, dev, &s, alg)) != MPI_SUCCESS) return true;
  int tag;
  {
    progress::Guard guard;
    tag = state->next_tag();
  }
  *rc = run_to_completion(*s, tag);
  return true;
}

}  // namespace

int run(CommState* state, const Args& args) {
  if (__builtin_expect(!names_device_memory(args), 1)) return run_host(state, args);
  if (int rc; run_resident(state, args, &rc)) return rc;
  Args host = args;
  std::unique_ptr<DeviceStaging> staging;
  if (int rc = stage_device_buffers(&host, peers(state), &staging); rc != MPI_SUCCESS) return rc;
  int rc = run_host(state, host);
  return rc == MPI_SUCCESS ? staging->finish() : rc;
}

// The shortcuts: a call whose predecessor on the communicator was the same
// kind of blocking call with the same byte count (and, for reductions, op
// and type extents) would be given the same algorithm again, so the
// remembered one runs at once: the node segment (small calls, one node) or
// the direct point-to-point version, as run() would do it. Measured:
// docs/collectives.md, "Small bcast shortcut".
bool bcast_shortcut(CommState* st, void* buf, MPI_Count count, const Datatype* type, int root, int* rc) {
  const Algorithm* alg = remembered_call(st, Kind::bcast, count, type, nullptr);
  if (!alg) return false;
  note_bcast_root(st->node.get(), root);
  const size_t bytes = payload_bytes(count, type);
  if (alg->level == Algorithm::Level::shm) {
    if (!node_bcast_now(st, buf, count, type, root, rc)) return false;
    st->tally(Kind::bcast).add(bytes, alg->name);
    return true;
  }
  if (alg->level != Algorithm::Level::pt2pt || !direct_fits(st, Kind::bcast, type, bytes)) return false;
  st->tally(Kind::bcast).add(bytes, kDirect);
  *rc = run_direct(st, Kind::bcast, nullptr, buf, count, type, nullptr, root);
  return true;
}

bool reduction_shortcut(CommState* st, Kind kind, const void* send, void* out, MPI_Count count, const Datatype* type,
                        const Op* op, int root, int* rc) {
  const Algorithm* alg = remembered_call(st, kind, count, type, op);
  if (!alg) return false;
  const size_t bytes = payload_bytes(count, type);
  if (alg->level == Algorithm::Level::shm) {
    if (!node_reduce_now(st, send ? send : out, out, count, type, op, kind == Kind::reduce ? root : -1, rc))
      return false;
    st->tally(kind).add(bytes, alg->name);
    return true;
  }
  if (alg->level != Algorithm::Level::pt2pt || !direct_fits(st, kind, type, bytes)) return false;
  st->tally(kind).add(bytes, kDirect);
  *rc = run_direct(st, kind, send, out, count, type, op, root);
  return true;
}

namespace {

// Whether a nonblocking call's schedule may be reused (see ScheduleCache):
// intracommunicator calls without per-rank arrays (their Args copy would
// allocate). Calls on GPU buffers never get here without a copy-back round
// of their own, which rules reuse out (post_schedule).
bool reusable(const Args& a) {
  return a.sendcounts.empty() && a.recvcounts.empty() && a.sendtypes.empty() && a.recvtypes.empty();
}

// A nonblocking call; `after`: a last round of its own (the copy back of
// a call on GPU buffers), whose schedule is not kept for reuse.
int post_schedule(CommState* state, const Args& args, pml::Request** out, std::function<int()>* after) {
  if (args.device_combine) accel::count_collective_combine(kind_name(args.kind), nullptr);
  Schedule* raw = nullptr;
  std::unique_ptr<Schedule> s;
  if (state->inter()) {
    if (int rc = build(state, args, &s, nullptr, nullptr, after); rc != MPI_SUCCESS) return rc;
  } else {
    Choice c;
    if (int rc = select_algorithm(args, state, false, &c); rc != MPI_SUCCESS) return rc;
    explain_choice(args, state, c);
    bool reuse = !after && reusable(args);
    if (reuse) {
      progress::Guard guard;
      raw = state->schedules.take(args, c.alg);
    }
    if (!raw) {
      if (int rc = build(state, args, &s, c.alg, nullptr, after); rc != MPI_SUCCESS) return rc;
      if (reuse) {
        progress::Guard guard;
        raw = state->schedules.adopt(args, c.alg, s);
      }
    }
  }
  progress::Guard guard;
  if (!raw) raw = s.release();
  pml::Request* r = new_request(raw, false);
  *out = r;
  launch(raw, r, state->next_tag());
  return MPI_SUCCESS;
}

// A persistent call with a round of its own before the schedule's first
// (`before`, at every start) and after its last (`after`): the copies of a
// call on GPU buffers to and from their host copies.
int init_with_copies(CommState* state, const Args& args, pml::Request** out, std::function<int()> before,
                     std::function<int()> after) {
  if (args.device_combine) accel::count_collective_combine(kind_name(args.kind), nullptr);
  std::unique_ptr<Schedule> s;
  if (int rc = build(state, args, &s, nullptr, &before, &after); rc != MPI_SUCCESS) return rc;
  *out = init_schedule(std::move(s));
  return MPI_SUCCESS;
}

}  // namespace

int post(CommState* state, const Args& args, pml::Request** out) {
  if (__builtin_expect(!names_device_memory(args), 1)) return post_schedule(state, args, out, nullptr);
  if (device_resident_mode(args, state) != Resident::off) {
    // Host ranks run the same schedule for a nonblocking call; it may be
    // kept for reuse like theirs (Args::device_resident is part of the key).
    Args dev = args;
    dev.device_resident = true;
    count_device_resident(dev);
    return post_schedule(state, dev, out, nullptr);
  }
  Args host = args;
  std::unique_ptr<DeviceStaging> staging;
  if (int rc = stage_device_buffers(&host, peers(state), &staging); rc != MPI_SUCCESS) return rc;
  // The schedule owns the host copies; its last round copies the result back.
  std::function<int()> after = [st = std::shared_ptr<DeviceStaging>(std::move(staging))] { return st->finish(); };
  return post_schedule(state, host, out, &after);
}

pml::Request* init_schedule(std::unique_ptr<Schedule> schedule) {
  progress::Guard guard;
  schedule->persistent_tag = schedule->state->next_tag();  // init order, not start order, matches
  return new_request(schedule.release(), true);
}

int init(CommState* state, const Args& args, pml::Request** out) {
  if (__builtin_expect(names_device_memory(args), 0) && device_resident_mode(args, state) != Resident::off) {
    // Every start runs the schedule on the device buffers: no copies.
    Args dev = args;
    dev.device_resident = true;
    count_device_resident(dev);
    std::unique_ptr<Schedule> s;
    if (int rc = build(state, dev, &s); rc != MPI_SUCCESS) return rc;
    *out = init_schedule(std::move(s));
    return MPI_SUCCESS;
  }
  if (__builtin_expect(names_device_memory(args), 0)) {
    Args host = args;
    std::unique_ptr<DeviceStaging> staging;
    if (int rc = stage_device_buffers(&host, peers(state), &staging); rc != MPI_SUCCESS) return rc;
    // Every start copies the device data in, the schedule's last round
    // copies the result back; the schedule owns the host copies.
    std::shared_ptr<DeviceStaging> st(std::move(staging));
    return init_with_copies(state, host, out, [st] { return st->copy_in(); }, [st] { return st->copy_out(); });
  }
  if (args.device_combine) accel::count_collective_combine(kind_name(args.kind), nullptr);
  std::unique_ptr<Schedule> s;
  if (int rc = build(state, args, &s); rc != MPI_SUCCESS) return rc;
  *out = init_schedule(std::move(s));
  return MPI_SUCCESS;
}

int start(pml::Request* req) {
  progress::Guard guard;
  auto* s = static_cast<Schedule*>(req->user_data);
  req->active = true;
  launch(s, req, s->persistent_tag);
  return MPI_SUCCESS;
}

void request_free(pml::Request* req) {
  progress::Guard guard;
  if (req->persistent) {
    delete static_cast<Schedule*>(req->user_data);
    req->user_data = nullptr;
  }
  pml::request_release(req);
}

}  // namespace axon::coll
