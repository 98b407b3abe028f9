/* Partitioned operations pair in the order of their initialization calls
 * (MPI-4.1 section 4.2.1), whatever the order of MPI_Start / MPI_Pready: the
 * k-th MPI_Psend_init to (dest, tag, comm) delivers into the buffer of the
 * k-th MPI_Precv_init from that source with that tag, on every restart of the
 * persistent requests. Rank 0 sends to the last rank (to itself at np 1);
 * the sends are started and readied in a different permutation each round.
 * A send to MPI_PROC_NULL in between takes no place in the pairing (build
 * with -DSKIP_PROC_NULL to check the rest against MPICH 4.0, whose
 * MPI_Psend_init crashes on MPI_PROC_NULL). */
#include <mpi.h>

#include "../mpi/check.h"

enum { NREQ = 3, PARTS = 4, COUNT = 16, TOTAL = PARTS * COUNT, TAG = 7 };

static int sendbuf[NREQ][TOTAL], recvbuf[NREQ][TOTAL];

static int value(int req, int round, int i) { return 100000 * (req + 1) + 1000 * round + i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int source = 0, dest = size - 1;
    const int orders[3][NREQ] = {{2, 0, 1}, {1, 2, 0}, {0, 1, 2}};
    MPI_Request sreq[NREQ], rreq[NREQ], nullreq = MPI_REQUEST_NULL;
    int dummy[PARTS] = {0};

    if (rank == source) {
        for (int k = 0; k < NREQ; k++) {
            CHECK_MPI(MPI_Psend_init(sendbuf[k], PARTS, COUNT, MPI_INT, dest, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                                     &sreq[k]));
#ifndef SKIP_PROC_NULL
            if (k == 0)
                CHECK_MPI(MPI_Psend_init(dummy, PARTS, 1, MPI_INT, MPI_PROC_NULL, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                                         &nullreq));
#endif
        }
    }
    if (rank == dest)
        for (int k = 0; k < NREQ; k++)
            CHECK_MPI(MPI_Precv_init(recvbuf[k], PARTS, COUNT, MPI_INT, source, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                                     &rreq[k]));

    for (int round = 0; round < 3; round++) {
        if (rank == dest) {
            for (int k = 0; k < NREQ; k++) {
                for (int i = 0; i < TOTAL; i++) recvbuf[k][i] = -1;
                CHECK_MPI(MPI_Start(&rreq[k]));
            }
        }
        if (rank == source) {
            for (int o = 0; o < NREQ; o++) {
                int k = orders[round][o];
                CHECK_MPI(MPI_Start(&sreq[k]));
                for (int i = 0; i < TOTAL; i++) sendbuf[k][i] = value(k, round, i);
                /* partitions readied last to first */
                for (int part = PARTS - 1; part >= 0; part--) CHECK_MPI(MPI_Pready(part, sreq[k]));
            }
#ifndef SKIP_PROC_NULL
            CHECK_MPI(MPI_Start(&nullreq));
            CHECK_MPI(MPI_Pready_range(0, PARTS - 1, nullreq));
            CHECK_MPI(MPI_Wait(&nullreq, MPI_STATUS_IGNORE));
#endif
            CHECK_MPI(MPI_Waitall(NREQ, sreq, MPI_STATUSES_IGNORE));
        }
        if (rank == dest) {
            MPI_Status st[NREQ];
            CHECK_MPI(MPI_Waitall(NREQ, rreq, st));
            for (int k = 0; k < NREQ; k++) {
                int count = -1;
                MPI_Get_count(&st[k], MPI_INT, &count);
                CHECK(st[k].MPI_SOURCE == source && st[k].MPI_TAG == TAG && count == TOTAL,
                      "round %d recv %d: status source %d tag %d count %d", round, k, st[k].MPI_SOURCE,
                      st[k].MPI_TAG, count);
                for (int i = 0; i < TOTAL; i++) {
                    if (recvbuf[k][i] != value(k, round, i)) {
                        CHECK(0, "round %d: receive %d element %d is %d, expected %d (data of send %d)", round, k, i,
                              recvbuf[k][i], value(k, round, i), recvbuf[k][i] / 100000 - 1);
                        break;
                    }
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == source) {
        for (int k = 0; k < NREQ; k++) MPI_Request_free(&sreq[k]);
#ifndef SKIP_PROC_NULL
        MPI_Request_free(&nullreq);
#endif
    }
    if (rank == dest)
        for (int k = 0; k < NREQ; k++) MPI_Request_free(&rreq[k]);
    MPI_Finalize();
    return report("p2p_partitioned_order");
}
