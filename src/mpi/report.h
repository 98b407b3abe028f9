// The communication report's MPI-layer side (src/mpi/report.cpp): which
// communicators ran collectives, and the gather and output at MPI_Finalize.
#pragma once

namespace axon::mpi {

struct Comm;

// A communicator got collective state (its calls are tallied from now on).
void report_track(Comm* c);
// A communicator goes away: its tallies are kept for the report.
void report_retire(Comm* c);
// Collective over MPI_COMM_WORLD's processes, at shut-down while every
// transport is still open: gathers every rank's counts on rank 0, which
// prints the report and writes AXON_REPORT_FILE. Does nothing unless
// AXON_REPORT=comm (which must then be set on every rank).
void report_write();

}  // namespace axon::mpi
