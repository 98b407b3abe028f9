// The context-id pool and the agreement protocol described in context_id.h.
#include "mpi/context_id.h"

#include <mpi.h>

#include <bit>

#include "datatype/datatype.h"
#include "progress/progress.h"

namespace axon::mpi {

namespace {

// Bit p set: pair p is free (in_use clear) / reserved by a creation in flight.
struct Pool {
  ContextMask in_use{};
  ContextMask reserved{};
  Pool() {
    for (int p = 0; p < kReservedPairs; ++p) in_use[p / 64] |= uint64_t{1} << (p % 64);
  }
} pool;

bool test(const ContextMask& m, int p) { return (m[p / 64] >> (p % 64)) & 1; }
void set(ContextMask& m, int p) { m[p / 64] |= uint64_t{1} << (p % 64); }
void clear(ContextMask& m, int p) { m[p / 64] &= ~(uint64_t{1} << (p % 64)); }

int lowest(const ContextMask& m) {
  for (size_t w = 0; w < m.size(); ++w)
    if (m[w]) return static_cast<int>(w * 64 + std::countr_zero(m[w]));
  return -1;
}

const Datatype* bytes_type() { return datatype_from_handle(MPI_BYTE); }

}  // namespace

ContextMask context_candidates() {
  progress::Guard guard;
  ContextMask m;
  for (size_t w = 0; w < m.size(); ++w) m[w] = ~(pool.in_use[w] | pool.reserved[w]);
  return m;
}

int context_try_reserve(const ContextMask& agreed, bool* reserved) {
  progress::Guard guard;
  int p = lowest(agreed);
  *reserved = p >= 0 && !test(pool.in_use, p) && !test(pool.reserved, p);
  if (*reserved) set(pool.reserved, p);
  return p;
}

void context_unreserve(int pair) {
  progress::Guard guard;
  clear(pool.reserved, pair);
}

void context_commit(int pair) {
  progress::Guard guard;
  clear(pool.reserved, pair);
  set(pool.in_use, pair);
}

void context_release(int pair) {
  progress::Guard guard;
  if (pair >= kReservedPairs) clear(pool.in_use, pair);
}

// ---------------------------------------------------------------------------

MaskAllreduce::MaskAllreduce(pml::Context* ctx, std::vector<int> members, int me, int tag)
    : ctx_(ctx), members_(std::move(members)), tag_(tag) {
  int n = static_cast<int>(members_.size());
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int extra = n - p;
  if (me >= p) {
    // Beyond the power of two: hand the words to the partner, get the result.
    plan_.push_back({Kind::Send, me - p, false});
    plan_.push_back({Kind::Recv, me - p, false});
    return;
  }
  if (me < extra) plan_.push_back({Kind::Recv, me + p, true});
  for (int mask = 1; mask < p; mask <<= 1) plan_.push_back({Kind::Exchange, me ^ mask, true});
  if (me < extra) plan_.push_back({Kind::Send, me + p, false});
}

namespace {
// Gives a request back to the PML, now or when it completes.
void drop(pml::Request* r) {
  if (!r) return;
  if (r->complete.load()) pml::request_release(r);
  else r->free_when_complete = true;
}
}  // namespace

MaskAllreduce::~MaskAllreduce() {
  // Only reachable with requests in flight when the job is being torn down
  // after an error; they stay with the PML.
  progress::Guard guard;
  drop(send_);
  drop(recv_);
}

void MaskAllreduce::start(std::vector<uint64_t> words) {
  words_ = std::move(words);
  incoming_.assign(words_.size(), 0);
  next_ = 0;
  error_ = 0;
}

bool MaskAllreduce::step() {
  progress::Guard guard;
  MPI_Count bytes = static_cast<MPI_Count>(words_.size() * sizeof(uint64_t));
  auto fail = [&](int rc) {
    error_ = rc;
    drop(send_);
    drop(recv_);
    send_ = recv_ = nullptr;
    return true;
  };
  while (next_ < plan_.size()) {
    const Op& op = plan_[next_];
    int peer = members_[op.peer];
    if (!send_ && !recv_) {
      // Post this op's messages (the receive first, so an exchange partner's
      // message finds it).
      if (op.kind != Kind::Send) {
        int rc = pml::irecv(incoming_.data(), bytes, bytes_type(), peer, tag_, ctx_, &recv_);
        if (rc != MPI_SUCCESS) return fail(rc);
      }
      if (op.kind != Kind::Recv) {
        int rc = pml::isend(words_.data(), bytes, bytes_type(), peer, tag_, ctx_, pml::SendMode::Standard, &send_);
        if (rc != MPI_SUCCESS) return fail(rc);
      }
    }
    if ((send_ && !send_->complete.load(std::memory_order_acquire)) ||
        (recv_ && !recv_->complete.load(std::memory_order_acquire)))
      return false;
    int rc = MPI_SUCCESS;
    for (pml::Request** r : {&send_, &recv_}) {
      if (!*r) continue;
      if (rc == MPI_SUCCESS) rc = (*r)->error;
      pml::request_release(*r);
      *r = nullptr;
    }
    if (rc != MPI_SUCCESS) return fail(rc);
    if (op.kind != Kind::Send) {
      for (size_t i = 0; i < words_.size(); ++i) words_[i] = op.combine ? words_[i] & incoming_[i] : incoming_[i];
    }
    ++next_;
  }
  return true;
}

// ---------------------------------------------------------------------------

int agree_context_pair(pml::Context* ctx, std::vector<int> members, int me, int tag, int* error) {
  ContextAgreement agreement(ctx, std::move(members), me, tag);
  bool done = false;
  progress::wait_until([&] { return done || (done = agreement.step()); });
  *error = agreement.error();
  return agreement.pair();
}

int agree_context_pair(pml::Context* ctx, int tag, int* error) {
  std::vector<int> all(ctx->size());
  for (int i = 0; i < ctx->size(); ++i) all[i] = i;
  return agree_context_pair(ctx, std::move(all), ctx->rank, tag, error);
}

}  // namespace axon::mpi
