/* Empty point-to-point messages named with MPI_DATATYPE_NULL.
 *
 * A message of count 0 moves no data, so it needs no type map: MPICH accepts
 * MPI_DATATYPE_NULL there (for sends, receives, MPI_PROC_NULL peers and
 * matched receives) and so does Axon. The status of a receive from
 * MPI_PROC_NULL is source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0 (MPI-4.1
 * section 3.10); an empty message from a real peer reports its source and
 * tag (MPICH before 4.2 got the MPI_Irecv status from MPI_PROC_NULL wrong,
 * its issue 6805). With count > 0, MPI_DATATYPE_NULL is still MPI_ERR_TYPE. */
#include "../mpi/check.h"

static int class_of(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Status st;
    MPI_Request req;
    int count = -1;

    /* Receives from MPI_PROC_NULL, blocking and non-blocking. */
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Waitall(1, &req, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "irecv PROC_NULL status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "recv PROC_NULL status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0, "PROC_NULL count %d", count);
    CHECK_MPI(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 10, MPI_COMM_WORLD));

    /* An empty message around a ring (to self when alone). */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 7, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, right, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "ring status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    count = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0, "ring count %d", count);
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, right, 8, NULL, 0, MPI_DATATYPE_NULL, left, 8,
                           MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 8, "sendrecv status %d/%d", st.MPI_SOURCE, st.MPI_TAG);

    /* A matched receive of an empty message. */
    MPI_Message msg;
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, 0, 9, MPI_COMM_SELF, &req));
    CHECK_MPI(MPI_Mprobe(0, 9, MPI_COMM_SELF, &msg, &st));
    CHECK_MPI(MPI_Mrecv(NULL, 0, MPI_DATATYPE_NULL, &msg, &st));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    /* Data with no datatype is still an error. */
    int buf[2] = { 0, 0 };
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Send(buf, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "send of 1 MPI_DATATYPE_NULL: class %d", class_of(rc));
    rc = MPI_Recv(buf, 2, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "recv of 2 MPI_DATATYPE_NULL: class %d", class_of(rc));

    MPI_Finalize();
    return report("p2p_empty_messages");
}
