/* Helper of fatal.sh: makes one rank hit an error under MPI_ERRORS_ARE_FATAL
 * or MPI_ERRORS_ABORT, so the script can check that the job ends non-zero
 * with a message naming the function and the error class.
 *   fatal <mode>: "world" (MPI_Send to a bad rank on MPI_COMM_WORLD, default
 *   handler), "abort" (bad tag on a duplicate with MPI_ERRORS_ABORT), "self"
 *   (MPI_Type_free of a predefined type: raised on MPI_COMM_SELF). */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, value = 0;
    const char *mode = argc > 1 ? argv[1] : "world";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rank == size - 1) {
        if (strcmp(mode, "world") == 0) {
            MPI_Send(&value, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
        } else if (strcmp(mode, "abort") == 0) {
            MPI_Comm_set_errhandler(c, MPI_ERRORS_ABORT);
            MPI_Send(&value, 1, MPI_INT, 0, -3, c);
        } else {
            MPI_Datatype t = MPI_INT;
            MPI_Type_free(&t);
        }
        printf("unreachable: the error returned\n");
        fflush(stdout);
    }
    /* The other ranks wait for a message that never comes: the job must end anyway. */
    MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 99, c, MPI_STATUS_IGNORE);
    printf("unreachable: rank %d received\n", rank);
    MPI_Finalize();
    return 0;
}
