// btl/tcp: ranks anywhere (other nodes, other network namespaces) over TCP.
//
// Used for peers no faster transport reaches; its latency estimate is far
// above sm's, so ranks sharing a node keep using shared memory when both are
// enabled. See docs/tcp.md for the connection set-up, handshake, framing and
// the AXON_BTL_TCP_* parameters.
#pragma once

#include <memory>

#include "btl/btl.h"

namespace axon::btl {
// Opens the listening sockets and publishes this rank's business card.
// Returns nullptr when the job has a single rank, or on failure (*error set
// non-zero and the reason reported: e.g. an interface list matching nothing).
std::unique_ptr<Transport> open_tcp(int* error);
// For processes of other jobs only (dynamic processes): opened on demand by
// btl::open_dynamic(), whatever the job's size; publishes nothing through
// rte, reaches nobody of this job, and hands its card out through card().
std::unique_ptr<Transport> open_tcp_dynamic(int* error);
}  // namespace axon::btl
