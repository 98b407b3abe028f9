/* failures: a program that fails on purpose, driven by test/mpi/failures.sh.
 * Usage: failures MODE RANK [marker=...]
 *   abort   RANK calls MPI_Abort(MPI_COMM_WORLD, 7) after a message exchange
 *   segv    RANK raises SIGSEGV after the shared-memory transport is set up
 *   fatal   RANK sends to an invalid rank under the default MPI_ERRORS_ARE_FATAL
 *   errabort RANK does the same under MPI_ERRORS_ABORT
 * Every other rank waits in MPI_Recv for a message that never comes, so the
 * job only ends if the launcher ends it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: failures abort|segv|fatal|errabort RANK\n");
        return 2;
    }
    const char *mode = argv[1];
    int victim = atoi(argv[2]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Touch the transports first: every rank exchanges with its neighbours. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 1, &got, 1, MPI_INT, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    printf("rank %d ready\n", rank);
    fflush(stdout);
    if (rank == victim) {
        if (strcmp(mode, "abort") == 0) {
            MPI_Abort(MPI_COMM_WORLD, 7);
        } else if (strcmp(mode, "segv") == 0) {
            signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn it into an exit */
            raise(SIGSEGV);
        } else if (strcmp(mode, "fatal") == 0 || strcmp(mode, "errabort") == 0) {
            if (strcmp(mode, "errabort") == 0)
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
            MPI_Send(&rank, 1, MPI_INT, size + 10, 0, MPI_COMM_WORLD);
        }
        fprintf(stderr, "rank %d: still running after '%s'\n", rank, mode);
        return 3;
    }
    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
