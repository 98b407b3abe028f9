/* Hello from every rank, and a ring message that proves they talk. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    int token = rank, from = (rank + size - 1) % size, to = (rank + 1) % size;
    MPI_Sendrecv_replace(&token, 1, MPI_INT, to, 0, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("hello from rank %d of %d on %s (got token %d from rank %d)\n", rank, size, host, token, from);

    MPI_Finalize();
    return token == from ? 0 : 1;
}
