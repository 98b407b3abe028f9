/* MPI_Comm_spawn_multiple: two applications (this program with argv
 * {"child", "A"} x2 and {"child", "B"} x1, and with wdir set for the second
 * to /tmp). Each child checks its MPI_APPNUM (0 for A, 1 for B), its argv
 * and its working directory, and sends (appnum, rank) to parent rank 0,
 * which checks all of them. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc >= 3 && !strcmp(argv[1], "child")) {
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        CHECK(parent != MPI_COMM_NULL, "no parent");
        int *appnum = NULL, flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
        int expect = !strcmp(argv[2], "A") ? 0 : 1;
        CHECK(flag && *appnum == expect, "app %s: MPI_APPNUM %d", argv[2], flag ? *appnum : -1);
        CHECK(size == 3, "children's world size %d", size);
        char cwd[4096] = "";
        if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
        if (expect == 1) CHECK(strcmp(cwd, "/tmp") == 0, "app B runs in '%s', not /tmp", cwd);
        int msg[2] = {flag ? *appnum : -1, rank};
        if (parent != MPI_COMM_NULL) {
            CHECK_MPI(MPI_Send(msg, 2, MPI_INT, 0, 1, parent));
            CHECK_MPI(MPI_Comm_disconnect(&parent));
        }
        MPI_Finalize();
        return report("dpm_spawn_multiple child");
    }
    char *cmds[2] = {argv[0], argv[0]};
    char *argv_a[] = {"child", "A", NULL}, *argv_b[] = {"child", "B", NULL};
    char **argvs[2] = {argv_a, argv_b};
    int maxprocs[2] = {2, 1};
    MPI_Info infos[2];
    infos[0] = MPI_INFO_NULL;
    MPI_Info_create(&infos[1]);
    MPI_Info_set(infos[1], "wdir", "/tmp");
    int errcodes[3] = {-1, -1, -1};
    MPI_Comm children;
    char abs_path[4096];
    /* wdir changes the directory: give the program as an absolute path */
    if (argv[0][0] != '/') {
        char cwd[4000];
        if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
        snprintf(abs_path, sizeof abs_path, "%s/%s", cwd, argv[0]);
        cmds[0] = cmds[1] = abs_path;
    }
    CHECK_MPI(MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &children, errcodes));
    for (int i = 0; i < 3; i++) CHECK(errcodes[i] == MPI_SUCCESS, "errcode[%d] = %d", i, errcodes[i]);
    MPI_Info_free(&infos[1]);
    if (rank == 0) {
        int seen = 0;
        for (int i = 0; i < 3; i++) {
            int msg[2];
            MPI_Status st;
            CHECK_MPI(MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, 1, children, &st));
            CHECK(msg[1] == st.MPI_SOURCE, "child %d says rank %d", st.MPI_SOURCE, msg[1]);
            CHECK(msg[0] == (st.MPI_SOURCE < 2 ? 0 : 1), "child %d has appnum %d", st.MPI_SOURCE, msg[0]);
            seen |= 1 << st.MPI_SOURCE;
        }
        CHECK(seen == 7, "answers from children mask %d", seen);
    }
    CHECK_MPI(MPI_Comm_disconnect(&children));
    MPI_Finalize();
    return report("dpm_spawn_multiple");
}
