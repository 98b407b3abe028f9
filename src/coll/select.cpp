// Choosing an algorithm for one collective call: forced through
// AXON_COLL_<NAME>_ALGORITHM, else from the message size and the
// communicator size. AXON_COLL_EXPLAIN=1 prints the choice and the reason.
// docs/collectives.md has the table.
#include "coll/select.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.h"
#include "base/param.h"

namespace axon::coll {

namespace {

// Each forces the algorithm of one collective (all its forms); read at
// every call, so a test can switch with setenv().
StringParam p_barrier{"AXON_COLL_BARRIER_ALGORITHM", "auto",
                "MPI_Barrier and its I / _init forms: auto or one of dissemination."};
StringParam p_bcast{"AXON_COLL_BCAST_ALGORITHM", "auto",
                "MPI_Bcast and its I / _init forms: auto or one of binomial, knomial, scatter_allgather, pipeline."};
StringParam p_gather{"AXON_COLL_GATHER_ALGORITHM", "auto",
                "MPI_Gather and its I / _init forms: auto or one of binomial, linear."};
StringParam p_gatherv{"AXON_COLL_GATHERV_ALGORITHM", "auto",
                "MPI_Gatherv and its I / _init forms: auto or one of linear."};
StringParam p_scatter{"AXON_COLL_SCATTER_ALGORITHM", "auto",
                "MPI_Scatter and its I / _init forms: auto or one of binomial, linear."};
StringParam p_scatterv{"AXON_COLL_SCATTERV_ALGORITHM", "auto",
                "MPI_Scatterv and its I / _init forms: auto or one of linear."};
StringParam p_allgather{"AXON_COLL_ALLGATHER_ALGORITHM", "auto",
                "MPI_Allgather and its I / _init forms: auto or one of ring, recursive_doubling, bruck."};
StringParam p_allgatherv{"AXON_COLL_ALLGATHERV_ALGORITHM", "auto",
                "MPI_Allgatherv and its I / _init forms: auto or one of ring, linear."};
StringParam p_alltoall{"AXON_COLL_ALLTOALL_ALGORITHM", "auto",
                "MPI_Alltoall and its I / _init forms: auto or one of pairwise, bruck, linear."};
StringParam p_alltoallv{"AXON_COLL_ALLTOALLV_ALGORITHM", "auto",
                "MPI_Alltoallv and its I / _init forms: auto or one of pairwise, linear."};
StringParam p_alltoallw{"AXON_COLL_ALLTOALLW_ALGORITHM", "auto",
                "MPI_Alltoallw and its I / _init forms: auto or one of pairwise, linear."};
StringParam p_reduce{"AXON_COLL_REDUCE_ALGORITHM", "auto",
                "MPI_Reduce and its I / _init forms: auto or one of binomial, knomial."};
StringParam p_allreduce{"AXON_COLL_ALLREDUCE_ALGORITHM", "auto",
                "MPI_Allreduce and its I / _init forms: auto or one of recursive_doubling, reduce_bcast, ring, rabenseifner."};
StringParam p_reduce_scatter{"AXON_COLL_REDUCE_SCATTER_ALGORITHM", "auto",
                "MPI_Reduce_scatter and its I / _init forms: auto or one of reduce_scatterv, pairwise."};
StringParam p_reduce_scatter_block{"AXON_COLL_REDUCE_SCATTER_BLOCK_ALGORITHM", "auto",
                "MPI_Reduce_scatter_block and its I / _init forms: auto or one of reduce_scatterv, pairwise."};
StringParam p_scan{"AXON_COLL_SCAN_ALGORITHM", "auto",
                "MPI_Scan and its I / _init forms: auto or one of linear, recursive_doubling."};
StringParam p_exscan{"AXON_COLL_EXSCAN_ALGORITHM", "auto",
                "MPI_Exscan and its I / _init forms: auto or one of linear, recursive_doubling."};

BoolParam explain_param{"AXON_COLL_EXPLAIN", false,
                        "Print to stderr which collective algorithm each call uses and why (rank 0 of the "
                        "communicator)."};
IntParam radix_param{"AXON_COLL_KNOMIAL_RADIX", 4, "Radix of the k-nomial trees (bcast, reduce)."};

const StringParam* const force_params[kKindCount] = {
    &p_barrier, &p_bcast,     &p_gather,    &p_gatherv,         &p_scatter,
    &p_scatterv, &p_allgather, &p_allgatherv, &p_alltoall,      &p_alltoallv,
    &p_alltoallw, &p_reduce,  &p_allreduce, &p_reduce_scatter, &p_reduce_scatter_block,
    &p_scan,     &p_exscan};

const char* const kind_names[kKindCount] = {
    "barrier",   "bcast",     "gather",    "gatherv",        "scatter",
    "scatterv",  "allgather", "allgatherv", "alltoall",      "alltoallv",
    "alltoallw", "reduce",    "allreduce", "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan"};

// First entry: the fallback that handles every case (operand order kept).
const std::vector<Algorithm> tables[kKindCount] = {
    {{"dissemination", barrier_dissemination, false, "ceil(log2 n) rounds of signals"}},
    {{"binomial", bcast_binomial, false, "binomial tree"},
     {"knomial", bcast_knomial, false, "k-nomial tree"},
     {"scatter_allgather", bcast_scatter_allgather, false, "binomial scatter + ring allgather"},
     {"pipeline", bcast_pipeline, false, "segmented chain"}},
    {{"binomial", gather_binomial, false, "binomial tree of packed blocks"},
     {"linear", gather_linear, false, "root receives from everyone"}},
    {{"linear", gatherv_linear, false, "root receives from everyone"}},
    {{"binomial", scatter_binomial, false, "binomial tree of packed blocks"},
     {"linear", scatter_linear, false, "root sends to everyone"}},
    {{"linear", scatterv_linear, false, "root sends to everyone"}},
    {{"ring", allgather_ring, false, "ring, n-1 steps"},
     {"recursive_doubling", allgather_recursive_doubling, false, "recursive doubling (Bruck if n is not a power of two)"},
     {"bruck", allgather_bruck, false, "Bruck, ceil(log2 n) steps"}},
    {{"ring", allgatherv_ring, false, "ring, n-1 steps"},
     {"linear", allgatherv_linear, false, "everyone to everyone in one round"}},
    {{"pairwise", alltoall_pairwise, false, "pairwise exchange, n-1 steps"},
     {"bruck", alltoall_bruck, false, "Bruck, ceil(log2 n) steps of packed blocks"},
     {"linear", alltoall_linear, false, "everything posted at once"}},
    {{"pairwise", alltoallv_pairwise, false, "pairwise exchange, n-1 steps"},
     {"linear", alltoallv_linear, false, "everything posted at once"}},
    {{"pairwise", alltoallv_pairwise, false, "pairwise exchange, n-1 steps"},
     {"linear", alltoallv_linear, false, "everything posted at once"}},
    {{"binomial", reduce_binomial, false, "binomial tree, operands in rank order"},
     {"knomial", reduce_knomial, false, "k-nomial tree, operands in rank order"}},
    {{"recursive_doubling", allreduce_recursive_doubling, false, "recursive doubling, operands in rank order"},
     {"reduce_bcast", allreduce_reduce_bcast, false, "binomial reduce to 0 + binomial bcast"},
     {"ring", allreduce_ring, true, "ring reduce-scatter + ring allgather"},
     {"rabenseifner", allreduce_rabenseifner, false, "recursive halving reduce-scatter + recursive doubling allgather"}},
    {{"reduce_scatterv", reduce_scatter_reduce_scatterv, false, "reduce to 0 + scatterv"},
     {"pairwise", reduce_scatter_pairwise, true, "pairwise exchange"}},
    {{"reduce_scatterv", reduce_scatter_reduce_scatterv, false, "reduce to 0 + scatterv"},
     {"pairwise", reduce_scatter_pairwise, true, "pairwise exchange"}},
    {{"linear", scan_linear, false, "chain"},
     {"recursive_doubling", scan_recursive_doubling, false, "recursive doubling, operands in rank order"}},
    {{"linear", scan_linear, false, "chain"},
     {"recursive_doubling", scan_recursive_doubling, false, "recursive doubling, operands in rank order"}},
};

const Algorithm* find(Kind kind, const char* name) {
  for (const Algorithm& alg : tables[static_cast<int>(kind)])
    if (std::strcmp(alg.name, name) == 0) return &alg;
  return nullptr;
}

bool is_pof2(int n) { return (n & (n - 1)) == 0; }

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

int select_algorithm(const Args& a, int rank, int size, bool inter, const Algorithm** out) {
  const StringParam* p = force_params[static_cast<int>(a.kind)];
  // Read at every call (no caching: tests switch with setenv); getenv is
  // cheap next to a collective, and no string is built unless explaining.
  const char* forced = std::getenv(p->name());
  size_t bytes = message_bytes(a, rank);
  const char* why = "forced";
  const Algorithm* alg = nullptr;
  if (forced && *forced && std::strcmp(forced, "auto") != 0) {
    alg = find(a.kind, forced);
    if (!alg) {
      log::error("%s=\"%s\": no such algorithm (%s)", p->name(), forced, p->help());
      return MPI_ERR_ARG;
    }
  } else {
    alg = find(a.kind, pick(a, size, bytes, &why));
  }
  const Algorithm* chosen = alg;
  if (alg->commutative_only && a.op && !a.op->commutative) alg = &tables[static_cast<int>(a.kind)][0];
  *out = alg;
  if (explain_param.get() && rank == 0) {
    std::string reason = std::strcmp(why, "forced") == 0 ? std::string("forced by ") + p->name() : std::string(why);
    if (alg != chosen)
      reason += std::string("; ") + chosen->name + " needs a commutative op, using the order-keeping " + alg->name;
    std::fprintf(stderr, "axon coll: %s%s on %d ranks, %zu bytes: %s (%s): %s\n", kind_name(a.kind),
                 inter ? " (intercommunicator)" : "", size, bytes, alg->name, alg->what, reason.c_str());
  }
  return MPI_SUCCESS;
}

bool explain() { return explain_param.get(); }

bool forced(Kind kind) {
  const char* v = std::getenv(force_params[static_cast<int>(kind)]->name());
  return v && *v && std::strcmp(v, "auto") != 0;
}

}  // namespace axon::coll
