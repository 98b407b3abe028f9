/* How a rank waits for one peer when waits do not spin (ranks outnumber
 * cores, or AXON_WAIT_SPIN=0): it polls while that peer last ran on another
 * CPU (AXON_WAIT_PEER_SPIN_US), and gives its core away at once when the
 * peer shares it. Two ranks make ROUND_TRIPS small round trips (exact data
 * checked) and then compare Axon's MPI_T counters with what the mode says:
 *
 *   wait_policy poll    ranks on different CPUs, polling on: most waits poll
 *                       (axon_pml_wait_peer_polls) and few yield;
 *   wait_policy yield   the same with AXON_WAIT_PEER_SPIN_US=0: no wait
 *                       polls, most yield;
 *   wait_policy same    both ranks on one CPU: no wait polls (the peer can
 *                       only answer once this rank yields), most yield.
 *
 * test/mpi/wait_policy.sh runs the three with the right placement. */
#include "counters.h"

enum { ROUND_TRIPS = 2000 };

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "poll";
    int provided;
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run with 2 ranks, not %d", size);
    int peer = 1 - rank;
    unsigned long long polls0 = axon_counter("axon_pml_wait_peer_polls");
    unsigned long long yields0 = axon_counter("axon_pml_wait_yields");
    for (int i = 0; i < ROUND_TRIPS && size == 2; i++) {
        int value = rank == 0 ? i : -1;
        if (rank == 0) {
            CHECK_MPI(MPI_Send(&value, 1, MPI_INT, peer, 1, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(value == 3 * i + 1, "round trip %d came back as %d", i, value);
        } else {
            CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(value == i, "round trip %d arrived as %d", i, value);
            value = 3 * value + 1;
            CHECK_MPI(MPI_Send(&value, 1, MPI_INT, peer, 2, MPI_COMM_WORLD));
        }
    }
    unsigned long long polls = axon_counter("axon_pml_wait_peer_polls") - polls0;
    unsigned long long yields = axon_counter("axon_pml_wait_yields") - yields0;
    printf("rank %d (%s): %llu waits polled, %llu yields in %d receives\n", rank, mode, polls, yields, ROUND_TRIPS);
    if (!strcmp(mode, "poll")) {
        /* Nearly every receive waits (the peer is a round trip away) and
           polls; a yield is left for the rare stretch longer than
           AXON_WAIT_PEER_SPIN_US (the peer preempted by something else). */
        CHECK(polls >= ROUND_TRIPS / 2, "only %llu of %d receives polled for the peer on another CPU", polls,
              ROUND_TRIPS);
        CHECK(yields <= ROUND_TRIPS / 2, "%llu yields in %d receives, though the peer runs on another CPU", yields,
              ROUND_TRIPS);
    } else {
        /* Every receive waits for the peer and gives the core away. */
        CHECK(polls == 0, "%llu waits polled (%s: every wait must yield)", polls, mode);
        CHECK(yields >= ROUND_TRIPS * 9 / 10, "only %llu yields in %d receives", yields, ROUND_TRIPS);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return report("wait_policy");
}
