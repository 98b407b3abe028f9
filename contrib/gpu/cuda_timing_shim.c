/* A stand-in for libcuda.so.1 that forwards every call to the real driver
 * and times it: loaded by Axon through AXON_ACCEL_CUDA_LIBRARY, it shows
 * where a device message's time goes, inside driver calls (and which: a
 * cuStreamSynchronize that waits for a GPU shared with another process) or
 * between them (Axon's own work, the other rank, the scheduler).
 *
 *   cc -O2 -shared -fPIC -I/usr/local/cuda/include -o cuda_timing_shim.so \
 *      contrib/gpu/cuda_timing_shim.c -ldl
 *   AXON_ACCEL_CUDA_LIBRARY=$PWD/cuda_timing_shim.so mpirun -np 2 pt2pt_latency -d cuda D D
 *
 * Environment:
 *   CUDA_TIMING_SHIM_LIBRARY  the driver forwarded to (default libcuda.so.1;
 *                             the fake driver for a dry run)
 *   CUDA_TIMING_SHIM_OUT      folder for one report per process
 *                             (shim.<pid>.txt); default: stderr
 * At exit each process prints, per entry point called: calls, total time,
 * mean and maximum per call; then the time spent inside driver calls
 * against the wall time from the first call to the last.
 *
 * Only the entry points Axon (src/accel) and its tests' device helpers
 * (test/accel/device.h) look up are provided: Axon dlsym's exactly those.
 * The names are cuda.h's versioned ones (cuMemAlloc is cuMemAlloc_v2). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define STR2(x) #x
#define STR(x) STR2(x)

struct entry {
    const char *name;
    unsigned long calls;
    uint64_t total_ns, max_ns;
    struct entry *next;
};
static struct entry *entries;  /* every entry point called at least once */
static uint64_t first_ns, last_ns, inside_ns;
static void *real_lib;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *resolve(const char *name)
{
    if (!real_lib) {
        const char *path = getenv("CUDA_TIMING_SHIM_LIBRARY");
        void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "cuda_timing_shim: cannot load the driver: %s\n", dlerror());
            return NULL;
        }
        __atomic_store_n(&real_lib, h, __ATOMIC_RELEASE);
    }
    return dlsym(real_lib, name);
}

static void record(struct entry *e, uint64_t t0, uint64_t t1)
{
    uint64_t d = t1 - t0;
    if (__atomic_fetch_add(&e->calls, 1, __ATOMIC_RELAXED) == 0) {
        /* First call: onto the list (lock-free push). */
        struct entry *head = __atomic_load_n(&entries, __ATOMIC_ACQUIRE);
        do e->next = head;
        while (!__atomic_compare_exchange_n(&entries, &head, e, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    }
    __atomic_fetch_add(&e->total_ns, d, __ATOMIC_RELAXED);
    __atomic_fetch_add(&inside_ns, d, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&e->max_ns, __ATOMIC_RELAXED);
    while (d > m && !__atomic_compare_exchange_n(&e->max_ns, &m, d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    uint64_t f = 0;
    __atomic_compare_exchange_n(&first_ns, &f, t0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    uint64_t l = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
    while (t1 > l && !__atomic_compare_exchange_n(&last_ns, &l, t1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

/* One forwarding, timed wrapper: WRAP(name, (parameters), (arguments)). */
#define WRAP(name, params, args)                                              \
    EXPORT CUresult CUDAAPI name params                                       \
    {                                                                         \
        static struct entry shim_entry_ = {STR(name), 0, 0, 0, NULL};         \
        static CUresult(CUDAAPI * real) params;                               \
        if (!real) *(void **)&real = resolve(STR(name));                      \
        if (!real) return CUDA_ERROR_NOT_SUPPORTED;                           \
        uint64_t t0 = now_ns();                                               \
        CUresult rc = real args;                                              \
        record(&shim_entry_, t0, now_ns());                                   \
        return rc;                                                            \
    }

WRAP(cuInit, (unsigned int flags), (flags))
WRAP(cuDriverGetVersion, (int *v), (v))
WRAP(cuDeviceGetCount, (int *n), (n))
WRAP(cuDeviceGet, (CUdevice *d, int ordinal), (d, ordinal))
WRAP(cuDeviceGetAttribute, (int *v, CUdevice_attribute a, CUdevice d), (v, a, d))
WRAP(cuCtxGetCurrent, (CUcontext *c), (c))
WRAP(cuCtxSetCurrent, (CUcontext c), (c))
WRAP(cuCtxSynchronize, (void), ())
WRAP(cuDevicePrimaryCtxGetState, (CUdevice d, unsigned int *flags, int *active), (d, flags, active))
WRAP(cuDevicePrimaryCtxRetain, (CUcontext *c, CUdevice d), (c, d))
WRAP(cuPointerGetAttributes, (unsigned int n, CUpointer_attribute *a, void **data, CUdeviceptr p), (n, a, data, p))
WRAP(cuPointerSetAttribute, (const void *v, CUpointer_attribute a, CUdeviceptr p), (v, a, p))
WRAP(cuMemGetAddressRange, (CUdeviceptr *base, size_t *size, CUdeviceptr p), (base, size, p))
WRAP(cuMemAlloc, (CUdeviceptr *p, size_t n), (p, n))
WRAP(cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned int flags), (p, n, flags))
WRAP(cuMemFree, (CUdeviceptr p), (p))
WRAP(cuMemAllocHost, (void **p, size_t n), (p, n))
WRAP(cuMemFreeHost, (void *p), (p))
WRAP(cuMemHostRegister, (void *p, size_t n, unsigned int flags), (p, n, flags))
WRAP(cuMemHostUnregister, (void *p), (p))
WRAP(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
WRAP(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s))
WRAP(cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
WRAP(cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
WRAP(cuStreamCreate, (CUstream *s, unsigned int flags), (s, flags))
WRAP(cuStreamDestroy, (CUstream s), (s))
WRAP(cuStreamSynchronize, (CUstream s), (s))
WRAP(cuEventCreate, (CUevent *e, unsigned int flags), (e, flags))
WRAP(cuEventDestroy, (CUevent e), (e))
WRAP(cuEventRecord, (CUevent e, CUstream s), (e, s))
WRAP(cuEventQuery, (CUevent e), (e))
WRAP(cuEventSynchronize, (CUevent e), (e))
WRAP(cuIpcGetMemHandle, (CUipcMemHandle *h, CUdeviceptr p), (h, p))
WRAP(cuIpcOpenMemHandle, (CUdeviceptr *p, CUipcMemHandle h, unsigned int flags), (p, h, flags))
WRAP(cuIpcCloseMemHandle, (CUdeviceptr p), (p))
WRAP(cuMemGetHandleForAddressRange,
     (void *handle, CUdeviceptr p, size_t n, CUmemRangeHandleType type, unsigned long long flags),
     (handle, p, n, type, flags))
WRAP(cuModuleLoadData, (CUmodule *m, const void *image), (m, image))
WRAP(cuModuleUnload, (CUmodule m), (m))
WRAP(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name), (f, m, name))
WRAP(cuLaunchKernel,
     (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
      unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra),
     (f, gx, gy, gz, bx, by, bz, shared, s, params, extra))
WRAP(cuGetErrorString, (CUresult error, const char **s), (error, s))

static int by_total(const void *a, const void *b)
{
    const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

__attribute__((destructor)) static void report(void)
{
    if (!entries) return;
    FILE *out = stderr;
    char path[4096];
    const char *dir = getenv("CUDA_TIMING_SHIM_OUT");
    if (dir && *dir) {
        snprintf(path, sizeof path, "%s/shim.%d.txt", dir, (int)getpid());
        if (!(out = fopen(path, "w"))) out = stderr;
    }
    struct entry *list[64];
    int n = 0;
    for (struct entry *e = entries; e && n < 64; e = e->next) list[n++] = e;
    qsort(list, (size_t)n, sizeof list[0], by_total);
    double wall_ms = (double)(last_ns - first_ns) / 1e6, in_ms = (double)inside_ns / 1e6;
    fprintf(out, "# cuda_timing_shim: pid %d, %s\n", (int)getpid(), getenv("PMIX_RANK") ? getenv("PMIX_RANK") : "-");
    fprintf(out, "# %-30s %10s %12s %10s %10s\n", "entry point", "calls", "total ms", "mean us", "max us");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-30s %10lu %12.3f %10.3f %10.3f\n", list[i]->name, list[i]->calls,
                (double)list[i]->total_ns / 1e6, (double)list[i]->total_ns / 1e3 / (double)list[i]->calls,
                (double)list[i]->max_ns / 1e3);
    fprintf(out, "# inside driver calls: %.3f ms of %.3f ms from the first call to the last (%.1f%%); between calls %.3f ms\n",
            in_ms, wall_ms, wall_ms > 0 ? 100.0 * in_ms / wall_ms : 0.0, wall_ms - in_ms);
    if (out != stderr) fclose(out);
}
