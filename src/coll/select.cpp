// Choosing an algorithm for one collective call: forced through
// AXON_COLL_<NAME>_ALGORITHM (the environment, or MPI_T_cvar_write during the
// run), else from the message size and the communicator size.
// AXON_COLL_EXPLAIN=1 prints the choice and the reason. docs/collectives.md
// has the table.
#include "coll/select.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <tuple>

#include "base/param.h"
#include "diag/events.h"
#include "rte/rte.h"

namespace axon::coll {

namespace {

const char* const kind_names[kKindCount] = {
    "barrier",   "bcast",     "gather",    "gatherv",        "scatter",
    "scatterv",  "allgather", "allgatherv", "alltoall",      "alltoallv",
    "alltoallw", "reduce",    "allreduce", "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan"};

// First entry: the fallback that handles every case (operand order kept).
const std::vector<Algorithm> tables[kKindCount] = {
    {{"dissemination", barrier_dissemination, false, "ceil(log2 n) rounds of signals"},
     {"shm", nullptr, false, "flags in the node segment", Algorithm::Level::shm},
     {"hierarchical", nullptr, false, "node segment fan-in, leaders' dissemination, fan-out", Algorithm::Level::hierarchical}},
    {{"binomial", bcast_binomial, false, "binomial tree"},
     {"knomial", bcast_knomial, false, "k-nomial tree"},
     {"scatter_allgather", bcast_scatter_allgather, false, "binomial scatter + ring allgather"},
     {"pipeline", bcast_pipeline, false, "segmented chain"},
     {"shm", nullptr, false, "chunks through the node segment", Algorithm::Level::shm},
     {"hierarchical", nullptr, false, "leaders' binomial tree + node segment", Algorithm::Level::hierarchical}},
    {{"binomial", gather_binomial, false, "binomial tree of packed blocks"},
     {"linear", gather_linear, false, "root receives from everyone"},
     {"shm", nullptr, false, "blocks through the node segment (one node)", Algorithm::Level::shm}},
    {{"linear", gatherv_linear, false, "root receives from everyone"}},
    {{"binomial", scatter_binomial, false, "binomial tree of packed blocks"},
     {"linear", scatter_linear, false, "root sends to everyone"},
     {"shm", nullptr, false, "blocks through the node segment (one node)", Algorithm::Level::shm}},
    {{"linear", scatterv_linear, false, "root sends to everyone"}},
    {{"ring", allgather_ring, false, "ring, n-1 steps"},
     {"recursive_doubling", allgather_recursive_doubling, false, "recursive doubling (Bruck if n is not a power of two)"},
     {"bruck", allgather_bruck, false, "Bruck, ceil(log2 n) steps"},
     {"shm", nullptr, false, "blocks through the node segment (one node)", Algorithm::Level::shm}},
    {{"ring", allgatherv_ring, false, "ring, n-1 steps"},
     {"linear", allgatherv_linear, false, "everyone to everyone in one round"},
     {"shm", nullptr, false, "blocks through the node segment (one node)", Algorithm::Level::shm}},
    {{"pairwise", alltoall_pairwise, false, "pairwise exchange, n-1 steps"},
     {"bruck", alltoall_bruck, false, "Bruck, ceil(log2 n) steps of packed blocks"},
     {"linear", alltoall_linear, false, "everything posted at once"},
     {"shm", nullptr, false, "per-pair sub-slots in the node segment (one node)", Algorithm::Level::shm}},
    {{"pairwise", alltoallv_pairwise, false, "pairwise exchange, n-1 steps"},
     {"linear", alltoallv_linear, false, "everything posted at once"}},
    {{"pairwise", alltoallv_pairwise, false, "pairwise exchange, n-1 steps"},
     {"linear", alltoallv_linear, false, "everything posted at once"}},
    {{"binomial", reduce_binomial, false, "binomial tree, operands in rank order"},
     {"knomial", reduce_knomial, false, "k-nomial tree, operands in rank order"},
     {"shm", nullptr, false, "node segment, operands in rank order", Algorithm::Level::shm},
     {"hierarchical", nullptr, false, "node segment + leaders' binomial tree, operands in rank order", Algorithm::Level::hierarchical}},
    {{"recursive_doubling", allreduce_recursive_doubling, false, "recursive doubling, operands in rank order"},
     {"reduce_bcast", allreduce_reduce_bcast, false, "binomial reduce to 0 + binomial bcast"},
     {"ring", allreduce_ring, true, "ring reduce-scatter + ring allgather"},
     {"rabenseifner", allreduce_rabenseifner, false, "recursive halving reduce-scatter + recursive doubling allgather"},
     {"shm", nullptr, false, "node segment, operands in rank order", Algorithm::Level::shm},
     {"hierarchical", nullptr, false, "node segment + leaders' reduce and bcast, operands in rank order", Algorithm::Level::hierarchical}},
    {{"reduce_scatterv", reduce_scatter_reduce_scatterv, false, "reduce to 0 + scatterv"},
     {"pairwise", reduce_scatter_pairwise, true, "pairwise exchange"}},
    {{"reduce_scatterv", reduce_scatter_reduce_scatterv, false, "reduce to 0 + scatterv"},
     {"pairwise", reduce_scatter_pairwise, true, "pairwise exchange"}},
    {{"linear", scan_linear, false, "chain"},
     {"recursive_doubling", scan_recursive_doubling, false, "recursive doubling, operands in rank order"}},
    {{"linear", scan_linear, false, "chain"},
     {"recursive_doubling", scan_recursive_doubling, false, "recursive doubling, operands in rank order"}},
};

// The values of a kind's AXON_COLL_<NAME>_ALGORITHM: "auto" (index 0), then
// the kind's algorithms in table order (index i: tables[kind][i - 1]).
// (The tables above are initialised first: same file, earlier.)
std::vector<const char*> choices(Kind kind) {
  std::vector<const char*> names{"auto"};
  for (const Algorithm& alg : tables[static_cast<int>(kind)]) names.push_back(alg.name);
  return names;
}

// Each forces the algorithm of one collective (all its forms). Writable
// through MPI_T, so that a program (a test) can switch between calls.
constexpr EnumParam::Access kWritable = EnumParam::Access::Writable;
EnumParam p_barrier{"AXON_COLL_BARRIER_ALGORITHM", choices(Kind::barrier),
                    "MPI_Barrier and its I / _init forms: auto (chosen per call) or the algorithm to use (shm / "
                    "hierarchical: blocking calls only).", kWritable};
EnumParam p_bcast{"AXON_COLL_BCAST_ALGORITHM", choices(Kind::bcast),
                  "MPI_Bcast and its I / _init forms: auto (chosen per call) or the algorithm to use (shm / "
                  "hierarchical: blocking calls only).", kWritable};
EnumParam p_gather{"AXON_COLL_GATHER_ALGORITHM", choices(Kind::gather),
                   "MPI_Gather and its I / _init forms: auto (chosen per call) or the algorithm to use (shm: "
                   "blocking calls on one node only).", kWritable};
EnumParam p_gatherv{"AXON_COLL_GATHERV_ALGORITHM", choices(Kind::gatherv),
                    "MPI_Gatherv and its I / _init forms: auto or the algorithm to use.", kWritable};
EnumParam p_scatter{"AXON_COLL_SCATTER_ALGORITHM", choices(Kind::scatter),
                    "MPI_Scatter and its I / _init forms: auto (chosen per call) or the algorithm to use (shm: "
                    "blocking calls on one node only).", kWritable};
EnumParam p_scatterv{"AXON_COLL_SCATTERV_ALGORITHM", choices(Kind::scatterv),
                     "MPI_Scatterv and its I / _init forms: auto or the algorithm to use.", kWritable};
EnumParam p_allgather{"AXON_COLL_ALLGATHER_ALGORITHM", choices(Kind::allgather),
                      "MPI_Allgather and its I / _init forms: auto (chosen per call) or the algorithm to use (shm: "
                      "blocking calls on one node only).", kWritable};
EnumParam p_allgatherv{"AXON_COLL_ALLGATHERV_ALGORITHM", choices(Kind::allgatherv),
                       "MPI_Allgatherv and its I / _init forms: auto (chosen per call) or the algorithm to use (shm: "
                       "blocking calls on one node only).", kWritable};
EnumParam p_alltoall{"AXON_COLL_ALLTOALL_ALGORITHM", choices(Kind::alltoall),
                     "MPI_Alltoall and its I / _init forms: auto (chosen per call) or the algorithm to use (shm: "
                     "blocking calls on one node only).", kWritable};
EnumParam p_alltoallv{"AXON_COLL_ALLTOALLV_ALGORITHM", choices(Kind::alltoallv),
                      "MPI_Alltoallv and its I / _init forms: auto or the algorithm to use.", kWritable};
EnumParam p_alltoallw{"AXON_COLL_ALLTOALLW_ALGORITHM", choices(Kind::alltoallw),
                      "MPI_Alltoallw and its I / _init forms: auto or the algorithm to use.", kWritable};
EnumParam p_reduce{"AXON_COLL_REDUCE_ALGORITHM", choices(Kind::reduce),
                   "MPI_Reduce and its I / _init forms: auto (chosen per call) or the algorithm to use (shm / "
                   "hierarchical: blocking calls only).", kWritable};
EnumParam p_allreduce{"AXON_COLL_ALLREDUCE_ALGORITHM", choices(Kind::allreduce),
                      "MPI_Allreduce and its I / _init forms: auto (chosen per call) or the algorithm to use (shm / "
                      "hierarchical: blocking calls only; ring: commutative ops only).", kWritable};
EnumParam p_reduce_scatter{"AXON_COLL_REDUCE_SCATTER_ALGORITHM", choices(Kind::reduce_scatter),
                           "MPI_Reduce_scatter and its I / _init forms: auto (chosen per call) or the algorithm to "
                           "use (pairwise: commutative ops only).", kWritable};
EnumParam p_reduce_scatter_block{"AXON_COLL_REDUCE_SCATTER_BLOCK_ALGORITHM", choices(Kind::reduce_scatter_block),
                                 "MPI_Reduce_scatter_block and its I / _init forms: auto (chosen per call) or the "
                                 "algorithm to use (pairwise: commutative ops only).", kWritable};
EnumParam p_scan{"AXON_COLL_SCAN_ALGORITHM", choices(Kind::scan),
                 "MPI_Scan and its I / _init forms: auto (chosen per call) or the algorithm to use.", kWritable};
EnumParam p_exscan{"AXON_COLL_EXSCAN_ALGORITHM", choices(Kind::exscan),
                   "MPI_Exscan and its I / _init forms: auto (chosen per call) or the algorithm to use.", kWritable};

const EnumParam* const force_params[kKindCount] = {
    &p_barrier, &p_bcast,     &p_gather,    &p_gatherv,         &p_scatter,
    &p_scatterv, &p_allgather, &p_allgatherv, &p_alltoall,      &p_alltoallv,
    &p_alltoallw, &p_reduce,  &p_allreduce, &p_reduce_scatter, &p_reduce_scatter_block,
    &p_scan,     &p_exscan};

BoolParam explain_param{"AXON_COLL_EXPLAIN", false,
                        "Print to stderr which collective algorithm each call uses and why (rank 0 of the "
                        "communicator)."};
BoolParam node_param{"AXON_COLL_NODE_LEVEL", true,
                     "Let the default selection use the node-level algorithms (shm on one node, hierarchical "
                     "across nodes) for blocking barrier, bcast, reduce and allreduce, and shm for blocking "
                     "allgather(v), gather, scatter and alltoall on one node; 0 keeps them for forced choices "
                     "only."};
IntParam radix_param{"AXON_COLL_KNOMIAL_RADIX", 4, Range{2, 1024}, "Radix of the k-nomial trees (bcast, reduce)."};

// The forced algorithm of `kind`, or null for auto. An atomic load per call:
// cheap next to the call itself, and a write through MPI_T shows at once.
const Algorithm* forced_algorithm(Kind kind) {
  int value = force_params[static_cast<int>(kind)]->get();
  return value == 0 ? nullptr : &tables[static_cast<int>(kind)][static_cast<size_t>(value - 1)];
}

const Algorithm* find(Kind kind, const char* name) {
  const std::vector<Algorithm>& table = tables[static_cast<int>(kind)];
  // The size rules below return the tables' own literals (one copy per
  // string in this file): comparing pointers spares the strcmp per call.
  for (const Algorithm& alg : table)
    if (alg.name == name) return &alg;
  for (const Algorithm& alg : table)
    if (std::strcmp(alg.name, name) == 0) return &alg;
  return nullptr;
}

bool is_pof2(int n) { return (n & (n - 1)) == 0; }

}  // namespace

// The size that drives the choice: bytes each rank contributes / receives.
size_t message_bytes(const Args& a, int rank) {
  switch (a.kind) {
    case Kind::bcast:
    case Kind::reduce:
    case Kind::allreduce:
    case Kind::scan:
    case Kind::exscan:
    case Kind::reduce_scatter_block:
    case Kind::allgather:
    case Kind::alltoall:
      return payload_bytes(a.recvcount, a.recvtype);
    case Kind::gather:
      return a.root == rank ? payload_bytes(a.recvcount, a.recvtype) : payload_bytes(a.sendcount, a.sendtype);
    case Kind::scatter:
      return a.root == rank ? payload_bytes(a.sendcount, a.sendtype) : payload_bytes(a.recvcount, a.recvtype);
    default:
      return 0;
  }
}

namespace {

// Node-level defaults for blocking calls (measured, docs/collectives.md
// "Cost model"); null: the point-to-point choice below.
// The rules depend only on what every rank of the communicator shares (the
// node's oversubscription is the same for all its ranks), so all choose alike.
const char* node_pick(const Args& a, const CommState* st, int n, size_t bytes, const char** why) {
  if (!node_param.get()) return nullptr;
  if (shm_eligible(st, a)) {
    // Oversubscribed, a root that leaves at once and eager messages let
    // point-to-point ranks run small calls ahead; the segment's two data
    // sets keep ranks within two steps of each other, and every hand-off
    // costs a context switch. Large calls take few steps (big slots), so
    // the segment wins there.
    bool over = rte::job().oversubscribed;
    switch (a.kind) {
      case Kind::bcast:
        if (over && bytes < 16 * 1024) return nullptr;
        // The binomial tree at 16 KiB too when that is eager (back-to-back
        // calls, 4 ranks on 2 cores: 1.8-2.2 us against the segment's
        // 11-15 us and scatter_allgather's 36 us).
        if (over && bytes == 16 * 1024 && pml::node_eager_limit() >= bytes)
          return *why = "oversubscribed, eager: point-to-point tree", "binomial";
        return *why = "one node: shared-memory segment", "shm";
      case Kind::reduce:
        // Oversubscribed: the tree's eager messages up to 16 KiB (4 ranks
        // on 2 cores, 16 KiB: 7.7-9.9 us against the segment's 15-28).
        if (over ? bytes <= std::min<size_t>(16 * 1024, pml::node_eager_limit()) : bytes > 2 * 1024 * 1024)
          return nullptr;
        return *why = "one node: shared-memory segment", "shm";
      case Kind::allreduce:
        if (n <= 2 && bytes > 512 && bytes <= 2048) return nullptr;
        return *why = "one node: shared-memory segment", "shm";
      case Kind::gather:
      case Kind::scatter:
        // Oversubscribed, point-to-point non-roots (gather) or the root
        // (scatter) leave after eager sends and run calls ahead.
        if (over) return nullptr;
        return *why = "one node: shared-memory segment", "shm";
      default:  // barrier, allgather(v), alltoall
        return *why = "one node: shared-memory segment", "shm";
    }
  }
  if (hier_eligible(st, a)) return *why = "several nodes", "hierarchical";
  return nullptr;
}

// The default choice (measured on one node; see docs/collectives.md).
const char* pick(const Args& a, int n, size_t bytes, const char** why) {
  switch (a.kind) {
    case Kind::bcast:
      if (n <= 2 || bytes < 16 * 1024) return *why = "small message or 2 ranks", "binomial";
      if (bytes < 512 * 1024) return *why = "medium message", "scatter_allgather";
      return *why = "large message", "pipeline";
    case Kind::gather:
    case Kind::scatter:
      if (bytes * static_cast<size_t>(n) < 64 * 1024) return *why = "small blocks", "binomial";
      return *why = "large blocks", "linear";
    case Kind::allgather:
      if (bytes * static_cast<size_t>(n) < 64 * 1024)
        return is_pof2(n) ? (*why = "small, n a power of two", "recursive_doubling")
                          : (*why = "small, n not a power of two", "bruck");
      return *why = "large", "ring";
    case Kind::alltoall:
      if (bytes <= 256 && n > 4) return *why = "small blocks, many ranks", "bruck";
      return *why = "default", "pairwise";
    case Kind::reduce:
      if (n > 8 && bytes < 16 * 1024) return *why = "small, many ranks", "knomial";
      return *why = "default", "binomial";
    case Kind::allreduce:
      if (bytes < 64 * 1024) return *why = "small message", "recursive_doubling";
      return *why = "large message", "rabenseifner";
    case Kind::reduce_scatter:
    case Kind::reduce_scatter_block:
      if (a.op->commutative) return *why = "commutative op", "pairwise";
      return *why = "non-commutative op", "reduce_scatterv";
    case Kind::scan:
    case Kind::exscan:
      if (n <= 2) return *why = "2 ranks", "linear";
      return *why = "default", "recursive_doubling";
    default:
      return *why = "only algorithm", tables[static_cast<int>(a.kind)][0].name;
  }
}

}  // namespace

const char* kind_name(Kind kind) { return kind_names[static_cast<int>(kind)]; }

const std::vector<Algorithm>& algorithms(Kind kind) { return tables[static_cast<int>(kind)]; }

int knomial_radix() { return static_cast<int>(radix_param.get()); }

int select_algorithm(const Args& a, const CommState* st, bool blocking, Choice* out) {
  const Algorithm* const first = &tables[static_cast<int>(a.kind)][0];
  int rank = st->inter() ? st->local->rank : st->coll->rank;
  int size = st->coll->size();
  size_t bytes = message_bytes(a, rank);
  const char* why = nullptr;
  const Algorithm* alg = forced_algorithm(a.kind);
  out->note = nullptr;
  if (!alg) {
    // Allgatherv's choice looks at every count: never remembered. A
    // barrier's goes to a memo of its own, so that a loop of bcast and
    // barrier keeps the bcast's choice for the bcast shortcut.
    bool remember = a.kind != Kind::allgatherv;
    CommState::PickMemo& m = a.kind == Kind::barrier ? st->barrier_memo : st->memo;
    bool reduction = a.kind == Kind::reduce || a.kind == Kind::allreduce;
    bool items = a.recvcount > 0;
    signed char commutes = a.op ? static_cast<signed char>(a.op->commutative) : -1;
    ptrdiff_t extent = reduction && a.recvtype ? a.recvtype->extent : 0;
    ptrdiff_t true_extent = reduction && a.recvtype ? a.recvtype->true_extent : 0;
    if (m.alg && m.bytes == bytes && m.kind == a.kind && m.blocking == blocking && m.items == items &&
        m.commutes == commutes && m.extent == extent && m.true_extent == true_extent && remember) {
      alg = m.alg;
      why = m.why;
    } else {
      const char* name = blocking ? node_pick(a, st, size, bytes, &why) : nullptr;
      alg = find(a.kind, name ? name : pick(a, size, bytes, &why));
      if (remember) {
        m.alg = alg;
        m.why = why;
        m.kind = a.kind;
        m.blocking = blocking;
        m.items = items;
        m.commutes = commutes;
        m.bytes = bytes;
        m.extent = extent;
        m.true_extent = true_extent;
      }
    }
  }
  out->chosen = alg;
  out->why = why;
  // (node_pick takes a node-level algorithm only where it can run.)
  if (alg->node() && !why) {
    // Forced node-level algorithm where it cannot run: the other node-level
    // form if that one can, else the first (pt2pt) algorithm.
    bool is_shm = alg->level == Algorithm::Level::shm;
    if (!blocking) {
      alg = first;
      out->note = "node-level algorithms run blocking calls only";
    } else if (is_shm ? !shm_eligible(st, a) : !hier_eligible(st, a)) {
      const Algorithm* other = find(a.kind, is_shm ? "hierarchical" : "shm");
      if (other && (is_shm ? hier_eligible(st, a) : shm_eligible(st, a))) {
        alg = other;
        out->note = is_shm ? "several nodes" : "one node";
      } else {
        alg = first;
        out->note = "not applicable here (intercommunicator, type larger than a slot, or a non-commutative op on "
                    "nodes that are not runs of consecutive ranks)";
      }
    }
  }
  if (alg->commutative_only && a.op && !a.op->commutative) {
    alg = first;
    out->note = "needs a commutative op";
  }
  out->alg = alg;
  out->bytes = bytes;
  return MPI_SUCCESS;
}

size_t report_bytes(const Args& a, int rank) {
  // (In place, or on an idle intercommunicator process, a side has no type.)
  auto bytes_of = [](MPI_Count count, const Datatype* type) { return type ? payload_bytes(count, type) : 0; };
  auto sum = [&](const std::vector<MPI_Count>& counts, const Datatype* type) {
    MPI_Count items = 0;
    for (MPI_Count n : counts) items += n;
    return bytes_of(items, type);
  };
  switch (a.kind) {
    case Kind::barrier:
      return 0;
    case Kind::gatherv:
    case Kind::allgatherv:
      return a.in_place ? 0 : bytes_of(a.sendcount, a.sendtype);
    case Kind::scatterv:
      return a.root == rank ? sum(a.sendcounts, a.sendtype) : bytes_of(a.recvcount, a.recvtype);
    case Kind::alltoallv:
      return sum(a.sendcounts, a.sendtype);
    case Kind::reduce_scatter:
      return sum(a.recvcounts, a.recvtype);
    case Kind::alltoallw: {
      size_t bytes = 0;
      for (size_t i = 0; i < a.sendcounts.size() && i < a.sendtypes.size(); ++i)
        bytes += bytes_of(a.sendcounts[i], a.sendtypes[i]);
      return bytes;
    }
    default:
      return a.recvtype || a.sendtype ? message_bytes(a, rank) : 0;
  }
}

namespace {
// MPI_T's axon_coll_algorithm: once per communicator, call and algorithm
// (a choice is made again whenever the remembered one does not apply).
void raise_choice(const Args& a, const CommState* st, const Choice& c) {
  static std::set<std::tuple<uint32_t, int, const Algorithm*>> raised;
  if (!raised.emplace(st->coll->id, static_cast<int>(a.kind), c.alg).second) return;
  diag::events::raise_coll_algorithm(st->coll->id, st->coll->size(), kind_name(a.kind), c.alg->name, c.bytes);
}
}  // namespace

void explain_choice(const Args& a, const CommState* st, const Choice& c) {
  if (diag::events::subscribed(diag::events::Event::CollAlgorithm)) [[unlikely]] raise_choice(a, st, c);
  if (!explain()) return;
  bool inter = st->inter();
  int rank = inter ? st->local->rank : st->coll->rank;
  if (rank != 0 || !explain_due(st, a.kind, c.alg->name)) return;
  const EnumParam* p = force_params[static_cast<int>(a.kind)];
  std::string reason = c.why ? std::string(c.why) : std::string("forced by ") + p->name();
  if (c.alg != c.chosen)
    reason += std::string("; ") + c.chosen->name + ": " + c.note + ", using " + c.alg->name;
  std::string nodes;
  if (!inter && st->node && st->node->topo.known && st->node->topo.nodes > 1)
    nodes = ", " + std::to_string(st->node->topo.nodes) + " nodes";
  std::fprintf(stderr, "axon coll: %s%s on %d ranks%s, %zu bytes: %s (%s): %s\n", kind_name(a.kind),
               inter ? " (intercommunicator)" : "", st->coll->size(), nodes.c_str(), c.bytes, c.alg->name,
               c.alg->what, reason.c_str());
}

const Algorithm* remembered(const CommState* st, Kind kind, size_t bytes, const Datatype* type, const Op* op) {
  const CommState::PickMemo& m = st->memo;
  // What select_algorithm compares for a reduction (op and type extents)
  // or, without an op, its defaults.
  signed char commutes = op ? static_cast<signed char>(op->commutative) : -1;
  ptrdiff_t extent = op ? type->extent : 0, true_extent = op ? type->true_extent : 0;
  if (!m.alg || m.kind != kind || !m.blocking || !m.items || m.bytes != bytes || m.commutes != commutes ||
      m.extent != extent || m.true_extent != true_extent || explain())
    return nullptr;
  return forced_algorithm(kind) ? nullptr : m.alg;
}

bool explain_due(const CommState* st, Kind kind, const char* algorithm) {
  if (explain_param.get()) return true;
  static std::set<std::tuple<uint32_t, int, std::string>> explained;
  return explained.emplace(st->coll->id, static_cast<int>(kind), algorithm).second;
}

bool explain() {
  // (The parameter is read once anyway; this spares a call per collective.)
  static const bool on = explain_param.get() || pml::explaining();
  return on;
}



}  // namespace axon::coll
