/* The World model and a session in one process: communicators of both carry
 * traffic side by side, the session ends before MPI_Finalize and the World
 * model's state is its own (MPI_Initialized / MPI_Finalized). */
#include "../mpi/check.h"

int main(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    {
        /* No hint, World model at MPI_THREAD_SINGLE: the session is too. */
        MPI_Info used;
        char level[64] = "";
        int len = sizeof level, flag = 0;
        CHECK_MPI(MPI_Session_get_info(session, &used));
        CHECK_MPI(MPI_Info_get_string(used, "thread_level", &len, level, &flag));
        CHECK(flag && strcmp(level, "MPI_THREAD_SINGLE") == 0, "session thread_level '%s'", level);
        MPI_Info_free(&used);
    }
    MPI_Group sgroup, wgroup;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &sgroup));
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    int result = -1;
    MPI_Group_compare(sgroup, wgroup, &result);
    CHECK(result == MPI_IDENT, "pset WORLD vs MPI_COMM_WORLD's group: %d", result);

    MPI_Comm scomm, wcomm;
    CHECK_MPI(MPI_Comm_create_from_group(sgroup, "org.axon.test.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &scomm));
    /* The World model may use MPI_Comm_create_from_group too. */
    CHECK_MPI(MPI_Comm_create_from_group(wgroup, "org.axon.test.world.w", MPI_INFO_NULL, MPI_ERRORS_RETURN, &wcomm));
    MPI_Comm_compare(scomm, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_CONGRUENT, "session comm vs world: %d", result);

    /* Same tag, same peers, three communicators: nothing crosses over. */
    int right = (wrank + 1) % wsize, left = (wrank + wsize - 1) % wsize;
    MPI_Request reqs[6];
    int in[3] = {-1, -1, -1}, out[3] = {wrank * 10 + 1, wrank * 10 + 2, wrank * 10 + 3};
    MPI_Irecv(&in[0], 1, MPI_INT, left, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Irecv(&in[1], 1, MPI_INT, left, 5, scomm, &reqs[1]);
    MPI_Irecv(&in[2], 1, MPI_INT, left, 5, wcomm, &reqs[2]);
    MPI_Isend(&out[2], 1, MPI_INT, right, 5, wcomm, &reqs[3]);
    MPI_Isend(&out[1], 1, MPI_INT, right, 5, scomm, &reqs[4]);
    MPI_Isend(&out[0], 1, MPI_INT, right, 5, MPI_COMM_WORLD, &reqs[5]);
    CHECK_MPI(MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 3; i++) CHECK(in[i] == left * 10 + i + 1, "in[%d] = %d", i, in[i]);

    int x = wrank, sum = 0;
    CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, scomm));
    CHECK(sum == wsize * (wsize - 1) / 2, "session allreduce %d", sum);
    CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == wsize * (wsize - 1) / 2, "world allreduce %d", sum);

    /* A process outside the group gets MPI_COMM_NULL. */
    if (wsize > 1) {
        MPI_Group first;
        int zero = 0;
        MPI_Group_incl(wgroup, 1, &zero, &first);
        MPI_Comm only_first = MPI_COMM_NULL;
        CHECK_MPI(MPI_Comm_create_from_group(first, "org.axon.test.world.first", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                             &only_first));
        CHECK((wrank == 0) == (only_first != MPI_COMM_NULL), "rank %d: member comm %p", wrank, (void *)only_first);
        if (only_first != MPI_COMM_NULL) MPI_Comm_free(&only_first);
        MPI_Group_free(&first);
    }

    /* Argument errors go to the error handler passed in. */
    MPI_Comm bad;
    int rc = MPI_Comm_create_from_group(MPI_GROUP_NULL, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &bad);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_GROUP, "null group: class %d", cls);
    rc = MPI_Comm_create_from_group(sgroup, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &bad);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "null string tag: class %d", cls);

    /* Calls on a handle that is not a session raise MPI_ERR_SESSION on
     * MPI_COMM_SELF's handler (no session to use). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int npsets = -1;
    rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &npsets);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SESSION, "null session: class %d", cls);
    MPI_Session stale = session;

    MPI_Comm_free(&scomm);
    MPI_Comm_free(&wcomm);
    MPI_Group_free(&sgroup);
    MPI_Group_free(&wgroup);
    CHECK_MPI(MPI_Session_finalize(&session));

    rc = MPI_Session_get_num_psets(stale, MPI_INFO_NULL, &npsets);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SESSION, "finalized session: class %d", cls);

    /* The World model still runs after the session ended. */
    CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == wsize * (wsize - 1) / 2, "world allreduce after the session %d", sum);
    int flag = 0;
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized %d", flag);
    CHECK_MPI(MPI_Finalize());
    MPI_Finalized(&flag);
    CHECK(flag == 1, "MPI_Finalized %d", flag);
    return report("session_world");
}
