// Axon's MPIX_ extensions that Open MPI users know, declared in the
// installed <mpi-ext.h> (made from include/mpi-ext.h.in).
#include "include/mpi-ext.h"

#include "accel/accel.h"

// Run-time CUDA awareness: 1 only when device buffers may really be passed
// to MPI calls here — built with CUDA support, the driver loaded
// (AXON_ACCEL_CUDA_LIBRARY), at least one device, AXON_ACCEL not 0. The
// first call loads the driver, as the first MPI call with a buffer would;
// callable before MPI_Init.
extern "C" __attribute__((visibility("default"))) int MPIX_Query_cuda_support(void) {
  return axon::accel::available() ? 1 : 0;
}
