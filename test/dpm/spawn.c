/* MPI_Comm_spawn: the parents (every rank of MPI_COMM_WORLD, root 1 when
 * there are two or more) start NCHILD children of this same program with
 * argv {"child", "<nparents>"}. Each child checks MPI_Comm_get_parent, the
 * sizes, its argv and MPI_APPNUM, and answers its rank squared to parent
 * rank (child rank % nparents); the parents check every answer, a Bcast
 * and an Allreduce across the intercommunicator, then both sides
 * disconnect and MPI_Comm_get_parent gives MPI_COMM_NULL in the child.
 * Then errors: a program that does not exist gives MPI_ERR_SPAWN with every
 * errcode MPI_ERR_SPAWN, and the job still ends with status 0.
 * Both sides then merge with the same `high` and build a second
 * intercommunicator with MPI_Intercomm_create over the first as peer.
 * With "keep", neither side disconnects: both finalize with the
 * intercommunicator still connected, which must neither hang nor crash.
 * Usage: spawn [NCHILD] [keep] (default 3) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

/* Both groups pass high = 0 to MPI_Intercomm_merge: they must still agree
 * on one order (one group first, each in its own rank order). Then a new
 * intercommunicator from MPI_Intercomm_create over the spawn
 * intercommunicator as peer: exact data from every remote rank. */
static void merge_and_recreate(MPI_Comm inter, int is_child)
{
    int lrank, lsize, rsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, 0, &merged));
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == lsize + rsize, "merged size %d", msize);
    int mine[2] = {is_child, lrank}, *all = xmalloc(2 * sizeof(int) * (size_t)msize);
    CHECK_MPI(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, merged));
    int first_is_child = all[0];
    int first_size = first_is_child == is_child ? lsize : rsize;
    for (int r = 0; r < msize; r++) {
        int expect_child = r < first_size ? first_is_child : !first_is_child;
        int expect_rank = r < first_size ? r : r - first_size;
        CHECK(all[2 * r] == expect_child && all[2 * r + 1] == expect_rank,
              "merged rank %d is (child %d, rank %d)", r, all[2 * r], all[2 * r + 1]);
    }
    free(all);
    MPI_Comm_free(&merged);

    MPI_Comm inter2;
    CHECK_MPI(MPI_Intercomm_create(MPI_COMM_WORLD, 0, inter, 0, 99, &inter2));
    int r2 = 0;
    MPI_Comm_remote_size(inter2, &r2);
    CHECK(r2 == rsize, "recreated remote size %d", r2);
    int v = 1000 * is_child + lrank;
    MPI_Request req;
    CHECK_MPI(MPI_Isend(&v, 1, MPI_INT, 0, 4, inter2, &req));
    if (lrank == 0) {
        for (int r = 0; r < r2; r++) {
            int w = -1;
            CHECK_MPI(MPI_Recv(&w, 1, MPI_INT, r, 4, inter2, MPI_STATUS_IGNORE));
            CHECK(w == 1000 * !is_child + r, "from remote %d got %d", r, w);
        }
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_free(&inter2));
}

static int child(int argc, char **argv)
{
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "no parent");
    if (parent == MPI_COMM_NULL) return 1;
    int rank, size, rsize, flag = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_remote_size(parent, &rsize);
    CHECK(argc >= 3 && atoi(argv[2]) == rsize, "argv[2] says %s parents, remote size %d", argc >= 3 ? argv[2] : "?", rsize);
    int *appnum = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(flag && *appnum == 0, "MPI_APPNUM %d (flag %d)", flag ? *appnum : -1, flag);
    int answer = rank * rank;
    CHECK_MPI(MPI_Send(&answer, 1, MPI_INT, rank % rsize, 11, parent));
    int value = -1;
    CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, 0, parent));
    CHECK(value == 777, "bcast from the parents gave %d", value);
    int mine = rank + 1, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, parent));
    CHECK(sum == 100 * rsize, "allreduce gave %d", sum);
    merge_and_recreate(parent, 1);
    if (argc < 4 || strcmp(argv[3], "keep") != 0) {
        CHECK_MPI(MPI_Comm_disconnect(&parent));
        MPI_Comm_get_parent(&parent);
        CHECK(parent == MPI_COMM_NULL, "parent still set after disconnect");
    }
    MPI_Finalize();
    return report("dpm_spawn child");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc >= 2 && !strcmp(argv[1], "child")) return child(argc, argv);
    int nchild = argc >= 2 ? atoi(argv[1]) : 3;
    int keep = argc >= 3 && !strcmp(argv[2], "keep");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "a process mpirun started has a parent");

    int root = size > 1 ? 1 : 0;
    char nparents[16];
    snprintf(nparents, sizeof nparents, "%d", size);
    char *child_argv[] = {"child", nparents, keep ? "keep" : NULL, NULL};
    int errcodes[64];
    for (int i = 0; i < 64; i++) errcodes[i] = -1;
    MPI_Comm children;
    CHECK_MPI(MPI_Comm_spawn(argv[0], child_argv, nchild, MPI_INFO_NULL, root, MPI_COMM_WORLD, &children, errcodes));
    for (int i = 0; i < nchild; i++) CHECK(errcodes[i] == MPI_SUCCESS, "errcode[%d] = %d", i, errcodes[i]);
    int rsize = 0, flag = 0;
    MPI_Comm_test_inter(children, &flag);
    MPI_Comm_remote_size(children, &rsize);
    CHECK(flag && rsize == nchild, "remote size %d", rsize);
    for (int c = rank; c < nchild; c += size) {
        int answer = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&answer, 1, MPI_INT, c, 11, children, &st));
        CHECK(answer == c * c && st.MPI_SOURCE == c, "child %d answered %d", c, answer);
    }
    int value = 777;
    CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, children));
    int mine = 100, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, children));
    CHECK(sum == nchild * (nchild + 1) / 2, "allreduce gave %d", sum);
    merge_and_recreate(children, 0);
    if (!keep) CHECK_MPI(MPI_Comm_disconnect(&children));

    /* A program that does not exist. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 64; i++) errcodes[i] = -1;
    MPI_Comm none = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn("/nonexistent/axon-no-such-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                            &none, errcodes);
    CHECK(error_class_of(rc) == MPI_ERR_SPAWN, "missing program: class %d", error_class_of(rc));
    for (int i = 0; i < 2; i++)
        CHECK(error_class_of(errcodes[i]) == MPI_ERR_SPAWN, "errcode[%d] = %d", i, errcodes[i]);
    MPI_Finalize();
    return report("dpm_spawn");
}
