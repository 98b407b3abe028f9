/* A job that uses every file Axon puts in /dev/shm, for shm.sh: messages
 * between the ranks of the node (btl/sm rings, 1 KiB to 4 MiB), node-level
 * collectives on MPI_COMM_WORLD and a duplicate (their per-communicator
 * segment; shm.sh forces the shm algorithms), and a shared window
 * (MPI_Win_allocate_shared: osc's segment), all with exact contents.
 * With DIR, the ranks first wait for DIR/planted (rank 0 writes the job's
 * namespace to DIR/ns first, before MPI_Init: the attacker's view), and
 * before MPI_Finalize rank 0 writes DIR/worked and all wait for
 * DIR/verified (at most 20 s each).
 * Usage: shm_user [DIR] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

static void wait_for(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < 400 && access(path, F_OK) != 0; i++) usleep(50000);
}

static void touch(const char *dir, const char *name, const char *text)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 && strncmp(argv[1], "marker=", 7) != 0 ? argv[1] : NULL;
    const char *ns = getenv("PMIX_NAMESPACE");
    const char *rank_env = getenv("PMIX_RANK");
    if (dir) {
        if (rank_env && atoi(rank_env) == 0) touch(dir, "ns", ns ? ns : "");
        wait_for(dir, "planted");
    }
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* btl/sm */
    enum { kMax = 4 << 20 };
    unsigned char *out = xmalloc(kMax), *in = xmalloc(kMax);
    for (int len = 1024; len <= kMax; len *= 8) {
        fill_pattern(out, (size_t)len, (unsigned)(rank * 7 + len));
        memset(in, 0, (size_t)len);
        CHECK_MPI(MPI_Sendrecv(out, len, MPI_BYTE, next, 1, in, len, MPI_BYTE, prev, 1, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, (size_t)len, (unsigned)(prev * 7 + len), "%d bytes from %d", len, prev);
    }

    /* node-level collectives */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm comms[2] = {MPI_COMM_WORLD, dup};
    for (int c = 0; c < 2; c++) {
        enum { N = 1000 };
        static long a[N], b[N];
        for (int i = 0; i < N; i++) a[i] = rank + i;
        CHECK_MPI(MPI_Allreduce(a, b, N, MPI_LONG, MPI_SUM, comms[c]));
        for (int i = 0; i < N; i++)
            if (b[i] != (long)size * (size - 1) / 2 + (long)size * i) {
                CHECK(0, "allreduce item %d: %ld", i, b[i]);
                break;
            }
        for (int i = 0; i < N; i++) a[i] = rank == 0 ? 3 * i + c : -1;
        CHECK_MPI(MPI_Bcast(a, N, MPI_LONG, 0, comms[c]));
        for (int i = 0; i < N; i++)
            if (a[i] != 3 * i + c) {
                CHECK(0, "bcast item %d: %ld", i, a[i]);
                break;
            }
        CHECK_MPI(MPI_Barrier(comms[c]));
    }
    CHECK_MPI(MPI_Comm_free(&dup));

    /* osc: a shared window */
    long *mine = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(64 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 64; i++) mine[i] = 1000L * rank + i;
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Aint bytes;
    int unit;
    long *theirs = NULL;
    CHECK_MPI(MPI_Win_shared_query(win, next, &bytes, &unit, &theirs));
    for (int i = 0; i < 64; i++)
        if (!theirs || theirs[i] != 1000L * next + i) {
            CHECK(0, "shared window of rank %d, item %d: %ld", next, i, theirs ? theirs[i] : -1L);
            break;
        }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));

    if (dir) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0) touch(dir, "worked", "yes");
        wait_for(dir, "verified");
    }
    free(out);
    free(in);
    MPI_Finalize();
    return report("shm_user");
}
