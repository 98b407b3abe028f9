// The communication report (AXON_REPORT=comm, mpirun --report comm): what
// every rank sent to every other, by transport and protocol, and the
// collectives each communicator ran, with their algorithms. This header is
// the report's data and its three renderings; src/mpi/report.cpp collects
// the data from the pml and coll counters at MPI_Finalize and gathers it on
// rank 0, which prints it (text) and writes it to AXON_REPORT_FILE (CSV, or
// JSON for a name ending in .json). docs/diagnostics.md describes the output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace axon::diag::report {

// Messages a rank sent to one peer (counted once per send, when its
// protocol is chosen). [0]: eager, [1]: rendezvous.
struct PairTraffic {
  int from = 0, to = 0;
  std::string transport;
  uint64_t messages[2] = {}, bytes[2] = {};
  uint64_t total_messages() const { return messages[0] + messages[1]; }
  uint64_t total_bytes() const { return bytes[0] + bytes[1]; }
};

// One kind of collective call one rank made on one communicator.
struct CollectiveCalls {
  int rank = 0;                 // world rank of the caller
  std::string communicator;     // its name (MPI_Comm_set_name), or "communicator <id>"
  uint32_t context_id = 0;      // with `leader`, tells communicators of one name apart
  int leader = 0;               // world rank of the communicator's rank 0
  int size = 0;
  std::string call;             // "allreduce", ...
  uint64_t calls = 0, bytes = 0;
  std::vector<std::string> algorithms;
};

struct Report {
  int ranks = 0;                           // the job's world size
  std::vector<PairTraffic> point_to_point; // the application's messages
  std::vector<PairTraffic> collective;     // the messages collectives sent
  std::vector<CollectiveCalls> calls;
};

// Serialization for the gather to rank 0 (one rank's part of a report).
void append_to(std::vector<uint8_t>* out, const Report& part);
// Adds one rank's serialized part to `into`; false when it is malformed.
bool merge_from(const uint8_t* data, size_t size, Report* into);

// The three renderings. Text: a matrix of messages and bytes (up to
// kMatrixRanks ranks), the pairs by transport and protocol, and the
// collectives per communicator (calls of one rank, bytes summed over the
// members, the algorithms of all).
constexpr int kMatrixRanks = 16;
void print_text(FILE* out, const Report& r);
void write_csv(FILE* out, const Report& r);
void write_json(FILE* out, const Report& r);

}  // namespace axon::diag::report
