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
    unsigned long deferred_copies;
    unsigned long event_records;    /* cuEventRecord: what the staging pipeline waits on */  /* pageable-to-device copies that returned before landing */
};

#endif
