/* Session buffers for buffered sends (MPI-4.1 3.6): used by communicators
 * derived from the session that have no buffer of their own. */
#include "../mpi/check.h"

int main(void)
{
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_Group group;
    MPI_Comm comm;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    CHECK_MPI(MPI_Comm_create_from_group(group, "org.axon.test.bsend", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    /* Without any buffer a buffered send has nowhere to go. */
    int value = rank;
    int rc = MPI_Bsend(&value, 1, MPI_INT, (rank + 1) % size, 1, comm);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "bsend without a buffer: class %d", cls);

    enum { COUNT = 4, LEN = 1000 };
    int size_needed = COUNT * (LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *buffer = malloc((size_t)size_needed);
    CHECK_MPI(MPI_Session_attach_buffer(session, buffer, size_needed));
    rc = MPI_Session_attach_buffer(session, buffer, size_needed);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "second attach: class %d", cls);

    int msg[COUNT][LEN];
    for (int m = 0; m < COUNT; m++)
        for (int i = 0; i < LEN; i++) msg[m][i] = rank * 1000000 + m * 10000 + i;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int m = 0; m < COUNT; m++) CHECK_MPI(MPI_Bsend(msg[m], LEN, MPI_INT, right, m, comm));
    memset(msg, 0, sizeof msg);  /* the data went into the buffer */
    int in[LEN];
    for (int m = 0; m < COUNT; m++) {
        CHECK_MPI(MPI_Recv(in, LEN, MPI_INT, left, m, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < LEN; i++)
            if (in[i] != left * 1000000 + m * 10000 + i) {
                CHECK(0, "message %d element %d = %d", m, i, in[i]);
                break;
            }
    }
    CHECK_MPI(MPI_Session_flush_buffer(session));
    MPI_Request req;
    CHECK_MPI(MPI_Session_iflush_buffer(session, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    void *addr = NULL;
    int got_size = 0;
    CHECK_MPI(MPI_Session_detach_buffer(session, &addr, &got_size));
    CHECK(addr == buffer && got_size == size_needed, "detach gave %p/%d", addr, got_size);
    rc = MPI_Session_detach_buffer(session, &addr, &got_size);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "detach with nothing attached: class %d", cls);

    /* Automatic buffering, left attached: MPI_Session_finalize delivers. */
    CHECK_MPI(MPI_Session_attach_buffer(session, MPI_BUFFER_AUTOMATIC, 0));
    CHECK_MPI(MPI_Bsend(&value, 1, MPI_INT, right, 99, comm));
    int got = -1;
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, left, 99, comm, MPI_STATUS_IGNORE));
    CHECK(got == left, "automatic buffer: got %d", got);

    free(buffer);
    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    CHECK_MPI(MPI_Session_finalize(&session));
    return report("session_bsend");
}
