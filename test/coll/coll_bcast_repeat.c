/* Small blocking bcasts repeated with the same size: after the first call
 * chose the node segment, Axon runs the next ones straight on it (the
 * "small bcast shortcut", docs/collectives.md). Every way out of that
 * shortcut must still give the standard's result:
 *
 * - 600 calls per size (1, 8, 48, 49, 200, 1024, 1025 bytes) with the root
 *   changing every 7 calls, MPI_BYTE and MPI_INT, exact data every call;
 * - an allreduce between bcasts of one size (the remembered choice moves
 *   to the allreduce and back);
 * - the algorithm forced through MPI_T_cvar_write in the middle of a run
 *   (binomial, then auto again) and a derived type of the same size (not
 *   shortcut);
 * - MPI_IN_PLACE is not allowed for bcast; count 0 is a no-op;
 * - erroneous counts under MPI_ERRORS_RETURN: a root sending fewer bytes
 *   than a receiver expects gives MPI_ERR_OTHER at that receiver, more
 *   gives MPI_ERR_TRUNCATE, whichever side took the shortcut; afterwards
 *   correct calls work again (MPICH passes this too; Open MPI returns
 *   success for the short receive, which the standard leaves undefined). */
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;

static unsigned char pattern(int call, int root, size_t i) { return (unsigned char)(call * 31 + root * 7 + (int)i * 13 + 1); }

static void bcast_run(size_t bytes, int calls, int with_allreduce)
{
    unsigned char *buf = xmalloc(bytes + 8);
    for (int call = 0; call < calls; call++) {
        int root = (call / 7) % size;
        for (size_t i = 0; i < bytes + 8; i++) buf[i] = rank == root && i < bytes ? pattern(call, root, i) : 0xEE;
        if (bytes % sizeof(int) == 0 && call % 3 == 1)
            CHECK_MPI(MPI_Bcast(buf, (int)(bytes / sizeof(int)), MPI_INT, root, MPI_COMM_WORLD));
        else
            CHECK_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
        int bad = 0;
        for (size_t i = 0; i < bytes; i++) bad += buf[i] != pattern(call, root, i);
        for (size_t i = bytes; i < bytes + 8; i++) bad += buf[i] != 0xEE;
        CHECK(bad == 0, "%zu bytes, call %d, root %d: %d bytes wrong", bytes, call, root, bad);
        if (with_allreduce && call % 5 == 4) {
            int one = 1, sum = 0;
            CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            CHECK(sum == size, "allreduce %d", sum);
        }
        if (call == calls / 2) {
            /* Force another algorithm for a while, then go back to auto. */
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            force_algorithm("bcast", "binomial");
        } else if (call == calls / 2 + 20) {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            force_algorithm("bcast", "auto");
        }
    }
    free(buf);
}

/* A contiguous derived type of `bytes` bytes after MPI_BYTE calls. */
static void derived_run(size_t bytes)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_contiguous((int)bytes, MPI_BYTE, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    unsigned char *buf = xmalloc(bytes);
    for (int call = 0; call < 40; call++) {
        int root = call % size;
        for (size_t i = 0; i < bytes; i++) buf[i] = rank == root ? pattern(call, root, i) : 0;
        if (call % 2) CHECK_MPI(MPI_Bcast(buf, 1, t, root, MPI_COMM_WORLD));
        else CHECK_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
        int bad = 0;
        for (size_t i = 0; i < bytes; i++) bad += buf[i] != pattern(call, root, i);
        CHECK(bad == 0, "derived %zu bytes, call %d: %d bytes wrong", bytes, call, bad);
    }
    free(buf);
    MPI_Type_free(&t);
}

/* Erroneous: the root's count differs from rank 1's (the others match). */
static void mismatch_run(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char buf[64];
    for (int shortcut_side = 0; shortcut_side < 2; shortcut_side++) {
        /* Warm up at 8 bytes so that the 8-byte side takes the shortcut. */
        for (int i = 0; i < 10; i++) CHECK_MPI(MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD));
        /* shortcut_side 0: the root sends 8 (shortcut), rank 1 expects 16;
         * 1: the root sends 16, rank 1 expects 8 (shortcut). */
        int root_count = shortcut_side == 0 ? 8 : 16, count = rank == 1 ? 24 - root_count : root_count;
        memset(buf, rank == 0 ? 'r' : 0, sizeof buf);
        int rc = MPI_Bcast(buf, count, MPI_BYTE, 0, MPI_COMM_WORLD);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        if (rank == 1) {
            int want = count > root_count ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
            CHECK(cls == want, "mismatch %d: rank 1 (count %d, root %d) got class %d, want %d", shortcut_side, count,
                  root_count, cls, want);
        } else {
            CHECK(rc == MPI_SUCCESS, "mismatch %d: rank %d got class %d", shortcut_side, rank, cls);
        }
        /* Correct calls work again. */
        for (int i = 0; i < 20; i++) {
            memset(buf, rank == 0 ? i : 0, 8);
            CHECK_MPI(MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD));
            CHECK(buf[0] == (char)i && buf[7] == (char)i, "after mismatch %d, call %d: %d", shortcut_side, i, buf[0]);
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const size_t sizes[] = {1, 8, 48, 49, 200, 1024, 1025};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) bcast_run(sizes[k], 600, k % 2);
    derived_run(8);
    derived_run(256);
    /* Count 0: nothing moves. */
    char untouched = 'u';
    CHECK_MPI(MPI_Bcast(&untouched, 0, MPI_BYTE, 0, MPI_COMM_WORLD));
    CHECK(untouched == 'u', "count 0 changed the buffer");
    if (size > 1) mismatch_run();
    MPI_Finalize();
    return report("coll_bcast_repeat");
}
