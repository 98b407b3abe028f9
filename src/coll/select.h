// Algorithm selection (src/coll/select.cpp).
#pragma once

#include <string>

#include "coll/internal.h"

namespace axon::coll {

struct Choice {
  const Algorithm* alg = nullptr;     // what runs
  const Algorithm* chosen = nullptr;  // what was asked for (forced or picked)
  const char* why = nullptr;          // the size rule; null: forced
  const char* note = nullptr;         // why `alg` differs from `chosen`
  size_t bytes = 0;
};

// Picks the algorithm for a call (forced by AXON_COLL_<NAME>_ALGORITHM, as
// the environment set it or MPI_T_cvar_write last wrote it, else by size,
// communicator size and nodes). `blocking`: node-level algorithms (shm,
// hierarchical) are possible (their topology must be known: node_topology).
// Always MPI_SUCCESS (a bad name is refused where it is set).
int select_algorithm(const Args& a, const CommState* st, bool blocking, Choice* out);
// The algorithm select_algorithm would now choose for a blocking call of
// `kind` with `bytes` per rank and a non-zero count, by what it remembered
// from the communicator's previous call; null when that call differed, or
// when the choice is forced (AXON_COLL_<NAME>_ALGORITHM) or explained. A
// reduction passes its op and type (the choice depends on both); other
// kinds pass null for the op.
const Algorithm* remembered(const CommState* st, Kind kind, size_t bytes, const Datatype* type, const Op* op);
// Prints the choice when AXON_COLL_EXPLAIN=1 (rank 0 of the communicator).
void explain_choice(const Args& a, const CommState* st, const Choice& c);
int knomial_radix();
bool explain();
// Whether the explain line of `algorithm` for a `kind` call on the
// communicator is due: every call under AXON_COLL_EXPLAIN, the first of
// each (communicator, call, algorithm) under AXON_EXPLAIN alone.
bool explain_due(const CommState* st, Kind kind, const char* algorithm);
// Bytes per rank that drive the choice.
size_t message_bytes(const Args& a, int rank);

}  // namespace axon::coll
