/* C code that uses the classic Fortran interoperability names compiles and
 * works with <mpi_fortran.h>: MPI_Fint, MPI_<handle>_c2f / _f2c and
 * MPI_Status_c2f / _f2c.
 *
 *   - predefined handles convert to their ABI values and back;
 *   - user handles of every kind (communicator, datatype, op, group, info,
 *     errhandler, request, window, message, session) convert to one stable
 *     integer and back to the same handle, and the converted handle works
 *     (a dup'd communicator carries a message, a derived type packs its
 *     layout, a user op reduces);
 *   - a status received from a peer survives c2f / f2c: source, tag, error
 *     and MPI_Get_count of the converted copy;
 *   - MPI_STATUS_IGNORE, MPI_F_STATUS_IGNORE, MPI_F_STATUSES_IGNORE or a null
 *     Fortran status gives MPI_ERR_ARG; the two Fortran ignore addresses are
 *     distinct, not null, and not MPI_STATUS_IGNORE;
 *   - MPI_F08_status and MPI_Status_c2f08 / f082c / f2f08 / f082f carry the
 *     same integers, and refuse the f08 ignore addresses. */
#include "../mpi/check.h"

#include <mpi_fortran.h>

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

static void check_predefined(void)
{
    CHECK(MPI_Comm_c2f(MPI_COMM_WORLD) == 0x101, "MPI_COMM_WORLD -> %d", MPI_Comm_c2f(MPI_COMM_WORLD));
    CHECK(MPI_Comm_f2c(0x101) == MPI_COMM_WORLD, "0x101 -> MPI_COMM_WORLD");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_SELF)) == MPI_COMM_SELF, "MPI_COMM_SELF round trip");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_NULL)) == MPI_COMM_NULL, "MPI_COMM_NULL round trip");
    CHECK(MPI_Type_c2f(MPI_DOUBLE) == 0x214, "MPI_DOUBLE -> %d", MPI_Type_c2f(MPI_DOUBLE));
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_INTEGER)) == MPI_INTEGER, "MPI_INTEGER round trip");
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_MAXLOC)) == MPI_MAXLOC, "MPI_MAXLOC round trip");
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "MPI_GROUP_EMPTY round trip");
    CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_ENV)) == MPI_INFO_ENV, "MPI_INFO_ENV round trip");
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN,
          "MPI_ERRORS_RETURN round trip");
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "MPI_REQUEST_NULL round trip");
    CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "MPI_WIN_NULL round trip");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "MPI_FILE_NULL round trip");
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC,
          "MPI_MESSAGE_NO_PROC round trip");
    CHECK(MPI_Session_f2c(MPI_Session_c2f(MPI_SESSION_NULL)) == MPI_SESSION_NULL, "MPI_SESSION_NULL round trip");
    /* The profiling names map to the same conversions. */
    CHECK(PMPI_Comm_c2f(MPI_COMM_WORLD) == 0x101, "PMPI_Comm_c2f");
    CHECK(PMPI_Type_f2c(0x214) == MPI_DOUBLE, "PMPI_Type_f2c");
}

/* A dup'd communicator, passed through its integer, still carries messages. */
static void check_comm(int rank, int size)
{
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Fint f = MPI_Comm_c2f(dup);
    CHECK(f != MPI_Comm_c2f(MPI_COMM_WORLD) && f == MPI_Comm_c2f(dup), "user communicator: %d, stable", f);
    MPI_Comm back = MPI_Comm_f2c(f);
    CHECK(back == dup, "MPI_Comm_f2c(MPI_Comm_c2f(dup)) is dup");
    int sum = 0, mine = rank + 1;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, back));
    CHECK(sum == size * (size + 1) / 2, "allreduce on the converted communicator: %d", sum);
    CHECK_MPI(MPI_Comm_free(&dup));
}

/* Derived type, user op, group, info, errhandler, persistent request. */
static void check_objects(int rank, int size)
{
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    MPI_Datatype vec_back = MPI_Type_f2c(MPI_Type_c2f(vec));
    CHECK(vec_back == vec, "derived type round trip");
    int src[6] = {1, 2, 3, 4, 5, 6}, packed[3] = {0, 0, 0}, pos = 0;
    CHECK_MPI(MPI_Pack(src, 1, vec_back, packed, sizeof packed, &pos, MPI_COMM_SELF));
    CHECK(pos == 12 && packed[0] == 1 && packed[1] == 3 && packed[2] == 5, "converted type packs 1 3 5: %d %d %d",
          packed[0], packed[1], packed[2]);
    CHECK_MPI(MPI_Type_free(&vec));

    MPI_Op op;
    CHECK_MPI(MPI_Op_create(add_ints, 1, &op));
    MPI_Op op_back = MPI_Op_f2c(MPI_Op_c2f(op));
    CHECK(op_back == op, "user op round trip");
    int one = 1, total = 0;
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, op_back, MPI_COMM_WORLD));
    CHECK(total == size, "converted user op sums to %d", total);
    CHECK_MPI(MPI_Op_free(&op));

    MPI_Group world_group;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    MPI_Group group_back = MPI_Group_f2c(MPI_Group_c2f(world_group));
    int group_size = -1;
    CHECK_MPI(MPI_Group_size(group_back, &group_size));
    CHECK(group_back == world_group && group_size == size, "group round trip, size %d", group_size);
    CHECK_MPI(MPI_Group_free(&world_group));

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "axon_key", "value"));
    MPI_Info info_back = MPI_Info_f2c(MPI_Info_c2f(info));
    char value[16] = "";
    int flag = 0, len = sizeof value;
    CHECK_MPI(MPI_Info_get_string(info_back, "axon_key", &len, value, &flag));
    CHECK(info_back == info && flag && strcmp(value, "value") == 0, "info round trip: '%s'", value);
    CHECK_MPI(MPI_Info_free(&info));

    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(eh)) == eh, "errhandler round trip");
    CHECK_MPI(MPI_Errhandler_free(&eh));

    /* A persistent receive from myself, started through its integer. */
    int payload = 40 + rank, got = -1;
    MPI_Request req;
    CHECK_MPI(MPI_Recv_init(&got, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, &req));
    MPI_Fint freq = MPI_Request_c2f(req);
    MPI_Request req_back = MPI_Request_f2c(freq);
    CHECK(req_back == req, "request round trip");
    CHECK_MPI(MPI_Start(&req_back));
    CHECK_MPI(MPI_Send(&payload, 1, MPI_INT, rank, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&req_back, MPI_STATUS_IGNORE));
    CHECK(got == payload, "persistent receive through the converted request: %d", got);
    CHECK_MPI(MPI_Request_free(&req_back));

    int cell = 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(MPI_Win_f2c(MPI_Win_c2f(win)) == win, "window round trip");
    CHECK_MPI(MPI_Win_free(&win));
}

/* A status from a real receive, through Fortran integers and back. */
static void check_status(int rank, int size)
{
    if (size < 2) return;
    int data[5] = {0};
    if (rank == 1) {
        int out[5] = {1, 2, 3, 4, 5};
        CHECK_MPI(MPI_Send(out, 5, MPI_INT, 0, 42, MPI_COMM_WORLD));
    } else if (rank == 0) {
        MPI_Status status, back;
        CHECK_MPI(MPI_Recv(data, 5, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        MPI_Fint fstatus[MPI_F_STATUS_SIZE];
        CHECK(MPI_Status_c2f(&status, fstatus) == MPI_SUCCESS, "MPI_Status_c2f");
        CHECK(fstatus[MPI_F_SOURCE] == 1 && fstatus[MPI_F_TAG] == 42, "Fortran status: source %d tag %d",
              fstatus[MPI_F_SOURCE], fstatus[MPI_F_TAG]);
        memset(&back, 0xff, sizeof back);
        CHECK(MPI_Status_f2c(fstatus, &back) == MPI_SUCCESS, "MPI_Status_f2c");
        int count = -1;
        CHECK_MPI(MPI_Get_count(&back, MPI_INT, &count));
        CHECK(back.MPI_SOURCE == 1 && back.MPI_TAG == 42 && count == 5,
              "converted status: source %d tag %d count %d", back.MPI_SOURCE, back.MPI_TAG, count);
        CHECK(memcmp(&back, &status, sizeof status) == 0, "the status survives c2f/f2c unchanged");
        CHECK(MPI_Status_c2f(MPI_STATUS_IGNORE, fstatus) == MPI_ERR_ARG, "c2f of MPI_STATUS_IGNORE");
        CHECK(MPI_Status_f2c(NULL, &back) == MPI_ERR_ARG, "f2c of a null Fortran status");
        CHECK(MPI_F_STATUS_IGNORE != NULL && MPI_F_STATUSES_IGNORE != NULL &&
                  MPI_F_STATUS_IGNORE != MPI_F_STATUSES_IGNORE,
              "MPI_F_STATUS_IGNORE %p, MPI_F_STATUSES_IGNORE %p", (void *)MPI_F_STATUS_IGNORE,
              (void *)MPI_F_STATUSES_IGNORE);
        CHECK(MPI_Status_c2f(&back, MPI_F_STATUS_IGNORE) == MPI_ERR_ARG, "c2f into MPI_F_STATUS_IGNORE");
        CHECK(MPI_Status_c2f(&back, MPI_F_STATUSES_IGNORE) == MPI_ERR_ARG, "c2f into MPI_F_STATUSES_IGNORE");
        CHECK(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back) == MPI_ERR_ARG, "f2c of MPI_F_STATUS_IGNORE");
        /* TYPE(MPI_Status) seen from C: the same integers by name. */
        MPI_F08_status f08, f08_back;
        MPI_Fint f_again[MPI_F_STATUS_SIZE];
        CHECK(sizeof f08 == MPI_F_STATUS_SIZE * sizeof(MPI_Fint), "MPI_F08_status is %d bytes", (int)sizeof f08);
        CHECK(MPI_Status_c2f08(&status, &f08) == MPI_SUCCESS, "MPI_Status_c2f08");
        CHECK(f08.MPI_SOURCE == 1 && f08.MPI_TAG == 42 && f08.MPI_ERROR == status.MPI_ERROR,
              "f08 status: source %d tag %d", f08.MPI_SOURCE, f08.MPI_TAG);
        CHECK(MPI_Status_f082f(&f08, f_again) == MPI_SUCCESS &&
                  memcmp(f_again, fstatus, sizeof fstatus) == 0,
              "MPI_Status_f082f gives the Fortran status c2f gave");
        CHECK(MPI_Status_f2f08(f_again, &f08_back) == MPI_SUCCESS && memcmp(&f08_back, &f08, sizeof f08) == 0,
              "MPI_Status_f2f08 round trip");
        memset(&back, 0xff, sizeof back);
        CHECK(MPI_Status_f082c(&f08, &back) == MPI_SUCCESS && memcmp(&back, &status, sizeof status) == 0,
              "MPI_Status_f082c gives the C status back");
        CHECK((void *)MPI_F08_STATUS_IGNORE == (void *)MPI_F_STATUS_IGNORE &&
                  (void *)MPI_F08_STATUSES_IGNORE == (void *)MPI_F_STATUSES_IGNORE,
              "the f08 ignore addresses are the Fortran ones");
        CHECK(MPI_Status_c2f08(&status, MPI_F08_STATUS_IGNORE) == MPI_ERR_ARG, "c2f08 into MPI_F08_STATUS_IGNORE");
        CHECK(MPI_Status_f082c(MPI_F08_STATUSES_IGNORE, &back) == MPI_ERR_ARG, "f082c of MPI_F08_STATUSES_IGNORE");
        CHECK(MPI_Status_f2f08(MPI_F_STATUS_IGNORE, &f08) == MPI_ERR_ARG, "f2f08 of MPI_F_STATUS_IGNORE");
    }
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is a C int by default");
    check_predefined();
    check_comm(rank, size);
    check_objects(rank, size);
    check_status(rank, size);

    /* MPI_Message: a matched probe's message, through its integer. */
    if (rank == 0) {
        int v = 9;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));
        MPI_Message msg;
        CHECK_MPI(MPI_Mprobe(0, 3, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE));
        MPI_Message msg_back = MPI_Message_f2c(MPI_Message_c2f(msg));
        CHECK(msg_back == msg, "message round trip");
        int r = 0;
        CHECK_MPI(MPI_Mrecv(&r, 1, MPI_INT, &msg_back, MPI_STATUS_IGNORE));
        CHECK(r == 9, "MPI_Mrecv through the converted message: %d", r);
    }
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    CHECK(MPI_Session_f2c(MPI_Session_c2f(session)) == session, "session round trip");
    CHECK_MPI(MPI_Session_finalize(&session));
    CHECK_MPI(MPI_Finalize());
    return report("fortran_handles");
}
