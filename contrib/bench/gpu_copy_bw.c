/* The physical limit for GPU-buffer benchmarks: how fast the CUDA driver
 * itself copies device-to-device (cuMemcpyDtoD, what a CUDA IPC transfer
 * between two ranks on one GPU ends in) and between pinned host memory and
 * the device (what every staged byte crosses). Not an MPI program: it needs
 * only the driver, dlopen'ed like the MPI benchmarks do (BENCH_CUDA_LIBRARY,
 * default libcuda.so.1), so it builds anywhere.
 *
 *   gpu_copy_bw [-m MAX] [-n MIN]       sizes MIN..MAX (default 1..64M)
 *
 * Prints, per size, the median over 5 timed batches of MB/s (10^6 bytes of
 * payload per second, as pt2pt_bw counts) for DtoD, and for HtoD and DtoH
 * both with pinned (cuMemAllocHost) and ordinary malloc'ed memory. Exit 1
 * with "no CUDA device: why" when there is no driver or GPU. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_common.h"

typedef int cu_result;
typedef unsigned long long cu_ptr;

static struct {
    cu_result (*init)(unsigned);
    cu_result (*count)(int *);
    cu_result (*retain)(void **, int);
    cu_result (*set_current)(void *);
    cu_result (*alloc)(cu_ptr *, size_t);
    cu_result (*alloc_host)(void **, size_t);
    cu_result (*dtod)(cu_ptr, cu_ptr, size_t);
    cu_result (*htod)(cu_ptr, const void *, size_t);
    cu_result (*dtoh)(void *, cu_ptr, size_t);
    cu_result (*sync)(void);
} cu;

static int open_driver(void)
{
    const struct cuda_symbol syms[] = {
        {(void **)&cu.init, "cuInit"},
        {(void **)&cu.count, "cuDeviceGetCount"},
        {(void **)&cu.retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.set_current, "cuCtxSetCurrent"},
        {(void **)&cu.alloc, "cuMemAlloc_v2"},
        {(void **)&cu.alloc_host, "cuMemAllocHost_v2"},
        {(void **)&cu.dtod, "cuMemcpyDtoD_v2"},
        {(void **)&cu.htod, "cuMemcpyHtoD_v2"},
        {(void **)&cu.dtoh, "cuMemcpyDtoH_v2"},
        {(void **)&cu.sync, "cuCtxSynchronize"},
    };
    const char *why = cuda_load(syms, sizeof syms / sizeof syms[0], NULL);
    if (why) {
        printf("no CUDA device: %s\n", why);
        return -1;
    }
    int n = 0;
    void *ctx = NULL;
    if (cu.init(0) || cu.count(&n) || n <= 0 || cu.retain(&ctx, 0) || cu.set_current(ctx)) {
        printf("no CUDA device: the driver reports none usable\n");
        return -1;
    }
    return 0;
}

enum kind { DTOD, HTOD, DTOH };

static cu_result copy(enum kind k, cu_ptr d0, cu_ptr d1, void *h, size_t n)
{
    switch (k) {
    case DTOD: return cu.dtod(d1, d0, n);
    case HTOD: return cu.htod(d0, h, n);
    default: return cu.dtoh(h, d0, n);
    }
}

/* Median MB/s of 5 batches; each batch is sized to last about 20 ms. */
static double measure(enum kind k, cu_ptr d0, cu_ptr d1, void *h, size_t n)
{
    long iters = 1;
    for (;;) {  /* find a batch length */
        double t = now_seconds();
        for (long i = 0; i < iters; ++i)
            if (copy(k, d0, d1, h, n)) return -1;
        cu.sync();
        if (now_seconds() - t > 0.02 || iters > (1L << 20)) break;
        iters *= 2;
    }
    double rate[5];
    for (int r = 0; r < 5; ++r) {
        double t = now_seconds();
        for (long i = 0; i < iters; ++i) copy(k, d0, d1, h, n);
        cu.sync();
        rate[r] = (double)n * iters / (now_seconds() - t) / 1e6;
    }
    qsort(rate, 5, sizeof rate[0], by_value);
    return rate[2];
}

int main(int argc, char **argv)
{
    size_t min = 1, max = (size_t)64 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        char *end;
        unsigned long long v = strtoull(argv[i + 1], &end, 10);
        if (*end == 'K' || *end == 'k') v <<= 10;
        else if (*end == 'M' || *end == 'm') v <<= 20;
        if (!strcmp(argv[i], "-m")) max = v;
        else if (!strcmp(argv[i], "-n")) min = v;
        else {
            fprintf(stderr, "usage: %s [-n MIN] [-m MAX]\n", argv[0]);
            return 2;
        }
    }
    if (min == 0 || min > max) {
        fprintf(stderr, "%s: need 0 < MIN <= MAX\n", argv[0]);
        return 2;
    }
    if (open_driver() != 0) return 1;
    cu_ptr d0 = 0, d1 = 0;
    void *h = NULL, *pageable = malloc(max);
    if (!pageable || cu.alloc(&d0, max) || cu.alloc(&d1, max) || cu.alloc_host(&h, max)) {
        printf("no CUDA device: cannot allocate %zu bytes\n", max);
        return 1;
    }
    memset(h, 1, max);
    memset(pageable, 1, max);
    printf("# gpu_copy_bw: CUDA driver copies, median of 5 batches, MB/s\n");
    printf("# %10s %14s %14s %14s %16s %16s\n", "size", "DtoD", "HtoD(pinned)", "DtoH(pinned)", "HtoD(pageable)",
           "DtoH(pageable)");
    for (size_t n = min; n <= max; n *= 2) {
        printf("%12zu %14.2f %14.2f %14.2f %16.2f %16.2f\n", n, measure(DTOD, d0, d1, h, n),
               measure(HTOD, d0, d1, h, n), measure(DTOH, d0, d1, h, n), measure(HTOD, d0, d1, pageable, n),
               measure(DTOH, d0, d1, pageable, n));
        fflush(stdout);
        if (n > max / 2) break;
    }
    return 0;
}
