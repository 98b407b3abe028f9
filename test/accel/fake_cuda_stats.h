/* What the fake CUDA driver (test/accel/fake_cuda.c) counts, returned by its
 * extra entry point fake_cuda_stats(struct fake_cuda_stats *). One layout,
 * shared by the fake and by the tests that read it (C and C++). */
#ifndef AXON_TEST_ACCEL_FAKE_CUDA_STATS_H
#define AXON_TEST_ACCEL_FAKE_CUDA_STATS_H

struct fake_cuda_stats {
    unsigned long pointer_queries;  /* cuPointerGetAttributes calls */
    unsigned long copies_htod, copies_dtoh, copies_dtod, copies_htoh;
    unsigned long async_copies;
    unsigned long bytes_dtod;
    unsigned long ipc_exports, ipc_opens, ipc_closes;
    unsigned long pinned_allocs;
    unsigned long live_allocations;
    unsigned long deferred_copies;  /* pageable-to-device copies that returned before landing */
    unsigned long event_records;    /* cuEventRecord: what the staging pipeline waits on */
    /* GPU kernels (Axon's fatbin, emulated on the host: fake_cuda.c). */
    unsigned long module_loads;       /* cuModuleLoadData calls that succeeded */
    unsigned long kernel_launches;    /* cuLaunchKernel calls accepted */
    unsigned long kernel_packs;       /* ... of axon_pack */
    unsigned long kernel_unpacks;     /* ... of axon_unpack */
    unsigned long kernel_reductions;  /* ... of axon_reduce_* and axon_reduce_layout_* */
    unsigned long kernels_run;        /* launches executed (at the stream's next synchronisation point) */
    unsigned long kernel_faults;      /* launches that touched memory outside any device allocation */
    unsigned long dmabuf_exports;     /* cuMemGetHandleForAddressRange (dma-buf fds handed out) */
    unsigned long pageable_copies;    /* device<->host copies whose host side is not cuMemAllocHost memory */
    unsigned long pending_writes;     /* now: pageable-to-device copies that returned and have not landed yet */
};

/* The fake also exports
 *   int fake_cuda_calls(const char **names, unsigned long *counts, int max)
 * which fills the calls made so far to each of its entry points (names
 * unversioned: cuMemAlloc for cuMemAlloc_v2) and returns how many there are. */

#endif
