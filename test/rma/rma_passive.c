/* Passive target progress (argv[1]: window flavor): rank 0 computes outside
 * MPI (a plain loop, no MPI call) while every other rank locks it, puts,
 * gets back, accumulates and fetches, then unlocks. With targets on other
 * nodes or AXON_OSC_PATH=am the operations are applied by the target's
 * progress agent; the origins must get their data while rank 0 never enters
 * the library. Rank 0 checks its memory at the end.
 * argv[2] "nodump": the process makes itself non-dumpable first, so that
 * ranks without CAP_SYS_PTRACE cannot reach its memory with CMA (nocma.sh). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../mpi/check.h"

#define N 64 /* ints per origin */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
#ifdef __linux__
    if (argc > 2 && !strcmp(argv[2], "nodump")) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    const MPI_Aint bytes = (MPI_Aint)sizeof(int) * (N * np + 1);
    int *mem = NULL;
    MPI_Win win;
    MPI_Aint base_addr = 0;
    if (!strcmp(flavor, "allocate")) {
        CHECK_MPI(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else if (!strcmp(flavor, "create")) {
        MPI_Alloc_mem(bytes, MPI_INFO_NULL, &mem);
        CHECK_MPI(MPI_Win_create(mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        MPI_Alloc_mem(bytes, MPI_INFO_NULL, &mem);
        CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        CHECK_MPI(MPI_Win_attach(win, mem, bytes));
        MPI_Get_address(mem, &base_addr);
    }
    memset(mem, 0, bytes);
    MPI_Bcast(&base_addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    /* Displacement of int i in rank 0's window. */
#define AT(i) (strcmp(flavor, "dynamic") ? (MPI_Aint)(i) : base_addr + (MPI_Aint)sizeof(int) * (i))
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == 0) {
        /* Compute until every origin's last put (its flag) arrived, or 8 s. */
        double t0 = now();
        volatile int *flags = mem;
        int seen = 0;
        while (seen < np - 1 && now() - t0 < 8) {
            seen = 0;
            for (int r = 1; r < np; r++) seen += flags[N * r + N - 1] == -r;
        }
        CHECK(seen == np - 1, "saw %d of %d origins finish without calling MPI", seen, np - 1);
    } else {
        int out[N], back[N], fetched = -1, one = 1;
        for (int i = 0; i < N; i++) out[i] = me * 1000 + i;
        CHECK_MPI(MPI_Win_lock(me % 2 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Put(out, N - 1, MPI_INT, 0, AT(N * me), N - 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Get(back, N - 1, MPI_INT, 0, AT(N * me), N - 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        for (int i = 0; i < N - 1; i++) CHECK(back[i] == out[i], "got %d at %d, expected %d", back[i], i, out[i]);
        /* Everyone adds to one counter at the end of rank 0's window. */
        CHECK_MPI(MPI_Fetch_and_op(&one, &fetched, MPI_INT, 0, AT(N * np), MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(fetched >= 0 && fetched < np - 1, "fetched %d", fetched);
        CHECK_MPI(MPI_Win_unlock(0, win));
        /* Then the flag, in its own epoch: visible once unlock returned. */
        int flag = -me;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Accumulate(&flag, 1, MPI_INT, 0, AT(N * me + N - 1), 1, MPI_INT, MPI_REPLACE, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        for (int r = 1; r < np; r++)
            for (int i = 0; i < N - 1; i++)
                CHECK(mem[N * r + i] == r * 1000 + i, "origin %d int %d: %d", r, i, mem[N * r + i]);
        CHECK(mem[N * np] == np - 1, "counter %d, expected %d", mem[N * np], np - 1);
    }
    if (!strcmp(flavor, "dynamic")) CHECK_MPI(MPI_Win_detach(win, mem));
    CHECK_MPI(MPI_Win_free(&win));
    if (strcmp(flavor, "allocate")) MPI_Free_mem(mem);
    MPI_Finalize();
    return report("rma_passive");
}
