/* Reducing collectives on GPU buffers: exact results of Allreduce, Reduce,
 * Reduce_scatter_block, Reduce_scatter, Scan and Exscan (blocking,
 * nonblocking, persistent; MPI_IN_PLACE) for MPI_SUM / MPI_MAX on MPI_FLOAT,
 * MPI_DOUBLE and MPI_INT at several counts (0 and odd ones included), and
 * where the combine steps ran: GPU kernels (the fake driver counts their
 * launches; axon_accel_coll_kernel_reductions counts the calls) or the CPU
 * (axon_accel_coll_host_reductions: a user-defined op, or no kernels).
 *   device_reduce kernels     the kernels combine predefined ops (blocking reduce /
 *                             allreduce on the node segment: on the CPU)
 *   device_reduce kernels-p2p the same without node-level algorithms
 *                             (AXON_COLL_NODE_LEVEL=0): every predefined call on kernels
 *   device_reduce nokernels   AXON_ACCEL_KERNELS=0: every call combines on the CPU
 * (skips, exit 77, without a CUDA driver or device) */
#include <mpi.h>

#include "../mpi/check.h"
#include "../mpi/counters.h"
#include "device.h"

static int rank, size, kernels, node_level;

/* Values whose sums are exact in every type (small integers). */
static double val(int r, size_t i, int round) { return (double)((r + 1) * 3 + (int)(i % 17) - 8 + round); }

struct type_case {
    MPI_Datatype type;
    size_t bytes;
    const char *name;
};
static const struct type_case types[] = {
    {MPI_FLOAT, sizeof(float), "float"}, {MPI_DOUBLE, sizeof(double), "double"}, {MPI_INT, sizeof(int), "int"}};

static void put_value(const struct type_case *t, void *buf, size_t i, double v)
{
    if (t->type == MPI_FLOAT) ((float *)buf)[i] = (float)v;
    else if (t->type == MPI_DOUBLE) ((double *)buf)[i] = v;
    else ((int *)buf)[i] = (int)v;
}

static double get_value(const struct type_case *t, const void *buf, size_t i)
{
    if (t->type == MPI_FLOAT) return ((const float *)buf)[i];
    if (t->type == MPI_DOUBLE) return ((const double *)buf)[i];
    return ((const int *)buf)[i];
}

/* A device buffer of n items: item i = val(r, first + i, round) (r < 0: -1). */
static void *dev_fill(const struct type_case *t, size_t n, int r, size_t first, int round)
{
    void *h = xmalloc(n * t->bytes + 1);
    for (size_t i = 0; i < n; i++) put_value(t, h, i, r < 0 ? -1.0 : val(r, first + i, round));
    void *d = dev_malloc(n * t->bytes);
    dev_put(d, h, n * t->bytes);
    free(h);
    return d;
}

static void dev_refill(const struct type_case *t, void *d, size_t n, int r, size_t first, int round)
{
    void *h = xmalloc(n * t->bytes + 1);
    for (size_t i = 0; i < n; i++) put_value(t, h, i, val(r, first + i, round));
    dev_put(d, h, n * t->bytes);
    free(h);
}

/* The reduction of val(r, i, round) over ranks [lo, hi). */
static double expect(MPI_Op op, int lo, int hi, size_t i, int round)
{
    double acc = val(lo, i, round);
    for (int r = lo + 1; r < hi; r++) acc = op == MPI_SUM ? acc + val(r, i, round) : (acc > val(r, i, round) ? acc : val(r, i, round));
    return acc;
}

/* Compares n items of device buffer d with the reduction over ranks [lo, hi)
 * of items first.. (hi <= lo: the buffer must still hold -1). */
static void verify(const char *what, const struct type_case *t, MPI_Op op, const void *d, size_t n, int lo, int hi,
                   size_t first, int round)
{
    void *h = xmalloc(n * t->bytes + 1);
    dev_get(h, d, n * t->bytes);
    for (size_t i = 0; i < n; i++) {
        double want = hi > lo ? expect(op, lo, hi, first + i, round) : -1.0;
        double got = get_value(t, h, i);
        if (got != want) {
            CHECK(0, "%s %s %s n=%zu [%zu] = %g, expected %g", what, t->name, op == MPI_SUM ? "sum" : "max", n, i, got,
                  want);
            break;
        }
    }
    free(h);
}

static unsigned long long kernel_calls, host_calls;
static unsigned long launches;

/* One reducing call on device buffers was made: the choice was counted once.
 * `blocking_rooted`: a blocking reduce / allreduce, which may take the node
 * segment (its combine steps run on the CPU) while node-level algorithms
 * are on. */
static void counted_as(const char *what, int user_op, int blocking_rooted)
{
    unsigned long long k = axon_counter("axon_accel_coll_kernel_reductions");
    unsigned long long h = axon_counter("axon_accel_coll_host_reductions");
    int gpu = kernels && !user_op;
    if (gpu && blocking_rooted && node_level && k - kernel_calls + h - host_calls == 1) gpu = k - kernel_calls == 1;
    CHECK(k - kernel_calls == (unsigned long long)gpu && h - host_calls == (unsigned long long)!gpu,
          "%s: kernel calls +%llu, host calls +%llu (expected the %s path)", what, k - kernel_calls, h - host_calls,
          gpu ? "kernel" : "host");
    kernel_calls = k;
    host_calls = h;
}
#define counted(what, user_op) counted_as(what, user_op, 0)

static void run_case(const struct type_case *t, MPI_Op op, size_t n)
{
    const int count = (int)n;
    MPI_Request req;

    /* Allreduce: separate buffers, in place, nonblocking, persistent. */
    void *s = dev_fill(t, n, rank, 0, 0), *r = dev_fill(t, n, -1, 0, 0);
    unsigned long before = dev_stats().kernel_reductions, mine, all;
    CHECK_MPI(MPI_Allreduce(s, r, count, t->type, op, MPI_COMM_WORLD));
    counted_as("allreduce", 0, 1);
    verify("allreduce", t, op, r, n, 0, size, 0, 0);
    /* Some rank combined with a kernel (none without kernels). */
    mine = dev_stats().kernel_reductions - before;
    CHECK_MPI(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (kernels && !node_level && size > 1 && n > 0) CHECK(all > 0, "allreduce %s n=%zu: no reduction kernel ran", t->name, n);
    if (!kernels) CHECK(all == 0, "allreduce %s n=%zu: %lu reduction kernels ran", t->name, n, all);
    dev_refill(t, r, n, rank, 0, 1);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, r, count, t->type, op, MPI_COMM_WORLD));
    counted_as("allreduce in place", 0, 1);
    verify("allreduce in place", t, op, r, n, 0, size, 0, 1);
    dev_free(r);
    r = dev_fill(t, n, -1, 0, 0);
    CHECK_MPI(MPI_Iallreduce(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    counted("iallreduce", 0);
    verify("iallreduce", t, op, r, n, 0, size, 0, 0);
    CHECK_MPI(MPI_Allreduce_init(s, r, count, t->type, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    counted("allreduce_init", 0);
    for (int round = 0; round < 2; round++) {
        dev_refill(t, s, n, rank, 0, round + 2);
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        verify("allreduce_init", t, op, r, n, 0, size, 0, round + 2);
    }
    CHECK_MPI(MPI_Request_free(&req));
    dev_free(r);

    /* Reduce to the last rank; in place at the root; nonblocking to rank 0. */
    int root = size - 1;
    r = dev_fill(t, n, -1, 0, 0);
    CHECK_MPI(MPI_Reduce(s, r, count, t->type, op, root, MPI_COMM_WORLD));
    counted_as("reduce", 0, 1);
    verify("reduce", t, op, r, n, 0, rank == root ? size : 0, 0, 3);
    dev_refill(t, r, n, rank, 0, 4);
    CHECK_MPI(MPI_Reduce(rank == root ? MPI_IN_PLACE : r, r, count, t->type, op, root, MPI_COMM_WORLD));
    counted_as("reduce in place", 0, 1);
    if (rank == root) verify("reduce in place", t, op, r, n, 0, size, 0, 4);
    dev_free(r);
    r = dev_fill(t, n, -1, 0, 0);
    CHECK_MPI(MPI_Ireduce(s, r, count, t->type, op, 0, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    counted("ireduce", 0);
    verify("ireduce", t, op, r, n, 0, rank == 0 ? size : 0, 0, 3);
    CHECK_MPI(MPI_Reduce_init(s, r, count, t->type, op, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    counted("reduce_init", 0);
    dev_refill(t, s, n, rank, 0, 5);
    CHECK_MPI(MPI_Start(&req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    verify("reduce_init", t, op, r, n, 0, rank == 0 ? size : 0, 0, 5);
    CHECK_MPI(MPI_Request_free(&req));
    dev_free(r);
    dev_free(s);

    /* Reduce_scatter_block: n items per rank out of size * n; in place;
     * nonblocking; Reduce_scatter with counts n + rank. */
    size_t total = n * (size_t)size;
    s = dev_fill(t, total, rank, 0, 0);
    r = dev_fill(t, n, -1, 0, 0);
    CHECK_MPI(MPI_Reduce_scatter_block(s, r, count, t->type, op, MPI_COMM_WORLD));
    counted("reduce_scatter_block", 0);
    verify("reduce_scatter_block", t, op, r, n, 0, size, n * (size_t)rank, 0);
    CHECK_MPI(MPI_Ireduce_scatter_block(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    counted("ireduce_scatter_block", 0);
    verify("ireduce_scatter_block", t, op, r, n, 0, size, n * (size_t)rank, 0);
    CHECK_MPI(MPI_Reduce_scatter_block_init(s, r, count, t->type, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    counted("reduce_scatter_block_init", 0);
    dev_refill(t, s, total, rank, 0, 6);
    CHECK_MPI(MPI_Start(&req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    verify("reduce_scatter_block_init", t, op, r, n, 0, size, n * (size_t)rank, 6);
    CHECK_MPI(MPI_Request_free(&req));
    dev_refill(t, s, total, rank, 0, 7);
    CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, s, count, t->type, op, MPI_COMM_WORLD));
    counted("reduce_scatter_block in place", 0);
    verify("reduce_scatter_block in place", t, op, s, n, 0, size, n * (size_t)rank, 7);
    dev_free(r);
    dev_free(s);
    {
        int *counts = (int *)xmalloc((size_t)size * sizeof(int));
        size_t sum = 0, mine = 0;
        for (int i = 0; i < size; i++) {
            counts[i] = count + i;
            if (i < rank) mine += (size_t)counts[i];
            sum += (size_t)counts[i];
        }
        s = dev_fill(t, sum, rank, 0, 0);
        r = dev_fill(t, (size_t)counts[rank], -1, 0, 0);
        CHECK_MPI(MPI_Reduce_scatter(s, r, counts, t->type, op, MPI_COMM_WORLD));
        counted("reduce_scatter", 0);
        verify("reduce_scatter", t, op, r, (size_t)counts[rank], 0, size, mine, 0);
        dev_free(r);
        dev_free(s);
        free(counts);
    }

    /* Scan: separate buffers, in place, nonblocking, persistent; Exscan. */
    s = dev_fill(t, n, rank, 0, 0);
    r = dev_fill(t, n, -1, 0, 0);
    CHECK_MPI(MPI_Scan(s, r, count, t->type, op, MPI_COMM_WORLD));
    counted("scan", 0);
    verify("scan", t, op, r, n, 0, rank + 1, 0, 0);
    dev_refill(t, r, n, rank, 0, 1);
    CHECK_MPI(MPI_Scan(MPI_IN_PLACE, r, count, t->type, op, MPI_COMM_WORLD));
    counted("scan in place", 0);
    verify("scan in place", t, op, r, n, 0, rank + 1, 0, 1);
    CHECK_MPI(MPI_Iscan(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    counted("iscan", 0);
    verify("iscan", t, op, r, n, 0, rank + 1, 0, 0);
    CHECK_MPI(MPI_Scan_init(s, r, count, t->type, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    counted("scan_init", 0);
    for (int round = 0; round < 2; round++) {
        dev_refill(t, s, n, rank, 0, round + 2);
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        verify("scan_init", t, op, r, n, 0, rank + 1, 0, round + 2);
    }
    CHECK_MPI(MPI_Request_free(&req));
    dev_free(r);
    r = dev_fill(t, n, -1, 0, 0);
    dev_refill(t, s, n, rank, 0, 0);
    CHECK_MPI(MPI_Exscan(s, r, count, t->type, op, MPI_COMM_WORLD));
    counted("exscan", 0);
    if (rank > 0) verify("exscan", t, op, r, n, 0, rank, 0, 0);
    dev_free(r);
    dev_free(s);
}

/* A user-defined op (a sum, commutative): always combined on the CPU. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    int rc = dev_open();
    if (rc) return rc;
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
    const char *mode = argc > 1 ? argv[1] : "kernels";
    int threshold = strcmp(mode, "threshold") == 0;
    kernels = strcmp(mode, "nokernels") != 0;
    node_level = strcmp(mode, "kernels-p2p") != 0 && !threshold;
    if (!kernels) setenv("AXON_ACCEL_KERNELS", "0", 1);
    /* Every size through the kernels, except in mode "threshold", which
     * checks the default AXON_ACCEL_COLL_KERNEL_MIN (1 MiB). */
    if (!threshold) setenv("AXON_ACCEL_COLL_KERNEL_MIN", "0", 1);
    if (!node_level) setenv("AXON_COLL_NODE_LEVEL", "0", 1);
    MPI_Init(&argc, &argv);
    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    kernel_calls = axon_counter("axon_accel_coll_kernel_reductions");
    host_calls = axon_counter("axon_accel_coll_host_reductions");
    launches = dev_stats().kernel_reductions;

    if (threshold) {
        /* Below the threshold the CPU combines (host counter), at it the
         * kernels (kernel counter); both results exact. */
        const struct type_case *tf = &types[0];
        const size_t sizes[] = {1000, (1 << 20) / 4};
        for (int i = 0; i < 2; i++) {
            size_t n = sizes[i];
            void *s = dev_fill(tf, n, rank, 0, 0), *r = dev_fill(tf, n, -1, 0, 0);
            CHECK_MPI(MPI_Allreduce(s, r, (int)n, tf->type, MPI_SUM, MPI_COMM_WORLD));
            verify("allreduce (threshold)", tf, MPI_SUM, r, n, 0, size, 0, 0);
            unsigned long long k = axon_counter("axon_accel_coll_kernel_reductions");
            unsigned long long h = axon_counter("axon_accel_coll_host_reductions");
            if (i == 0)
                CHECK(h - host_calls == 1 && k == kernel_calls, "%zu floats: not combined on the CPU", n);
            else
                CHECK(k - kernel_calls == 1 && h == host_calls, "%zu floats (1 MiB): not combined by kernels", n);
            kernel_calls = k;
            host_calls = h;
            dev_free(r);
            dev_free(s);
        }
        MPI_T_finalize();
        MPI_Finalize();
        return report("device_reduce");
    }

    const size_t counts[] = {0, 1, 7, 1000, 65537};
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t oi = 0; oi < 2; oi++)
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) run_case(&types[ti], ops[oi], counts[ci]);

    /* Kernel launches: on some rank whenever ranks combine (not at 1 rank,
     * where nothing is combined); never without kernels. */
    unsigned long mine = dev_stats().kernel_reductions - launches, all = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (kernels && size > 1) CHECK(all > 0, "no reduction kernel ran on any rank");
    if (!kernels) CHECK(all == 0, "%lu reduction kernels ran with AXON_ACCEL_KERNELS=0", all);
    CHECK(dev_stats().kernel_faults == 0, "%lu kernels touched memory outside device allocations",
          dev_stats().kernel_faults);

    /* User-defined op: host staging, correct, no kernel launched. */
    MPI_Op sum;
    CHECK_MPI(MPI_Op_create(user_sum, 1, &sum));
    const struct type_case *ti = &types[2];
    const size_t ucounts[] = {0, 5, 70001};
    for (size_t ci = 0; ci < 3; ci++) {
        size_t n = ucounts[ci];
        unsigned long before = dev_stats().kernel_reductions;
        void *s = dev_fill(ti, n, rank, 0, 0), *r = dev_fill(ti, n, -1, 0, 0);
        CHECK_MPI(MPI_Allreduce(s, r, (int)n, MPI_INT, sum, MPI_COMM_WORLD));
        counted("allreduce (user op)", 1);
        verify("allreduce (user op)", ti, MPI_SUM, r, n, 0, size, 0, 0);
        MPI_Request req;
        CHECK_MPI(MPI_Iallreduce(s, r, (int)n, MPI_INT, sum, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        counted("iallreduce (user op)", 1);
        verify("iallreduce (user op)", ti, MPI_SUM, r, n, 0, size, 0, 0);
        CHECK_MPI(MPI_Scan(s, r, (int)n, MPI_INT, sum, MPI_COMM_WORLD));
        counted("scan (user op)", 1);
        verify("scan (user op)", ti, MPI_SUM, r, n, 0, rank + 1, 0, 0);
        CHECK(dev_stats().kernel_reductions == before, "user op n=%zu: %lu reduction kernels ran", n,
              dev_stats().kernel_reductions - before);
        dev_free(r);
        dev_free(s);
    }
    CHECK_MPI(MPI_Op_free(&sum));

    /* Host buffers are not counted. */
    int x = rank, y = 0;
    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size * (size - 1) / 2, "host allreduce = %d", y);
    CHECK(axon_counter("axon_accel_coll_kernel_reductions") == kernel_calls &&
              axon_counter("axon_accel_coll_host_reductions") == host_calls,
          "a host-buffer allreduce was counted as a device one");

    MPI_T_finalize();
    MPI_Finalize();
    return report("device_reduce");
}
