/* startup: how long a job takes to become ready, seen from inside it (the
 * "hello" of compare.sh's startup benchmark, which also times the whole
 * mpirun from outside). Every rank reads the wall clock (CLOCK_REALTIME,
 * comparable between the processes of one node) just before MPI_Init, after
 * it, and after the first MPI_Barrier; rank 0 gathers the readings after the
 * timing and prints one line:
 *
 *   ranks  ready_ms  init_max_ms  init_median_ms  spread_ms  launch_to_ready_ms
 *
 *   ready_ms            the longest any rank spent from entering MPI_Init to
 *                       leaving the first barrier (the figure to quote: the
 *                       barrier ends only when the last rank has arrived)
 *   init_max_ms, init_median_ms   MPI_Init alone, over the ranks
 *   spread_ms           first rank's MPI_Init entry to last rank's barrier
 *                       exit (includes the launcher spawning ranks one by one)
 *   launch_to_ready_ms  from the time given with -l (ns since the epoch,
 *                       taken by the caller just before it ran mpirun) to the
 *                       last barrier exit; -1 without -l
 *
 *   startup [-l LAUNCH_EPOCH_NS]
 *
 * Self-contained (no bench_common): any MPI's mpicc builds it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    /* Read before anything else: the readings are what this program is for. */
    const double entered = now_ms();
    MPI_Init(&argc, &argv);
    const double initialized = now_ms();
    MPI_Barrier(MPI_COMM_WORLD);
    const double ready = now_ms();

    int rank = 0, nranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    double launch_ms = -1;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "-l"))
            launch_ms = strtod(argv[i + 1], NULL) / 1e6;

    double mine[3] = {entered, initialized, ready};
    double *all = rank == 0 ? malloc(3 * sizeof(double) * (size_t)nranks) : NULL;
    double *init = rank == 0 ? malloc(sizeof(double) * (size_t)nranks) : NULL;
    if (rank == 0 && (!all || !init))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double first_entry = all[0], last_ready = all[2], ready_max = 0;
        for (int r = 0; r < nranks; r++) {
            const double *t = all + 3 * r;
            init[r] = t[1] - t[0];
            if (t[0] < first_entry) first_entry = t[0];
            if (t[2] > last_ready) last_ready = t[2];
            if (t[2] - t[0] > ready_max) ready_max = t[2] - t[0];
        }
        qsort(init, (size_t)nranks, sizeof *init, compare_doubles);
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length = 0;
        MPI_Get_library_version(version, &length);
        version[length > 0 && length < MPI_MAX_LIBRARY_VERSION_STRING ? length : 0] = '\0';
        char *newline = strpbrk(version, "\r\n");
        if (newline) *newline = '\0';
        printf("# startup\n# mpi: %s\n# ranks: %d\n", version, nranks);
        printf("# ranks  ready_ms  init_max_ms  init_median_ms  spread_ms  launch_to_ready_ms\n");
        printf("%d  %.1f  %.1f  %.1f  %.1f  %.1f\n", nranks, ready_max, init[nranks - 1],
               init[nranks / 2], last_ready - first_entry,
               launch_ms > 0 ? last_ready - launch_ms : -1.0);
        fflush(stdout);
    }
    free(all);
    free(init);
    MPI_Finalize();
    return 0;
}
