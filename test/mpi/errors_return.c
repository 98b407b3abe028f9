/* errors_return: with MPI_ERRORS_RETURN on the communicator, every bad
 * argument of a point-to-point call returns its error class (rank, tag,
 * count, datatype, communicator, buffer, root, op), a too-small receive
 * returns MPI_ERR_TRUNCATE with the status telling it, and the library keeps
 * working afterwards. Errors of calls without a valid communicator go to
 * MPI_COMM_SELF's handler. Error_class/Error_string and Comm_get_errhandler
 * work. */
#include "check.h"

#define EXPECT_CLASS(call, expected)                                                     \
    do {                                                                                 \
        int got_ = error_class_of(call);                                                 \
        CHECK(got_ == (expected), "%s returned class %d, expected %s (%d)", #call, got_, \
              #expected, (expected));                                                    \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK(handler == MPI_ERRORS_ARE_FATAL, "default handler of MPI_COMM_WORLD is not ERRORS_ARE_FATAL");
    CHECK_MPI(MPI_Errhandler_free(&handler));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK(handler == MPI_ERRORS_RETURN, "Comm_get_errhandler after set");
    CHECK_MPI(MPI_Errhandler_free(&handler));

    int buffer[4] = {0};
    MPI_Request request = MPI_REQUEST_NULL;
    /* ranks */
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Recv(buffer, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Irecv(buffer, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &request), MPI_ERR_RANK);
    CHECK(request == MPI_REQUEST_NULL, "failed Irecv produced a request");
    /* tags */
    int *tag_ub = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && tag_ub && *tag_ub >= 32767, "MPI_TAG_UB missing or too small");
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, rank, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, rank, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    if (flag && tag_ub && *tag_ub < 0x7fffffff)
        EXPECT_CLASS(MPI_Isend(buffer, 1, MPI_INT, rank, *tag_ub + 1, MPI_COMM_WORLD, &request), MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Recv(buffer, 1, MPI_INT, rank, -3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
    /* counts, types, buffers */
    EXPECT_CLASS(MPI_Send(buffer, -1, MPI_INT, rank, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Irecv(buffer, -2, MPI_INT, rank, 0, MPI_COMM_WORLD, &request), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_DATATYPE_NULL, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Send(NULL, 1, MPI_INT, rank, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Datatype uncommitted;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    EXPECT_CLASS(MPI_Send(buffer, 1, uncommitted, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_MPI(MPI_Type_free(&uncommitted));
    /* communicators: the error goes to MPI_COMM_SELF's handler (set to return) */
    EXPECT_CLASS(MPI_Send(buffer, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    int dummy;
    EXPECT_CLASS(MPI_Comm_size(MPI_COMM_NULL, &dummy), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Comm_rank(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    /* requests */
    EXPECT_CLASS(MPI_Wait(NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG); /* as MPICH */
    /* collectives of the foundation */
    EXPECT_CLASS(MPI_Bcast(buffer, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Reduce(buffer, buffer + 2, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Allreduce(buffer, buffer + 2, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);

    /* truncation: the status says MPI_ERR_TRUNCATE, the posted part is filled */
    int message[4] = {11, 22, 33, 44}, small[2] = {0, 0}, guard[1] = {-1};
    (void)guard;
    CHECK_MPI(MPI_Isend(message, 4, MPI_INT, rank, 9, MPI_COMM_WORLD, &request));
    MPI_Status status;
    EXPECT_CLASS(MPI_Recv(small, 2, MPI_INT, rank, 9, MPI_COMM_WORLD, &status), MPI_ERR_TRUNCATE);
    CHECK(status.MPI_SOURCE == rank && status.MPI_TAG == 9, "truncated receive status envelope");
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    /* a large (rendezvous) message into a small buffer, through Irecv + Wait */
    size_t big = 1 << 20;
    unsigned char *large = xmalloc(big), *half = xmalloc(big / 2);
    fill_pattern(large, big, 5);
    MPI_Request pair[2];
    CHECK_MPI(MPI_Isend(large, (int)big, MPI_BYTE, rank, 10, MPI_COMM_WORLD, &pair[0]));
    CHECK_MPI(MPI_Irecv(half, (int)(big / 2), MPI_BYTE, rank, 10, MPI_COMM_WORLD, &pair[1]));
    MPI_Status statuses[2];
    int rc = MPI_Waitall(2, pair, statuses);
    CHECK(error_class_of(rc) == MPI_ERR_IN_STATUS, "Waitall with a truncated receive: class %d",
          error_class_of(rc));
    CHECK(error_class_of(statuses[1].MPI_ERROR) == MPI_ERR_TRUNCATE, "receive status error class %d",
          error_class_of(statuses[1].MPI_ERROR));
    CHECK(statuses[0].MPI_ERROR == MPI_SUCCESS, "send status error %d", statuses[0].MPI_ERROR);
    /* a shorter message ending inside an int of a derived receive type (6
       bytes into a vector of ints) is a signature mismatch, reported as
       truncation (as MPICH does); 8 bytes into a 4-int buffer is an ordinary
       short message */
    unsigned char six[6] = {1, 2, 3, 4, 5, 6};
    int wide[4] = {0, 0, 0, 0};
    MPI_Datatype spaced;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &spaced));
    CHECK_MPI(MPI_Type_commit(&spaced));
    CHECK_MPI(MPI_Isend(six, 6, MPI_BYTE, rank, 11, MPI_COMM_WORLD, &request));
    EXPECT_CLASS(MPI_Recv(wide, 1, spaced, rank, 11, MPI_COMM_WORLD, &status), MPI_ERR_TRUNCATE);
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Type_free(&spaced));
    CHECK_MPI(MPI_Isend(message, 2, MPI_INT, rank, 12, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Recv(wide, 4, MPI_INT, rank, 12, MPI_COMM_WORLD, &status));
    int got_count = -1;
    CHECK_MPI(MPI_Get_count(&status, MPI_INT, &got_count));
    CHECK(got_count == 2 && wide[0] == 11 && wide[1] == 22, "short receive: count %d, data %d %d",
          got_count, wide[0], wide[1]);
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));

    /* error strings */
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    CHECK_MPI(MPI_Error_string(MPI_ERR_TRUNCATE, text, &length));
    CHECK(length > 0 && (int)strlen(text) == length, "Error_string length %d for '%s'", length, text);
    int error_class = -1;
    CHECK_MPI(MPI_Error_class(MPI_ERR_RANK, &error_class));
    CHECK(error_class == MPI_ERR_RANK, "Error_class(MPI_ERR_RANK) = %d", error_class);
    EXPECT_CLASS(MPI_Error_class(-12345, &error_class), MPI_ERR_ARG);

    /* Still working: a ring exchange after all those errors. */
    int left = (rank + size - 1) % size, right = (rank + 1) % size, got = -1;
    CHECK_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, right, 3, &got, 1, MPI_INT, left, 3, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    CHECK(got == left, "ring after errors: got %d, expected %d", got, left);
    free(large);
    free(half);
    MPI_Finalize();
    return report("errors_return");
}
