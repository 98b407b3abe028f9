// Algorithm selection (src/coll/select.cpp).
#pragma once

#include "coll/internal.h"

namespace axon::coll {

// Picks the algorithm for a call (forced by AXON_COLL_<NAME>_ALGORITHM, read
// at every call, else by size). MPI_ERR_ARG for an unknown forced name.
// Prints the choice when AXON_COLL_EXPLAIN=1 (rank 0).
int select_algorithm(const Args& a, int rank, int size, bool inter, const Algorithm** out);
int knomial_radix();
bool explain();
// Whether AXON_COLL_<NAME>_ALGORITHM names an algorithm (not unset / auto).
bool forced(Kind kind);

}  // namespace axon::coll
