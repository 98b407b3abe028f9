/* Single-completion calls never write status.MPI_ERROR (MPI-4.1 section 3.2.5),
 * including their MPI_PROC_NULL short cuts: Probe, Iprobe, Mprobe, Improbe,
 * Mrecv and Recv from MPI_PROC_NULL fill source/tag/count but keep the
 * caller's MPI_ERROR value. A real message through Mprobe+Mrecv does the same. */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

static void fresh(MPI_Status *s, int error) {
    memset(s, 0xab, sizeof *s);
    s->MPI_ERROR = error;
}

static void check_null_status(const MPI_Status *s, int error, const char *what) {
    int count = -1;
    MPI_Get_count(s, MPI_INT, &count);
    CHECK(s->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d", what, s->MPI_SOURCE);
    CHECK(s->MPI_TAG == MPI_ANY_TAG, "%s: tag %d", what, s->MPI_TAG);
    CHECK(s->MPI_ERROR == error, "%s: MPI_ERROR became %d, expected it kept at %d", what, s->MPI_ERROR, error);
    CHECK(count == 0, "%s: count %d", what, count);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag = 0, buf[2] = {7, 8};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Status s;
    MPI_Message msg;

    fresh(&s, MPI_ERR_DIMS);
    CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &s));
    check_null_status(&s, MPI_ERR_DIMS, "Probe");

    fresh(&s, MPI_ERR_DIMS);
    CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &s));
    CHECK(flag == 1, "Iprobe(PROC_NULL) flag %d", flag);
    check_null_status(&s, MPI_ERR_DIMS, "Iprobe");

    fresh(&s, MPI_ERR_DIMS);
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &msg, &s));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) message is not MPI_MESSAGE_NO_PROC");
    check_null_status(&s, MPI_ERR_DIMS, "Mprobe");
    fresh(&s, MPI_ERR_TOPOLOGY);
    CHECK_MPI(MPI_Mrecv(buf, 2, MPI_INT, &msg, &s));
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv did not reset the message");
    CHECK(buf[0] == 7 && buf[1] == 8, "Mrecv(NO_PROC) wrote the buffer");
    check_null_status(&s, MPI_ERR_TOPOLOGY, "Mrecv(NO_PROC)");

    fresh(&s, MPI_ERR_DIMS);
    flag = 0;
    CHECK_MPI(MPI_Improbe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &msg, &s));
    CHECK(flag == 1, "Improbe(PROC_NULL) flag %d", flag);
    check_null_status(&s, MPI_ERR_DIMS, "Improbe");
    MPI_Request req = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Imrecv(buf, 2, MPI_INT, &msg, &req));
    fresh(&s, MPI_ERR_TOPOLOGY);
    CHECK_MPI(MPI_Wait(&req, &s));
    check_null_status(&s, MPI_ERR_TOPOLOGY, "Imrecv(NO_PROC)+Wait");

    fresh(&s, MPI_ERR_TOPOLOGY);
    CHECK_MPI(MPI_Recv(buf, 2, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &s));
    check_null_status(&s, MPI_ERR_TOPOLOGY, "Recv(PROC_NULL)");

    /* A real message: rank 0 sends to the last rank (itself at np 1). */
    int last = size - 1;
    MPI_Request sreq = MPI_REQUEST_NULL;
    if (rank == 0) {
        int out[2] = {0x1234, 0x5678};
        MPI_Isend(out, 2, MPI_INT, last, 5, MPI_COMM_WORLD, &sreq);
        if (last != 0) MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    }
    if (rank == last) {
        int count = -1;
        fresh(&s, MPI_ERR_DIMS);
        CHECK_MPI(MPI_Mprobe(0, 5, MPI_COMM_WORLD, &msg, &s));
        MPI_Get_count(&s, MPI_INT, &count);
        CHECK(s.MPI_SOURCE == 0 && s.MPI_TAG == 5 && count == 2, "Mprobe status %d/%d/%d", s.MPI_SOURCE,
              s.MPI_TAG, count);
        CHECK(s.MPI_ERROR == MPI_ERR_DIMS, "Mprobe MPI_ERROR became %d", s.MPI_ERROR);
        fresh(&s, MPI_ERR_TOPOLOGY);
        CHECK_MPI(MPI_Mrecv(buf, 2, MPI_INT, &msg, &s));
        CHECK(buf[0] == 0x1234 && buf[1] == 0x5678, "Mrecv data %x %x", buf[0], buf[1]);
        CHECK(s.MPI_ERROR == MPI_ERR_TOPOLOGY, "Mrecv MPI_ERROR became %d", s.MPI_ERROR);
        if (last == 0) MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return report("p2p_status_error_kept");
}
