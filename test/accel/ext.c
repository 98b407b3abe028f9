/* What a program asks Axon about CUDA, as Open MPI programs do: the
 * compile-time MPIX_CUDA_AWARE_SUPPORT of <mpi-ext.h>, the run-time
 * MPIX_Query_cuda_support(), and the MPI memory allocation kinds
 * (mpi_memory_alloc_kinds) of MPI_Session_get_info and MPI_Comm_get_info.
 *   ext 1   a driver with a device (the fake): CUDA support 1, cuda:* kinds
 *   ext 0   no driver, no device, or AXON_ACCEL=0: 0, mpi,system only */
#include <mpi.h>
#include <mpi-ext.h>

#include "../mpi/check.h"
#include "axon_config.h"

#ifndef MPIX_CUDA_AWARE_SUPPORT
#error "mpi-ext.h does not define MPIX_CUDA_AWARE_SUPPORT"
#endif
#if defined(AXON_HAVE_CUDA) && MPIX_CUDA_AWARE_SUPPORT != 1
#error "built with CUDA, but MPIX_CUDA_AWARE_SUPPORT is not 1"
#endif
#if !defined(AXON_HAVE_CUDA) && MPIX_CUDA_AWARE_SUPPORT != 0
#error "built without CUDA, but MPIX_CUDA_AWARE_SUPPORT is not 0"
#endif

static void kinds_of(MPI_Info info, char *value, int len)
{
    int flag = 0, buflen = len;
    CHECK_MPI(MPI_Info_get_string(info, "mpi_memory_alloc_kinds", &buflen, value, &flag));
    CHECK(flag, "no mpi_memory_alloc_kinds");
    if (!flag) value[0] = '\0';
}

int main(int argc, char **argv)
{
    int expect = argc > 1 ? atoi(argv[1]) : 1;
#ifndef AXON_HAVE_CUDA
    expect = 0;
#endif
    /* Before MPI_Init too. */
    CHECK(MPIX_Query_cuda_support() == expect, "MPIX_Query_cuda_support() before MPI_Init: %d, expected %d",
          MPIX_Query_cuda_support(), expect);
    MPI_Init(&argc, &argv);
    CHECK(MPIX_Query_cuda_support() == expect, "MPIX_Query_cuda_support(): %d", MPIX_Query_cuda_support());
    const char *want = expect ? "mpi,system,cuda:device,cuda:managed,cuda:host" : "mpi,system";
    char v[256];
    MPI_Info info;
    CHECK_MPI(MPI_Comm_get_info(MPI_COMM_WORLD, &info));
    kinds_of(info, v, sizeof v);
    CHECK(strcmp(v, want) == 0, "MPI_COMM_WORLD's mpi_memory_alloc_kinds '%s', expected '%s'", v, want);
    MPI_Info_free(&info);
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    CHECK_MPI(MPI_Session_get_info(session, &info));
    kinds_of(info, v, sizeof v);
    CHECK(strcmp(v, want) == 0, "the session's mpi_memory_alloc_kinds '%s', expected '%s'", v, want);
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Session_finalize(&session));
    /* A communicator given its own value keeps it. */
    MPI_Comm dup;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_memory_alloc_kinds", "system"));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Comm_get_info(dup, &info));
    kinds_of(info, v, sizeof v);
    CHECK(strcmp(v, "system") == 0, "a communicator's own mpi_memory_alloc_kinds came back as '%s'", v);
    MPI_Info_free(&info);
    MPI_Comm_free(&dup);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("MPIX_CUDA_AWARE_SUPPORT %d, MPIX_Query_cuda_support() %d, kinds %s\n",
                          MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support(), want);
    MPI_Finalize();
    return report("ext");
}
