// btl/verbs: ranks on other nodes (or on this one, for testing) through RDMA
// verbs: reliable-connected queue pairs set up by librdmacm, eager messages
// as SENDs into pre-posted buffers under per-peer credits, rendezvous by
// RDMA READ of the sender's registered buffer (or RDMA WRITE into the
// receiver's), one asynchronous work request per piece the PML hands over,
// registrations kept in the registration cache, pieces spread over two ports
// when there are two. See docs/verbs.md.
#pragma once

#include <memory>

#include "btl/btl.h"

namespace axon::btl {

// Opens the best active RDMA port (and a second one as another rail when
// there is one and AXON_BTL_VERBS_RAILS allows). Returns nullptr when verbs cannot be used;
// then, if `required` (the user named "verbs" in AXON_BTL), the reason was
// reported as an error and *error is non-zero; otherwise the reason is only
// a debug message and the job carries on with the other transports.
std::unique_ptr<Transport> open_verbs(bool required, int* error);

}  // namespace axon::btl
