/* Communicator duplication and lifetime: dup / dup_with_info / idup, names,
 * info hints, compare, free (and using a freed handle), context-id reuse over
 * many dup/free cycles, and point-to-point on derived communicators. */
#include "../mpi/check.h"

static int copy_calls, delete_calls;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)keyval; (void)extra;
    copy_calls++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)value; (void)extra;
    delete_calls++;
    return MPI_SUCCESS;
}

/* Every rank sends its rank (in `comm`) to the next rank and checks what the
 * previous one sent: source, tag and data use ranks of `comm`. */
static void ring_check(MPI_Comm comm, int tag, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int out[2] = {rank, tag}, in[2] = {-1, -1};
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, 2, MPI_INT, to, tag, in, 2, MPI_INT, from, tag, comm, &st));
    CHECK(in[0] == from && in[1] == tag, "%s: got %d/%d from %d", what, in[0], in[1], from);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag, "%s: status %d/%d", what, st.MPI_SOURCE, st.MPI_TAG);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, result, flag, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* --- names ----------------------------------------------------------- */
    char name[MPI_MAX_OBJECT_NAME];
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name '%s' %d", name, len);
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0, "self name '%s'", name);

    /* --- dup: same group, new context, error handler inherited, name and
     * attributes without a copy callback not copied ---------------------- */
    int key_copy, key_nocopy;
    CHECK_MPI(MPI_Comm_create_keyval(copy_fn, delete_fn, &key_copy, NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &key_nocopy, NULL));
    static char base[4];
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, key_copy, base));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, key_nocopy, base));
    CHECK_MPI(MPI_Comm_set_name(MPI_COMM_WORLD, "renamed world"));
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(copy_calls == 1, "copy callback ran %d times", copy_calls);
    void *value = NULL;
    CHECK_MPI(MPI_Comm_get_attr(dup, key_copy, &value, &flag));
    CHECK(flag && value == base + 1, "copied attribute flag %d value %p", flag, value);
    CHECK_MPI(MPI_Comm_get_attr(dup, key_nocopy, &value, &flag));
    CHECK(!flag, "attribute with MPI_COMM_NULL_COPY_FN was copied");
    name[0] = 'x';
    CHECK_MPI(MPI_Comm_get_name(dup, name, &len));
    CHECK(len == 0 && name[0] == 0, "dup has name '%s'", name);
    CHECK_MPI(MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD"));
    CHECK_MPI(MPI_Comm_set_name(dup, "my dup"));
    CHECK_MPI(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "dup name '%s'", name);
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_get_errhandler(dup, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    CHECK_MPI(MPI_Comm_compare(dup, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "compare(dup, world) = %d", result);
    CHECK_MPI(MPI_Comm_compare(dup, dup, &result));
    CHECK(result == MPI_IDENT, "compare(dup, dup) = %d", result);
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &result));
    CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(self, world) = %d", result);
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK(!flag, "dup is an intercommunicator");

    /* Messages on dup and world never match each other. */
    if (size > 1) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        int a = 100 + rank, b = 200 + rank, ra = -1, rb = -1;
        MPI_Request rq[4];
        MPI_Irecv(&rb, 1, MPI_INT, from, 7, dup, &rq[0]);
        MPI_Irecv(&ra, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(&a, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(&b, 1, MPI_INT, to, 7, dup, &rq[3]);
        CHECK_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
        CHECK(ra == 100 + from && rb == 200 + from, "world got %d, dup got %d", ra, rb);
    }
    ring_check(dup, 3, "dup");

    /* --- free: delete callbacks run, handle set to MPI_COMM_NULL, the old
     * handle is rejected with MPI_ERR_COMM -------------------------------- */
    MPI_Comm old = dup;
    int deletes_before = delete_calls;
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "free did not set MPI_COMM_NULL");
    CHECK(delete_calls == deletes_before + 1, "delete callback ran %d times", delete_calls - deletes_before);
    int sz = -1;
    CHECK(error_class_of(MPI_Comm_size(old, &sz)) == MPI_ERR_COMM, "size of a freed comm");
    CHECK(error_class_of(MPI_Comm_free(&old)) == MPI_ERR_COMM, "double free");
    CHECK(error_class_of(MPI_Comm_size(MPI_COMM_NULL, &sz)) == MPI_ERR_COMM, "size of MPI_COMM_NULL");
    MPI_Comm w = MPI_COMM_WORLD, s = MPI_COMM_SELF, n = MPI_COMM_NULL;
    CHECK(error_class_of(MPI_Comm_free(&w)) == MPI_ERR_COMM, "free of MPI_COMM_WORLD");
    CHECK(error_class_of(MPI_Comm_free(&s)) == MPI_ERR_COMM, "free of MPI_COMM_SELF");
    CHECK(error_class_of(MPI_Comm_free(&n)) == MPI_ERR_COMM, "free of MPI_COMM_NULL");
    CHECK(error_class_of(MPI_Comm_dup(MPI_COMM_NULL, &dup)) == MPI_ERR_COMM, "dup of MPI_COMM_NULL");
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key_copy);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key_nocopy);
    MPI_Comm_free_keyval(&key_copy);
    MPI_Comm_free_keyval(&key_nocopy);

    /* --- info: dup_with_info takes the given hints, dup copies them,
     * set_info adds / replaces ------------------------------------------ */
    MPI_Info info, got;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm withinfo, dup2;
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &withinfo));
    CHECK_MPI(MPI_Comm_get_info(withinfo, &got));
    char v[64];
    int vlen = sizeof v;
    CHECK_MPI(MPI_Info_get_string(got, "mpi_assert_no_any_tag", &vlen, v, &flag));
    CHECK(flag && strcmp(v, "true") == 0, "dup_with_info hint: flag %d '%s'", flag, flag ? v : "");
    MPI_Info_free(&got);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    CHECK_MPI(MPI_Comm_set_info(withinfo, info));
    CHECK_MPI(MPI_Comm_dup(withinfo, &dup2));
    CHECK_MPI(MPI_Comm_get_info(dup2, &got));
    vlen = sizeof v;
    CHECK_MPI(MPI_Info_get_string(got, "mpi_assert_no_any_tag", &vlen, v, &flag));
    CHECK(flag && strcmp(v, "false") == 0, "set_info / dup hint: flag %d '%s'", flag, flag ? v : "");
    MPI_Info_free(&got);
    ring_check(withinfo, 4, "dup_with_info");
    ring_check(dup2, 5, "dup of dup_with_info");
#ifndef MPICH  /* MPICH says MPI_ERR_ARG */
    CHECK(error_class_of(MPI_Comm_set_info(withinfo, MPI_INFO_NULL)) == MPI_ERR_INFO, "set_info(INFO_NULL)");
#endif
    CHECK(error_class_of(MPI_Comm_get_info(MPI_COMM_NULL, &got)) == MPI_ERR_COMM, "get_info(COMM_NULL)");
    MPI_Comm_free(&withinfo);
    MPI_Comm_free(&dup2);
    MPI_Info_free(&info);

    /* --- idup: several in flight at once, point-to-point traffic on the
     * parent meanwhile; each result is a working distinct communicator ---- */
    enum { NIDUP = 6 };
    MPI_Comm idups[NIDUP];
    MPI_Request reqs[NIDUP];
    for (int i = 0; i < NIDUP; i++)
        CHECK_MPI(MPI_Comm_idup(i % 2 ? MPI_COMM_WORLD : MPI_COMM_SELF, &idups[i], &reqs[i]));
    ring_check(MPI_COMM_WORLD, 9, "world during idup");
    CHECK_MPI(MPI_Waitall(NIDUP, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NIDUP; i++) {
        ring_check(idups[i], 10 + i, "idup result");
        CHECK_MPI(MPI_Comm_compare(idups[i], i % 2 ? MPI_COMM_WORLD : MPI_COMM_SELF, &result));
        CHECK(result == MPI_CONGRUENT, "idup %d compare %d", i, result);
    }
    /* An idup of a finished idup result. */
    MPI_Comm nested;
    MPI_Request nreq;
    CHECK_MPI(MPI_Comm_idup(idups[1], &nested, &nreq));
    CHECK_MPI(MPI_Wait(&nreq, MPI_STATUS_IGNORE));
    CHECK(nreq == MPI_REQUEST_NULL, "idup request not freed");
    ring_check(nested, 20, "idup of idup");
    MPI_Comm_free(&nested);
    for (int i = 0; i < NIDUP; i++) MPI_Comm_free(&idups[i]);

    /* --- many dup/free cycles: freed context ids are reused ------------- */
    for (int i = 0; i < 5000; i++) {
        MPI_Comm c;
        int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
        if (rc != MPI_SUCCESS) {
            CHECK(rc == MPI_SUCCESS, "dup %d failed", i);
            break;
        }
        if (i % 1000 == 0) ring_check(c, 1, "cycled dup");
        MPI_Comm_free(&c);
    }
    /* Holding many at once works too (more than fit in 64-bit words). */
    enum { HOLD = 150 };
    static MPI_Comm held[HOLD];
    for (int i = 0; i < HOLD; i++) CHECK_MPI(MPI_Comm_dup(i % 3 ? MPI_COMM_WORLD : MPI_COMM_SELF, &held[i]));
    ring_check(held[HOLD - 1], 2, "last held dup");
    for (int i = 0; i < HOLD; i += 2) MPI_Comm_free(&held[i]);
    for (int i = 0; i < HOLD; i += 2) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &held[i]));
    ring_check(held[0], 2, "re-dup");
    for (int i = 0; i < HOLD; i++) MPI_Comm_free(&held[i]);

    /* --- a receive posted on a comm that is then freed still completes -- */
    if (size > 1) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int x = -1, y = rank;
        MPI_Request r;
        int from = (rank + size - 1) % size, to = (rank + 1) % size;
        MPI_Irecv(&x, 1, MPI_INT, from, 0, c, &r);
        MPI_Send(&y, 1, MPI_INT, to, 0, c);
        CHECK_MPI(MPI_Comm_free(&c));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(x == from, "receive on freed comm got %d", x);
    }

    /* --- bad arguments ---------------------------------------------------- */
    CHECK(error_class_of(MPI_Comm_dup(MPI_COMM_WORLD, NULL)) == MPI_ERR_ARG, "dup(NULL)");
    CHECK(error_class_of(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_NULL, &result)) == MPI_ERR_COMM,
          "compare with COMM_NULL");
    CHECK(error_class_of(MPI_Comm_set_name(MPI_COMM_NULL, "x")) == MPI_ERR_COMM, "set_name(COMM_NULL)");
    CHECK(error_class_of(MPI_Comm_test_inter(MPI_COMM_NULL, &flag)) == MPI_ERR_COMM, "test_inter(COMM_NULL)");
#ifndef MPICH  /* MPICH does not check that these get an intercommunicator */
    CHECK(error_class_of(MPI_Comm_remote_size(MPI_COMM_WORLD, &sz)) == MPI_ERR_COMM, "remote_size(world)");
    MPI_Group g;
    CHECK(error_class_of(MPI_Comm_remote_group(MPI_COMM_WORLD, &g)) == MPI_ERR_COMM, "remote_group(world)");
#endif

    MPI_Finalize();
    return report("comm_dup");
}
