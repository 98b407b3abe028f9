/* mpmd_probe -- an MPI program that says what mpirun gave it, for the MPMD
 * and option tests (test/launcher/mpmd.sh, compat.sh).
 *
 *   mpmd_probe [env=NAME]... [ARG]...
 *
 * Each rank prints one line:
 *   rank=R size=S appnum=A universe=U world_apps=SUM wdir=DIR argv=A0|A1|... NAME=VALUE...
 * where appnum is the MPI_APPNUM attribute (-1 when absent), universe
 * MPI_UNIVERSE_SIZE, world_apps the sum of every rank's appnum over
 * MPI_COMM_WORLD (so the ranks of all programs are in one world and can talk),
 * wdir the working directory, argv every argument as given (env=NAME ones
 * too), and one NAME=VALUE per env=NAME ("(unset)" when unset). Exit
 * status 0, or 1 when an MPI call fails. */
#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int attribute(int keyval) {
    int *value = NULL, flag = 0;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &value, &flag) != MPI_SUCCESS || !flag || !value) return -1;
    return *value;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int appnum = attribute(MPI_APPNUM), universe = attribute(MPI_UNIVERSE_SIZE);
    int apps = 0;
    if (MPI_Allreduce(&appnum, &apps, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;

    char line[8192], cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "?");
    int n = snprintf(line, sizeof line, "rank=%d size=%d appnum=%d universe=%d world_apps=%d wdir=%s argv=", rank,
                     size, appnum, universe, apps, cwd);
    for (int i = 0; i < argc && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%s", i ? "|" : "", argv[i]);
    for (int i = 1; i < argc && n < (int)sizeof line; i++) {
        if (strncmp(argv[i], "env=", 4) != 0) continue;
        const char *value = getenv(argv[i] + 4);
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=%s", argv[i] + 4, value ? value : "(unset)");
    }
    printf("%s\n", line);
    MPI_Finalize();
    return 0;
}
