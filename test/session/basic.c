/* Sessions without the World model (MPI-4.1 11.3): process sets, groups from
 * them, communicators from groups, info, error handlers, and MPI_Initialized
 * staying false throughout. */
#include "../mpi/check.h"

static int handler_calls;
static int handler_code;
static void session_handler(MPI_Session *session, int *code, ...)
{
    (void)session;
    handler_calls++;
    handler_code = *code;
}

static int error_class(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(void)
{
    MPI_Info info;
    MPI_Session session;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    CHECK_MPI(MPI_Session_init(info, MPI_ERRORS_RETURN, &session));
    MPI_Info_free(&info);
    CHECK(session != MPI_SESSION_NULL, "session handle");

    int flag = 1;
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized is %d with only a session", flag);

    /* Info: the thread level asked for. */
    MPI_Info used;
    CHECK_MPI(MPI_Session_get_info(session, &used));
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int vlen = MPI_MAX_INFO_VAL;
    flag = 0;
    CHECK_MPI(MPI_Info_get_string(used, "thread_level", &vlen, value, &flag));
    CHECK(flag && strcmp(value, "MPI_THREAD_MULTIPLE") == 0, "thread_level is '%s'", value);
    MPI_Info_free(&used);

    /* Process sets. */
    int npsets = 0;
    CHECK_MPI(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &npsets));
    CHECK(npsets >= 2, "%d process sets", npsets);
    int found_world = 0, found_self = 0;
    for (int n = 0; n < npsets; n++) {
        int len = 0;
        CHECK_MPI(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &len, NULL));
        char *name = malloc(len > 0 ? (size_t)len : 1);
        if (!name) {
            CHECK(0, "out of memory for pset name %d", n);
            break;
        }
        CHECK_MPI(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &len, name));
        CHECK((int)strlen(name) == len - 1, "length %d for '%s'", len, name);
        if (strcmp(name, "mpi://WORLD") == 0) found_world = 1;
        if (strcmp(name, "mpi://SELF") == 0) found_self = 1;
        free(name);
    }
    CHECK(found_world && found_self, "world %d self %d", found_world, found_self);
    /* A short buffer gets a truncated, terminated name. */
    int n_world = 0;
    for (int n = 0; n < npsets; n++) {
        char name[32];
        int len = sizeof name;
        MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &len, name);
        if (strcmp(name, "mpi://WORLD") == 0) n_world = n;
    }
    char shortname[5];
    int shortlen = sizeof shortname;
    CHECK_MPI(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n_world, &shortlen, shortname));
    CHECK(strcmp(shortname, "mpi:") == 0, "truncated to '%s'", shortname);
    int len = 0;
    int rc = MPI_Session_get_nth_pset(session, MPI_INFO_NULL, npsets, &len, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "n past the end: class %d", error_class(rc));

    MPI_Info pinfo;
    CHECK_MPI(MPI_Session_get_pset_info(session, "mpi://WORLD", &pinfo));
    vlen = MPI_MAX_INFO_VAL;
    flag = 0;
    CHECK_MPI(MPI_Info_get_string(pinfo, "mpi_size", &vlen, value, &flag));
    int world_size = flag ? atoi(value) : -1;
    CHECK(world_size >= 1, "mpi_size '%s'", value);
    MPI_Info_free(&pinfo);
    CHECK_MPI(MPI_Session_get_pset_info(session, "mpi://SELF", &pinfo));
    vlen = MPI_MAX_INFO_VAL;
    CHECK_MPI(MPI_Info_get_string(pinfo, "mpi_size", &vlen, value, &flag));
    CHECK(flag && strcmp(value, "1") == 0, "SELF mpi_size '%s'", value);
    MPI_Info_free(&pinfo);
    rc = MPI_Session_get_pset_info(session, "mpi://NOSUCH", &pinfo);
    CHECK(error_class(rc) == MPI_ERR_ARG, "unknown pset info: class %d", error_class(rc));

    /* Groups and communicators. */
    MPI_Group world_group, self_group, bad_group = MPI_GROUP_NULL;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &world_group));
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://SELF", &self_group));
    rc = MPI_Group_from_session_pset(session, "mpi://NOSUCH", &bad_group);
    CHECK(error_class(rc) == MPI_ERR_ARG, "unknown pset group: class %d", error_class(rc));
    int gsize = 0, grank = -1;
    MPI_Group_size(world_group, &gsize);
    MPI_Group_rank(world_group, &grank);
    CHECK(gsize == world_size, "world group size %d", gsize);

    MPI_Comm comm, self_comm;
    CHECK_MPI(MPI_Comm_create_from_group(world_group, "org.axon.test.basic", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &comm));
    CHECK_MPI(MPI_Comm_create_from_group(self_group, "org.axon.test.self", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &self_comm));
    int size = 0, rank = -1;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    CHECK(size == gsize && rank == grank, "comm %d/%d, group %d/%d", rank, size, grank, gsize);
    MPI_Comm_size(self_comm, &size);
    CHECK(size == 1, "self comm size %d", size);

    /* The new communicator's error handler is the one given. */
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(comm, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "errhandler of the new communicator");
    MPI_Errhandler_free(&eh);
    rc = MPI_Send(NULL, 0, MPI_INT, gsize, 0, comm);
    CHECK(error_class(rc) == MPI_ERR_RANK, "bad rank on the new comm: class %d", error_class(rc));

    /* Traffic: a ring with exact data and an allreduce. */
    int right = (grank + 1) % gsize, left = (grank + gsize - 1) % gsize;
    int out[64], in[64];
    for (int i = 0; i < 64; i++) out[i] = grank * 1000 + i;
    CHECK_MPI(MPI_Sendrecv(out, 64, MPI_INT, right, 7, in, 64, MPI_INT, left, 7, comm, MPI_STATUS_IGNORE));
    for (int i = 0; i < 64; i++) CHECK(in[i] == left * 1000 + i, "in[%d] = %d", i, in[i]);
    int sum = 0, mine = grank + 1;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == gsize * (gsize + 1) / 2, "allreduce %d", sum);
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, self_comm));
    CHECK(sum == mine, "self allreduce %d", sum);

    /* A dup of a session communicator works like any other. */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(comm, &dup));
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_MAX, dup));
    CHECK(sum == gsize, "dup allreduce max %d", sum);
    MPI_Comm_free(&dup);

    /* Session error handlers. */
    MPI_Errhandler user;
    CHECK_MPI(MPI_Session_create_errhandler(session_handler, &user));
    CHECK_MPI(MPI_Session_set_errhandler(session, user));
    MPI_Errhandler got;
    CHECK_MPI(MPI_Session_get_errhandler(session, &got));
    CHECK(got == user, "get_errhandler returns the one set");
    MPI_Errhandler_free(&got);
    CHECK_MPI(MPI_Session_call_errhandler(session, MPI_ERR_OTHER));
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_OTHER, "handler called %d times, code %d",
          handler_calls, handler_code);
    rc = MPI_Group_from_session_pset(session, "no-such-set", &bad_group);
    CHECK(handler_calls == 2 && error_class(rc) == MPI_ERR_ARG, "handler on a failing call: %d, class %d",
          handler_calls, error_class(rc));
    MPI_Session_set_errhandler(session, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&user);

    /* A second session next to the first. */
    MPI_Session second;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &second));
    MPI_Group g2;
    MPI_Comm c2;
    CHECK_MPI(MPI_Group_from_session_pset(second, "mpi://world", &g2));  /* case-insensitive */
    CHECK_MPI(MPI_Comm_create_from_group(g2, "org.axon.test.second", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c2));
    int result = -1;
    MPI_Comm_compare(comm, c2, &result);
    CHECK(result == MPI_CONGRUENT, "compare %d", result);
    CHECK_MPI(MPI_Barrier(c2));
    MPI_Comm_free(&c2);
    MPI_Group_free(&g2);
    CHECK_MPI(MPI_Session_finalize(&second));
    CHECK(second == MPI_SESSION_NULL, "handle after finalize");

    MPI_Comm_free(&comm);
    MPI_Comm_free(&self_comm);
    MPI_Group_free(&world_group);
    MPI_Group_free(&self_group);
    CHECK_MPI(MPI_Session_finalize(&session));
    CHECK(session == MPI_SESSION_NULL, "handle after finalize");
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized is %d after the sessions", flag);
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized is %d after the sessions", flag);
    return report("session_basic");
}
