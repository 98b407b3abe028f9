// Internal to src/op: the table of predefined reduction kernels.
#pragma once

#include <cstddef>

#include "datatype/datatype.h"
#include "op/op.h"

namespace axon {

// inout[i] = in[i] op inout[i] for n elements of one element kind.
using ReductionKernel = void (*)(const void* in, void* inout, std::size_t n);

// The kernel for a predefined arithmetic op (not REPLACE, NO_OP or user) on
// an element kind, or nullptr when there is none.
ReductionKernel reduction_kernel(OpKind op, ElementKind element);

}  // namespace axon
