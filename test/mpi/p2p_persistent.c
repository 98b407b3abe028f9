/* p2p_persistent: persistent requests (Send_init in all four modes,
 * Recv_init, Start, Startall) restarted many times with fresh data each
 * round; an inactive persistent request completes at once in Wait/Test with
 * an empty status; Request_free of an inactive one; a cancelled receive
 * (plain and persistent) completes with MPI_Test_cancelled true and its
 * buffer untouched, and does not steal a later message. */
#include "check.h"

enum { ROUNDS = 20, COUNT = 3000 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    int bsend_bytes = 0;
    MPI_Pack_size(COUNT, MPI_INT, MPI_COMM_WORLD, &bsend_bytes);
    /* Room for every round: a round's buffered message may still occupy the
     * buffer when the next round starts. */
    bsend_bytes = (bsend_bytes + MPI_BSEND_OVERHEAD) * ROUNDS;
    void *attached = xmalloc((size_t)bsend_bytes);
    CHECK_MPI(MPI_Buffer_attach(attached, bsend_bytes));

    int *out = xmalloc(COUNT * sizeof(int)), *in = xmalloc(COUNT * sizeof(int));
    const char *mode_names[] = {"Send_init", "Ssend_init", "Bsend_init", "Rsend_init"};
    for (int mode = 0; mode < 4; mode++) {
        MPI_Request requests[2];
        CHECK_MPI(MPI_Recv_init(in, COUNT, MPI_INT, left, mode, MPI_COMM_WORLD, &requests[0]));
        switch (mode) {
        case 0: CHECK_MPI(MPI_Send_init(out, COUNT, MPI_INT, right, mode, MPI_COMM_WORLD, &requests[1])); break;
        case 1: CHECK_MPI(MPI_Ssend_init(out, COUNT, MPI_INT, right, mode, MPI_COMM_WORLD, &requests[1])); break;
        case 2: CHECK_MPI(MPI_Bsend_init(out, COUNT, MPI_INT, right, mode, MPI_COMM_WORLD, &requests[1])); break;
        default: CHECK_MPI(MPI_Rsend_init(out, COUNT, MPI_INT, right, mode, MPI_COMM_WORLD, &requests[1])); break;
        }
        /* Inactive persistent requests complete at once with an empty status. */
        MPI_Status status;
        status.MPI_SOURCE = 12345;
        CHECK_MPI(MPI_Wait(&requests[0], &status));
        CHECK(requests[0] != MPI_REQUEST_NULL, "%s: Wait freed an inactive persistent request",
              mode_names[mode]);
        CHECK(status.MPI_SOURCE == MPI_ANY_SOURCE && status.MPI_TAG == MPI_ANY_TAG,
              "%s: inactive request status source %d tag %d", mode_names[mode], status.MPI_SOURCE,
              status.MPI_TAG);
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < COUNT; i++)
                out[i] = rank * 1000000 + round * 1000 + i + mode;
            memset(in, 0xff, COUNT * sizeof(int));
            if (mode == 3) {
                /* Ready mode: the receive must be posted before the send starts. */
                CHECK_MPI(MPI_Start(&requests[0]));
                CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_BYTE, left, 77, NULL, 0, MPI_BYTE, right, 77,
                                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Start(&requests[1]));
            } else {
                CHECK_MPI(MPI_Startall(2, requests));
            }
            MPI_Status statuses[2];
            CHECK_MPI(MPI_Waitall(2, requests, statuses));
            int bad = -1;
            for (int i = 0; i < COUNT && bad < 0; i++)
                if (in[i] != left * 1000000 + round * 1000 + i + mode)
                    bad = i;
            CHECK(bad < 0, "%s round %d: element %d is %d", mode_names[mode], round, bad,
                  bad < 0 ? 0 : in[bad]);
            CHECK(statuses[0].MPI_SOURCE == left && statuses[0].MPI_TAG == mode,
                  "%s round %d: status source %d tag %d", mode_names[mode], round,
                  statuses[0].MPI_SOURCE, statuses[0].MPI_TAG);
            CHECK(requests[0] != MPI_REQUEST_NULL && requests[1] != MPI_REQUEST_NULL,
                  "%s: Waitall freed persistent requests", mode_names[mode]);
        }
        CHECK_MPI(MPI_Request_free(&requests[0]));
        CHECK_MPI(MPI_Request_free(&requests[1]));
        CHECK(requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL,
              "Request_free did not null persistent handles");
    }
    void *detached;
    int detached_bytes;
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_bytes));
    CHECK(detached == attached && detached_bytes == bsend_bytes, "Buffer_detach returned %p/%d",
          detached, detached_bytes);
    free(attached);

    /* Cancelled receives: nothing matches tag 500 until after the cancel. */
    int value = -7;
    MPI_Request request;
    MPI_Status status;
    CHECK_MPI(MPI_Irecv(&value, 1, MPI_INT, left, 500, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Cancel(&request));
    CHECK_MPI(MPI_Wait(&request, &status));
    int cancelled = 0;
    CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    CHECK(cancelled == 1 && value == -7, "cancelled Irecv: cancelled %d value %d", cancelled, value);

    CHECK_MPI(MPI_Recv_init(&value, 1, MPI_INT, left, 500, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Start(&request));
    CHECK_MPI(MPI_Cancel(&request));
    CHECK_MPI(MPI_Wait(&request, &status));
    CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    CHECK(cancelled == 1 && value == -7, "cancelled persistent receive: cancelled %d value %d",
          cancelled, value);
    /* The same persistent receive, restarted, gets the real message (sent
     * only after every rank has cancelled its receives). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int sent = rank + 100;
    MPI_Request send_request;
    CHECK_MPI(MPI_Isend(&sent, 1, MPI_INT, right, 500, MPI_COMM_WORLD, &send_request));
    CHECK_MPI(MPI_Start(&request));
    CHECK_MPI(MPI_Wait(&request, &status));
    CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    CHECK(cancelled == 0 && value == left + 100, "restarted receive: cancelled %d value %d",
          cancelled, value);
    CHECK_MPI(MPI_Wait(&send_request, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Request_free(&request));

    free(out);
    free(in);
    MPI_Finalize();
    return report("p2p_persistent");
}
