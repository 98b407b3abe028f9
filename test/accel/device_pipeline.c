/* Device-resident reductions in segments (src/coll/schedule.cpp, "queued
 * device work"; src/coll/algo_all.cpp, segmented_exchange): the kernels of
 * one segment are queued on the GPU while the next segment's messages move.
 * The fake driver runs a queued kernel only when its stream synchronises (an
 * event seen complete, cuStreamSynchronize), never on its own, so a message
 * that read a buffer before the kernel writing it had finished would carry
 * the old bytes, and a receive that overwrote a kernel's operand early would
 * change the result: every result is compared item for item with the
 * reduction computed on the host.
 *
 * AXON_COLL_REDUCE_SEGMENT=4096 (set here), 160 KiB per rank: the
 * Rabenseifner allreduce (nonblocking, persistent), the ring allreduce and
 * the pairwise reduce_scatter_block run tens of segments.
 *   device_pipeline segments  every call resident; axon_coll_device_overlapped_rounds grows during each one
 *   device_pipeline whole     AXON_COLL_REDUCE_SEGMENT=0: same results, no round overlaps a kernel
 *                             (the setting took effect)
 *   device_pipeline mixed     rank 0 passes GPU buffers, the others host buffers: every rank cut the
 *                             messages alike (results exact, no mismatch)
 * (skips, exit 77, without a CUDA driver or device) */
#include <mpi.h>
#include <stdint.h>

#include "../mpi/check.h"
#include "../mpi/counters.h"
#include "../tools/cvar.h"
#include "device.h"

enum { SEGMENTS, WHOLE, MIXED };
static int rank, size, mode, on_gpu;
static const int n = 40000; /* int32 items per rank: 160 KiB, above the 64 KiB that selects Rabenseifner */

static int32_t item(int r, int i, int round) { return (int32_t)((r + 1) * 1000003 + i * 7 + round * 13); }

static void *buffer(size_t bytes)
{
    if (on_gpu) return dev_malloc(bytes);
    void *p = xmalloc(bytes);
    return p;
}
static void release(void *p)
{
    if (on_gpu) dev_free(p);
    else free(p);
}
static void put(void *d, const int32_t *h, size_t items)
{
    if (on_gpu) dev_put(d, h, items * sizeof *h);
    else memcpy(d, h, items * sizeof *h);
}
static void get(int32_t *h, const void *d, size_t items)
{
    if (on_gpu) dev_get(h, d, items * sizeof *h);
    else memcpy(h, d, items * sizeof *h);
}

/* This rank's input: `items` values starting at index 0. */
static void fill(void *d, size_t items, int round)
{
    int32_t *h = xmalloc(items * sizeof *h);
    for (size_t i = 0; i < items; i++) h[i] = item(rank, (int)i, round);
    put(d, h, items);
    free(h);
}

/* Items [first, first + items) of the sum over all ranks. */
static void verify(const char *what, const void *d, size_t items, size_t first, int round)
{
    int32_t *got = xmalloc(items * sizeof *got);
    get(got, d, items);
    for (size_t i = 0; i < items; i++) {
        int64_t want = 0;
        for (int r = 0; r < size; r++) want += item(r, (int)(first + i), round);
        if (got[i] != (int32_t)want) {
            CHECK(0, "%s: item %zu is %d, the sum over %d ranks is %d", what, first + i, got[i], size, (int32_t)want);
            break;
        }
    }
    free(got);
}

static unsigned long long resident0, overlapped0;
static void before(void)
{
    resident0 = axon_counter("axon_coll_device_resident_reductions");
    overlapped0 = axon_counter("axon_coll_device_overlapped_rounds");
}
/* `calls` resident calls since before(), and overlapped rounds as the mode
 * says for a rank that `exchanges` reduced segments (a rank the
 * non-power-of-two fold of Rabenseifner leaves out does not). */
static void after(const char *what, int calls, int exchanges)
{
    unsigned long long resident = axon_counter("axon_coll_device_resident_reductions") - resident0;
    unsigned long long overlapped = axon_counter("axon_coll_device_overlapped_rounds") - overlapped0;
    CHECK(resident == (unsigned long long)(on_gpu ? calls : 0), "%s: resident counter +%llu, expected +%d", what,
          resident, on_gpu ? calls : 0);
    if (!on_gpu || size == 1 || !exchanges) {
        CHECK(overlapped == 0, "%s: %llu rounds overlapped on host buffers or one rank", what, overlapped);
    } else if (mode == SEGMENTS) {
        /* Tens of segments per exchange: most rounds post while the previous kernel is queued. */
        CHECK(overlapped >= (unsigned long long)(8 * calls), "%s: only %llu rounds overlapped a kernel in %d calls",
              what, overlapped, calls);
    } else if (mode == WHOLE) {
        /* Uncut, each round's messages read what the kernel before them wrote. */
        CHECK(overlapped == 0, "%s: %llu rounds overlapped with AXON_COLL_REDUCE_SEGMENT=0", what, overlapped);
    }
}

static void allreduce_forms(const char *alg)
{
    /* Rabenseifner on 3 ranks: rank 1 hands its data to rank 0 and waits. */
    int pof2 = 1;
    while (pof2 * 2 <= size) pof2 *= 2;
    const int exchanges = strcmp(alg, "ring") == 0 || rank >= 2 * (size - pof2) || rank % 2 == 0;
    char what[96];
    void *s = buffer(n * sizeof(int32_t)), *r = buffer(n * sizeof(int32_t));
    MPI_Request req;
    fill(s, n, 0);
    before();
    CHECK_MPI(MPI_Iallreduce(s, r, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    snprintf(what, sizeof what, "iallreduce (%s)", alg);
    after(what, 1, exchanges);
    verify(what, r, n, 0, 0);

    fill(r, n, 1);
    before();
    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, r, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    snprintf(what, sizeof what, "iallreduce in place (%s)", alg);
    after(what, 1, exchanges);
    verify(what, r, n, 0, 1);

    /* Persistent: the schedule is built once; each start runs it on new data. */
    before();
    CHECK_MPI(MPI_Allreduce_init(s, r, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    for (int round = 2; round < 5; round++) {
        fill(s, n, round);
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        snprintf(what, sizeof what, "persistent allreduce (%s), start %d", alg, round - 1);
        verify(what, r, n, 0, round);
    }
    snprintf(what, sizeof what, "persistent allreduce (%s), 3 starts", alg);
    /* Counted once, at init; overlapped rounds in every start. */
    after(what, 1, exchanges);
    CHECK_MPI(MPI_Request_free(&req));
    release(s);
    release(r);
}

int main(int argc, char **argv)
{
    int rc = dev_open();
    if (rc) return rc;
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
    const char *m = argc > 1 ? argv[1] : "segments";
    mode = strcmp(m, "whole") == 0 ? WHOLE : strcmp(m, "mixed") == 0 ? MIXED : SEGMENTS;
    setenv("AXON_COLL_REDUCE_SEGMENT", mode == WHOLE ? "0" : "4096", 1);
    setenv("AXON_ACCEL_COLL_KERNEL_MIN", "0", 1);
    MPI_Init(&argc, &argv);
    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    on_gpu = mode != MIXED || rank == 0;

    allreduce_forms("rabenseifner");

    /* The ring (reduce-scatter then allgather around the ranks), forced through MPI_T. */
    CHECK_MPI(cvar_write_int("AXON_COLL_ALLREDUCE_ALGORITHM", cvar_item_value("AXON_COLL_ALLREDUCE_ALGORITHM", "ring")));
    allreduce_forms("ring");
    CHECK_MPI(cvar_write_int("AXON_COLL_ALLREDUCE_ALGORITHM", 0));

    /* Pairwise reduce_scatter_block: n items of the sum to each rank. */
    void *s = buffer((size_t)n * size * sizeof(int32_t)), *r = buffer(n * sizeof(int32_t));
    MPI_Request req;
    fill(s, (size_t)n * size, 5);
    before();
    CHECK_MPI(MPI_Ireduce_scatter_block(s, r, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* Not checked uncut: its first messages may go while the copy of this rank's own block is queued. */
    if (mode != WHOLE) after("ireduce_scatter_block", 1, 1);
    verify("ireduce_scatter_block", r, n, (size_t)n * rank, 5);
    release(s);
    release(r);

    MPI_T_finalize();
    MPI_Finalize();
    return report("device_pipeline");
}
