/* Collectives with GPU buffers (staged through host memory by the library):
 * exact results of Bcast, Reduce, Allreduce (also in place), Allgather,
 * Alltoall, Gatherv, Scan, and the nonblocking Iallreduce / Ibcast / Ialltoall,
 * whose device results appear only at completion.
 *   device_coll [any]   (skips, exit 77, without a CUDA driver or device) */
#include <mpi.h>

#include "../mpi/check.h"
#include "device.h"

static int rank, size;

static int *dev_ints(size_t n, int (*f)(int rank, size_t i))
{
    int *h = (int *)xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) h[i] = f ? f(rank, i) : -1;
    int *d = (int *)dev_malloc(n * sizeof(int));
    dev_put(d, h, n * sizeof(int));
    free(h);
    return d;
}

static int *to_host(const int *d, size_t n)
{
    int *h = (int *)xmalloc(n * sizeof(int));
    dev_get(h, d, n * sizeof(int));
    return h;
}

static int val(int r, size_t i) { return r * 7919 + (int)i; }

int main(int argc, char **argv)
{
    int rc = dev_open();
    if (rc) return rc;
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t counts[] = {1, 1000, 300000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        int sum_ranks = size * (size - 1) / 2;

        /* Bcast from the last rank. */
        int *b = dev_ints(n, rank == size - 1 ? val : NULL);
        CHECK_MPI(MPI_Bcast(b, (int)n, MPI_INT, size - 1, MPI_COMM_WORLD));
        int *h = to_host(b, n);
        for (size_t i = 0; i < n; i++)
            if (h[i] != val(size - 1, i)) { CHECK(0, "bcast n=%zu [%zu] = %d", n, i, h[i]); break; }
        free(h);

        /* Allreduce (sum): device send and receive buffers. The library
         * stages them in pinned memory: no copy from or to pageable pages
         * (counted by the fake driver only; zero with the real one). */
        int *s = dev_ints(n, val), *r = dev_ints(n, NULL);
        unsigned long pageable = dev_stats().pageable_copies;
        CHECK_MPI(MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(dev_stats().pageable_copies == pageable, "allreduce n=%zu: %lu copies through pageable memory",
              n, dev_stats().pageable_copies - pageable);
        h = to_host(r, n);
        for (size_t i = 0; i < n; i++)
            if (h[i] != 7919 * sum_ranks + size * (int)i) { CHECK(0, "allreduce n=%zu [%zu] = %d", n, i, h[i]); break; }
        free(h);

        /* In place. */
        int *ip = dev_ints(n, val);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, ip, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        h = to_host(ip, n);
        for (size_t i = 0; i < n; i++)
            if (h[i] != val(size - 1, i)) { CHECK(0, "allreduce in place n=%zu [%zu] = %d", n, i, h[i]); break; }
        free(h);

        /* Reduce to rank 0 (host send buffer, device receive buffer). */
        int *hs = (int *)xmalloc(n * sizeof(int));
        for (size_t i = 0; i < n; i++) hs[i] = val(rank, i);
        int *rr = dev_ints(n, NULL);
        CHECK_MPI(MPI_Reduce(hs, rank == 0 ? rr : NULL, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
        if (rank == 0) {
            h = to_host(rr, n);
            for (size_t i = 0; i < n; i++)
                if (h[i] != 7919 * sum_ranks + size * (int)i) { CHECK(0, "reduce n=%zu [%zu] = %d", n, i, h[i]); break; }
            free(h);
        }
        free(hs);

        /* Nonblocking: the device result appears at completion. */
        int *nr = dev_ints(n, NULL);
        MPI_Request req;
        CHECK_MPI(MPI_Iallreduce(s, nr, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        h = to_host(nr, n);
        for (size_t i = 0; i < n; i++)
            if (h[i] != 7919 * sum_ranks + size * (int)i) { CHECK(0, "iallreduce n=%zu [%zu] = %d", n, i, h[i]); break; }
        free(h);
        int *nb = dev_ints(n, rank == 0 ? val : NULL);
        CHECK_MPI(MPI_Ibcast(nb, (int)n, MPI_INT, 0, MPI_COMM_WORLD, &req));
        int done = 0;
        while (!done) CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        h = to_host(nb, n);
        for (size_t i = 0; i < n; i++)
            if (h[i] != val(0, i)) { CHECK(0, "ibcast n=%zu [%zu] = %d", n, i, h[i]); break; }
        free(h);
        dev_free(b); dev_free(s); dev_free(r); dev_free(ip); dev_free(rr); dev_free(nr); dev_free(nb);
    }

    /* Allgather / Alltoall / Ialltoall / Gatherv / Scan, 513 ints per rank. */
    size_t m = 513;
    int *gs = dev_ints(m, val), *gr = dev_ints(m * size, NULL);
    CHECK_MPI(MPI_Allgather(gs, (int)m, MPI_INT, gr, (int)m, MPI_INT, MPI_COMM_WORLD));
    int *h = to_host(gr, m * size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < m; i++)
            if (h[p * m + i] != val(p, i)) { CHECK(0, "allgather [%d][%zu] = %d", p, i, h[p * m + i]); p = size; break; }
    free(h);
    int *as = dev_ints(m * size, val), *ar = dev_ints(m * size, NULL);
    CHECK_MPI(MPI_Alltoall(as, (int)m, MPI_INT, ar, (int)m, MPI_INT, MPI_COMM_WORLD));
    h = to_host(ar, m * size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < m; i++)
            if (h[p * m + i] != val(p, rank * m + i)) { CHECK(0, "alltoall [%d][%zu] = %d", p, i, h[p * m + i]); p = size; break; }
    free(h);
    int *ar2 = dev_ints(m * size, NULL);
    MPI_Request req;
    CHECK_MPI(MPI_Ialltoall(as, (int)m, MPI_INT, ar2, (int)m, MPI_INT, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    h = to_host(ar2, m * size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < m; i++)
            if (h[p * m + i] != val(p, rank * m + i)) { CHECK(0, "ialltoall [%d][%zu] = %d", p, i, h[p * m + i]); p = size; break; }
    free(h);
    int *rcounts = (int *)xmalloc(size * sizeof(int)), *displs = (int *)xmalloc(size * sizeof(int));
    for (int p = 0; p < size; p++) { rcounts[p] = p + 1; displs[p] = (size - 1 - p) * (size + 1); }
    int *vs = dev_ints(rank + 1, val), *vr = dev_ints((size_t)size * (size + 1), NULL);
    CHECK_MPI(MPI_Gatherv(vs, rank + 1, MPI_INT, vr, rcounts, displs, MPI_INT, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1) {
        h = to_host(vr, (size_t)size * (size + 1));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < size + 1; i++) {
                int want = i <= p ? val(p, (size_t)i) : -1;
                if (h[displs[p] + i] != want) { CHECK(0, "gatherv [%d][%d] = %d want %d", p, i, h[displs[p] + i], want); }
            }
        free(h);
    }
    int *sc = dev_ints(m, NULL);
    CHECK_MPI(MPI_Scan(gs, sc, (int)m, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    h = to_host(sc, m);
    for (size_t i = 0; i < m; i++)
        if (h[i] != 7919 * rank * (rank + 1) / 2 + (rank + 1) * (int)i) { CHECK(0, "scan [%zu] = %d", i, h[i]); break; }
    free(h);
    dev_free(gs); dev_free(gr); dev_free(as); dev_free(ar); dev_free(ar2); dev_free(vs); dev_free(vr); dev_free(sc);
    free(rcounts); free(displs);
    MPI_Finalize();
    return report("device_coll");
}
