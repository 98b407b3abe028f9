/* MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect between the two halves
 * of MPI_COMM_WORLD (and, with "server FILE" / "client FILE", between two
 * separate mpirun jobs that meet through a port name written to FILE).
 *
 * Over the new intercommunicator: remote size, exact data both ways, Bcast
 * and Allreduce across the groups, Intercomm_merge (ordering by `high`),
 * Comm_disconnect. Error classes: a malformed port name and a port nobody
 * accepts on (info "timeout" 1 s) give MPI_ERR_PORT; closing a port twice,
 * and accepting on or connecting to a closed port, give MPI_ERR_PORT. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

static void exercise(MPI_Comm inter, int accepting)
{
    int lrank, lsize, rsize, flag = 0;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);

    /* The remote group's size is known to both sides; check it by sending it. */
    if (lrank == 0) {
        int mine = lsize, theirs = -1;
        CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE));
        CHECK(theirs == rsize, "remote says its size is %d, remote_size is %d", theirs, rsize);
    }

    /* Every local rank r sends to remote rank r % rsize a pattern, and receives
     * from each remote rank that targets it. */
    enum { N = 20000 };
    unsigned char *buf = xmalloc(N);
    int dest = lrank % rsize;
    unsigned seed = (accepting ? 100 : 200) + lrank;
    fill_pattern(buf, N, seed);
    MPI_Request req;
    CHECK_MPI(MPI_Isend(buf, N, MPI_BYTE, dest, 7, inter, &req));
    unsigned char *in = xmalloc(N);
    for (int r = 0; r < rsize; r++) {
        if (r % lsize != lrank) continue;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(in, N, MPI_BYTE, r, 7, inter, &st));
        CHECK(st.MPI_SOURCE == r, "source %d, expected %d", st.MPI_SOURCE, r);
        CHECK_PATTERN(in, N, (unsigned)((accepting ? 200 : 100) + r), "message from remote %d", r);
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    free(in);
    free(buf);

    /* Bcast from the accepting group's rank 0 to the connecting group. */
    int value = accepting ? 4242 : -1;
    int root = accepting ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, root, inter));
    if (!accepting) CHECK(value == 4242, "bcast gave %d", value);

    /* Allreduce: each group receives the sum over the other group. */
    int contrib = (accepting ? 1000 : 1) * (lrank + 1), sum = 0;
    CHECK_MPI(MPI_Allreduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, inter));
    int expect = (accepting ? 1 : 1000) * rsize * (rsize + 1) / 2;
    CHECK(sum == expect, "allreduce gave %d, expected %d", sum, expect);

    /* Merge: the accepting group asks for high = 0, so it comes first. */
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, accepting ? 0 : 1, &merged));
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == lsize + rsize, "merged size %d", msize);
    CHECK(mrank == (accepting ? lrank : rsize + lrank), "merged rank %d", mrank);
    int one = mrank, total = 0;
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, merged));
    CHECK(total == msize * (msize - 1) / 2, "merged allreduce %d", total);
    CHECK_MPI(MPI_Comm_free(&merged));

    CHECK_MPI(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL, "disconnect did not set MPI_COMM_NULL");
}

static void error_classes(void)
{
    MPI_Comm inter = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_connect("not-a-port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    CHECK(error_class_of(rc) == MPI_ERR_PORT, "bad port name: class %d", error_class_of(rc));

    char port[MPI_MAX_PORT_NAME];
    CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK(strlen(port) > 0 && strlen(port) < MPI_MAX_PORT_NAME, "port name");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "timeout", "1");
    rc = MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &inter);
    CHECK(error_class_of(rc) == MPI_ERR_PORT, "nobody accepts: class %d", error_class_of(rc));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Close_port(port));
    rc = MPI_Close_port(port);
    CHECK(error_class_of(rc) == MPI_ERR_PORT, "closing twice: class %d", error_class_of(rc));
    rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    CHECK(error_class_of(rc) == MPI_ERR_PORT, "accept on a closed port: class %d", error_class_of(rc));
    rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    CHECK(error_class_of(rc) == MPI_ERR_PORT, "connect to a closed port: class %d", error_class_of(rc));
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (argc >= 3 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "client"))) {
        /* Two jobs: the server writes its port to FILE, the client reads it. */
        int server = !strcmp(argv[1], "server");
        char port[MPI_MAX_PORT_NAME] = "";
        MPI_Comm inter;
        if (server) {
            if (rank == 0) {
                CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
                char tmp[4096];
                snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
                FILE *f = fopen(tmp, "w");
                fprintf(f, "%s\n", port);
                fclose(f);
                rename(tmp, argv[2]);
            }
            CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
            exercise(inter, 1);
            if (rank == 0) CHECK_MPI(MPI_Close_port(port));
        } else {
            if (rank == 0) {
                FILE *f = NULL;
                for (int i = 0; i < 300 && !(f = fopen(argv[2], "r")); i++) usleep(20000);
                CHECK(f != NULL, "no port file");
                if (f) {
                    if (!fgets(port, sizeof port, f)) port[0] = 0;
                    fclose(f);
                    port[strcspn(port, "\n")] = 0;
                }
            }
            CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
            exercise(inter, 0);
        }
    } else {
        if (rank == 0) error_classes();
        if (size >= 2) {
            /* Lower half accepts, upper half connects. */
            int half = size / 2, accepting = rank < half;
            MPI_Comm local, inter;
            MPI_Comm_split(MPI_COMM_WORLD, accepting, rank, &local);
            char port[MPI_MAX_PORT_NAME] = "";
            if (rank == 0) CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
            if (accepting)
                CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, local, &inter));
            else
                CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, local, &inter));
            exercise(inter, accepting);
            if (rank == 0) CHECK_MPI(MPI_Close_port(port));
            MPI_Comm_free(&local);
        }
    }
    MPI_Finalize();
    return report("dpm_accept_connect");
}
