/* Axon MPI: handing MPI handles and statuses between C and Fortran.
 *
 * The MPI 5.0 standard ABI keeps MPI_Fint and the MPI_<handle>_c2f / _f2c
 * conversions out of mpi.h: the width of a Fortran INTEGER is chosen when
 * the Fortran side is compiled (-i8, -fdefault-integer-8), so no C ABI can
 * fix it. The ABI converts handles with MPI_<handle>_toint / _fromint
 * instead. This header maps the classic names onto those functions, as the
 * MPI Forum's ABI reference header does, for the C code that uses them
 * (libraries with Fortran entry points that call MPI_Comm_f2c, codes
 * written against Open MPI or MPICH). Axon's mpi.h includes it at its end,
 * so such code builds unchanged, unless the program defines
 * AXON_MPI_H_ABI_ONLY (mpi.h then holds only the ABI; include this header
 * after it to get the names back).
 *
 * MPI_Fint is a C int unless MPI_ABI_Fint is defined before this header
 * (to the C type of the Fortran program's INTEGER). A handle converts to
 * the same integer every time; predefined handles convert to their ABI
 * values (MPI_Comm_c2f(MPI_COMM_WORLD) is 0x101), so integers can be
 * compared with the constants of a Fortran MPI module built for the ABI. */
#ifndef AXON_MPI_FORTRAN_H
#define AXON_MPI_FORTRAN_H
/* The guard of the MPI Forum's ABI mpi_fortran.h: its names are defined
 * here, so that header included after this one is skipped. */
#define MPI_FORTRAN_H_ABI

#include <mpi.h>

#if defined(__cplusplus)
extern "C" {
#endif

#if !defined(MPI_ABI_Fint)
#define MPI_ABI_Fint int
#endif
typedef MPI_ABI_Fint MPI_Fint;
#undef MPI_ABI_Fint

/* The header is valid C89 too (mpi.h includes it): no C99 inline keyword,
 * no declarations in for loops. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define AXON_FORTRAN_INLINE static inline
#else
#define AXON_FORTRAN_INLINE static __inline__
#endif

/* MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE: the addresses a Fortran
 * MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE arrive at in C, so C code behind a
 * Fortran entry point can test for them (MPI-4.1 19.3.5). They are objects
 * of the library (large enough for any MPI_Fint), one address each, which
 * Axon's Fortran bindings pass for the Fortran constants. */
extern char MPIX_F_status_ignore[];
extern char MPIX_F_statuses_ignore[];
#define MPI_F_STATUS_IGNORE   ((MPI_Fint *)(void *)MPIX_F_status_ignore)
#define MPI_F_STATUSES_IGNORE ((MPI_Fint *)(void *)MPIX_F_statuses_ignore)

/* A Fortran status is MPI_F_STATUS_SIZE integers: source, tag and error at
 * MPI_F_SOURCE / MPI_F_TAG / MPI_F_ERROR, then the implementation's words.
 * Passing MPI_STATUS_IGNORE, MPI_F_STATUS_IGNORE (or a null status) is
 * erroneous in MPI; these return MPI_ERR_ARG for it instead of reading
 * through a null pointer or writing into the ignore object. */
AXON_FORTRAN_INLINE int AXON_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
    int i;
    if (c_status == MPI_STATUS_IGNORE || f_status == 0 || f_status == MPI_F_STATUS_IGNORE ||
        f_status == MPI_F_STATUSES_IGNORE)
        return MPI_ERR_ARG;
    f_status[MPI_F_SOURCE] = (MPI_Fint)c_status->MPI_SOURCE;
    f_status[MPI_F_TAG] = (MPI_Fint)c_status->MPI_TAG;
    f_status[MPI_F_ERROR] = (MPI_Fint)c_status->MPI_ERROR;
    for (i = 0; i < MPI_F_STATUS_SIZE - 3; ++i)
        f_status[3 + i] = (MPI_Fint)c_status->MPI_internal[i];
    return MPI_SUCCESS;
}

AXON_FORTRAN_INLINE int AXON_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
    int i;
    if (f_status == 0 || f_status == MPI_F_STATUS_IGNORE || f_status == MPI_F_STATUSES_IGNORE ||
        c_status == MPI_STATUS_IGNORE)
        return MPI_ERR_ARG;
    c_status->MPI_SOURCE = (int)f_status[MPI_F_SOURCE];
    c_status->MPI_TAG = (int)f_status[MPI_F_TAG];
    c_status->MPI_ERROR = (int)f_status[MPI_F_ERROR];
    for (i = 0; i < MPI_F_STATUS_SIZE - 3; ++i)
        c_status->MPI_internal[i] = (int)f_status[3 + i];
    return MPI_SUCCESS;
}

/* The C view of a Fortran 2008 TYPE(MPI_Status) (MPI-4.1 19.3.5): the same
 * eight integers as a Fortran status, by name. MPI_F08_STATUS_IGNORE /
 * MPI_F08_STATUSES_IGNORE are the addresses use mpi_f08's MPI_STATUS_IGNORE
 * / MPI_STATUSES_IGNORE have in C (the same objects as for use mpi). */
typedef struct {
    MPI_Fint MPI_SOURCE;
    MPI_Fint MPI_TAG;
    MPI_Fint MPI_ERROR;
    MPI_Fint MPI_internal[MPI_F_STATUS_SIZE - 3];
} MPI_F08_status;
#define MPI_F08_STATUS_IGNORE   ((MPI_F08_status *)(void *)MPIX_F_status_ignore)
#define MPI_F08_STATUSES_IGNORE ((MPI_F08_status *)(void *)MPIX_F_statuses_ignore)

AXON_FORTRAN_INLINE int AXON_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status)
{
    if (c_status == MPI_STATUS_IGNORE || f08_status == 0 || f08_status == MPI_F08_STATUS_IGNORE ||
        f08_status == MPI_F08_STATUSES_IGNORE)
        return MPI_ERR_ARG;
    return AXON_Status_c2f(c_status, &f08_status->MPI_SOURCE);
}

AXON_FORTRAN_INLINE int AXON_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status)
{
    if (f08_status == 0 || f08_status == MPI_F08_STATUS_IGNORE || f08_status == MPI_F08_STATUSES_IGNORE)
        return MPI_ERR_ARG;
    return AXON_Status_f2c(&f08_status->MPI_SOURCE, c_status);
}

/* Fortran INTEGER(MPI_STATUS_SIZE) <-> TYPE(MPI_Status): the same integers. */
AXON_FORTRAN_INLINE int AXON_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status)
{
    int i;
    if (f_status == 0 || f_status == MPI_F_STATUS_IGNORE || f_status == MPI_F_STATUSES_IGNORE ||
        f08_status == 0 || f08_status == MPI_F08_STATUS_IGNORE || f08_status == MPI_F08_STATUSES_IGNORE)
        return MPI_ERR_ARG;
    f08_status->MPI_SOURCE = f_status[MPI_F_SOURCE];
    f08_status->MPI_TAG = f_status[MPI_F_TAG];
    f08_status->MPI_ERROR = f_status[MPI_F_ERROR];
    for (i = 0; i < MPI_F_STATUS_SIZE - 3; ++i)
        f08_status->MPI_internal[i] = f_status[3 + i];
    return MPI_SUCCESS;
}

AXON_FORTRAN_INLINE int AXON_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status)
{
    int i;
    if (f_status == 0 || f_status == MPI_F_STATUS_IGNORE || f_status == MPI_F_STATUSES_IGNORE ||
        f08_status == 0 || f08_status == MPI_F08_STATUS_IGNORE || f08_status == MPI_F08_STATUSES_IGNORE)
        return MPI_ERR_ARG;
    f_status[MPI_F_SOURCE] = f08_status->MPI_SOURCE;
    f_status[MPI_F_TAG] = f08_status->MPI_TAG;
    f_status[MPI_F_ERROR] = f08_status->MPI_ERROR;
    for (i = 0; i < MPI_F_STATUS_SIZE - 3; ++i)
        f_status[3 + i] = f08_status->MPI_internal[i];
    return MPI_SUCCESS;
}

#define MPI_Status_c2f08    AXON_Status_c2f08
#define MPI_Status_f082c    AXON_Status_f082c
#define MPI_Status_f2f08    AXON_Status_f2f08
#define MPI_Status_f082f    AXON_Status_f082f
#define PMPI_Status_c2f08   AXON_Status_c2f08
#define PMPI_Status_f082c   AXON_Status_f082c
#define PMPI_Status_f2f08   AXON_Status_f2f08
#define PMPI_Status_f082f   AXON_Status_f082f

#define MPI_Comm_c2f        MPI_Comm_toint
#define MPI_Errhandler_c2f  MPI_Errhandler_toint
#define MPI_File_c2f        MPI_File_toint
#define MPI_Group_c2f       MPI_Group_toint
#define MPI_Info_c2f        MPI_Info_toint
#define MPI_Message_c2f     MPI_Message_toint
#define MPI_Op_c2f          MPI_Op_toint
#define MPI_Request_c2f     MPI_Request_toint
#define MPI_Session_c2f     MPI_Session_toint
#define MPI_Type_c2f        MPI_Type_toint
#define MPI_Win_c2f         MPI_Win_toint
#define MPI_Status_c2f      AXON_Status_c2f

#define MPI_Comm_f2c        MPI_Comm_fromint
#define MPI_Errhandler_f2c  MPI_Errhandler_fromint
#define MPI_File_f2c        MPI_File_fromint
#define MPI_Group_f2c       MPI_Group_fromint
#define MPI_Info_f2c        MPI_Info_fromint
#define MPI_Message_f2c     MPI_Message_fromint
#define MPI_Op_f2c          MPI_Op_fromint
#define MPI_Request_f2c     MPI_Request_fromint
#define MPI_Session_f2c     MPI_Session_fromint
#define MPI_Type_f2c        MPI_Type_fromint
#define MPI_Win_f2c         MPI_Win_fromint
#define MPI_Status_f2c      AXON_Status_f2c

#define PMPI_Comm_c2f       PMPI_Comm_toint
#define PMPI_Errhandler_c2f PMPI_Errhandler_toint
#define PMPI_File_c2f       PMPI_File_toint
#define PMPI_Group_c2f      PMPI_Group_toint
#define PMPI_Info_c2f       PMPI_Info_toint
#define PMPI_Message_c2f    PMPI_Message_toint
#define PMPI_Op_c2f         PMPI_Op_toint
#define PMPI_Request_c2f    PMPI_Request_toint
#define PMPI_Session_c2f    PMPI_Session_toint
#define PMPI_Type_c2f       PMPI_Type_toint
#define PMPI_Win_c2f        PMPI_Win_toint
#define PMPI_Status_c2f     AXON_Status_c2f

#define PMPI_Comm_f2c       PMPI_Comm_fromint
#define PMPI_Errhandler_f2c PMPI_Errhandler_fromint
#define PMPI_File_f2c       PMPI_File_fromint
#define PMPI_Group_f2c      PMPI_Group_fromint
#define PMPI_Info_f2c       PMPI_Info_fromint
#define PMPI_Message_f2c    PMPI_Message_fromint
#define PMPI_Op_f2c         PMPI_Op_fromint
#define PMPI_Request_f2c    PMPI_Request_fromint
#define PMPI_Session_f2c    PMPI_Session_fromint
#define PMPI_Type_f2c       PMPI_Type_fromint
#define PMPI_Win_f2c        PMPI_Win_fromint
#define PMPI_Status_f2c     AXON_Status_f2c

#undef AXON_FORTRAN_INLINE

#if defined(__cplusplus)
}
#endif

#endif /* AXON_MPI_FORTRAN_H */
