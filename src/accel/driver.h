// Internal to src/accel: what kernels.cpp borrows from accel.cpp's driver
// state (defined in accel.cpp). Needs cuda.h: only compiled with CUDA.
#pragma once

#include <mutex>

#include <cuda.h>

namespace axon::accel::detail {

// A driver entry point by its exported (versioned) name, from the driver
// accel loaded; nullptr while accel is off or when the driver lacks it.
void* driver_symbol(const char* name);

// Takes accel's lock, makes a context current on this thread (the
// application's, else the primary context of the last device seen) and
// returns accel's stream and that context. When either step fails the
// returned lock is already released (owns_lock() is false). Release it
// before waiting for the stream: nothing that waits for the GPU may hold it.
std::unique_lock<std::mutex> lock_stream(CUstream* stream, CUcontext* context);

// An event (timing off) from accel's pool, or nullptr; call without
// accel's lock. accel::event_poll / event_finish give it back, or
// return_event.
CUevent pooled_event();
void return_event(CUevent e);

// Set by kernels.cpp once it holds GPU resources; accel::finalize calls it
// (without holding accel's lock) before releasing its own. A hook rather
// than a call so that accel.cpp links without kernels.cpp (test/accel/classify).
extern void (*finalize_hook)();

}  // namespace axon::accel::detail
