/* Synchronization beyond one neighbour (argv[1]: window flavor):
 * - PSCW where every rank exposes to all and accesses all, completed with
 *   MPI_Win_test polling, repeated so post/start pairs of successive epochs
 *   match up;
 * - passive target progress: rank 0 computes without calling MPI, watching
 *   its own window memory, while every other rank locks it and puts its flag
 *   there; rank 0 must see every flag without entering the library;
 * - fence with assertions and every accumulate op on a fresh epoch.
 * MPICH agrees on everything except the passive-target case, where its
 * ranks wait for the target to enter the library (MPI allows that). */
#include <mpi.h>
#include <string.h>
#include <time.h>

#include "../mpi/check.h"

#define N 16

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    int dynamic = !strcmp(flavor, "dynamic");

    volatile int *mem = NULL;
    int *own = NULL;
    MPI_Win win;
    if (!strcmp(flavor, "create") || dynamic) {
        own = calloc(N * 8, sizeof(int));
        mem = own;
        if (dynamic) {
            CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            CHECK_MPI(MPI_Win_attach(win, own, N * 8 * sizeof(int)));
        } else {
            CHECK_MPI(MPI_Win_create(own, N * 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        }
    } else if (!strcmp(flavor, "shared")) {
        CHECK_MPI(MPI_Win_allocate_shared(N * 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(N * 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    MPI_Aint *bases = malloc(sizeof(MPI_Aint) * np), mine = 0;
    MPI_Get_address((void *)mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
#define AT(t, i) (dynamic ? bases[t] + (MPI_Aint)(i) * (MPI_Aint)sizeof(int) : (MPI_Aint)(i))
    for (int i = 0; i < N * 8; i++) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* PSCW, all to all, three epochs. */
    MPI_Group all;
    CHECK_MPI(MPI_Win_get_group(win, &all));
    for (int epoch = 1; epoch <= 3; epoch++) {
        CHECK_MPI(MPI_Win_post(all, MPI_MODE_NOSTORE, win));
        CHECK_MPI(MPI_Win_start(all, 0, win));
        int v = epoch * 100 + me;
        for (int t = 0; t < np; t++) CHECK_MPI(MPI_Put(&v, 1, MPI_INT, t, AT(t, me), 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        int flag = 0, polls = 0;
        while (!flag) {
            CHECK_MPI(MPI_Win_test(win, &flag));
            polls++;
        }
        for (int r = 0; r < np; r++)
            CHECK(mem[r] == epoch * 100 + r, "epoch %d: element %d = %d", epoch, r, mem[r]);
        MPI_Barrier(MPI_COMM_WORLD); /* next epoch overwrites */
    }
    MPI_Group_free(&all);

    /* Passive target: rank 0 never calls MPI while the others put their flags. */
    if (me == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        MPI_Barrier(MPI_COMM_WORLD);
        int seen = 0;
        double waited = 0;
        while (seen < np - 1 && waited < 4) {
            seen = 0;
            for (int r = 1; r < np; r++) seen += mem[N + r] == 7000 + r;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            waited = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        }
        CHECK(seen == np - 1, "passive target: saw %d of %d flags without calling MPI", seen, np - 1);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        int v = 7000 + me;
        CHECK_MPI(MPI_Win_lock(me % 2 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, AT(0, N + me), 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Every predefined op on int accumulates, fence epochs with assertions. */
    struct { MPI_Op op; int init, operand, expect1; } ops[] = {
        {MPI_SUM, 5, 3, 8},  {MPI_PROD, 5, 3, 15}, {MPI_MIN, 5, 3, 3},   {MPI_MAX, 5, 3, 5},
        {MPI_BAND, 6, 3, 2}, {MPI_BOR, 6, 3, 7},   {MPI_BXOR, 6, 3, 5},  {MPI_LAND, 6, 0, 0},
        {MPI_LOR, 0, 3, 1},  {MPI_LXOR, 6, 3, 0},  {MPI_REPLACE, 5, 3, 3},
    };
    const int nops = sizeof ops / sizeof ops[0];
    for (int k = 0; k < nops; k++) mem[2 * N + k] = ops[k].init;
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (me == np - 1)  /* one origin: the result is a single application of the op */
        for (int k = 0; k < nops; k++)
            CHECK_MPI(MPI_Accumulate(&ops[k].operand, 1, MPI_INT, 0, AT(0, 2 * N + k), 1, MPI_INT, ops[k].op, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED, win));
    if (me == 0)
        for (int k = 0; k < nops; k++)
            CHECK(mem[2 * N + k] == ops[k].expect1, "op %d: %d, expected %d", k, mem[2 * N + k], ops[k].expect1);

    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) CHECK_MPI(MPI_Win_detach(win, own));
    CHECK_MPI(MPI_Win_free(&win));
    free(own);
    free(bases);
    MPI_Finalize();
    return report(flavor);
}
