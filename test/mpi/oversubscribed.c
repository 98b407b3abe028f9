/* oversubscribed: with more ranks than cores, waiting ranks must give their
 * core away. Pairs of ranks do many small round trips and a barrier every
 * 100; with busy-polling and 4 ranks on 2 cores each round trip can cost a
 * scheduler timeslice (several ms) and this takes minutes. The test fails if
 * the whole exchange takes longer than LIMIT_SECONDS (a healthy run needs
 * well under one second even oversubscribed). */
#include "check.h"

enum { ROUND_TRIPS = 5000, LIMIT_SECONDS = 30 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int partner = pair_partner(rank, size);
    double start = MPI_Wtime();
    int value = 0;
    for (int i = 0; i < ROUND_TRIPS; i++) {
        if (partner != rank) {
            if (rank < partner) {
                value = i;
                CHECK_MPI(MPI_Send(&value, 1, MPI_INT, partner, 1, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(value == i + 1, "round trip %d came back as %d", i, value);
            } else {
                CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                value++;
                CHECK_MPI(MPI_Send(&value, 1, MPI_INT, partner, 2, MPI_COMM_WORLD));
            }
        }
        if (i % 100 == 99)
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (check_failures)
            break;
    }
    double elapsed = MPI_Wtime() - start;
    CHECK(elapsed < LIMIT_SECONDS, "%d round trips took %.1f s", ROUND_TRIPS, elapsed);
    if (rank == 0)
        printf("oversubscribed: %d ranks, %d round trips in %.3f s\n", size, ROUND_TRIPS, elapsed);
    MPI_Finalize();
    return report("oversubscribed");
}
