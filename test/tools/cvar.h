/* Axon's writable MPI_T control variables for the tests: an enum parameter
 * (AXON_COLL_<NAME>_ALGORITHM) set to one of its items by name, through
 * MPI_T_cvar_write. They are MPI_T_SCOPE_ALL_EQ: every rank sets the same
 * value at the same point between collective calls, and the next call uses
 * it. With another MPI (no such variable) nothing is set and that MPI makes
 * its own choice. Include after ../mpi/check.h. */
#ifndef AXON_TEST_TOOLS_CVAR_H
#define AXON_TEST_TOOLS_CVAR_H

#include <ctype.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Writes `value` (an MPI_INT) to control variable `cvar`: the MPI_T error of
 * the write, or MPI_T_ERR_INVALID_NAME when there is no such variable. */
static inline int cvar_write_int(const char *cvar, int value)
{
    int provided = 0, index = -1, count = 0, rc;
    if ((rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) != MPI_SUCCESS) return rc;
    rc = MPI_T_cvar_get_index(cvar, &index);
    if (rc == MPI_SUCCESS) {
        MPI_T_cvar_handle handle;
        rc = MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
        if (rc == MPI_SUCCESS) {
            rc = MPI_T_cvar_write(handle, &value);
            MPI_T_cvar_handle_free(&handle);
        }
    }
    MPI_T_finalize();
    return rc;
}

/* The value of item `name` of enum control variable `cvar`, or -1 (no such
 * variable, not an enum, or no such item). */
static inline int cvar_item_value(const char *cvar, const char *name)
{
    int provided = 0, index = -1, items = 0, value = -1;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return -1;
    if (MPI_T_cvar_get_index(cvar, &index) == MPI_SUCCESS &&
        MPI_T_cvar_get_info(index, NULL, NULL, NULL, NULL, &enumtype, NULL, NULL, NULL, NULL) == MPI_SUCCESS &&
        enumtype != MPI_T_ENUM_NULL && MPI_T_enum_get_info(enumtype, &items, NULL, NULL) == MPI_SUCCESS) {
        for (int i = 0; i < items && value < 0; i++) {
            char item[256];
            int item_len = sizeof item, v = -1;
            if (MPI_T_enum_get_item(enumtype, i, &v, item, &item_len) == MPI_SUCCESS && strcmp(item, name) == 0)
                value = v;
        }
    }
    MPI_T_finalize();
    return value;
}

/* 1 when the library is Axon (whose AXON_* parameters exist). */
static inline int cvar_library_is_axon(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    return strstr(version, "Axon") != NULL;
}

/* Forces the algorithm of collective `kind` ("allreduce") to `algorithm`
 * ("auto": the library's own choice) from the next call on. With Axon the
 * write must succeed (a failed check otherwise); with another MPI, whose
 * variables these are not, it does nothing. */
static inline void force_algorithm(const char *kind, const char *algorithm)
{
    char cvar[128];
    int n = snprintf(cvar, sizeof cvar, "AXON_COLL_%s_ALGORITHM", kind);
    for (int i = 0; i < n && cvar[i]; i++) cvar[i] = (char)toupper((unsigned char)cvar[i]);
    if (!cvar_library_is_axon()) return;
    int value = cvar_item_value(cvar, algorithm);
    CHECK(value >= 0, "%s has no item %s", cvar, algorithm);
    if (value >= 0) CHECK_MPI(cvar_write_int(cvar, value));
}

#endif
