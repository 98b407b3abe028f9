// btl/sm: ranks on one node, through shared memory.
#pragma once

#include <memory>

#include "btl/btl.h"

namespace axon::btl {
// Returns nullptr when there is no other rank on this node, or on failure
// (*error set non-zero and reported).
std::unique_ptr<Transport> open_sm(int* error);
}
