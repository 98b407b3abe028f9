/* mpi.h, with the Fortran names it includes (mpi_fortran.h), compiles as
 * C89 with -pedantic-errors (test/mpi/Makefile.inc sets the flags): old
 * codes built with -std=c89 or -ansi keep building. At run time the inline
 * status conversion works: a status from MPI_Status_set_elements survives
 * c2f / f2c with its source, tag, error and count. Plain C89: no check.h. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Status status, back;
    MPI_Fint f_status[MPI_F_STATUS_SIZE];
    MPI_Fint world;
    int count = -1, failures = 0;

    MPI_Init(&argc, &argv);
    status.MPI_SOURCE = 3;
    status.MPI_TAG = 77;
    status.MPI_ERROR = MPI_SUCCESS;
    MPI_Status_set_elements(&status, MPI_INT, 5);
    if (MPI_Status_c2f(&status, f_status) != MPI_SUCCESS || MPI_Status_f2c(f_status, &back) != MPI_SUCCESS) {
        fprintf(stderr, "c89_header: status conversion failed\n");
        failures++;
    }
    MPI_Get_count(&back, MPI_INT, &count);
    if (back.MPI_SOURCE != 3 || back.MPI_TAG != 77 || count != 5) {
        fprintf(stderr, "c89_header: converted status has source %d tag %d count %d\n", back.MPI_SOURCE,
                back.MPI_TAG, count);
        failures++;
    }
    world = MPI_Comm_c2f(MPI_COMM_WORLD);
    if (world != 0x101 || MPI_Comm_f2c(world) != MPI_COMM_WORLD) {
        fprintf(stderr, "c89_header: MPI_COMM_WORLD converts to %d\n", (int)world);
        failures++;
    }
    MPI_Finalize();
    if (failures == 0) printf("c89_header: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
