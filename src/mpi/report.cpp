// The communication report (AXON_REPORT=comm): gathered from the pml's
// per-peer counts and the coll layer's per-communicator tallies, both kept
// whether or not a report is asked for (a few adds per call). The data model
// and the renderings are in src/diag/report.h; docs/diagnostics.md shows
// the output.
#include "mpi/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "coll/coll.h"
#include "diag/report.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "mpi/context_id.h"
#include "progress/progress.h"

namespace axon::mpi {

namespace {

using diag::report::CollectiveCalls;
using diag::report::PairTraffic;
using diag::report::Report;

EnumParam report_param{"AXON_REPORT", {"none", "comm"},
                       "What rank 0 prints at MPI_Finalize (mpirun --report): comm, the messages and bytes "
                       "each rank sent to each other (by transport, eager and rendezvous) and the collectives "
                       "per communicator with their algorithms. Must be the same on every rank"};
StringParam report_file_param{"AXON_REPORT_FILE", "",
                              "With AXON_REPORT: rank 0 also writes the report to this file (mpirun "
                              "--report-file), as JSON when the name ends in .json, else as CSV"};

bool enabled() { return report_param.get() == 1; }

std::set<Comm*> tracked;                // communicators with collective state
std::vector<CollectiveCalls> retired;   // the tallies of those already gone

std::string label(const Comm* c) {
  if (!c->name.empty()) return c->name;
  return "(unnamed, context " + std::to_string(c->p2p.id) + ")";
}

void add_tallies(const Comm* c, int me, std::vector<CollectiveCalls>* out) {
  if (!c->coll_state) return;
  const coll::CallTally* t = coll::tallies(static_cast<const coll::CommState*>(c->coll_state));
  for (int k = 0; k < coll::kKindCount; ++k) {
    if (!t[k].calls) continue;
    CollectiveCalls calls;
    calls.rank = me;
    calls.communicator = label(c);
    calls.context_id = c->p2p.id;
    calls.leader = c->p2p.world_of.empty() ? -1 : c->p2p.world_of[0];
    calls.size = c->size();
    calls.call = coll::kind_name(static_cast<coll::Kind>(k));
    calls.calls = t[k].calls;
    calls.bytes = t[k].bytes;
    for (const char* a : t[k].algorithms)
      if (a) calls.algorithms.emplace_back(a);
    out->push_back(std::move(calls));
  }
}

// This process's part: its sends by peer (collective traffic apart) and
// its collectives.
Report local_part(int me) {
  Report part;
  const std::vector<pml::PeerTraffic>& sent = pml::traffic();
  for (size_t peer = 0; peer < sent.size(); ++peer) {
    for (int origin = 0; origin < pml::PeerTraffic::kOrigins; ++origin) {
      const pml::PeerTraffic& t = sent[peer];
      if (!t.messages[origin][0] && !t.messages[origin][1]) continue;
      PairTraffic p;
      p.from = me;
      p.to = static_cast<int>(peer);
      p.transport = pml::transport_name(static_cast<int>(peer));
      for (int k = 0; k < 2; ++k) {
        p.messages[k] = t.messages[origin][k];
        p.bytes[k] = t.bytes[origin][k];
      }
      (origin == pml::PeerTraffic::kPointToPoint ? part.point_to_point : part.collective).push_back(std::move(p));
    }
  }
  part.calls = retired;
  for (const Comm* c : tracked) add_tallies(c, me, &part.calls);
  return part;
}

void write_file(const std::string& path, const Report& r) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    log::warn("AXON_REPORT_FILE: cannot write %s: %s", path.c_str(), std::strerror(errno));
    return;
  }
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  json ? diag::report::write_json(f, r) : diag::report::write_csv(f, r);
  if (std::fclose(f) != 0) log::warn("AXON_REPORT_FILE: writing %s failed: %s", path.c_str(), std::strerror(errno));
}

}  // namespace

void report_track(Comm* c) {
  if (!enabled()) return;
  progress::Guard guard;
  tracked.insert(c);
}

void report_retire(Comm* c) {
  if (!enabled()) return;
  progress::Guard guard;
  if (tracked.erase(c)) add_tallies(c, comm_world()->rank(), &retired);
}

void report_write() {
  if (!enabled()) return;
  Comm* world = comm_world();
  const int me = world->rank(), size = world->size();
  std::vector<uint8_t> mine;
  {
    progress::Guard guard;
    diag::report::append_to(&mine, local_part(me));  // before the gather adds traffic of its own
  }
  retired.clear();  // a runtime started again (sessions) reports afresh
  // Each part to rank 0 (a gather: nobody else needs the others'), its
  // length first.
  pml::Context* ctx = &world->coll;
  const Datatype* bytes = datatype_from_handle(MPI_BYTE);
  if (me != 0) {
    uint64_t length = mine.size();
    if (pml::send(&length, sizeof length, bytes, 0, kTagReport, ctx, pml::SendMode::Standard) != MPI_SUCCESS ||
        pml::send(mine.data(), static_cast<MPI_Count>(length), bytes, 0, kTagReport, ctx,
                  pml::SendMode::Standard) != MPI_SUCCESS)
      log::warn("AXON_REPORT: sending this rank's part of the report to rank 0 failed");
    return;
  }
  Report r;
  r.ranks = size;
  diag::report::merge_from(mine.data(), mine.size(), &r);
  for (int rank = 1; rank < size; ++rank) {
    uint64_t length = 0;
    std::vector<uint8_t> part;
    pml::Request done;  // (pml::recv's result)
    bool ok = pml::recv(&length, sizeof length, bytes, rank, kTagReport, ctx, &done) == MPI_SUCCESS;
    if (ok) {
      part.resize(length);
      ok = pml::recv(part.data(), static_cast<MPI_Count>(length), bytes, rank, kTagReport, ctx, &done) ==
           MPI_SUCCESS;
    }
    if (!ok || !diag::report::merge_from(part.data(), part.size(), &r))
      log::warn("AXON_REPORT: rank %d's part of the report is malformed or lost; left out", rank);
  }
  diag::report::print_text(stderr, r);
  std::fflush(stderr);
  if (const std::string& path = report_file_param.get(); !path.empty()) write_file(path, r);
}

}  // namespace axon::mpi
