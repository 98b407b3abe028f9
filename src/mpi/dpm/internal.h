// src/mpi/dpm inside: what its files share (the interface is src/mpi/dpm.h).
//   port.cpp     ports: their names, listening sockets, MPI_Open_port /
//                MPI_Close_port; the name service (MPI_Publish_name, ...)
//   connect.cpp  the meeting of two groups through their roots: the socket
//                between the roots, the group descriptions, the context id
//                agreed over both groups; MPI_Comm_accept / _connect /
//                _join, and MPI_Intercomm_create's swap across two jobs
//   spawn.cpp    MPI_Comm_spawn[_multiple], the parent of a spawned process
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/param.h"
#include "base/unique_fd.h"
#include "mpi/communicator.h"
#include "mpi/objects.h"

namespace axon::mpi::dpm {

// AXON_DPM_TIMEOUT (connect.cpp): how long a connect or a spawn waits.
extern IntParam timeout_param;

constexpr int kTokenBytes = 16;
constexpr uint32_t kMaxMessage = 64u << 20;  // longest message between the roots

// ---- ports (port.cpp) ----

// An open port: its name and listening socket, and the random token a
// connecting root must present.
struct Port {
  std::string name;
  UniqueFd listener;
  uint8_t token[kTokenBytes] = {};
};
// The open port of that name, or nullptr. Under the PML lock. Shared: a
// thread accepting on a port keeps it (its listener and token) while other
// threads open and close ports.
std::shared_ptr<Port> find_port(const char* name);
// Opens a port (under the PML lock): MPI_SUCCESS and its name, or
// MPI_ERR_OTHER when no socket could be opened.
int open_port(std::string* name);
// Removes the port from the list (an accept still running on it keeps its
// listener until it returns); false when no open port has that name.
// Takes the PML lock.
bool close_port(const std::string& name);

// What a port name says: where to connect and the token to present.
struct PortAddress {
  uint16_t port = 0;  // host order
  uint8_t token[kTokenBytes] = {};
  std::string host;
  std::vector<uint32_t> addrs;  // network order, in the order to try
};
// False when `name` is no port name of this implementation.
bool parse_port(const char* name, PortAddress* out);

// ---- shared by the rooted calls (connect.cpp) ----

// The timeout of a connect or spawn: AXON_DPM_TIMEOUT, or the info key
// "timeout" (seconds).
double timeout_of(MPI_Info info);

// The arguments every rooted dynamic-process call shares: an
// intracommunicator, a root within it, and somewhere to put the result
// (`out_name` names that argument in the message). MPI_SUCCESS, or the
// error raised on `c`.
int check_rooted_call(Comm* c, int root, const MPI_Comm* out, const char* out_name, const char* fn);

}  // namespace axon::mpi::dpm
