/* The fake CUDA driver's devices (see fake_cuda.c): what each reports to
 * cuDeviceGet*, for axon_info --doctor's GPU report and for tests that need
 * several devices. Knobs (environment):
 *   FAKE_CUDA_DEVICES       how many devices (default 1)
 *   FAKE_CUDA_PCI           their PCI addresses, comma-separated
 *                           (default 0000:1X:00.0 for device X)
 *   FAKE_CUDA_PEER=0        no peer access between devices (default: all)
 *   FAKE_CUDA_DMABUF=0      no dma-buf support
 *   FAKE_CUDA_COMPUTE_MODE  CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (default 0)
 *   FAKE_CUDA_DRIVER_VERSION  cuDriverGetVersion (default 13000) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"

static CUresult check(CUdevice d)
{
    if (!fake_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return d < 0 || d >= fake_devices() ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

/* Device d's PCI address as domain:bus:device.function. */
static void pci_of(CUdevice d, char *out, size_t len)
{
    const char *list = getenv("FAKE_CUDA_PCI");
    snprintf(out, len, "0000:%02x:00.0", 0x10 + d);
    if (!list) return;
    const char *p = list;
    for (int i = 0; i < d && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p || !*p) return;
    size_t n = strcspn(p, ",");
    if (n >= len) n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    COUNT(cuDriverGetVersion);
    *v = fake_knob("FAKE_CUDA_DRIVER_VERSION", 13000);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    COUNT(cuDeviceGetName);
    CUresult rc = check(d);
    if (rc == CUDA_SUCCESS) snprintf(name, (size_t)len, "Fake GPU (test/accel/fake_cuda.c)");
    return rc;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice d)
{
    COUNT(cuDeviceGetUuid);
    CUresult rc = check(d);
    if (rc != CUDA_SUCCESS) return rc;
    for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(0xf0 + i);
    uuid->bytes[15] = (char)d;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d)
{
    COUNT(cuDeviceGetPCIBusId);
    CUresult rc = check(d);
    if (rc == CUDA_SUCCESS) pci_of(d, bus, (size_t)len);
    return rc;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    COUNT(cuDeviceTotalMem);
    CUresult rc = check(d);
    if (rc == CUDA_SUCCESS) *bytes = (size_t)80 << 30;
    return rc;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice d)
{
    COUNT(cuDeviceGetAttribute);
    CUresult rc = check(d);
    if (rc != CUDA_SUCCESS) return rc;
    char pci[32];
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    pci_of(d, pci, sizeof pci);
    sscanf(pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *value = fake_knob("FAKE_CUDA_DMABUF", 1) != 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = (int)domain; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = (int)bus; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = (int)dev; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *value = fake_knob("FAKE_CUDA_COMPUTE_MODE", 0); break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *value = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    COUNT(cuDeviceCanAccessPeer);
    CUresult rc = check(d);
    if (rc == CUDA_SUCCESS) rc = check(peer);
    if (rc == CUDA_SUCCESS) *can = d != peer && fake_knob("FAKE_CUDA_PEER", 1) != 0;
    return rc;
}

/* Scheduling flags of a primary context (contrib/bench/gpu_pingpong -s):
 * accepted, no effect. */
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags)
{
    COUNT(cuDevicePrimaryCtxSetFlags);
    (void)flags;
    return check(d);
}
