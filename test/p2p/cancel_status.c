/* After MPI_Cancel of an operation nobody matches, the request is complete
 * at once: the first MPI_Request_get_status and MPI_Test after the cancel
 * say flag = 1 and MPI_Test_cancelled true, and a later MPI_Wait agrees
 * (MPI-4.1 3.8.4: a wait for a cancelled operation behaves as a local call).
 * Covered: a synchronous send (eager size and rendezvous size), a standard
 * send of rendezvous size and of eager size, a receive, and started
 * persistent sends. The receiver never posts a receive for these messages;
 * it sits in MPI_Barrier (so it makes progress), and afterwards nothing of
 * them can be received: the next message with the same tag is the one sent
 * after the cancels. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

enum { BIG = 1 << 20, TAG_WITHDRAWN = 7, TAG_LAST = 8, LAST_VALUE = 1234 };

/* Cancels `*req` and checks the request reports complete and cancelled at
 * once, through MPI_Request_get_status, then MPI_Test (which frees it, or
 * leaves a persistent one allocated and inactive). */
static void cancel_and_check(MPI_Request *req, const char *what, int persistent) {
    CHECK_MPI(MPI_Cancel(req));
    int flag = 0, cancelled = 0;
    MPI_Status status;
    CHECK_MPI(MPI_Request_get_status(*req, &flag, &status));
    CHECK(flag == 1, "%s: MPI_Request_get_status right after MPI_Cancel says flag %d, not 1", what, flag);
    if (flag) {
        MPI_Test_cancelled(&status, &cancelled);
        CHECK(cancelled == 1, "%s: MPI_Request_get_status status not cancelled", what);
    }
    /* MPI_Test must agree (and retires the request); when the status query
     * was wrong, poll a bounded time so a broken cancel fails, not hangs. */
    double deadline = MPI_Wtime() + 20.0;
    flag = 0;
    int tests = 0;
    while (!flag && MPI_Wtime() < deadline) {
        CHECK_MPI(MPI_Test(req, &flag, &status));
        ++tests;
    }
    CHECK(flag == 1, "%s: MPI_Test did not complete the cancelled request within 20 s", what);
    CHECK(tests == 1, "%s: MPI_Test needed %d calls to see the cancelled request complete", what, tests);
    if (!flag) {
        /* Leave no request behind (the wait may hang only if the cancel is broken). */
        MPI_Wait(req, &status);
    }
    cancelled = 0;
    MPI_Test_cancelled(&status, &cancelled);
    CHECK(cancelled == 1, "%s: the completed request's status says not cancelled", what);
    if (persistent)
        CHECK(*req != MPI_REQUEST_NULL, "%s: MPI_Test freed a persistent request", what);
    else
        CHECK(*req == MPI_REQUEST_NULL, "%s: MPI_Test left the request handle set", what);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = size > 1 ? 1 : 0;
    char *big = malloc(BIG);
    memset(big, 3, BIG);
    int small = 42, in = 0;

    if (rank == 0) {
        MPI_Request req;
        MPI_Issend(&small, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req);
        cancel_and_check(&req, "unmatched MPI_Issend (small)", 0);
        MPI_Issend(big, BIG, MPI_CHAR, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req);
        cancel_and_check(&req, "unmatched MPI_Issend (large)", 0);
        MPI_Isend(big, BIG, MPI_CHAR, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req);
        cancel_and_check(&req, "unmatched MPI_Isend (rendezvous)", 0);
        MPI_Isend(&small, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req);
        cancel_and_check(&req, "unmatched MPI_Isend (eager)", 0);
        MPI_Irecv(&in, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &req);
        cancel_and_check(&req, "unmatched MPI_Irecv", 0);

        /* Persistent sends: cancelled, the request stays allocated and inactive. */
        MPI_Request persistent[2];
        MPI_Ssend_init(&small, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &persistent[0]);
        MPI_Send_init(&small, 1, MPI_INT, peer, TAG_WITHDRAWN, MPI_COMM_WORLD, &persistent[1]);
        for (int i = 0; i < 2; i++) {
            MPI_Start(&persistent[i]);
            cancel_and_check(&persistent[i], i == 0 ? "started MPI_Ssend_init" : "started MPI_Send_init", 1);
            if (persistent[i] != MPI_REQUEST_NULL) MPI_Request_free(&persistent[i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int last = LAST_VALUE;
    if (rank == 0) MPI_Send(&last, 1, MPI_INT, peer, TAG_LAST, MPI_COMM_WORLD);
    if (rank == peer) {
        /* TAG_LAST was sent after every cancelled message: once it is here,
         * anything not withdrawn would be here too. */
        MPI_Recv(&in, 1, MPI_INT, 0, TAG_LAST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in == LAST_VALUE, "got %d instead of %d", in, LAST_VALUE);
        int flag = 1;
        MPI_Status status;
        MPI_Iprobe(0, TAG_WITHDRAWN, MPI_COMM_WORLD, &flag, &status);
        int bytes = 0;
        if (flag) MPI_Get_count(&status, MPI_BYTE, &bytes);
        CHECK(!flag, "a cancelled message (%d bytes) is still receivable", bytes);
        if (flag) MPI_Recv(big, BIG, MPI_CHAR, 0, TAG_WITHDRAWN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(big);
    MPI_Finalize();
    return report("cancel_status");
}
