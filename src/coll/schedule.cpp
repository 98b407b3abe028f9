// The schedule engine: building, advancing, and the list of schedules in
// flight that pml progress drives.
#include "coll/schedule.h"

#include <algorithm>
#include <cstring>

#include "accel/kernels.h"
#include "base/counter.h"
#include "coll/internal.h"
#include "coll/util.h"
#include "progress/progress.h"

namespace axon::coll {

namespace {

Counter overlapped_rounds{"axon_coll_device_overlapped_rounds", Counter::Class::Counter,
                          "Rounds of device-resident reductions whose messages were posted while GPU work of an "
                          "earlier round was still queued (kernels overlapping with messages)"};

// The bytes `count` items of `t` at `p` read or write (the whole span of
// the type map: a superset for types with holes).
Schedule::Touched touched(const void* p, MPI_Count count, const Datatype* t, bool written) {
  if (count <= 0 || t->size == 0) return {0, 0, written};
  const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(count - 1) * t->extent;
  const auto base = reinterpret_cast<uintptr_t>(p);
  return {base + static_cast<uintptr_t>(t->true_lb + std::min<std::ptrdiff_t>(0, last)),
          base + static_cast<uintptr_t>(t->true_lb + t->true_extent + std::max<std::ptrdiff_t>(0, last)), written};
}

}  // namespace

Schedule::Schedule(pml::Context* ctx, const Op* op) : ctx_(ctx), op_(op) {
  if (op_) op_retain(const_cast<Op*>(op_));
}

Schedule::~Schedule() {
  // Only an abandoned schedule (error paths) still has requests in flight;
  // they are left to complete on their own.
  progress::Guard guard;
  for (pml::Request* r : inflight_) {
    if (r->complete.load(std::memory_order_acquire)) pml::request_release(r);
    else r->free_when_complete = true;
  }
  // Queued GPU work still reads or writes the scratch.
  retire_fences(true);
  for (Datatype* t : retained_) datatype_release(t);
  if (op_) op_release(const_cast<Op*>(op_));
  for (auto& [p, bytes] : device_temps_) accel::kernels::scratch_free(p, bytes);
}

void* Schedule::temp(size_t bytes) {
  if (device_resident) {
    // Device scratch from the kernels' pool: in steady state a call takes
    // back the buffers the previous one returned (no cuMemAlloc per call).
    // Without one (the GPU out of memory) host scratch still works, only
    // slower: the copy and reduce steps below handle either memory.
    if (void* p = accel::kernels::scratch_alloc(bytes ? bytes : 1)) {
      device_temps_.emplace_back(p, bytes ? bytes : 1);
      return p;
    }
  }
  // Not value-initialised: scratch is always written before it is read, and
  // zeroing megabytes on every call would cost as much as copying them.
  temps_.emplace_back(new uint8_t[bytes ? bytes : 1]);
  return temps_.back().get();
}

void* Schedule::temp_items(MPI_Count count, const Datatype* type) {
  // Whole items, lb to ub, not just the bytes the type map covers: user
  // reduction functions commonly copy items as C structs, trailing padding
  // (a hole past true_ub) included.
  std::ptrdiff_t before = std::max<std::ptrdiff_t>(0, type->true_lb - type->lb);
  std::ptrdiff_t after = std::max<std::ptrdiff_t>(0, (type->lb + type->extent) - (type->true_lb + type->true_extent));
  size_t span = items_span(count, type) + static_cast<size_t>(before + after);
  auto* base = static_cast<uint8_t*>(temp(span));
  return base + before - type->true_lb;
}

void Schedule::send(const void* buf, MPI_Count count, const Datatype* type, int peer, pml::Context* on) {
  steps_.push_back({StepKind::Send, peer, buf, nullptr, count, 0, type, nullptr, 0, on ? on : ctx_});
}

void Schedule::recv(void* buf, MPI_Count count, const Datatype* type, int peer, pml::Context* on) {
  steps_.push_back({StepKind::Recv, peer, nullptr, buf, count, 0, type, nullptr, 0, on ? on : ctx_});
}

void Schedule::send_bytes(const void* buf, size_t bytes, int peer, pml::Context* on) {
  send(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, on);
}

void Schedule::recv_bytes(void* buf, size_t bytes, int peer, pml::Context* on) {
  recv(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, on);
}

void Schedule::copy_bytes(const void* src, void* dst, size_t bytes) {
  if (bytes == 0 || src == dst) return;
  copy(src, static_cast<MPI_Count>(bytes), byte_type(), dst, static_cast<MPI_Count>(bytes), byte_type());
}

void Schedule::reduce(const void* in, void* inout, MPI_Count count, const Datatype* type) {
  steps_.push_back({StepKind::Reduce, 0, in, inout, count, 0, type, nullptr, 0, nullptr});
}

void Schedule::copy(const void* src, MPI_Count scount, const Datatype* stype, void* dst, MPI_Count rcount,
                    const Datatype* rtype) {
  steps_.push_back({StepKind::Copy, 0, src, dst, scount, rcount, stype, rtype, 0, nullptr});
}

void Schedule::local(std::function<int()> fn) {
  locals_.push_back(std::move(fn));
  steps_.push_back({StepKind::Local, 0, nullptr, nullptr, 0, 0, nullptr, nullptr, locals_.size() - 1, nullptr});
}

void Schedule::round() {
  size_t begin = round_end_.empty() ? 0 : round_end_.back();
  if (steps_.size() > begin) round_end_.push_back(steps_.size());
}

void Schedule::retain(const Datatype* type) {
  if (!type || type->predefined) return;
  auto* t = const_cast<Datatype*>(type);
  datatype_retain(t);
  retained_.push_back(t);
}

void Schedule::start(int tag) {
  round();
  tag_ = tag;
  round_ = 0;
  posted_ = false;
  finished_ = round_end_.empty();
  error_ = MPI_SUCCESS;
}

bool Schedule::post_round() {
  size_t begin = round_ == 0 ? 0 : round_end_[round_ - 1];
  for (size_t i = begin; i < round_end_[round_]; ++i) {
    const Step& s = steps_[i];
    if (s.kind != StepKind::Send && s.kind != StepKind::Recv) continue;
    if (s.peer == MPI_PROC_NULL) continue;
    pml::Request* r = nullptr;
    // After an error the data is meaningless: send empty messages, which
    // the receivers see as short and report in turn (see advance()).
    MPI_Count send_count = error_ == MPI_SUCCESS ? s.count : 0;
    // A small send goes out at once, without a request to allocate, track
    // and release (a third of a small nonblocking call's instructions).
    if (s.kind == StepKind::Send && pml::try_send_now(s.src, send_count, s.type, s.peer, tag_, s.ctx)) continue;
    int rc = s.kind == StepKind::Send
                 ? pml::isend(s.src, send_count, s.type, s.peer, tag_, s.ctx, pml::SendMode::Standard, &r)
                 : pml::irecv(s.dst, s.count, s.type, s.peer, tag_, s.ctx, &r);
    if (rc != MPI_SUCCESS) {
      error_ = rc;
      return false;
    }
    inflight_.push_back(r);
  }
  posted_ = true;
  return true;
}

bool Schedule::round_complete() {
  for (pml::Request* r : inflight_)
    if (!r->complete.load(std::memory_order_acquire)) return false;
  for (pml::Request* r : inflight_) {
    if (r->error != MPI_SUCCESS && error_ == MPI_SUCCESS) error_ = r->error;
    // Every schedule receive is sized to exactly what its peer sends, so a
    // short one means the processes passed mismatched counts (an erroneous
    // program) or the peer failed earlier.
    if (r->kind == pml::Request::Kind::Recv && r->bytes < r->length && error_ == MPI_SUCCESS) error_ = MPI_ERR_OTHER;
    pml::request_release(r);
  }
  inflight_.clear();
  return true;
}

// A reduce or copy step of a device-resident schedule: the kernels, or
// accel's device copies (any direction: a temp may be host memory when the
// device had none to give). Only contiguous types get here (device_reduce.cpp
// checks), so a copy is one byte range.
int Schedule::run_device_step(const Step& s) {
  if (s.kind == StepKind::Reduce)
    return s.count > 0 ? accel::device_op_apply(*op_, s.src, s.dst, static_cast<size_t>(s.count), *s.type)
                       : MPI_SUCCESS;
  size_t from = payload_bytes(s.count, s.type), to = payload_bytes(s.count2, s.type2);
  if (from != to) return from > to ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
  if (!s.type->contiguous || !s.type2->contiguous) return MPI_ERR_INTERN;
  if (from == 0) return MPI_SUCCESS;
  const auto* src = static_cast<const uint8_t*>(s.src) + s.type->true_lb;
  auto* dst = static_cast<uint8_t*>(s.dst) + s.type2->true_lb;
  return src == dst || accel::copy(dst, src, from) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

// The current round's reduce and copy steps queued on the GPU (the
// kernels' queue stream), with one fence after them. A step that cannot be
// queued (a local function, a reduce the kernels refuse, a copy the queue
// cannot take) first waits for the work queued before it, then runs here.
int Schedule::queue_device_steps() {
  size_t begin = round_ == 0 ? 0 : round_end_[round_ - 1];
  Fence fence{nullptr, {}};
  // Marks what was queued since the last fence, if anything.
  auto close_fence = [&]() -> int {
    if (fence.touched.empty()) return MPI_SUCCESS;
    int rc = accel::kernels::queue_mark(&fence.done);
    if (fence.done) fences_.push_back(std::move(fence));
    fence = Fence{nullptr, {}};
    return rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
  };
  for (size_t i = begin; i < round_end_[round_]; ++i) {
    const Step& s = steps_[i];
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv) continue;
    int rc = 1;
    if (s.kind == StepKind::Reduce) {
      if (s.count <= 0) continue;
      rc = accel::device_op_queue(*op_, s.src, s.dst, static_cast<size_t>(s.count), *s.type);
      if (rc == MPI_SUCCESS) {
        fence.touched.push_back(touched(s.src, s.count, s.type, false));
        fence.touched.push_back(touched(s.dst, s.count, s.type, true));
        continue;
      }
    } else if (s.kind == StepKind::Copy) {
      size_t from = payload_bytes(s.count, s.type), to = payload_bytes(s.count2, s.type2);
      if (from != to) return from > to ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
      if (!s.type->contiguous || !s.type2->contiguous) return MPI_ERR_INTERN;
      const auto* src = static_cast<const uint8_t*>(s.src) + s.type->true_lb;
      auto* dst = static_cast<uint8_t*>(s.dst) + s.type2->true_lb;
      if (from == 0 || src == dst) continue;
      rc = accel::kernels::queue_copy(dst, src, from);
      if (rc == 0) {
        fence.touched.push_back({reinterpret_cast<uintptr_t>(src), reinterpret_cast<uintptr_t>(src) + from, false});
        fence.touched.push_back({reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(dst) + from, true});
        continue;
      }
      if (rc < 0) return MPI_ERR_OTHER;
    }
    if (rc != 1) return rc;
    if ((rc = close_fence()) != MPI_SUCCESS) return rc;
    retire_fences(true);
    if (error_ != MPI_SUCCESS) return error_;
    rc = s.kind == StepKind::Local ? locals_[s.fn]() : run_device_step(s);
    if (rc != MPI_SUCCESS) return rc;
  }
  return close_fence();
}

bool Schedule::retire_fences(bool wait) {
  while (!fences_.empty()) {
    int rc = wait ? accel::event_finish(fences_.front().done) : accel::event_poll(fences_.front().done);
    if (rc == 1) return false;
    if (rc < 0 && error_ == MPI_SUCCESS) error_ = MPI_ERR_OTHER;
    fences_.erase(fences_.begin());
  }
  return true;
}

bool Schedule::round_conflicts_with_queued_work(bool* has_messages) const {
  size_t begin = round_ == 0 ? 0 : round_end_[round_ - 1];
  *has_messages = false;
  for (size_t i = begin; i < round_end_[round_]; ++i) {
    const Step& s = steps_[i];
    if ((s.kind != StepKind::Send && s.kind != StepKind::Recv) || s.peer == MPI_PROC_NULL) continue;
    *has_messages = true;
    const bool writes = s.kind == StepKind::Recv;
    const Touched m = touched(writes ? s.dst : s.src, s.count, s.type, writes);
    if (m.lo == m.hi) continue;
    // A send may read what queued work only reads; a receive may not
    // overwrite anything it touches.
    for (const Fence& f : fences_)
      for (const Touched& q : f.touched)
        if ((writes || q.written) && m.lo < q.hi && q.lo < m.hi) return true;
  }
  return false;
}

int Schedule::run_local_steps() {
  size_t begin = round_ == 0 ? 0 : round_end_[round_ - 1];
  for (size_t i = begin; i < round_end_[round_]; ++i) {
    const Step& s = steps_[i];
    int rc = MPI_SUCCESS;
    if (device_resident && (s.kind == StepKind::Reduce || s.kind == StepKind::Copy)) [[unlikely]] {
      if ((rc = run_device_step(s)) != MPI_SUCCESS) return rc;
      continue;
    }
    switch (s.kind) {
      case StepKind::Reduce:
        if (s.count > 0)
          rc = __builtin_expect(device_combine, 0)
                   ? accel::combine_on_device(*op_, s.src, s.dst, static_cast<size_t>(s.count), *s.type)
                   : op_apply(*op_, s.src, s.dst, static_cast<size_t>(s.count), *s.type);
        break;
      case StepKind::Copy: {
        // Both sides of a schedule copy have one type signature in a correct
        // program (a process's own block, packed images); different sizes
        // mean mismatched counts: an error, which the rest of the schedule
        // passes on to the peers (see advance()).
        size_t from = payload_bytes(s.count, s.type), to = payload_bytes(s.count2, s.type2);
        rc = from > to ? MPI_ERR_TRUNCATE : from < to ? MPI_ERR_OTHER : copy_typed(s.src, s.count, s.type, s.dst, s.count2, s.type2);
        break;
      }
      case StepKind::Local:
        rc = locals_[s.fn]();
        break;
      default:
        break;
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

bool Schedule::advance() {
  while (!finished_) {
    if (round_ == round_end_.size()) {
      // Only a device-resident schedule gets here: its last rounds' GPU
      // work is still queued.
      if (!retire_fences(false)) return false;
      finished_ = true;
      break;
    }
    if (!posted_) {
      if (!fences_.empty() && !retire_fences(false)) {
        bool has_messages = false;
        if (round_conflicts_with_queued_work(&has_messages)) return false;
        if (has_messages) overlapped_rounds.add();
      }
      if (!post_round()) {
        retire_fences(true);  // the buffers are the caller's again once finished
        finished_ = true;     // error_ set; requests already posted finish on their own
        break;
      }
    }
    if (!round_complete()) return false;
    if (error_ == MPI_SUCCESS) error_ = device_resident ? queue_device_steps() : run_local_steps();
    posted_ = false;
    // After an error (a truncated or short receive: mismatched counts) the
    // remaining rounds still run, with empty sends and no local steps, so
    // that no peer is left waiting for this process and every one of them
    // gets an error back instead of hanging (as MPICH's collectives do).
    if (++round_ == round_end_.size() && fences_.empty()) finished_ = true;
  }
  return true;
}

int run_to_completion(Schedule& s, int tag) {
  {
    progress::Guard guard;
    if (s.tally) s.tally->add(s.tally_bytes, s.tally_algorithm);
    s.start(tag);
    if (s.advance()) return s.error();
  }
  progress::wait_until([&] {
    progress::Guard guard;
    return s.advance();
  });
  return s.error();
}

// ---- schedules in flight -----------------------------------------------------

namespace {

struct InFlight {
  Schedule* schedule;
  pml::Request* request;
};
std::vector<InFlight> in_flight;

void finish(const InFlight& f) {
  pml::Request* r = f.request;
  r->error = f.schedule->error();
  if (!r->persistent || r->free_when_complete) {
    if (f.schedule->cached) f.schedule->state->schedules.release(f.schedule);
    else delete f.schedule;
    r->user_data = nullptr;
  }
  pml::request_complete(r);
}

int advance_in_flight() {
  int n = 0;
  // A completion callback may launch another schedule: index loop, and the
  // entry is removed before its request completes.
  for (size_t i = 0; i < in_flight.size();) {
    InFlight f = in_flight[i];
    if (!f.schedule->advance()) {
      ++i;
      continue;
    }
    in_flight.erase(in_flight.begin() + static_cast<long>(i));
    if (in_flight.empty()) progress::remove_hook(advance_in_flight);
    finish(f);
    ++n;
  }
  return n;
}

}  // namespace

void launch(Schedule* s, pml::Request* req, int tag) {
  progress::Guard guard;
  req->complete.store(false, std::memory_order_relaxed);
  req->error = MPI_SUCCESS;
  if (s->tally) s->tally->add(s->tally_bytes, s->tally_algorithm);
  s->start(tag);
  if (s->advance()) {
    finish({s, req});
    return;
  }
  if (in_flight.empty()) progress::add_hook(advance_in_flight);
  in_flight.push_back({s, req});
}

// ---- the schedule cache -----------------------------------------------------

ScheduleCache::~ScheduleCache() {
  // A schedule still running (its communicator freed while the operation
  // was pending) finishes on its own and is deleted then, as uncached ones
  // are.
  for (Entry& e : entries_) {
    if (e.busy) {
      e.schedule->cached = false;
      e.schedule->state = nullptr;
      (void)e.schedule.release();
    }
  }
}

Schedule* ScheduleCache::take(const Args& args, const Algorithm* alg) {
  for (Entry& e : entries_) {
    if (!e.busy && e.alg == alg && e.args == args) {
      e.busy = true;
      e.used = ++clock_;
      return e.schedule.get();
    }
  }
  return nullptr;
}

Schedule* ScheduleCache::adopt(const Args& args, const Algorithm* alg, std::unique_ptr<Schedule>& s) {
  Entry* slot = nullptr;
  if (entries_.size() < kEntries) {
    slot = &entries_.emplace_back();
  } else {
    for (Entry& e : entries_)
      if (!e.busy && (!slot || e.used < slot->used)) slot = &e;
    if (!slot) return nullptr;
  }
  slot->args = args;
  slot->alg = alg;
  slot->schedule = std::move(s);
  slot->schedule->cached = true;
  slot->busy = true;
  slot->used = ++clock_;
  return slot->schedule.get();
}

void ScheduleCache::release(Schedule* s) {
  for (Entry& e : entries_) {
    if (e.schedule.get() == s) {
      e.busy = false;
      return;
    }
  }
}

}  // namespace axon::coll
