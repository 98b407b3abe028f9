/* Axon's MPI_T counters for the tests: the value of one counter by name,
 * read through its own pvar session (MPI_T_init_thread must have been
 * called). A failed MPI_T call counts as a failed check (check.h). */
#ifndef AXON_TEST_MPI_COUNTERS_H
#define AXON_TEST_MPI_COUNTERS_H

#include <mpi.h>

#include "check.h"

static inline unsigned long long axon_counter(const char *name)
{
    int index = -1, n = 0;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h;
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    CHECK_MPI(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &h, &n));
    CHECK_MPI(MPI_T_pvar_read(session, h, &v));
    MPI_T_pvar_handle_free(session, &h);
    MPI_T_pvar_session_free(&session);
    return v;
}

#endif
