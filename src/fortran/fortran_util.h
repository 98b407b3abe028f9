/* Helpers of the Fortran entry points (src/fortran/, docs/fortran.md): the
 * special addresses of mpif.h / the mpi module, strings, statuses, sizes.
 * Used by the generated wrappers (mpi_fortran_gen.c) and special.cpp. */
#ifndef AXON_FORTRAN_UTIL_H
#define AXON_FORTRAN_UTIL_H

#include <stddef.h>
#include <stdlib.h>

#include <mpi.h>
#include <mpi_fortran.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Only the Fortran entry points leave libmpifort_abi (src/fortran/exports.map). */
#define AXON_F_API __attribute__((visibility("default")))

/* An MPI routine for Fortran: defines pmpi_NAME_ (the profiling name) and
 * mpi_NAME_ as a weak alias of it, so a profiling library's mpi_NAME_ takes
 * the place of Axon's and reaches Axon's through pmpi_NAME_ (MPI-4.1 15.2).
 * Use as AXON_F_ENTRY(mpi_send_, (void *buf, ...)) { body }. */
#define AXON_F_ENTRY(name, params)                                                     \
    AXON_F_API void name params __attribute__((weak, alias("p" #name)));              \
    AXON_F_API void p##name params

/* gfortran's LOGICAL values. */
#define AXON_F_TRUE 1
#define AXON_F_FALSE 0

/* A Fortran status is MPI_F_STATUS_SIZE MPI_Fints laid out as MPI_Status
 * (source, tag, error, then the reserved words): with MPI_Fint a C int the
 * wrappers pass Fortran statuses to C as they are. A build with a wider
 * INTEGER would have to copy them (AXON_Status_f2c / c2f). */
#if defined(__cplusplus)
static_assert(sizeof(MPI_Fint) == sizeof(int) && sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
              "Fortran statuses are passed as MPI_Status: MPI_Fint must be a C int");
#else
_Static_assert(sizeof(MPI_Fint) == sizeof(int) && sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
               "Fortran statuses are passed as MPI_Status: MPI_Fint must be a C int");
#endif

/* The storage of the named COMMON blocks of mpif.h (one variable each;
 * MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are bound to libmpi_abi's
 * MPIX_F_status_ignore / MPIX_F_statuses_ignore instead). */
extern AXON_F_API MPI_Fint mpi_fortran_bottom_;
extern AXON_F_API MPI_Fint mpi_fortran_in_place_;
extern AXON_F_API MPI_Fint mpi_fortran_buffer_automatic_;
extern AXON_F_API MPI_Fint mpi_fortran_errcodes_ignore_;
extern AXON_F_API MPI_Fint mpi_fortran_unweighted_;
extern AXON_F_API MPI_Fint mpi_fortran_weights_empty_;
extern AXON_F_API char mpi_fortran_argv_null_;
extern AXON_F_API char mpi_fortran_argvs_null_;

/* A choice buffer: the addresses of MPI_BOTTOM, MPI_IN_PLACE and
 * MPI_BUFFER_AUTOMATIC become the C constants. */
static inline void *axon_f_buf(void *p)
{
    if (p == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    if (p == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (p == (void *)&mpi_fortran_buffer_automatic_) return MPI_BUFFER_AUTOMATIC;
    return p;
}

/* An integer array that may be MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or MPI_ERRCODES_IGNORE. */
static inline int *axon_f_ints(MPI_Fint *p)
{
    if (p == &mpi_fortran_unweighted_) return MPI_UNWEIGHTED;
    if (p == &mpi_fortran_weights_empty_) return MPI_WEIGHTS_EMPTY;
    if (p == &mpi_fortran_errcodes_ignore_) return MPI_ERRCODES_IGNORE;
    return (int *)p;
}

static inline MPI_Status *axon_f_status(MPI_Fint *p)
{
    if (p == MPI_F_STATUS_IGNORE || p == MPI_F_STATUSES_IGNORE) return MPI_STATUS_IGNORE;
    return (MPI_Status *)(void *)p;
}

static inline MPI_Status *axon_f_statuses(MPI_Fint *p)
{
    if (p == MPI_F_STATUSES_IGNORE || p == MPI_F_STATUS_IGNORE) return MPI_STATUSES_IGNORE;
    return (MPI_Status *)(void *)p;
}

/* calloc(n, size) that never returns NULL for n <= 0 (aborts when out of memory). */
void *axon_f_alloc(long n, size_t size);
/* A Fortran CHARACTER argument as a NUL-terminated copy without leading and trailing blanks (free() it). */
char *axon_f_str_in(const char *f, size_t len);
/* Copies a C string into a Fortran CHARACTER argument, blank-padded (truncated if longer). */
void axon_f_str_out(const char *c, char *f, size_t len);
/* The number of entries of an alltoallw-style type array: the remote size of
 * an intercommunicator, else the size; the in/out degree of a topology. */
int axon_f_comm_size(MPI_Comm comm);
int axon_f_indegree(MPI_Comm comm);
int axon_f_outdegree(MPI_Comm comm);

#if defined(__cplusplus)
}
#endif

#endif /* AXON_FORTRAN_UTIL_H */
