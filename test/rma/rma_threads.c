/* Two threads per rank on one window under MPI_THREAD_MULTIPLE (argv[1]:
 * window flavor): inside one MPI_Win_lock_all epoch both threads add 1 to a
 * counter on rank 0 with MPI_Fetch_and_op, each followed by MPI_Win_flush
 * (concurrent synchronization calls on the same window). The fetched values
 * are all distinct and the total is exact. */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

#define K 200 /* increments per thread */

static MPI_Win win;
static long long got[2][K];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    long long one = 1;
    for (int i = 0; i < K; i++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &got[t][i], MPI_LONG_LONG, 0, 0, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (me == 0) printf("SKIP: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 77;
    }
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    long long *mem = NULL;
    if (!strcmp(flavor, "allocate")) {
        CHECK_MPI(MPI_Win_allocate(sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        MPI_Alloc_mem(sizeof(long long), MPI_INFO_NULL, &mem);
        CHECK_MPI(MPI_Win_create(mem, sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    *mem = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock_all(0, win));
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Every ticket 0 .. 2*K*np-1 was handed out exactly once. */
    long long *all = NULL;
    if (me == 0) all = malloc(sizeof(long long) * 2 * K * np);
    MPI_Gather(got, 2 * K, MPI_LONG_LONG, all, 2 * K, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) {
        CHECK(*mem == 2LL * K * np, "counter %lld, expected %lld", *mem, 2LL * K * np);
        qsort(all, 2 * K * np, sizeof(long long), cmp);
        int bad = 0;
        for (long long i = 0; i < 2LL * K * np; i++) bad += all[i] != i;
        CHECK(bad == 0, "%d tickets duplicated or missing", bad);
        free(all);
    }
    CHECK_MPI(MPI_Win_free(&win));
    if (strcmp(flavor, "allocate")) MPI_Free_mem(mem);
    MPI_Finalize();
    return report("rma_threads");
}
