/* The job flood.sh attacks: after MPI_Init each rank writes its pid to
 * DIR/pid.RANK and waits for DIR/go (the flood has reached the ports; at
 * most 20 s), then every pair of ranks meets for the first time (every
 * connection is set up under the flood) and exchanges messages of 1 B to
 * 1 MiB with exact contents, then a few collectives, ROUNDS times. With
 * "after", the ranks then wait for DIR/calm (the flood is over; at most
 * 30 s) and do it all again. Rank 0 writes the job's namespace to DIR/ready
 * right after MPI_Init and prints how long each part took.
 * Usage: wireup DIR [ROUNDS [after]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

/* Every pair, messages of 1 B to 1 MiB, then an allreduce and a barrier,
 * `rounds` times; returns the seconds it took. */
static double exchange(int rank, int size, int rounds)
{
    enum { kMax = 1 << 20 };
    unsigned char *out = xmalloc(kMax), *in = xmalloc(kMax);
    double start = MPI_Wtime();
    for (int round = 0; round < rounds; round++) {
        /* Pairs in a different order each round: shift d = 1..size-1. */
        for (int d = 1; d < size; d++) {
            int to = (rank + d) % size, from = (rank + size - d) % size;
            for (int len = 1; len <= kMax; len *= 32) {
                unsigned seed = (unsigned)(round * 1000 + d * 64 + len % 61);
                fill_pattern(out, (size_t)len, seed + (unsigned)rank);
                memset(in, 0, (size_t)len);
                CHECK_MPI(MPI_Sendrecv(out, len, MPI_BYTE, to, d, in, len, MPI_BYTE, from, d, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
                CHECK_PATTERN(in, (size_t)len, seed + (unsigned)from, "round %d, %d bytes from %d", round, len,
                              from);
            }
        }
        long mine = rank + round, sum = 0;
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == (long)size * (size - 1) / 2 + (long)size * round, "allreduce %ld", sum);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    double took = MPI_Wtime() - start;
    free(out);
    free(in);
    return took;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        fprintf(stderr, "usage: wireup DIR [ROUNDS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    int after = argc > 3 && !strcmp(argv[3], "after");
    char path[4096];
    snprintf(path, sizeof path, "%s/pid.%d", argv[1], rank);
    FILE *pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%d\n", (int)getpid());
        fclose(pf);
    }
    if (rank == 0) {
        const char *ns = getenv("PMIX_NAMESPACE");
        snprintf(path, sizeof path, "%s/ready.tmp", argv[1]);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s\n", ns ? ns : "");
            fclose(f);
            char final[4096];
            snprintf(final, sizeof final, "%s/ready", argv[1]);
            rename(path, final);
        }
    }
    snprintf(path, sizeof path, "%s/go", argv[1]);
    for (int i = 0; i < 400 && access(path, F_OK) != 0; i++) usleep(50000);

    double took = exchange(rank, size, rounds);
    if (rank == 0) printf("wireup: %d ranks, %d rounds in %.3f s\n", size, rounds, took);
    if (after) {
        snprintf(path, sizeof path, "%s/calm", argv[1]);
        for (int i = 0; i < 600 && access(path, F_OK) != 0; i++) usleep(50000);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        took = exchange(rank, size, rounds);
        if (rank == 0) printf("wireup: after the flood: %d rounds in %.3f s\n", rounds, took);
    }
    MPI_Finalize();
    return report("tcp_wireup");
}
