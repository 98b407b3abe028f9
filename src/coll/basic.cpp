// Barrier (dissemination), broadcast (binomial tree), reduce (binomial tree,
// operand order kept for non-commutative ops) and allreduce (recursive
// doubling for commutative ops, reduce + broadcast otherwise).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "accel/kernels.h"
#include "coll/coll.h"
#include "progress/progress.h"

namespace axon::coll {

namespace {

enum Tag : int { kTagBarrier = 1, kTagBcast = 2, kTagReduce = 3, kTagAllreduce = 4, kTagAllgather = 5 };

const Datatype* byte_type() { return datatype_from_handle(MPI_BYTE); }

// Sends `out` bytes and receives `bytes` bytes (equal unless this rank
// failed earlier and sends an empty message).
int exchange(const void* sendbuf, void* recvbuf, size_t out, size_t bytes, int peer, int tag, pml::Context* ctx) {
  pml::Request* s = nullptr;
  int rc = pml::isend(sendbuf, static_cast<MPI_Count>(out), byte_type(), peer, tag, ctx,
                      pml::SendMode::Standard, &s);
  if (rc != MPI_SUCCESS) return rc;
  pml::Request r;
  rc = pml::recv(recvbuf, static_cast<MPI_Count>(bytes), byte_type(), peer, tag, ctx, &r);
  if (rc == MPI_SUCCESS && r.bytes < bytes) rc = MPI_ERR_OTHER;  // short: see recv_bytes
  pml::wait(s);
  progress::Guard guard;
  if (rc == MPI_SUCCESS) rc = s->error;
  pml::request_release(s);
  return rc;
}

int send_bytes(const void* buf, size_t bytes, int peer, int tag, pml::Context* ctx) {
  return pml::send(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, tag, ctx, pml::SendMode::Standard);
}

// Every receive here is sized to exactly what the peer sends; a short one
// means mismatched counts (an erroneous program) or a peer that failed
// earlier and sends empty messages: an error here too.
int recv_bytes(void* buf, size_t bytes, int peer, int tag, pml::Context* ctx) {
  pml::Request r;
  int rc = pml::recv(buf, static_cast<MPI_Count>(bytes), byte_type(), peer, tag, ctx, &r);
  return rc == MPI_SUCCESS && r.bytes < bytes ? MPI_ERR_OTHER : rc;
}

// Reduction buffers hold `count` items of a type laid out with its extent.
size_t span_bytes(const Datatype* type, MPI_Count count) {
  return static_cast<size_t>(count) * static_cast<size_t>(type->extent);
}

}  // namespace

int barrier(pml::Context* ctx) {
  int size = ctx->size(), rank = ctx->rank;
  char token = 0, sink = 0;
  for (int distance = 1; distance < size; distance <<= 1) {
    int to = (rank + distance) % size;
    int from = (rank - distance + size) % size;
    pml::Request* s = nullptr;
    int rc = pml::isend(&token, 0, byte_type(), to, kTagBarrier, ctx, pml::SendMode::Standard, &s);
    if (rc != MPI_SUCCESS) return rc;
    rc = recv_bytes(&sink, 0, from, kTagBarrier, ctx);
    pml::wait(s);
    progress::Guard guard;
    pml::request_release(s);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int bcast(void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx) {
  int size = ctx->size();
  if (size == 1 || count == 0) return MPI_SUCCESS;
  int relative = (ctx->rank - root + size) % size;
  // Receive from the parent (the rank that differs in our lowest set bit)...
  // A mismatched count (an erroneous program) must not leave the subtree
  // behind in this call: a rank whose receive failed or came up short
  // still sends to its children, an empty message, so that every rank
  // below it sees a short message too and returns an error (as MPICH does).
  int err = MPI_SUCCESS;
  int mask = 1;
  while (mask < size) {
    if (relative & mask) {
      int parent = (relative - mask + root) % size;
      pml::Request r;
      err = pml::recv(buf, count, type, parent, kTagBcast, ctx, &r);
      if (err == MPI_SUCCESS && r.bytes != static_cast<size_t>(count) * type->size) err = MPI_ERR_OTHER;
      break;
    }
    mask <<= 1;
  }
  // ...then send to the children below that bit, largest subtree first.
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < size) {
      int child = (relative + mask + root) % size;
      int rc = err == MPI_SUCCESS ? pml::send(buf, count, type, child, kTagBcast, ctx, pml::SendMode::Standard)
                                  : pml::send(buf, 0, type, child, kTagBcast, ctx, pml::SendMode::Standard);
      if (err == MPI_SUCCESS) err = rc;
    }
  }
  return err;
}

// Flat broadcast: the root sends to every other rank (eager messages: it
// returns at once), each receives from the root. With more ranks than
// cores nobody waits for a forwarder that may be descheduled behind the
// root on the root's core: a rank on another core gets the data as soon
// as the root has run. docs/collectives.md ("Oversubscribed").
int bcast_flat(void* buf, MPI_Count count, const Datatype* type, int root, pml::Context* ctx) {
  int size = ctx->size();
  if (size == 1 || count == 0) return MPI_SUCCESS;
  if (ctx->rank != root) {
    pml::Request r;
    int err = pml::recv(buf, count, type, root, kTagBcast, ctx, &r);
    if (err == MPI_SUCCESS && r.bytes != static_cast<size_t>(count) * type->size) err = MPI_ERR_OTHER;
    return err;
  }
  int err = MPI_SUCCESS;
  // Nearest ranks first (the next rank often runs on the next core).
  for (int i = 1; i < size; ++i) {
    int rc = pml::send(buf, count, type, (root + i) % size, kTagBcast, ctx, pml::SendMode::Standard);
    if (err == MPI_SUCCESS) err = rc;
  }
  return err;
}

// (Declared in internal.h, whose helpers clash with this file's.)
extern thread_local bool direct_device_combine;
thread_local bool direct_device_combine = false;

namespace {

// A local combine step: op_apply, or a GPU kernel (DeviceCombineScope).
inline int combine_step(const Op& op, const void* in, void* inout, size_t count, const Datatype& type) {
  if (__builtin_expect(direct_device_combine, 0)) return accel::combine_on_device(op, in, inout, count, type);
  return op_apply(op, in, inout, count, type);
}

// Binomial reduction towards rank 0. Rank r combines contributions of ranks
// r+1 .. r+2^k-1 on the right, so the result is op(x0, x1, ..., x_{n-1}) in
// rank order even for non-commutative ops. Result ends in `acc` on rank 0.
int reduce_to_zero(void* acc, void* scratch, MPI_Count count, const Datatype* type, const Op* op,
                   pml::Context* ctx) {
  int size = ctx->size(), rank = ctx->rank;
  size_t bytes = span_bytes(type, count);
  // After an error (a mismatched count: truncation) keep taking part, so
  // the parent is not left waiting; report the first error at the end.
  int err = MPI_SUCCESS;
  for (int mask = 1; mask < size; mask <<= 1) {
    if (rank & mask) {
      // After an error an empty message, which the parent sees as short.
      int rc = send_bytes(acc, err == MPI_SUCCESS ? bytes : 0, rank - mask, kTagReduce, ctx);
      return err != MPI_SUCCESS ? err : rc;
    }
    int child = rank + mask;
    if (child < size) {
      int rc = recv_bytes(scratch, bytes, child, kTagReduce, ctx);
      if (err == MPI_SUCCESS) err = rc;
      if (err != MPI_SUCCESS) continue;
      // scratch = acc op scratch (acc holds lower ranks: the left operand)
      rc = combine_step(*op, acc, scratch, static_cast<size_t>(count), *type);
      if (rc != MPI_SUCCESS) {
        err = rc;
        continue;
      }
      if (bytes) std::memcpy(acc, scratch, bytes);
    }
  }
  return err;
}

}  // namespace

// Flat reduction: every other rank sends its operand straight to the root
// and returns at once (an eager message), the root combines them in rank
// order. With more ranks than cores that wins for small messages: a rank
// sharing the root's core costs it one send per call (instead of a
// receive, a reduction and a send in the binomial tree), and nobody waits
// for a rank on another core, so non-roots run calls ahead and the root
// finds their operands there. docs/collectives.md ("Oversubscribed").
int reduce_flat(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op, int root,
                pml::Context* ctx) {
  int size = ctx->size(), rank = ctx->rank;
  size_t bytes = span_bytes(type, count);
  const void* mine = sendbuf ? sendbuf : recvbuf;
  if (rank != root) return send_bytes(mine, bytes, root, kTagReduce, ctx);
  if (size == 1) {
    if (sendbuf && count) std::memcpy(recvbuf, sendbuf, bytes);
    return MPI_SUCCESS;
  }
  // operands[i]: rank i's operand, the root's own read in place. Small
  // calls (the only ones that come here) fit the stack.
  constexpr size_t kStack = 4096;
  alignas(64) uint8_t stack[kStack];
  std::vector<uint8_t> heap;
  size_t need = static_cast<size_t>(size) * bytes;
  uint8_t* all = stack;
  if (need > kStack) {
    heap.resize(need);
    all = heap.data();
  }
  auto operand = [&](int i) { return all + static_cast<size_t>(i) * bytes; };
  // Operands of ranks on the root's own CPU first: they can only come
  // once the root yields, while ranks on other CPUs are most likely
  // running and sending meanwhile (a wait for them alone polls instead of
  // yielding; pml.h, shares_my_cpu). Any order gives the same result: each
  // operand has its own slot.
  uint64_t first = 0;  // ranks below 64 that share the root's CPU
  for (int i = 0; i < size && i < 64; ++i)
    if (i != root && pml::shares_my_cpu(ctx, i)) first |= uint64_t{1} << i;
  // After an error (a mismatched count) keep receiving, so that no message
  // is left behind; report the first error.
  int err = MPI_SUCCESS;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < size; ++i) {
      bool early = i < 64 && (first >> i & 1);
      if (i == root || early != (pass == 0)) continue;
      int rc = recv_bytes(operand(i), bytes, i, kTagReduce, ctx);
      if (err == MPI_SUCCESS) err = rc;
    }
  }
  if (err != MPI_SUCCESS) return err;
  // acc = x_{n-1}; acc = x_i op acc for i = n-2 .. 0 (operand order kept).
  // The accumulator is the last operand's own slot (the root's own operand
  // is copied there first when the root is the last rank: recvbuf may be it).
  uint8_t* acc = operand(size - 1);
  if (root == size - 1 && bytes) std::memcpy(acc, mine, bytes);
  for (int i = size - 2; i >= 0; --i) {
    const void* x = i == root ? mine : operand(i);
    if (int rc = combine_step(*op, x, acc, static_cast<size_t>(count), *type); rc != MPI_SUCCESS) return rc;
  }
  if (bytes) std::memcpy(recvbuf, acc, bytes);
  return MPI_SUCCESS;
}

int reduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
           int root, pml::Context* ctx) {
  size_t bytes = span_bytes(type, count);
  int rank = ctx->rank;
  const void* mine = sendbuf ? sendbuf : recvbuf;
  if (ctx->size() == 1) {
    if (sendbuf && count) std::memcpy(recvbuf, sendbuf, bytes);
    return MPI_SUCCESS;
  }
  std::vector<uint8_t> acc(bytes), scratch(bytes);
  if (bytes) std::memcpy(acc.data(), mine, bytes);
  int rc = reduce_to_zero(acc.data(), scratch.data(), count, type, op, ctx);
  if (rc != MPI_SUCCESS) return rc;
  if (root == 0) {
    if (rank == 0 && bytes) std::memcpy(recvbuf, acc.data(), bytes);
  } else if (rank == 0) {
    rc = send_bytes(acc.data(), bytes, root, kTagReduce, ctx);
  } else if (rank == root) {
    rc = recv_bytes(recvbuf, bytes, 0, kTagReduce, ctx);
  }
  return rc;
}

int allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, const Datatype* type, const Op* op,
              pml::Context* ctx) {
  size_t bytes = span_bytes(type, count);
  int size = ctx->size(), rank = ctx->rank;
  if (sendbuf && bytes) std::memcpy(recvbuf, sendbuf, bytes);
  if (size == 1 || count == 0) return MPI_SUCCESS;
  if (!op->commutative) {
    int rc = reduce(nullptr, recvbuf, count, type, op, 0, ctx);
    // The bcast runs after an error too, so that no rank waits for it; the
    // first error is returned.
    int rc2 = bcast(recvbuf, static_cast<MPI_Count>(bytes), byte_type(), 0, ctx);
    return rc != MPI_SUCCESS ? rc : rc2;
  }
  // Recursive doubling over the largest power of two `pof2` <= size: the
  // first 2*(size-pof2) ranks pair up, odd ones hand their data to the even
  // ones and sit out, and get the result back at the end.
  // After an error (mismatched counts: a truncated or short message) a rank
  // keeps taking part with empty messages, which its partners see as short,
  // so every rank returns an error and none is left waiting.
  std::vector<uint8_t> scratch(bytes);
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 <<= 1;
  int extra = size - pof2;
  int err = MPI_SUCCESS;
  auto out = [&] { return err == MPI_SUCCESS ? bytes : size_t{0}; };
  auto combine = [&](int rc) {
    if (err == MPI_SUCCESS) err = rc;
    if (err == MPI_SUCCESS) err = combine_step(*op, scratch.data(), recvbuf, static_cast<size_t>(count), *type);
  };
  int vrank;
  if (rank < 2 * extra) {
    if (rank % 2) {
      int rc = send_bytes(recvbuf, bytes, rank - 1, kTagAllreduce, ctx);
      int rc2 = recv_bytes(recvbuf, bytes, rank - 1, kTagAllreduce, ctx);
      return rc != MPI_SUCCESS ? rc : rc2;
    }
    combine(recv_bytes(scratch.data(), bytes, rank + 1, kTagAllreduce, ctx));
    vrank = rank / 2;
  } else {
    vrank = rank - extra;
  }
  for (int mask = 1; mask < pof2; mask <<= 1) {
    int vpeer = vrank ^ mask;
    int peer = vpeer < extra ? vpeer * 2 : vpeer + extra;
    combine(exchange(recvbuf, scratch.data(), out(), bytes, peer, kTagAllreduce, ctx));
  }
  if (rank < 2 * extra) {
    int rc = send_bytes(recvbuf, out(), rank + 1, kTagAllreduce, ctx);
    if (err == MPI_SUCCESS) err = rc;
  }
  return err;
}

// Ring: in step s every rank passes on the block it received in step s-1.
int allgather_bytes(const void* sendbuf, size_t bytes, void* recvbuf, pml::Context* ctx) {
  int size = ctx->size(), rank = ctx->rank;
  auto* out = static_cast<uint8_t*>(recvbuf);
  if (sendbuf && bytes) std::memcpy(out + size_t(rank) * bytes, sendbuf, bytes);
  int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  for (int step = 0; step < size - 1; ++step) {
    int send_block = (rank - step + size) % size;
    int recv_block = (rank - step - 1 + size) % size;
    pml::Request* s = nullptr;
    int rc = pml::isend(out + size_t(send_block) * bytes, static_cast<MPI_Count>(bytes), byte_type(), right,
                        kTagAllgather, ctx, pml::SendMode::Standard, &s);
    if (rc != MPI_SUCCESS) return rc;
    rc = recv_bytes(out + size_t(recv_block) * bytes, bytes, left, kTagAllgather, ctx);
    pml::wait(s);
    progress::Guard guard;
    if (rc == MPI_SUCCESS) rc = s->error;
    pml::request_release(s);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace axon::coll
