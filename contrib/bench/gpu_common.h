/* For the benchmarks' GPU side. The CUDA driver is dlopen'ed at run time,
 * never linked (BENCH_CUDA_LIBRARY, default libcuda.so.1), so every program
 * builds with any MPI's mpicc and without CUDA. Also the clock and the sort
 * order of gpu_copy_bw and gpu_pingpong, which are self-contained programs
 * (no bench_common). Header-only. */
#ifndef AXON_BENCH_GPU_COMMON_H
#define AXON_BENCH_GPU_COMMON_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct cuda_symbol {
    void **slot;       /* where the entry point goes */
    const char *name;  /* its versioned name, e.g. "cuMemAlloc_v2" */
};

/* Loads the driver and resolves every symbol. Returns NULL, or why not
 * (for "no CUDA device: <why>"). The library stays loaded for good; *lib
 * (when not NULL) gets its handle for optional symbols. */
static inline const char *cuda_load(const struct cuda_symbol *syms, size_t n, void **lib)
{
    static char why[160];
    const char *path = getenv("BENCH_CUDA_LIBRARY");
    void *handle = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!handle) return "the CUDA driver (libcuda.so.1) cannot be loaded";
    for (size_t i = 0; i < n; ++i)
        if (!(*syms[i].slot = dlsym(handle, syms[i].name))) {
            snprintf(why, sizeof why, "the CUDA driver lacks %s", syms[i].name);
            return why;
        }
    if (lib) *lib = handle;
    return NULL;
}

static inline double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* qsort order of doubles, ascending. */
static inline int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
