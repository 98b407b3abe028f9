/* Shared by the MPI-IO tests: a fresh directory per run (made by rank 0
 * under $TMPDIR or /tmp, its name broadcast), file names inside it, and its
 * removal at the end. */
#ifndef AXON_TEST_IO_H
#define AXON_TEST_IO_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

static char io_dir[512];

static inline void io_make_dir(MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(io_dir, sizeof io_dir, "%s/axon-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(io_dir)) {
            perror("mkdtemp");
            MPI_Abort(comm, 2);
        }
    }
    MPI_Bcast(io_dir, sizeof io_dir, MPI_CHAR, 0, comm);
}

/* path of `name` inside the test directory (one static buffer per call site
 * is enough: callers copy or use it at once) */
static inline const char *io_path(const char *name)
{
    static char paths[8][600];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 600, "%s/%s", io_dir, name);
    return p;
}

/* Removes what is left in the directory, then the directory (rank 0). */
static inline void io_remove_dir(MPI_Comm comm)
{
    int rank;
    MPI_Barrier(comm);
    MPI_Comm_rank(comm, &rank);
    if (rank != 0)
        return;
    DIR *d = opendir(io_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[1200];
            snprintf(p, sizeof p, "%s/%s", io_dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(io_dir);
}

static inline int io_exists(const char *path) { return access(path, F_OK) == 0; }

#endif
