/* Nonblocking and persistent collectives: several in flight on one
 * communicator (completed in any order), point-to-point traffic while they
 * run, MPI_Test polling, persistent requests started repeatedly with new
 * data, MPI_Startall, MPI_Request_free of inactive persistent requests, and
 * a communicator freed while its collective is still pending. */
#include "../mpi/check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 4096 };
    static int a[N], ar[N], b[N], g[64], t[64], tr[64];
    int sum_ranks = size * (size - 1) / 2;

    /* 1. five different collectives in flight, waited for in reverse order */
    for (int i = 0; i < N; ++i) a[i] = rank + i, b[i] = rank == size - 1 ? i * 3 : -1;
    for (int i = 0; i < size; ++i) t[i] = rank * 100 + i;
    MPI_Request rq[6];
    int one = rank;
    CHECK_MPI(MPI_Iallreduce(a, ar, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]));
    CHECK_MPI(MPI_Ibcast(b, N, MPI_INT, size - 1, MPI_COMM_WORLD, &rq[1]));
    CHECK_MPI(MPI_Iallgather(&one, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD, &rq[2]));
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &rq[3]));
    CHECK_MPI(MPI_Ialltoall(t, 1, MPI_INT, tr, 1, MPI_INT, MPI_COMM_WORLD, &rq[4]));
    /* point-to-point on the same communicator meanwhile */
    int token = rank, got = -1;
    CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, (rank - 1 + size) % size, 5, MPI_COMM_WORLD, &rq[5]));
    CHECK_MPI(MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD));
    for (int i = 5; i >= 0; --i) CHECK_MPI(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
    for (int i = 0; i < N; ++i)
        if (ar[i] != sum_ranks + size * i) { CHECK(0, "iallreduce item %d = %d", i, ar[i]); break; }
    for (int i = 0; i < N; ++i)
        if (b[i] != i * 3) { CHECK(0, "ibcast item %d = %d", i, b[i]); break; }
    for (int i = 0; i < size; ++i) CHECK(g[i] == i, "iallgather %d = %d", i, g[i]);
    for (int i = 0; i < size; ++i) CHECK(tr[i] == i * 100 + rank, "ialltoall %d = %d", i, tr[i]);
    CHECK(got == (rank - 1 + size) % size, "p2p during collectives: %d", got);

    /* 2. polling with MPI_Test */
    int flag = 0, x = rank + 1, y = 0;
    MPI_Request r;
    CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD, &r));
    while (!flag) CHECK_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    int fact = 1;
    for (int i = 1; i <= size; ++i) fact *= i;
    CHECK(y == fact && r == MPI_REQUEST_NULL, "itest allreduce %d", y);

    /* 3. persistent: three starts with new data each time; Startall of two */
    MPI_Request p[2];
    int in = 0, out = 0, bc = 0;
    CHECK_MPI(MPI_Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]));
    CHECK_MPI(MPI_Bcast_init(&bc, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &p[1]));
    for (int round = 0; round < 3; ++round) {
        in = rank * (round + 1);
        bc = rank == 0 ? 77 + round : -1;
        CHECK_MPI(MPI_Startall(2, p));
        CHECK_MPI(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
        CHECK(out == sum_ranks * (round + 1), "persistent allreduce round %d: %d", round, out);
        CHECK(bc == 77 + round, "persistent bcast round %d: %d", round, bc);
        CHECK(p[0] != MPI_REQUEST_NULL, "persistent request kept");
    }
    /* a persistent request can be waited on while inactive */
    CHECK_MPI(MPI_Wait(&p[0], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Request_free(&p[0]));
    CHECK_MPI(MPI_Request_free(&p[1]));
    CHECK(p[0] == MPI_REQUEST_NULL, "freed");

    /* 4. a communicator freed while its collective is pending */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int v = rank, w = -1;
    CHECK_MPI(MPI_Iallreduce(&v, &w, 1, MPI_INT, MPI_MAX, dup, &r));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(w == size - 1, "allreduce on a freed communicator: %d", w);

    /* 5. many small nonblocking collectives in flight at once */
    enum { K = 32 };
    int vals[K], res[K];
    MPI_Request many[K];
    for (int i = 0; i < K; ++i) {
        vals[i] = rank * K + i;
        CHECK_MPI(MPI_Iallreduce(&vals[i], &res[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &many[i]));
    }
    CHECK_MPI(MPI_Waitall(K, many, MPI_STATUSES_IGNORE));
    for (int i = 0; i < K; ++i) CHECK(res[i] == K * sum_ranks + size * i, "many[%d] = %d", i, res[i]);

    /* 6. large-count (_c) bindings */
    {
        MPI_Count c1 = 3;
        int xs[3] = {rank, rank + 1, rank + 2}, ys[3] = {0, 0, 0};
        CHECK_MPI(MPI_Allreduce_c(xs, ys, c1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(ys[0] == sum_ranks && ys[2] == sum_ranks + 2 * size, "allreduce_c %d %d", ys[0], ys[2]);
        int bv = rank == 0 ? 41 : 0;
        CHECK_MPI(MPI_Bcast_c(&bv, 1, MPI_INT, 0, MPI_COMM_WORLD));
        CHECK(bv == 41, "bcast_c %d", bv);
        MPI_Count *cnt = malloc(size * sizeof(MPI_Count));
        MPI_Aint *dsp = malloc(size * sizeof(MPI_Aint));
        int *all = calloc(size, sizeof(int));
        for (int i = 0; i < size; ++i) cnt[i] = 1, dsp[i] = size - 1 - i; /* reversed */
        CHECK_MPI(MPI_Iallgatherv_c(&rank, 1, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < size; ++i) CHECK(all[size - 1 - i] == i, "allgatherv_c slot %d", size - 1 - i);
        free(cnt), free(dsp), free(all);
    }

    MPI_Finalize();
    return report("coll_nbc");
}
