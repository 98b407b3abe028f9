/* The node-level (shm) collectives under each wait mode of their segment:
 * AXON_COLL_SHM_WAIT=spin|futex (argv[1]) and AXON_COLL_SHM_YIELDS
 * (argv[2], default 0: a waiter goes to sleep at once, so nearly every wait
 * sleeps and every post has someone to wake), and AXON_COLL_SHM_PEER_SPIN_US
 * (argv[3], default the library's: how long an oversubscribed waiter polls
 * for ranks last seen on other CPUs). Every node-level collective
 * is forced to shm, with 4 KiB slots so that large calls take many steps,
 * and checked for exact results:
 * - barrier, with ranks arriving late by turns (the others sleep);
 * - bcast inline / small area / data sets, every root, late roots;
 * - reduce / allreduce of 1 .. 5000 ints (inline, one-reader, piecewise),
 *   a non-commutative op (operand order), late ranks;
 * - allgather / gather / scatter / alltoall, several steps;
 * - a rendezvous-sized Isend completed by a Recv while the sender waits in
 *   an allreduce (a sleeping rank must still drive its point-to-point
 *   progress), and nonblocking collectives mixed with blocking ones;
 * - mismatched reduce / allreduce counts (erroneous): exact error classes;
 * - thousands of tiny allreduces and barriers (lost wake-ups would hang:
 *   the harness's timeout catches that). */
#include <time.h>

#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;

static void pause_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

/* (a, b) o (c, d) = (a * c, b * c + d): affine maps composed in rank order,
 * not commutative; kept small so that the products stay exact. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    long *x = in, *y = inout;
    for (int i = 0; i < *len; ++i) {
        long a = x[2 * i], b = x[2 * i + 1], c = y[2 * i], d = y[2 * i + 1];
        y[2 * i] = a * c;
        y[2 * i + 1] = b * c + d;
    }
}

static void barriers(void)
{
    for (int it = 0; it < 3 * size; ++it) {
        /* the others wait (asleep in futex mode) for the late rank */
        if (rank == it % size) pause_us(2000);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
}

static void bcasts(void)
{
    static const int counts[] = {1, 12, 200, 3000, 40000};
    int *buf = xmalloc(40000 * sizeof(int));
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
        for (int root = 0; root < size; ++root) {
            int n = counts[c];
            for (int i = 0; i < n; ++i) buf[i] = rank == root ? i * 5 + root : -1;
            if (rank == root && c % 2) pause_us(1000);
            CHECK_MPI(MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; ++i)
                if (buf[i] != i * 5 + root) {
                    CHECK(0, "bcast %d ints root %d: item %d is %d", n, root, i, buf[i]);
                    break;
                }
        }
    free(buf);
}

static void reductions(void)
{
    static const int counts[] = {1, 12, 300, 5000};
    int *in = xmalloc(5000 * sizeof(int)), *out = xmalloc(5000 * sizeof(int));
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        int n = counts[c];
        for (int late = 0; late < size; ++late) {
            for (int i = 0; i < n; ++i) in[i] = rank * 1000 + i, out[i] = -7;
            if (rank == late) pause_us(1000);
            CHECK_MPI(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < n; ++i)
                if (out[i] != 1000 * size * (size - 1) / 2 + size * i) {
                    CHECK(0, "allreduce %d ints late %d: item %d is %d", n, late, i, out[i]);
                    break;
                }
            int root = (late + 1) % size;
            for (int i = 0; i < n; ++i) out[i] = -7;
            CHECK_MPI(MPI_Reduce(in, out, n, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; ++i)
                if (out[i] != (rank == root ? (size - 1) * 1000 + i : -7)) {
                    CHECK(0, "reduce %d ints root %d: item %d is %d", n, root, i, out[i]);
                    break;
                }
        }
    }
    /* non-commutative: rank r contributes (2, r + 1) (and (1, i) at item i
       for rank 0); the composition in rank order is exact in a long */
    MPI_Op op;
    MPI_Datatype pair;
    CHECK_MPI(MPI_Op_create(compose, 0, &op));
    CHECK_MPI(MPI_Type_contiguous(2, MPI_LONG, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    enum { K = 700 };
    static long x[2 * K], y[2 * K];
    for (int i = 0; i < K; ++i) {
        x[2 * i] = rank == 0 ? 1 : 2;
        x[2 * i + 1] = rank == 0 ? i : rank + 1;
    }
    CHECK_MPI(MPI_Allreduce(x, y, K, pair, op, MPI_COMM_WORLD));
    for (int i = 0; i < K; ++i) {
        /* fold left to right: (a, b) o (c, d) = (a c, b c + d) */
        long a = 1, b = i;
        for (int r = 1; r < size; ++r) {
            b = b * 2 + r + 1;
            a = a * 2;
        }
        if (y[2 * i] != a || y[2 * i + 1] != b) {
            CHECK(0, "non-commutative allreduce item %d: (%ld, %ld), expected (%ld, %ld)", i, y[2 * i],
                  y[2 * i + 1], a, b);
            break;
        }
    }
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
    free(in);
    free(out);
}

static void movement(void)
{
    static const int counts[] = {1, 9, 1500};
    int *s = xmalloc(1500 * 5 * sizeof(int) * 2), *r = xmalloc(1500 * 5 * sizeof(int) * 2);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        int n = counts[c];
        for (int i = 0; i < n; ++i) s[i] = rank * 100000 + i;
        for (int i = 0; i < n * size; ++i) r[i] = -1;
        if (rank == (int)c % size) pause_us(1000);
        CHECK_MPI(MPI_Allgather(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD));
        for (int i = 0; i < n * size; ++i)
            if (r[i] != (i / n) * 100000 + i % n) {
                CHECK(0, "allgather %d: item %d is %d", n, i, r[i]);
                break;
            }
        int root = (int)c % size;
        for (int i = 0; i < n * size; ++i) r[i] = -1;
        CHECK_MPI(MPI_Gather(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < n * size; ++i)
                if (r[i] != (i / n) * 100000 + i % n) {
                    CHECK(0, "gather %d: item %d is %d", n, i, r[i]);
                    break;
                }
        for (int i = 0; i < n * size; ++i) s[i] = rank == root ? i * 3 : -1, r[i] = -1;
        CHECK_MPI(MPI_Scatter(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < n; ++i)
            if (r[i] != (rank * n + i) * 3) {
                CHECK(0, "scatter %d: item %d is %d", n, i, r[i]);
                break;
            }
        /* alltoall: block j of rank r holds r * 1000000 + j * 1000 + i */
        for (int j = 0; j < size; ++j)
            for (int i = 0; i < n; ++i) s[j * n + i] = rank * 1000000 + j * 1000 + i % 1000;
        CHECK_MPI(MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD));
        for (int j = 0; j < size; ++j)
            for (int i = 0; i < n; ++i)
                if (r[j * n + i] != j * 1000000 + rank * 1000 + i % 1000) {
                    CHECK(0, "alltoall %d: block %d item %d is %d", n, j, i, r[j * n + i]);
                    j = size;
                    break;
                }
    }
    free(s);
    free(r);
}

/* The sender of a large (rendezvous) message waits in an allreduce while
 * the receiver is still in MPI_Recv: the sender's node-level wait must keep
 * driving point-to-point progress even when it sleeps. */
static void progress_while_waiting(void)
{
    if (size < 2) return;
    enum { BIG = 1 << 20 };
    char *big = xmalloc(BIG);
    int x = rank, y = -1;
    if (rank == 0) {
        fill_pattern(big, BIG, 77);
        MPI_Request rq;
        CHECK_MPI(MPI_Isend(big, BIG, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        if (rank == 1) {
            pause_us(2000); /* rank 0 is asleep in the allreduce by now */
            CHECK_MPI(MPI_Recv(big, BIG, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_PATTERN(big, BIG, 77, "message received while the sender waited in allreduce");
        }
        CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    }
    CHECK(y == size * (size - 1) / 2, "allreduce after the rendezvous: %d", y);
    /* nonblocking (pt2pt schedules) and blocking (node level) on one comm */
    int a[64], b = rank + 1, c = 0;
    MPI_Request rq[2];
    for (int i = 0; i < 64; ++i) a[i] = rank == size - 1 ? i * 11 : -1;
    CHECK_MPI(MPI_Ibcast(a, 64, MPI_INT, size - 1, MPI_COMM_WORLD, &rq[0]));
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &rq[1]));
    if (rank == 0) pause_us(1000);
    CHECK_MPI(MPI_Allreduce(&b, &c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(c == size * (size + 1) / 2, "allreduce %d", c);
    for (int i = 0; i < 64; ++i)
        if (a[i] != i * 11) {
            CHECK(0, "ibcast item %d is %d", i, a[i]);
            break;
        }
    free(big);
}

/* Erroneous programs: mismatched reduction counts (one step either way).
 * A reader that sees a shorter contribution than its own count gets
 * MPI_ERR_OTHER, a longer one MPI_ERR_TRUNCATE; everyone completes the
 * call and later calls work. */
static void mismatched_counts(void)
{
    if (size < 2) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int in[10], out[10];
    for (int i = 0; i < 10; ++i) in[i] = i;
    int rc = MPI_Allreduce(in, out, rank == 0 ? 1 : 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == (rank == 0 ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER),
          "allreduce with rank 0's count 1, others 10: error class %d", error_class_of(rc));
    rc = MPI_Reduce(in, out, rank == 0 ? 10 : 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == (rank == 0 ? MPI_ERR_OTHER : MPI_SUCCESS),
          "reduce with root count 10, others 1: error class %d", error_class_of(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    int x = 1, y = 0;
    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size, "allreduce after the mismatch: %d", y);
}

static void many_small(void)
{
    long sum = 0;
    for (int it = 0; it < 3000; ++it) {
        int x = rank + it, y = 0;
        if (it % 3 == 2) CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        else CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        if (it % 3 != 2) sum += y - (long)size * it;
        if (it % 3 == 1) {
            int v = rank == it % size ? it : -1;
            CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, it % size, MPI_COMM_WORLD));
            if (v != it) CHECK(0, "bcast %d: %d", it, v);
        }
    }
    CHECK(sum == 2000L * size * (size - 1) / 2, "small allreduces: %ld", sum);
}

int main(int argc, char **argv)
{
    setenv("AXON_COLL_SHM_WAIT", argc > 1 ? argv[1] : "futex", 1);
    setenv("AXON_COLL_SHM_YIELDS", argc > 2 ? argv[2] : "0", 1);
    if (argc > 3) setenv("AXON_COLL_SHM_PEER_SPIN_US", argv[3], 1);
    setenv("AXON_COLL_SHM_CHUNK", "4096", 1);
    static const char *kinds[] = {"barrier", "bcast", "reduce", "allreduce", "allgather", "gather", "scatter",
                                  "alltoall"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) force_algorithm(kinds[k], "shm");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    barriers();
    bcasts();
    reductions();
    movement();
    progress_while_waiting();
    mismatched_counts();
    many_small();
    MPI_Finalize();
    return report("coll_shm_wait");
}
