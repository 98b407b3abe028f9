/* The job an intruder attacks (robustness.sh): the ranks pass messages round
 * a ring with exact contents, over TCP, until the file DIR/done appears (at
 * most 30 s). Rank 0 writes the job's PMIx namespace to DIR/ready once every
 * connection of the ring is up, so the intruder can forge a handshake that is
 * right in everything but the secret. Usage: victim DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        fprintf(stderr, "usage: victim DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char ready[4096], done[4096];
    snprintf(ready, sizeof ready, "%s/ready", argv[1]);
    snprintf(done, sizeof done, "%s/done", argv[1]);

    enum { kLen = 100000 };
    unsigned char *out = xmalloc(kLen), *in = xmalloc(kLen);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double start = MPI_Wtime();
    for (int round = 0;; round++) {
        fill_pattern(out, kLen, (unsigned)(round * 64 + rank));
        memset(in, 0, kLen);
        CHECK_MPI(MPI_Sendrecv(out, kLen, MPI_BYTE, next, 0, in, kLen, MPI_BYTE, prev, 0, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, kLen, (unsigned)(round * 64 + prev), "round %d from %d", round, prev);
        int stop = 0;
        if (rank == 0) {
            if (round == 0) {
                const char *ns = getenv("PMIX_NAMESPACE");
                FILE *f = fopen(ready, "w");
                if (f) {
                    fprintf(f, "%s\n", ns ? ns : "");
                    fclose(f);
                }
            }
            stop = access(done, F_OK) == 0 || MPI_Wtime() - start > 30;
            if (!stop) usleep(2000);
        }
        CHECK_MPI(MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (stop) break;
    }
    free(out);
    free(in);
    MPI_Finalize();
    return report("tcp_victim");
}
