/* mpit: the MPI tool information interface. Control variables are the
 * AXON_* parameters (read through handles; only the collective algorithm choices are writable); categories
 * cover every variable exactly once; performance variables count exactly:
 * eager and rendezvous sends, messages and bytes through the shared-memory
 * rings, CMA bytes, unexpected messages and the unexpected-queue length.
 * Runs at 1 rank (self transport) and 2 ranks (shared memory). */
#include "../mpi/check.h"

static int pvar(const char *name, int var_class)
{
    int index = -1;
    int rc = MPI_T_pvar_get_index(name, var_class, &index);
    CHECK(rc == MPI_SUCCESS, "pvar %s not found (%d)", name, rc);
    return index;
}

static unsigned long long read_pvar(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(session, handle, &v));
    return v;
}

int main(int argc, char **argv)
{
    int provided = -1, n = 0;
    /* MPI_T works before MPI_Init. */
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "cvar_get_num before MPI_T_init_thread");
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* ---- control variables ---- */
    int ncvars = 0;
    CHECK_MPI(MPI_T_cvar_get_num(&ncvars));
    CHECK(ncvars > 5, "only %d control variables", ncvars);
    int index = -1;
    CHECK_MPI(MPI_T_cvar_get_index("AXON_BTL_SM_EAGER_LIMIT", &index));
    char name[256];
    int name_len = sizeof name, scope = -1;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_T_cvar_get_info(index, name, &name_len, NULL, &type, NULL, NULL, NULL, NULL, &scope));
    CHECK(strcmp(name, "AXON_BTL_SM_EAGER_LIMIT") == 0 && name_len == (int)strlen(name) + 1,
          "cvar name '%s' len %d", name, name_len);
    CHECK(type == MPI_COUNT && scope == MPI_T_SCOPE_READONLY, "cvar type/scope");
    MPI_T_cvar_handle cvar;
    int count = 0;
    CHECK_MPI(MPI_T_cvar_handle_alloc(index, NULL, &cvar, &count));
    long long limit = 0;
    CHECK_MPI(MPI_T_cvar_read(cvar, &limit));
    /* 0: the default, derived from the number of ranks on the node */
    CHECK(count == 1 && limit == 0, "AXON_BTL_SM_EAGER_LIMIT reads %lld (count %d)", limit, count);
    CHECK(MPI_T_cvar_write(cvar, &limit) == MPI_T_ERR_CVAR_SET_NEVER, "cvar_write of a read-only variable");
    CHECK_MPI(MPI_T_cvar_handle_free(&cvar));
    CHECK(cvar == MPI_T_CVAR_HANDLE_NULL, "cvar_handle_free did not null the handle");
    CHECK_MPI(MPI_T_cvar_get_index("AXON_BTL", &index));
    CHECK_MPI(MPI_T_cvar_handle_alloc(index, NULL, &cvar, &count));
    char *transports = xmalloc((size_t)count);
    CHECK_MPI(MPI_T_cvar_read(cvar, transports));
    CHECK(strcmp(transports, "self,sm") == 0, "AXON_BTL reads '%s'", transports);
    free(transports);
    CHECK_MPI(MPI_T_cvar_handle_free(&cvar));
    CHECK(MPI_T_cvar_get_index("AXON_NO_SUCH_THING", &index) == MPI_T_ERR_INVALID_NAME, "unknown cvar name");
    CHECK(MPI_T_cvar_get_info(ncvars, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX, "cvar index out of range");

    /* ---- categories: every variable in exactly one ---- */
    int npvars = 0, ncats = 0;
    CHECK_MPI(MPI_T_pvar_get_num(&npvars));
    CHECK_MPI(MPI_T_category_get_num(&ncats));
    int *cvar_seen = calloc((size_t)ncvars, sizeof(int)), *pvar_seen = calloc((size_t)npvars, sizeof(int));
    for (int c = 0; c < ncats; c++) {
        int nc = 0, np = 0, nsub = -1;
        name_len = sizeof name;
        CHECK_MPI(MPI_T_category_get_info(c, name, &name_len, NULL, NULL, &nc, &np, &nsub));
        int *ci = xmalloc((size_t)nc * sizeof(int)), *pi = xmalloc((size_t)np * sizeof(int));
        CHECK_MPI(MPI_T_category_get_cvars(c, nc, ci));
        CHECK_MPI(MPI_T_category_get_pvars(c, np, pi));
        for (int i = 0; i < nc; i++)
            if (ci[i] >= 0 && ci[i] < ncvars) cvar_seen[ci[i]]++;
        for (int i = 0; i < np; i++)
            if (pi[i] >= 0 && pi[i] < npvars) pvar_seen[pi[i]]++;
        int back = -1;
        CHECK_MPI(MPI_T_category_get_index(name, &back));
        CHECK(back == c, "category '%s' index %d, expected %d", name, back, c);
        free(ci);
        free(pi);
    }
    for (int i = 0; i < ncvars; i++)
        CHECK(cvar_seen[i] == 1, "cvar %d is in %d categories", i, cvar_seen[i]);
    /* Transport variables are grouped by transport. */
    {
        int cat = -1, cma = -1, nc = 0, found = 0;
        CHECK_MPI(MPI_T_category_get_index("btl_sm", &cat));
        CHECK_MPI(MPI_T_cvar_get_index("AXON_BTL_SM_CMA", &cma));
        CHECK_MPI(MPI_T_category_get_info(cat, NULL, NULL, NULL, NULL, &nc, NULL, NULL));
        int *ci = xmalloc((size_t)nc * sizeof(int));
        CHECK_MPI(MPI_T_category_get_cvars(cat, nc, ci));
        for (int i = 0; i < nc; i++)
            found |= ci[i] == cma;
        CHECK(found, "AXON_BTL_SM_CMA is not in category btl_sm");
        free(ci);
    }
    for (int i = 0; i < npvars; i++)
        CHECK(pvar_seen[i] == 1, "pvar %d is in %d categories", i, pvar_seen[i]);
    free(cvar_seen);
    free(pvar_seen);

    /* ---- performance variables ---- */
    MPI_T_pvar_session session;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle eager, rendezvous, sm_messages, cma, unexpected, queued;
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, pvar("axon_pml_eager_sends", MPI_T_PVAR_CLASS_COUNTER), NULL,
                                      &eager, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, pvar("axon_pml_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER),
                                      NULL, &rendezvous, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, pvar("axon_btl_sm_messages_sent", MPI_T_PVAR_CLASS_COUNTER),
                                      NULL, &sm_messages, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, pvar("axon_btl_sm_cma_bytes", MPI_T_PVAR_CLASS_COUNTER), NULL,
                                      &cma, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, pvar("axon_pml_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER),
                                      NULL, &unexpected, &count));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session,
                                      pvar("axon_pml_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL), NULL,
                                      &queued, &count));
    CHECK(MPI_T_pvar_start(session, eager) == MPI_T_ERR_PVAR_NO_STARTSTOP, "continuous pvar start");
    CHECK(MPI_T_pvar_write(session, eager, &count) == MPI_T_ERR_PVAR_NO_WRITE, "pvar write");

    int peer = size > 1 ? 1 - rank : rank;
    enum { SMALL = 100, LARGE = 1 << 20, N = 5 };
    char *small = xmalloc(SMALL), *large = xmalloc(LARGE);
    memset(small, 1, SMALL);
    memset(large, 2, LARGE);
    if (rank < 2) {
        CHECK_MPI(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES));
        if (rank == 0) {
            /* N small messages the peer has not asked for yet, then one large one. */
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Send(small, SMALL, MPI_CHAR, peer, 10 + i, MPI_COMM_WORLD));
            MPI_Request request;
            CHECK_MPI(MPI_Isend(large, LARGE, MPI_CHAR, peer, 20, MPI_COMM_WORLD, &request));
            unsigned long long e = read_pvar(session, eager), r = read_pvar(session, rendezvous);
            CHECK(e == N && r == 1, "rank 0: eager sends %llu (expected %d), rendezvous %llu (expected 1)", e, N,
                  r);
            if (size > 1) {
                unsigned long long m = read_pvar(session, sm_messages);
                CHECK(m == N + 1, "rank 0: %llu messages into the rings, expected %d", m, N + 1);
            }
            if (peer == rank) { /* to oneself: receive them here */
                for (int i = 0; i < N; i++)
                    CHECK_MPI(MPI_Recv(small, SMALL, MPI_CHAR, peer, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Recv(large, LARGE, MPI_CHAR, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
        }
        if (rank == 1) {
            /* Wait until all N small messages and the large announcement are here, unmatched. */
            int flag = 0;
            while (!flag)
                CHECK_MPI(MPI_Iprobe(0, 20, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            unsigned long long u = read_pvar(session, unexpected), q = read_pvar(session, queued);
            CHECK(u == N + 1 && q == N + 1, "rank 1: unexpected %llu, queue length %llu (expected %d)", u, q, N + 1);
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Recv(small, SMALL, MPI_CHAR, 0, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(large, LARGE, MPI_CHAR, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            q = read_pvar(session, queued);
            CHECK(q == 0, "rank 1: queue length %llu after receiving everything", q);
        }
    }
    /* The large message was copied once across processes: the two ranks'
     * CMA byte counts (receiver's share plus the sender's help) add up to it. */
    unsigned long long mine = rank < 2 ? read_pvar(session, cma) : 0, total = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (size > 1)
        CHECK(total == LARGE, "CMA bytes %llu across ranks, expected %d", total, LARGE);
    unsigned long long before = read_pvar(session, eager), after_reset = 0;
    CHECK_MPI(MPI_T_pvar_readreset(session, eager, &after_reset));
    CHECK(after_reset == before, "readreset read %llu, read said %llu", after_reset, before);
    CHECK(read_pvar(session, eager) == 0 || size > 2, "counter after readreset is not 0");
    CHECK_MPI(MPI_T_pvar_handle_free(session, &eager));
    CHECK(eager == MPI_T_PVAR_HANDLE_NULL, "pvar_handle_free did not null the handle");
    CHECK_MPI(MPI_T_pvar_session_free(&session));
    CHECK(session == MPI_T_PVAR_SESSION_NULL, "session_free did not null the session");
    free(small);
    free(large);

    int events = -1;
    CHECK_MPI(MPI_T_event_get_num(&events));
    /* axon_protocol_switch, _unexpected_growth, _coll_algorithm, _connection_setup (test/mpit covers them) */
    CHECK(events == 4, "event_get_num %d", events);
    MPI_Finalize();
    CHECK_MPI(MPI_T_finalize());
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "second MPI_T_finalize");
    return report("mpit");
}
