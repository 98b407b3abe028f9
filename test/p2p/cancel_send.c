/* Cancelling sends: an unmatched rendezvous send and an unmatched synchronous
 * send are withdrawn (MPI_Test_cancelled is true, the receiver never sees
 * them); a send that was already matched completes normally (cancelled false). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

enum { BIG = 1 << 20, TAG_WITHDRAWN = 7, TAG_MATCHED = 8 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = size > 1 ? 1 : 0;
    char *big = calloc(BIG, 1);
    int small = 42;

    if (rank == 0) {
        MPI_Request req[2];
        MPI_Status status;
        int flag = 0;
        MPI_Isend(big, BIG, MPI_CHAR, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req[0]);
        MPI_Issend(&small, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req[1]);
        for (int i = 0; i < 2; i++) {
            CHECK_MPI(MPI_Cancel(&req[i]));
            CHECK_MPI(MPI_Wait(&req[i], &status));
            MPI_Test_cancelled(&status, &flag);
            CHECK(flag, "unmatched send %d was not cancelled", i);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == peer) {
        int flag = 1;
        MPI_Status status;
        MPI_Iprobe(0, TAG_WITHDRAWN, MPI_COMM_WORLD, &flag, &status);
        CHECK(!flag, "a withdrawn message is still receivable");
    }
    /* A matched send: the cancel fails and the data arrives. */
    if (rank == 0) {
        MPI_Request req;
        MPI_Status status;
        int flag = 1;
        memset(big, 5, BIG);
        MPI_Isend(big, BIG, MPI_CHAR, peer, TAG_MATCHED, MPI_COMM_WORLD, &req);
        if (peer != 0) MPI_Recv(NULL, 0, MPI_BYTE, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else {
            char *in = malloc(BIG);
            MPI_Recv(in, BIG, MPI_CHAR, 0, TAG_MATCHED, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(in[BIG - 1] == 5, "self: wrong data");
            free(in);
        }
        MPI_Cancel(&req);
        MPI_Wait(&req, &status);
        MPI_Test_cancelled(&status, &flag);
        CHECK(!flag, "a matched send reports cancelled");
    } else if (rank == peer) {
        char *in = malloc(BIG);
        MPI_Recv(in, BIG, MPI_CHAR, 0, TAG_MATCHED, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in[0] == 5 && in[BIG - 1] == 5, "wrong data %d %d", in[0], in[BIG - 1]);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
        free(in);
    }
    free(big);
    MPI_Finalize();
    return report("cancel_send");
}
