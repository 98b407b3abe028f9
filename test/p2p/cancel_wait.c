/* AXON_CANCEL_WAIT_MS takes effect: MPI_Cancel of an unmatched MPI_Issend
 * waits that long for the receiver's answer, and no longer. The receiver
 * stays out of MPI (sleeping) for 1.5 s, so it cannot answer meanwhile:
 *
 *   cancel_wait 0     MPI_Cancel returns at once (< 0.25 s), request incomplete
 *   cancel_wait 300   MPI_Cancel takes 0.3 s or more (and under 0.9 s: not the default 1 s)
 *
 * Either way MPI_Wait then completes the request as cancelled once the
 * receiver enters MPI, and nothing is received. 2 ranks. */
#include "../mpi/check.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    const char *ms = argc > 1 ? argv[1] : "0";
    setenv("AXON_CANCEL_WAIT_MS", ms, 1);
    long wait_ms = atol(ms);
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "needs 2 ranks, has %d", size);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        int value = 42, flag = -1, cancelled = 0;
        MPI_Request req;
        MPI_Status status;
        CHECK_MPI(MPI_Issend(&value, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &req));
        double t0 = MPI_Wtime();
        CHECK_MPI(MPI_Cancel(&req));
        double took = MPI_Wtime() - t0;
        CHECK_MPI(MPI_Request_get_status(req, &flag, &status));
        if (wait_ms == 0) {
            CHECK(took < 0.25, "AXON_CANCEL_WAIT_MS=0: MPI_Cancel took %.3f s", took);
            CHECK(flag == 0, "complete although the receiver could not answer yet");
        } else {
            CHECK(took >= wait_ms / 1000.0 && took < 0.9, "AXON_CANCEL_WAIT_MS=%ld: MPI_Cancel took %.3f s",
                  wait_ms, took);
        }
        CHECK_MPI(MPI_Wait(&req, &status));
        CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
        CHECK(cancelled, "the unmatched synchronous send was not cancelled");
    } else {
        usleep(1500 * 1000);
        int flag = -1;
        CHECK_MPI(MPI_Iprobe(0, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        /* The withdrawal may still be on its way: a second look after the barrier. */
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Iprobe(0, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0, "the cancelled message is still there to receive");
    }
    if (rank == 0) CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Finalize());
    return report("cancel_wait");
}
