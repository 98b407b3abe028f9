/* GPU memory for the MPI-level accel tests: the CUDA driver (or the fake of
 * test/accel/fake_cuda.c) is dlopen'ed from AXON_ACCEL_CUDA_LIBRARY, the same
 * library Axon loads, default libcuda.so.1. No cuda.h needed: the few driver
 * types are declared here with the driver ABI's sizes.
 *
 * dev_open() returns 0, or 77 after printing why the test cannot run (no
 * driver, no device, library built without CUDA) as its last line. */
#ifndef AXON_TEST_ACCEL_DEVICE_H
#define AXON_TEST_ACCEL_DEVICE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon_config.h"
#include "fake_cuda_stats.h"

typedef int dev_result;
typedef unsigned long long dev_ptr;


static struct {
    void *lib;
    dev_result (*init)(unsigned);
    dev_result (*count)(int *);
    dev_result (*retain)(void **, int);
    dev_result (*set_current)(void *);
    dev_result (*alloc)(dev_ptr *, size_t);
    dev_result (*managed)(dev_ptr *, size_t, unsigned);
    dev_result (*release)(dev_ptr);
    dev_result (*htod)(dev_ptr, const void *, size_t);
    dev_result (*dtoh)(void *, dev_ptr, size_t);
    void (*fake_stats)(struct fake_cuda_stats *);  /* only in the fake */
} dev;

static inline int dev_open(void)
{
#ifndef AXON_HAVE_CUDA
    printf("skip: Axon was built without CUDA support (no cuda.h at configure time)\n");
    return 77;
#else
    const char *path = getenv("AXON_ACCEL_CUDA_LIBRARY");
    if (!path || !*path)
        path = "libcuda.so.1";
    dev.lib = dlopen(path, RTLD_NOW);
    if (!dev.lib) {
        printf("skip: no CUDA driver (%s cannot be loaded)\n", path);
        return 77;
    }
#define DEV_SYM(field, name)                                              \
    do {                                                                  \
        *(void **)&dev.field = dlsym(dev.lib, name);                      \
        if (!dev.field) {                                                 \
            printf("skip: the CUDA driver lacks %s\n", name);             \
            return 77;                                                    \
        }                                                                 \
    } while (0)
    DEV_SYM(init, "cuInit");
    DEV_SYM(count, "cuDeviceGetCount");
    DEV_SYM(retain, "cuDevicePrimaryCtxRetain");
    DEV_SYM(set_current, "cuCtxSetCurrent");
    DEV_SYM(alloc, "cuMemAlloc_v2");
    DEV_SYM(managed, "cuMemAllocManaged");
    DEV_SYM(release, "cuMemFree_v2");
    DEV_SYM(htod, "cuMemcpyHtoD_v2");
    DEV_SYM(dtoh, "cuMemcpyDtoH_v2");
#undef DEV_SYM
    *(void **)&dev.fake_stats = dlsym(dev.lib, "fake_cuda_stats");
    int n = 0;
    if (dev.init(0) != 0 || dev.count(&n) != 0 || n <= 0) {
        printf("skip: no GPU (the CUDA driver reports no device)\n");
        return 77;
    }
    void *ctx = NULL;
    /* Several ranks of one node share the device(s): rank-local choice. */
    const char *lr = getenv("PMIX_RANK");
    int ordinal = lr ? atoi(lr) % n : 0;
    if (dev.retain(&ctx, ordinal) != 0 || dev.set_current(ctx) != 0) {
        printf("skip: cannot create a CUDA context\n");
        return 77;
    }
    return 0;
#endif
}

static inline void *dev_malloc(size_t n)
{
    dev_ptr p = 0;
    if (dev.alloc(&p, n ? n : 1) != 0) {
        fprintf(stderr, "cuMemAlloc(%zu) failed\n", n);
        abort();
    }
    return (void *)(size_t)p;
}

static inline void *dev_malloc_managed(size_t n)
{
    dev_ptr p = 0;
    if (dev.managed(&p, n ? n : 1, 1 /* CU_MEM_ATTACH_GLOBAL */) != 0) {
        fprintf(stderr, "cuMemAllocManaged(%zu) failed\n", n);
        abort();
    }
    return (void *)(size_t)p;
}

static inline void dev_free(void *p) { dev.release((dev_ptr)(size_t)p); }
static inline void dev_put(void *d, const void *h, size_t n) { if (n) dev.htod((dev_ptr)(size_t)d, h, n); }
static inline void dev_get(void *h, const void *d, size_t n) { if (n) dev.dtoh(h, (dev_ptr)(size_t)d, n); }

/* Zero unless the fake driver is loaded. */
static inline struct fake_cuda_stats dev_stats(void)
{
    struct fake_cuda_stats s;
    memset(&s, 0, sizeof s);
    if (dev.fake_stats)
        dev.fake_stats(&s);
    return s;
}

#endif
