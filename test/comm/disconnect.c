/* MPI_Comm_disconnect: a receive posted on the communicator before the call
 * has its data when the call returns (the request then completes at once),
 * the handle becomes MPI_COMM_NULL, intercommunicators disconnect too, and
 * MPI_COMM_WORLD / MPI_COMM_NULL give MPI_ERR_COMM. */
#include "../mpi/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int in[1000], out[1000];
    for (int i = 0; i < 1000; ++i) out[i] = rank * 100000 + i, in[i] = -1;
    MPI_Request recv, send;
    CHECK_MPI(MPI_Irecv(in, 1000, MPI_INT, left, 5, dup, &recv));
    CHECK_MPI(MPI_Isend(out, 1000, MPI_INT, right, 5, dup, &send));
    CHECK_MPI(MPI_Comm_disconnect(&dup));
    CHECK(dup == MPI_COMM_NULL, "handle not MPI_COMM_NULL after disconnect");
    int done = 0;
    MPI_Status st;
    CHECK_MPI(MPI_Test(&recv, &done, &st));
    CHECK(done, "the receive is not complete after MPI_Comm_disconnect");
    if (!done) MPI_Wait(&recv, &st);
    MPI_Wait(&send, MPI_STATUS_IGNORE);
    int bad = -1;
    for (int i = 0; i < 1000; ++i)
        if (in[i] != left * 100000 + i) { bad = i; break; }
    CHECK(bad < 0, "received data wrong at %d: %d", bad, bad < 0 ? 0 : in[bad]);

    /* An intercommunicator between the even and odd ranks. */
    if (size >= 2) {
        MPI_Comm half, inter;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &inter));
        int hrank;
        MPI_Comm_rank(half, &hrank);
        int value = -1, mine = 1000 + rank;
        if (hrank == 0) {
            CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 3, &value, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE));
            CHECK(value == 1000 + (rank % 2 ? 0 : 1), "intercomm value %d", value);
        }
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        CHECK(inter == MPI_COMM_NULL, "intercomm handle not MPI_COMM_NULL");
        CHECK_MPI(MPI_Comm_disconnect(&half));
    }

    int cls = -1;
    MPI_Comm world = MPI_COMM_WORLD, null = MPI_COMM_NULL;
    MPI_Error_class(MPI_Comm_disconnect(&world), &cls);
    CHECK(cls == MPI_ERR_COMM, "disconnect(MPI_COMM_WORLD): class %d", cls);
    MPI_Error_class(MPI_Comm_disconnect(&null), &cls);
    CHECK(cls == MPI_ERR_COMM, "disconnect(MPI_COMM_NULL): class %d", cls);
    MPI_Finalize();
    return report("comm_disconnect");
}
