// What the MPI_T entry points (tool.cpp: variables and categories;
// tool_events.cpp: events and sources) share.
#pragma once

#include <string>

namespace axon::mpi::tool {

// True when MPI_T is initialized; also delivers event instances deferred for
// MPI_T_CB_REQUIRE_NONE callbacks (src/diag/events.cpp), since an MPI_T call
// is a point where such a callback may run.
bool initialized();

// Copies `text` into (buf, *len) per the MPI_T string convention.
void copy_string(const std::string& text, char* buf, int* len);

}  // namespace axon::mpi::tool

// Every MPI_T call but MPI_T_init_thread starts with this.
#define AXON_T_REQUIRE_INIT() \
  if (!axon::mpi::tool::initialized()) return MPI_T_ERR_NOT_INITIALIZED
