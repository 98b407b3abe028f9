/* Blocking collectives that the default selection may run node-level
 * (shared-memory segment, or hierarchical with pretend nodes), in the
 * situations coll_driver's sweep does not create; nothing is forced. Exact
 * results everywhere.
 *   1. The first collective on a fresh MPI_Comm_dup is an MPI_Allreduce
 *      that rank 0 enters at once while the other ranks (of 3 or more)
 *      first spin for 50 ms and pass a token around a ring of their own: the
 *      early rank waits inside the call (for the segment and the data)
 *      while the late ones finish their point-to-point traffic.
 *   2. On MPI_COMM_WORLD and on a split (even / odd ranks, reversed order):
 *      MPI_Ibcast and MPI_Iallreduce of 5000 ints posted, then blocking
 *      MPI_Bcast and MPI_Allreduce, MPI_Ibarrier, MPI_Barrier, and only then
 *      the waits: the nonblocking schedules must complete while ranks wait
 *      in blocking calls on the same communicator.
 *   3. 20 rounds of three dups: an MPI_Reduce (MPI_MAX, root round % size)
 *      on the first, an MPI_Barrier on the third in odd rounds, the second
 *      never used; the three freed in a rotating order. The harness fails
 *      the case if a segment is left in /dev/shm.
 *   4. 300 rounds (40 with argument "0") of MPI_Allreduce (MPI_SUM on
 *      doubles) and MPI_Bcast from every root in turn, 0-4 items and every
 *      tenth round 20000 (one segment step, then several, then one again),
 *      with an MPI_Barrier every third round.
 * Optional argument: AXON_COLL_NODE_SIZE (pretend nodes of that many
 * consecutive ranks, so the hierarchical algorithms run; "0" = the real
 * topology, fewer rounds for test/netns, whose nodes talk over TCP). */
#include "../mpi/check.h"

static int rank, size;

static long expect_sum(int n, long i) { return (long)n * (n - 1) / 2 + (long)n * i; }

static void mixed(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    enum { N = 5000 };
    static int a[N], b[N], c[N], d[N];
    MPI_Request rq[3];
    for (int i = 0; i < N; ++i) a[i] = r == n - 1 ? i * 3 : -1, c[i] = r + i;
    /* nonblocking first (pt2pt schedules), then blocking ones (node level)
       on the same communicator, then the waits */
    CHECK_MPI(MPI_Ibcast(a, N, MPI_INT, n - 1, comm, &rq[0]));
    CHECK_MPI(MPI_Iallreduce(c, d, N, MPI_INT, MPI_SUM, comm, &rq[1]));
    for (int i = 0; i < N; ++i) b[i] = r == 0 ? i * 7 : -1;
    CHECK_MPI(MPI_Bcast(b, N, MPI_INT, 0, comm));
    int x = r + 1, y = 0;
    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm));
    CHECK_MPI(MPI_Ibarrier(comm, &rq[2]));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    CHECK(y == n * (n + 1) / 2, "allreduce %d", y);
    for (int i = 0; i < N; ++i) {
        if (a[i] != i * 3 || b[i] != i * 7 || d[i] != expect_sum(n, i)) {
            CHECK(0, "item %d: ibcast %d bcast %d iallreduce %d", i, a[i], b[i], d[i]);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) setenv("AXON_COLL_NODE_SIZE", argv[1], 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. First node-level call on a fresh communicator: rank 0 enters it at
       once, the others first finish a delayed ring among themselves. */
    {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (rank > 0 && size > 2) {
            int token = rank, got = -1, next = rank % (size - 1) + 1, prev = (rank - 2 + size - 1) % (size - 1) + 1;
            double until = MPI_Wtime() + 0.05;
            while (MPI_Wtime() < until) {
            }
            CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, next, 3, &got, 1, MPI_INT, prev, 3, c, MPI_STATUS_IGNORE));
            CHECK(got == prev, "ring got %d want %d", got, prev);
        }
        long v = rank, s = 0;
        CHECK_MPI(MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, c));
        CHECK(s == (long)size * (size - 1) / 2, "first allreduce %ld", s);
        MPI_Comm_free(&c);
    }

    /* 2. Mixed blocking / nonblocking on world and on split halves. */
    mixed(MPI_COMM_WORLD);
    {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half); /* reversed order */
        mixed(half);
        MPI_Comm_free(&half);
    }

    /* 3. Many communicators: used (several kinds), unused, freed in
       different orders. */
    for (int round = 0; round < 20; ++round) {
        MPI_Comm c[3];
        for (int k = 0; k < 3; ++k) MPI_Comm_dup(MPI_COMM_WORLD, &c[k]);
        int v = rank + round, out = -1;
        CHECK_MPI(MPI_Reduce(&v, &out, 1, MPI_INT, MPI_MAX, round % size, c[0]));
        if (rank == round % size) CHECK(out == size - 1 + round, "reduce max %d", out);
        if (round % 2) CHECK_MPI(MPI_Barrier(c[2]));
        MPI_Comm_free(&c[round % 3]);
        MPI_Comm_free(&c[(round + 1) % 3]);
        MPI_Comm_free(&c[(round + 2) % 3]);
    }

    /* 4. Long sequences: many steps through both data sets, sizes that go
       from one step to several and back, every root. */
    {
        static double v[20000], w[20000];
        /* fewer across real nodes (argument "0", test/netns: TCP between
           oversubscribed namespace nodes makes every call slow) */
        int iterations = argc > 1 && !strcmp(argv[1], "0") ? 40 : 300;
        for (int it = 0; it < iterations; ++it) {
            int count = it % 10 == 0 ? 20000 : it % 5;
            for (int i = 0; i < count; ++i) v[i] = rank * 0.5 + i + it;
            CHECK_MPI(MPI_Allreduce(v, w, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < count; ++i) {
                double e = 0.5 * size * (size - 1) / 2 + (double)size * (i + it);
                if (w[i] != e) {
                    CHECK(0, "it %d item %d: %g want %g", it, i, w[i], e);
                    break;
                }
            }
            int root = it % size;
            for (int i = 0; i < count; ++i) w[i] = rank == root ? i - it : 0;
            CHECK_MPI(MPI_Bcast(w, count, MPI_DOUBLE, root, MPI_COMM_WORLD));
            for (int i = 0; i < count; ++i)
                if (w[i] != i - it) {
                    CHECK(0, "bcast it %d item %d: %g", it, i, w[i]);
                    break;
                }
            if (it % 3 == 0) CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }

    MPI_Finalize();
    return report("coll_shm");
}
