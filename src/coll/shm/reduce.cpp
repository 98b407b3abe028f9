// Reductions on the node segment: reduce and allreduce of one node's
// members (streamed to a root of two, every reader reducing small steps
// itself, or piecewise), and the small-call shortcut that runs one straight
// on a one-node communicator's segment (see internal.h, "Data").
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/shm/internal.h"
#include "rte/rte.h"

namespace axon::coll {

namespace nodelevel {

namespace {

// A reduction step where every reader would combine at most this many bytes
// ((ranks - 1) x the step's span) is done by every reader itself (one
// synchronisation); larger ones piecewise (two). Measured: docs/collectives.md.
constexpr size_t kSmallReduce = 16384;
// When ranks outnumber cores a synchronisation costs a hand-off of the CPU
// (about 5 us), worth far more reduction work than on a core of one's own.
// So an allreduce's readers each reduce steps up to 128 KiB of operands
// themselves (4 ranks on 2 cores, 8 / 16 / 32 KiB: 15.7 / 17.8 / 20.3 ->
// 11.0 / 14.0 / 17.0 us; 3 ranks 16-64 KiB 13-26 % less; 8 ranks 2-16 KiB
// 23-42 % less), and a reduce's root always reduces every step alone: its
// non-roots copy their operands in and go on, with no second wait (4 ranks,
// 32 KiB - 1 MiB: 2.0-2.2x faster; 3 ranks 64 KiB - 4 MiB and 8 ranks
// 64 KiB - 4 MiB: the same or faster at every size; docs/performance.md).
// Every rank of a node sees the same oversubscription, so all take the
// same path.
constexpr size_t kSmallReduceOversubscribed = 128 * 1024;
// Oversubscribed allreduce steps from this size share one reduction per
// step (see node_reduce).
constexpr size_t kShareResult = 4096;
size_t small_reduce_limit(bool one_reader) {
  if (!rte::job().oversubscribed) return kSmallReduce;
  return one_reader ? SIZE_MAX : kSmallReduceOversubscribed;
}

// Items per reduction step: as many as fit a slot with their byte span.
MPI_Count items_per_step(const Datatype* type, size_t chunk) {
  return static_cast<MPI_Count>((chunk - static_cast<size_t>(type->true_extent)) / static_cast<size_t>(type->extent)) + 1;
}

// A reduce to a root of two members, streamed: the other member copies its
// operand into its slot, a slot's worth per step, and the root combines
// each step straight into its receive buffer as soon as it is there, its
// own operand read where it is (the send buffer, copied into the receive
// buffer while the other member copies). The piecewise path of
// node_reduce instead copies every operand in, reduces a share on each
// rank and copies the result out, one phase after the other. (Smaller
// steps, to overlap the copy and the reduction, measured slower:
// docs/collectives.md.)
// Contiguous types only (`count` and `type` are the same on both ranks, as
// the standard requires, so both take this path alike).
int node_reduce_streamed(Seg& g, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                         int root) {
  const int other = 1 - root;
  const MPI_Aint ext = type->extent, tlb = type->true_lb;
  const uint64_t total = payload_bytes(count, type);
  // The accumulator is op_apply's right operand, and the result must be
  // x_0 op x_1: the root's own operand can go into it first (before the
  // other one arrives) when it is x_1 or the op commutes. Otherwise the
  // other operand goes in first, and an in-place root keeps its own
  // operand in its slot meanwhile.
  const bool own_first = root == 1 || op->commutative;
  const bool in_place = in == out;
  const MPI_Count per = items_per_step(type, g.chunk);
  int err = MPI_SUCCESS;
  for (MPI_Count c0 = 0; c0 < count; c0 += per) {
    const MPI_Count cnt = std::min(per, count - c0);
    const size_t span = items_span(cnt, type);
    const uint64_t s = ++g.ns.seq;
    const uint8_t* mine = static_cast<const uint8_t*>(in) + c0 * ext + tlb;
    g.claim(s);
    if (g.me != root) {
      std::memcpy(g.slot(s, g.me), mine, span);
      g.arrive(s)[g.me].pad = total;
      g.post(&g.arrive(s)[g.me], s);
      g.post(&g.done()[g.me], s);
      continue;
    }
    uint8_t* acc = static_cast<uint8_t*>(out) + c0 * ext + tlb;
    const uint8_t* theirs = g.slot(s, other);
    if (own_first) {
      if (!in_place) std::memcpy(acc, mine, span);
    } else if (in_place) {
      std::memcpy(g.slot(s, g.me), mine, span);
      mine = g.slot(s, g.me);
    }
    g.wait_one(&g.arrive(s)[other], s);
    g.arrived_all(s);
    uint64_t sent = g.arrive(s)[other].pad;
    if (sent != total && err == MPI_SUCCESS) err = sent < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
    if (!own_first) std::memcpy(acc, theirs, span);
    // (op_apply takes buffer pointers: item 0's layout.)
    const void* left = (own_first ? theirs : mine) - tlb;
    if (int rc = op_apply(*op, left, acc - tlb, static_cast<size_t>(cnt), *type); rc != MPI_SUCCESS) return rc;
    g.post(&g.done()[g.me], s);
  }
  return err;
}

}  // namespace

int node_reduce(Seg& g, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                int root) {
  const MPI_Aint ext = type->extent, tlb = type->true_lb;
  bool reader = root < 0 || g.me == root;
  const uint64_t total = payload_bytes(count, type);
  int err = MPI_SUCCESS;
  // Compares the contributions' byte counts after the arrivals of step s.
  auto check_counts = [&](uint64_t s) {
    for (int i = 0; i < g.n && err == MPI_SUCCESS; ++i) {
      uint64_t theirs = g.arrive(s)[i].pad;
      if (theirs != total) err = theirs < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
    }
  };
  // The common small call, a contiguous operand that takes one step which
  // every reader reduces itself: what the loop below does for it, without
  // its bookkeeping (same places, so ranks on either path meet).
  if (type->contiguous && total <= g.chunk && total * static_cast<size_t>(g.n - 1) <= small_reduce_limit(root >= 0)) {
    uint64_t s = ++g.ns.seq;
    Flag* f = g.arrive(s);
    // Operands that fit the flag line travel in it; those that fit a
    // rank's share of the small area (64-byte aligned: an op may load
    // whole vectors) go there. Such a step uses only the arrival lines
    // and the small area, so a rank need not wait until everyone is done
    // with the step before last (claim) but only with the step kFlagSets
    // back (claim_lines): a reduce's non-roots run up to that many calls
    // ahead, and the root finds their operands there (measured at 2
    // ranks, 4-512 B: 13-25 % less per call). An allreduce keeps the data
    // sets: every rank waits for all operands there anyway.
    const size_t share = (kSmall / static_cast<size_t>(g.n)) & ~size_t{63};
    bool inl = total <= kInline;
    bool in_small = root >= 0 && !inl && total <= share;
    if (root >= 0 && (inl || in_small)) g.claim_lines(s);
    else g.claim(s);
    auto operand = [&](int i) {
      return inl ? f[i].data : in_small ? g.small(s) + static_cast<size_t>(i) * share : g.slot(s, i);
    };
    std::memcpy(operand(g.me), in, total);
    f[g.me].pad = total;
    g.post(&f[g.me], s);
    if (reader) {
      g.wait_all(f, g.n, s);
      g.arrived_all(s);
      check_counts(s);
      // Oversubscribed, the ranks of a CPU run one after the other: the
      // first to get here reduces and leaves the result in the result slot,
      // later ones (in the common order, the CPU's other rank after its
      // hand-off) copy it instead of reducing all operands again. A rank
      // that finds the result claimed but not there yet reduces itself: the
      // claimer may be waiting for this very CPU. Measured at 4 ranks on 2
      // cores (docs/performance.md): 3-12 % less from 4 KiB to 32 KiB,
      // 3-6 % more below (the copy into the result slot costs about what
      // the saved reduction does).
      static const bool oversubscribed = rte::job().oversubscribed;
      bool share = oversubscribed && root < 0 && total >= kShareResult && err == MPI_SUCCESS;
      if (share && g.result_ready(s)) {
        std::memcpy(out, g.result(s), total);
        g.post(&g.done()[g.me], s);
        return err;
      }
      bool publish = share && g.claim_result(s);
      std::memcpy(out, operand(g.n - 1), total);
      for (int i = g.n - 2; i >= 0; --i)
        if (int rc = op_apply(*op, operand(i), out, static_cast<size_t>(count), *type); rc != MPI_SUCCESS) return rc;
      if (publish) {
        std::memcpy(g.result(s), out, total);
        g.publish_result(s);
      }
      // A reduce's non-roots usually run ahead (claim_lines): fetch the
      // lines of their next call now (its operands where this call's
      // were), as a bcast reader does the root's line. 2 ranks, 4-512 B:
      // 8-30 % less per call (docs/collectives.md). (The same for a bcast
      // reader's small area measured 10-25 % slower: the root writes
      // there while it is fetched.)
      if (root >= 0 && g.n <= 4)
        for (int i = 0; i < g.n; ++i) {
          if (i == g.me) continue;
          __builtin_prefetch(&g.arrive(s + 1)[i]);
          if (in_small)
            for (size_t b = 0; b < total; b += 64) __builtin_prefetch(g.small(s + 1) + static_cast<size_t>(i) * share + b);
        }
    }
    g.post(&g.done()[g.me], s);
    return err;
  }
  if (root >= 0 && g.n == 2 && type->contiguous && total > kSmallReduce && !rte::job().oversubscribed)
    return node_reduce_streamed(g, in, out, count, type, op, root);
  MPI_Count per = items_per_step(type, g.chunk);
  for (MPI_Count c0 = 0; c0 < count; c0 += per) {
    MPI_Count cnt = std::min(per, count - c0);
    size_t span = items_span(cnt, type);
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    // Tiny spans travel inside the arrival flag's cache line.
    bool inl = span <= kInline;
    // Every reader reduces all operands itself for small steps.
    bool every_reader = span * static_cast<size_t>(g.n - 1) <= small_reduce_limit(root >= 0);
    // Nobody but the root reads the root's operand then: with a separate
    // receive buffer it stays in the user's send buffer, uncopied.
    const uint8_t* mine = static_cast<const uint8_t*>(in) + c0 * ext + tlb;
    bool direct = every_reader && root >= 0 && g.me == root && in != out;
    auto operand = [&](int i) {
      if (direct && i == g.me) return const_cast<uint8_t*>(mine);
      return inl ? g.arrive(s)[i].data : g.slot(s, i);
    };
    if (!direct) std::memcpy(operand(g.me), mine, span);
    // My byte count goes with my arrival (as the bcast root's does): a
    // reader whose count differs (an erroneous program) returns an error
    // instead of reducing stale bytes; everyone still completes the steps.
    g.arrive(s)[g.me].pad = total;
    g.post(&g.arrive(s)[g.me], s);
    // Buffer pointer (item 0) of the image in slot i / the result slot.
    auto image = [&](uint8_t* p) { return p - tlb; };
    // (Only readers have a receive buffer: a non-root's may be null.)
    void* dst = reader ? static_cast<uint8_t*>(out) + c0 * ext : nullptr;
    if (every_reader) {
      if (reader) {
        g.wait_all(g.arrive(s), g.n, s);
        g.arrived_all(s);
        check_counts(s);
        // acc = x_{n-1}; acc = x_i op acc for i = n-2 .. 0. A contiguous
        // type accumulates in the user's buffer itself (my operand is in
        // the segment already, so in place is fine); otherwise in the result
        // slot (one reader) or own scratch (every rank reads).
        uint8_t* acc;
        std::vector<uint8_t> own;
        if (type->contiguous) acc = static_cast<uint8_t*>(dst);
        else if (root >= 0) acc = g.result(s);
        else {
          // Whole extents: a user op may read an item's padding too.
          own.resize(static_cast<size_t>(cnt * ext) + static_cast<size_t>(type->true_extent));
          acc = own.data();
        }
        std::memcpy(acc, operand(g.n - 1), span);
        for (int i = g.n - 2; i >= 0; --i)
          if (int rc = op_apply(*op, image(operand(i)), image(acc), static_cast<size_t>(cnt), *type);
              rc != MPI_SUCCESS)
            return rc;
        if (!type->contiguous) copy_out(type, image(acc), dst, cnt);
      }
    } else {
      g.wait_all(g.arrive(s), g.n, s);
      g.arrived_all(s);
      if (reader) check_counts(s);
      Blocks pieces(cnt, g.n);
      MPI_Count p0 = pieces.offset[g.me], pc = pieces.size[g.me];
      if (pc > 0) {
        size_t off = static_cast<size_t>(p0 * ext);
        size_t pspan = items_span(pc, type);
        std::memcpy(g.result(s) + off, g.slot(s, g.n - 1) + off, pspan);
        for (int i = g.n - 2; i >= 0; --i)
          if (int rc = op_apply(*op, image(g.slot(s, i)) + off, image(g.result(s)) + off, static_cast<size_t>(pc),
                                *type);
              rc != MPI_SUCCESS)
            return rc;
      }
      g.post(&g.red()[g.me], s);
      if (reader) {
        g.wait_all(g.red(), g.n, s);
        copy_out(type, image(g.result(s)), dst, cnt);
      }
    }
    g.post(&g.done()[g.me], s);
  }
  return err;
}

}  // namespace nodelevel

bool node_reduce_now(CommState* st, const void* in, void* out, MPI_Count count, const Datatype* type, const Op* op,
                     int root, int* rc) {
  NodeState* ns = nodelevel::small_call_segment(st, count, type);
  if (!ns) return false;
  nodelevel::Seg g{*ns, static_cast<int>(ns->topo.members.size()), ns->topo.me};
  *rc = nodelevel::node_reduce(g, in, out, count, type, op, root);
  return true;
}

}  // namespace axon::coll
