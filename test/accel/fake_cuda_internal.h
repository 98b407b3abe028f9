/* Shared by the two files of the fake CUDA driver (fake_cuda.c: memory,
 * copies, streams, kernels, IPC; fake_cuda_devices.c: what a device reports,
 * for axon_info --doctor and MPIX_Query_cuda_support). Not for the tests. */
#ifndef AXON_TEST_ACCEL_FAKE_CUDA_INTERNAL_H
#define AXON_TEST_ACCEL_FAKE_CUDA_INTERNAL_H

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

/* Every entry point the fake has, counted per call (fake_cuda_calls()): a
 * test reads how many driver calls one steady-state message costs. The
 * names are the unversioned ones (cuMemAlloc for cuMemAlloc_v2). */
#define FAKE_CUDA_CALLS(X)                                                                          \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)           \
    X(cuDeviceGetUuid) X(cuDeviceGetPCIBusId) X(cuDeviceTotalMem) X(cuDeviceGetAttribute)           \
    X(cuDeviceCanAccessPeer) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize)              \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxGetState) X(cuDevicePrimaryCtxSetFlags) X(cuMemAlloc) X(cuMemAllocManaged)    \
    X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemHostRegister) X(cuMemHostUnregister)     \
    X(cuMemGetAddressRange) X(cuPointerGetAttributes) X(cuPointerSetAttribute) X(cuMemcpy)          \
    X(cuMemcpyAsync) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8)                  \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy)  \
    X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuIpcGetMemHandle)                     \
    X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) X(cuMemGetHandleForAddressRange)                   \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuGetErrorString)

#define FAKE_CALL_ENUM(name) FAKE_CALL_##name,
enum { FAKE_CUDA_CALLS(FAKE_CALL_ENUM) FAKE_CALL_COUNT };
#undef FAKE_CALL_ENUM
extern unsigned long fake_calls[FAKE_CALL_COUNT];
/* `name` is not macro-expanded here (## keeps cuda.h's _v2 renames out). */
#define COUNT(name) __atomic_fetch_add(&fake_calls[FAKE_CALL_##name], 1, __ATOMIC_RELAXED)

/* FAKE_CUDA_DEVICES (default 1). */
int fake_devices(void);
/* Whether cuInit succeeded (the device calls need it). */
int fake_initialized(void);
/* An integer environment knob, `fallback` when unset. */
int fake_knob(const char *name, int fallback);

#endif
