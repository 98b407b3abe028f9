// What this process sent to each peer, for the communication report
// (src/mpi/report.cpp). Counting sits where a send's protocol is decided
// (protocol.cpp: send_immediate and try_first_message), so every send is
// counted once, with the protocol it took, and retries after kAgain are not.
#include "pml/internal.h"

namespace axon::pml {

std::vector<PeerTraffic> peer_traffic;

// Peers of another job (MPI_Comm_connect/spawn) get world ranks past the
// job's own; the table grows to them on their first message.
void grow_traffic(int dest_world) { peer_traffic.resize(size_t(dest_world) + 1); }

const std::vector<PeerTraffic>& traffic() { return peer_traffic; }

const char* transport_name(int world_rank) {
  btl::Transport* t = btl::route(world_rank);
  return t ? t->name() : "none";
}

}  // namespace axon::pml
