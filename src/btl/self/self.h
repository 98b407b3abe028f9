// btl/self: messages a rank sends to itself.
#pragma once

#include <memory>

#include "btl/btl.h"

namespace axon::btl {
std::unique_ptr<Transport> open_self();
}
