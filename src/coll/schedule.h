// A collective operation as a schedule: rounds of point-to-point sends and
// receives followed by local work (reductions, copies). Blocking collectives
// run a schedule to completion; nonblocking and persistent ones hand it to
// the progress engine (pml progress hook) and return a request.
//
// A round posts all its sends and receives at once; when every one of them
// has completed, the round's local steps run in the order they were added,
// then the next round starts. Builders add steps in one fixed order on every
// rank, so the n-th message from A to B is always matched by B's n-th
// receive from A (the tag is per operation, not per message).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "datatype/datatype.h"
#include "op/op.h"
#include "pml/pml.h"

namespace axon::coll {

struct CommState;
struct CallTally;

class Schedule {
 public:
  Schedule(pml::Context* ctx, const Op* op);
  ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  pml::Context* ctx() const { return ctx_; }
  // The communicator's collective state.
  CommState* state = nullptr;
  // Owned by state->schedules (ScheduleCache): returned there, not
  // deleted, when it finishes.
  bool cached = false;
  // Persistent schedules: the tag every start uses, drawn from `state` at
  // the *_init call. MPI-4.1 6.13 matches persistent collectives by the
  // order of their init calls, so two requests may be started in different
  // orders on different processes; successive starts of one request reuse
  // the tag safely, as messages between two processes match in order.
  int persistent_tag = 0;
  const Op* op() const { return op_; }
  // The report's tally this schedule counts in at every start (null: a
  // schedule the report does not count, e.g. internal ones), with the
  // call's bytes and the algorithm's name.
  CallTally* tally = nullptr;
  size_t tally_bytes = 0;
  const char* tally_algorithm = nullptr;
  // Reduce steps combine with GPU kernels (Args::device_combine).
  bool device_combine = false;
  // Device-resident (Args::device_resident, src/coll/device_reduce.cpp):
  // the buffers are GPU memory, scratch comes from the GPU kernels' device
  // scratch pool, reduce steps run the kernels on device memory and copy
  // steps are device copies. Set before the builder adds steps.
  //
  // Those steps are queued on the GPU, not waited for: a round's messages
  // are posted while earlier rounds' kernels still run, unless they read
  // bytes that queued work writes or write bytes it touches (then the round
  // waits for that work). Builders that cut an exchange into segments
  // (coll/internal.h, reduce_segments) thus overlap the kernel of one
  // segment with the transfer of the next.
  bool device_resident = false;

  // Bytes [lo, hi) that a step reads, or writes.
  struct Touched {
    uintptr_t lo, hi;
    bool written;
  };

  // ---- building ------------------------------------------------------------
  // Scratch memory owned by the schedule (never null, even for 0 bytes).
  void* temp(size_t bytes);
  // Scratch for `count` items of `type` laid out with its extent; returns the
  // address of item 0 (true_lb is accounted for).
  void* temp_items(MPI_Count count, const Datatype* type);
  // `on` overrides the schedule's context (intercommunicators: the local
  // group's context next to the remote one).
  void send(const void* buf, MPI_Count count, const Datatype* type, int peer, pml::Context* on = nullptr);
  void recv(void* buf, MPI_Count count, const Datatype* type, int peer, pml::Context* on = nullptr);
  // Byte-level forms (packed data).
  void send_bytes(const void* buf, size_t bytes, int peer, pml::Context* on = nullptr);
  void recv_bytes(void* buf, size_t bytes, int peer, pml::Context* on = nullptr);
  void copy_bytes(const void* src, void* dst, size_t bytes);
  // inout = in op inout, `count` items of `type` (the schedule's op).
  void reduce(const void* in, void* inout, MPI_Count count, const Datatype* type);
  // Copies a typed buffer into another one of the same type signature.
  void copy(const void* src, MPI_Count scount, const Datatype* stype, void* dst, MPI_Count rcount,
            const Datatype* rtype);
  void local(std::function<int()> fn);
  // Closes the current round (a no-op when it is empty).
  void round();
  // Keeps a datatype alive while the schedule exists (user may free it).
  void retain(const Datatype* type);

  // ---- running -------------------------------------------------------------
  // (Re)starts from the first round with `tag` on the context.
  void start(int tag);
  // Advances as far as possible without blocking; true once finished.
  bool advance();
  bool finished() const { return finished_; }
  int error() const { return error_; }
  size_t rounds() const { return round_end_.size(); }

 private:
  enum class StepKind : uint8_t { Send, Recv, Reduce, Copy, Local };
  struct Step {
    StepKind kind;
    int peer;
    const void* src;
    void* dst;
    MPI_Count count, count2;
    const Datatype* type;
    const Datatype* type2;
    size_t fn;  // index into locals_
    pml::Context* ctx;
  };
  bool post_round();
  bool round_complete();
  int run_local_steps();

  pml::Context* ctx_;
  const Op* op_;
  std::vector<Step> steps_;
  std::vector<size_t> round_end_;  // steps_[round_end_[r-1], round_end_[r]) form round r
  std::vector<std::function<int()>> locals_;
  std::vector<std::unique_ptr<uint8_t[]>> temps_;
  // Device scratch of a device-resident schedule (pointer, size asked for):
  // back to the pool when the schedule goes.
  std::vector<std::pair<void*, size_t>> device_temps_;
  int run_device_step(const Step& s);
  // Queued device work: per round that queued some, the event after it and
  // the byte ranges its steps read or write. Oldest first (one stream: they
  // finish in order).
  struct Fence {
    void* done;  // accel::Event
    std::vector<Touched> touched;
  };
  std::vector<Fence> fences_;
  int queue_device_steps();
  // Drops the fences whose work finished (an error from the GPU goes to
  // error_); true when none is left. `wait`: waits for all of them.
  bool retire_fences(bool wait);
  // Whether the current round's messages touch bytes that queued work uses.
  // *has_messages: the round posts any.
  bool round_conflicts_with_queued_work(bool* has_messages) const;
  std::vector<Datatype*> retained_;
  // Running state.
  int tag_ = 0;
  size_t round_ = 0;
  bool posted_ = false;
  bool finished_ = false;
  int error_ = MPI_SUCCESS;
  std::vector<pml::Request*> inflight_;
};

// Runs a schedule to completion on the calling thread (blocking collectives),
// driving the rest of the library's progress while it waits.
int run_to_completion(Schedule& s, int tag);

// Nonblocking: the schedule runs from pml progress; `req` (Kind::Collective)
// completes with the schedule's error. `owned` schedules are deleted on
// completion (persistent ones are kept for the next start).
void launch(Schedule* s, pml::Request* req, int tag);

}  // namespace axon::coll
