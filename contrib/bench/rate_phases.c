/* rate_phases: where a small-message stream spends its time. Rank 0 posts
 * a window of 1-byte MPI_Isends to rank 1, which has posted a window of
 * MPI_Irecvs; both MPI_Waitall, then rank 1 acknowledges (the loop of
 * pt2pt_bw at 1 B). Each phase is timed on its own rank, so the table says
 * whether the sender's posting, the receiver's posting or the receiver's
 * completion sets the rate. Self-contained (no bench_common): any MPI.
 *
 *   rate_phases [-w WINDOW] [-n WINDOWS]    default 64 messages, 3000 windows
 *
 * Prints, per rank, nanoseconds per message in each phase:
 *   rank 0: post (MPI_Isend x WINDOW), waitall, ack (MPI_Recv of the ack)
 *   rank 1: post (MPI_Irecv x WINDOW), waitall, ack (MPI_Send of the ack)
 * The last window's bytes are checked on rank 1; a mismatch aborts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int window = 64, windows = 3000, warmup = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-w")) window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) windows = atoi(argv[i + 1]);
    }
    if (size < 2 || window < 1 || windows < 1) {
        if (rank == 0) fprintf(stderr, "rate_phases: needs 2 ranks, -w >= 1, -n >= 1\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Request *rq = malloc((size_t)window * sizeof *rq);
    unsigned char *buf = malloc((size_t)window), ack = 0;
    double post = 0, wait = 0, acked = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < warmup + windows && rank < 2; it++) {
        if (it == warmup) post = wait = acked = 0;
        for (int i = 0; i < window; i++) buf[i] = rank == 0 ? (unsigned char)(it + i) : 0;
        double t0 = MPI_Wtime();
        if (rank == 0)
            for (int i = 0; i < window; i++) MPI_Isend(buf + i, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[i]);
        else
            for (int i = 0; i < window; i++) MPI_Irecv(buf + i, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[i]);
        double t1 = MPI_Wtime();
#pragma GCC diagnostic push
        /* GCC takes MPI_STATUSES_IGNORE (a null pointer) for a 0-byte array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
        MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
#pragma GCC diagnostic pop
        double t2 = MPI_Wtime();
        if (rank == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        double t3 = MPI_Wtime();
        post += t1 - t0, wait += t2 - t1, acked += t3 - t2;
        if (rank == 1 && it == warmup + windows - 1)
            for (int i = 0; i < window; i++)
                if (buf[i] != (unsigned char)(it + i)) {
                    fprintf(stderr, "rate_phases: DATA CHECK FAILED: message %d of the last window\n", i);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
    }
    double per = 1e9 / ((double)windows * window);
    if (rank < 2)
        printf("rank %d: post %.1f  waitall %.1f  ack %.1f  total %.1f ns per message\n", rank, post * per,
               wait * per, acked * per, (post + wait + acked) * per);
    free(rq);
    free(buf);
    MPI_Finalize();
    return 0;
}
