/* Erroneous programs whose ranks pass different counts to one bcast / reduce
 * (MPICH's errors/coll/bcastlength): every non-root rank must get an error
 * back with MPI_ERRORS_RETURN, and no rank may be left inside the call (the
 * collectives after it must still work). MPICH passes this test; Open MPI
 * 4.1 does not detect the short message of case (a). Without arguments the
 * node-level algorithms are off (the small calls take the direct
 * point-to-point versions: flat on an oversubscribed node, binomial trees
 * otherwise); `coll_mismatch flat` and `coll_mismatch tree` force one or
 * the other; `coll_mismatch shm` forces the shared-memory bcast,
 * which detects a count mismatch when both counts take the same number of
 * segment steps (see docs/collectives.md). */
#include "../mpi/check.h"
#include "../tools/cvar.h"

int main(int argc, char **argv)
{
    /* argv[1] "shm": the node-level bcast (forced) instead of the direct tree */
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "shm")) {
        force_algorithm("bcast", "shm");
    } else {
        setenv("AXON_COLL_NODE_LEVEL", "0", 1);
        if (!strcmp(mode, "flat") || !strcmp(mode, "tree")) {
            setenv("AXON_COLL_BCAST_FLAT", strcmp(mode, "flat") ? "0" : "1", 1);
            setenv("AXON_COLL_REDUCE_FLAT", strcmp(mode, "flat") ? "0" : "1", 1);
        }
    }
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[10];
    for (int root = 0; root < size && root < 2; ++root) {
        /* (a) the root sends 1 int, the others expect 10: short message. */
        for (int i = 0; i < 10; ++i) buf[i] = rank == root ? 7 : -1;
        int rc = MPI_Bcast(buf, rank == root ? 1 : 10, MPI_INT, root, MPI_COMM_WORLD);
        /* (What the root returns is not specified: MPICH may report an error there too.) */
        if (rank != root) CHECK(rc != MPI_SUCCESS, "root %d: mismatched length (short) not detected", root);
        /* (b) the root sends 10 ints, the others expect 1: truncation. */
        rc = MPI_Bcast(buf, rank == root ? 10 : 1, MPI_INT, root, MPI_COMM_WORLD);
        if (rank != root) CHECK(rc != MPI_SUCCESS, "root %d: mismatched length (long) not detected", root);
        /* Everyone is out of the bad calls: a correct collective works. */
        int one = 1, sum = 0;
        CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == size, "allreduce after the mismatch: %d, want %d", sum, size);
    }
    /* reduce: rank 1 (if any) sends 2 ints where the root expects 1: the
       root's receive is truncated, nobody hangs. */
    int in[2] = {1, 1}, out[2] = {0, 0};
    int rc = MPI_Reduce(in, out, rank == 1 ? 2 : 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    (void)rc; /* which ranks see the truncation depends on the tree */
    int one = 1, sum = 0;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce after the reduce mismatch: %d, want %d", sum, size);
    MPI_Finalize();
    return report("coll_mismatch");
}
