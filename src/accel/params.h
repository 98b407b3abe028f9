// Parameters of src/accel (defined in params.cpp); internal to src/accel and
// the PML's device-buffer paths.
#pragma once

#include "base/param.h"

namespace axon::accel {
extern BoolParam enable_param;
extern StringParam library_param;
extern BoolParam ipc_param;
extern IntParam ipc_mappings_param;
extern SizeParam eager_param;
extern SizeParam chunk_param;
extern SizeParam bounce_param;
extern SizeParam coll_kernel_min_param;
extern StringParam copy_wait_param;
}  // namespace axon::accel
