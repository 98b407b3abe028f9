/* With AXON_MPI_H_ABI_ONLY defined, mpi.h declares exactly what the standard
 * ABI's mpi.h declares, so a program written for the ABI may define the
 * classic Fortran names and the removed MPI-1 functions itself. This file
 * does both, in ways that do not compile if mpi.h still declares them (an
 * MPI_Fint of another type, a static function after an extern prototype);
 * at run time its own definitions are the ones called. */
#define AXON_MPI_H_ABI_ONLY
#include "../mpi/check.h"

typedef long MPI_Fint;
#define MPI_Comm_c2f(comm) ((MPI_Fint)MPI_Comm_toint(comm) + 1000)

static int own_extent_calls;
static int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    MPI_Aint lb;
    own_extent_calls++;
    return MPI_Type_get_extent(datatype, &lb, extent);
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Aint extent = 0;
    CHECK_MPI(MPI_Type_extent(MPI_DOUBLE, &extent));
    CHECK(extent == 8 && own_extent_calls == 1, "extent %ld, own calls %d", (long)extent, own_extent_calls);
    MPI_Fint world = MPI_Comm_c2f(MPI_COMM_WORLD);
    CHECK(sizeof world == sizeof(long) && world == 0x101 + 1000, "own MPI_Comm_c2f gave %ld", (long)world);
    CHECK_MPI(MPI_Finalize());
    return report("abi_only_header");
}
