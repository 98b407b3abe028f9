/* Argument errors of the collectives, with MPI_ERRORS_RETURN: the error
 * class each call returns (as MPICH reports it). */
#include "../mpi/check.h"
#include "../tools/cvar.h"

static int cls(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}
#define EXPECT_CLASS(call, want)                                                       \
    do {                                                                               \
        int got_ = cls(call);                                                          \
        CHECK(got_ == (want), "%s: class %d, want %d (%s)", #call, got_, want, #want); \
    } while (0)

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt) { (void)in, (void)inout, (void)len, (void)dt; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* invalid-communicator errors */
    MPI_Comm w = MPI_COMM_WORLD;
    int buf[64] = {0}, rbuf[64] = {0}, counts[16], displs[16];
    for (int i = 0; i < 16; ++i) counts[i] = 1, displs[i] = i;
    MPI_Request r;
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);

    /* communicator */
    EXPECT_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Ibarrier(MPI_COMM_NULL, &r), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM);
    /* count */
    EXPECT_CLASS(MPI_Bcast(buf, -1, MPI_INT, 0, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, -1, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allgather(buf, -1, MPI_INT, rbuf, 1, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Reduce_scatter_block(buf, rbuf, -1, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    /* datatype */
    EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Bcast(buf, 1, uncommitted, 0, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_DATATYPE_NULL, MPI_SUM, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Alltoall(buf, 1, MPI_INT, rbuf, 1, MPI_DATATYPE_NULL, w), MPI_ERR_TYPE);
    /* root */
    EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, size, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, -1, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Reduce(buf, rbuf, 1, MPI_INT, MPI_SUM, size, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Gather(buf, 1, MPI_INT, rbuf, 1, MPI_INT, -3, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Scatter(buf, 1, MPI_INT, rbuf, 1, MPI_INT, size + 1, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Ibcast(buf, 1, MPI_INT, size, w, &r), MPI_ERR_ROOT);
    /* op */
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_FLOAT, MPI_BAND, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce(buf, rbuf, 1, MPI_INT, MPI_OP_NULL, 0, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Scan(buf, rbuf, 1, MPI_DOUBLE, MPI_LXOR, w), MPI_ERR_OP);
    /* buffers */
    EXPECT_CLASS(MPI_Allreduce(buf, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Allreduce(buf, buf, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Allgather(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Bcast(NULL, 1, MPI_INT, 0, w), MPI_ERR_BUFFER);
    if (size > 1 && rank == 1) {
        /* MPI_IN_PLACE only at the root (checked locally) */
        EXPECT_CLASS(MPI_Reduce(MPI_IN_PLACE, rbuf, 1, MPI_INT, MPI_SUM, 0, w), MPI_ERR_BUFFER);
        EXPECT_CLASS(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, rbuf, 1, MPI_INT, 0, w), MPI_ERR_BUFFER);
    }
    /* array arguments */
    EXPECT_CLASS(MPI_Allgatherv(buf, 1, MPI_INT, rbuf, NULL, displs, MPI_INT, w), MPI_ERR_ARG);
    counts[0] = -1;
    EXPECT_CLASS(MPI_Allgatherv(buf, 1, MPI_INT, rbuf, counts, displs, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Reduce_scatter(buf, rbuf, counts, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    counts[0] = 1;
    /* request */
    EXPECT_CLASS(MPI_Iallreduce(buf, rbuf, 1, MPI_INT, MPI_SUM, w, NULL), MPI_ERR_ARG);
    /* Axon: a forced algorithm that is no item of the control variable's
     * enumeration is refused by MPI_T_cvar_write (MPI_T_ERR_INVALID), and
     * the calls go on with the previous choice; a valid one works. */
    if (cvar_library_is_axon()) {
        CHECK(cvar_write_int("AXON_COLL_BCAST_ALGORITHM", 1000) == MPI_T_ERR_INVALID, "item 1000 accepted");
        CHECK(cvar_write_int("AXON_COLL_BCAST_ALGORITHM", -1) == MPI_T_ERR_INVALID, "item -1 accepted");
        EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, 0, w), MPI_SUCCESS);
        force_algorithm("bcast", "pipeline");
        EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, 0, w), MPI_SUCCESS);
        force_algorithm("bcast", "auto");
    }
    /* a user op on any type is fine; after all the errors, a real call works */
    MPI_Op op;
    MPI_Op_create(user_fn, 1, &op);
    buf[0] = rank;
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_INT, MPI_SUM, w), MPI_SUCCESS);
    CHECK(rbuf[0] == size * (size - 1) / 2, "allreduce after errors: %d", rbuf[0]);
    EXPECT_CLASS(MPI_Allreduce(buf, rbuf, 1, MPI_DOUBLE_INT, op, w), MPI_SUCCESS);
    MPI_Op_free(&op);
    MPI_Type_free(&uncommitted);
    MPI_Finalize();
    return report("coll_errors");
}
