/* Rooted collectives check only the arguments that are significant at each
 * process (MPI-4.1 6.2.2, 6.4-6.9), with MPI_ERRORS_RETURN:
 *   - intercommunicator: the root group's other members pass MPI_PROC_NULL
 *     and junk everywhere else (NULL buffers, count -1 or 0, MPI_DATATYPE_NULL
 *     or MPI_BYTE with MPI_SUM, MPI_OP_NULL, an uncommitted type); the root
 *     (MPI_ROOT) passes junk send arguments of gather / reduce and junk
 *     receive arguments of scatter; the other group junk receive arguments of
 *     gather(v) and junk send arguments of scatter(v), recvbuf of reduce;
 *   - intracommunicator: junk receive arguments of gather(v) and send
 *     arguments of scatter(v) at non-roots, recvbuf of reduce at non-roots,
 *     junk send (gather) / receive (scatter) arguments at an MPI_IN_PLACE root.
 * Every call (blocking, MPI_I*, *_init started twice, int and _c bindings)
 * must succeed with the exact data at the processes that receive, and the
 * job must not hang afterwards (the calls stay in step). */
#include "../mpi/check.h"

#define N 5
#define MAXP 8
#define V(g, r, i) ((g) * 10000 + (r) * 100 + (i))

enum Form { BLOCKING, BLOCKING_C, NONBLOCKING, NONBLOCKING_C, PERSISTENT, PERSISTENT_C, FORMS };
static const char *form_name[FORMS] = {"blocking", "blocking _c", "nonblocking", "nonblocking _c", "persistent",
                                       "persistent _c"};

static MPI_Datatype uncommitted;

/* Junk for an argument that is not significant, variant j: 0 NULL, count 0,
 * MPI_BYTE with MPI_SUM; 1 MPI_IN_PLACE, count -1, MPI_DATATYPE_NULL,
 * MPI_OP_NULL; 2 the other buffer of the call, count 7, an uncommitted type. */
static void *junk_buf(int j, void *other) { return j == 0 ? NULL : j == 1 ? MPI_IN_PLACE : other; }
static int junk_count(int j) { return j == 0 ? 0 : j == 1 ? -1 : 7; }
static MPI_Datatype junk_type(int j) { return j == 0 ? MPI_BYTE : j == 1 ? MPI_DATATYPE_NULL : uncommitted; }
static MPI_Op junk_op(int j) { return j == 1 ? MPI_OP_NULL : MPI_SUM; }
#define JUNKS 3

/* Completes a nonblocking or persistent call (a persistent one starts twice). */
static int finish(int rc, enum Form f, MPI_Request *r)
{
    if (rc != MPI_SUCCESS || f == BLOCKING || f == BLOCKING_C) return rc;
    if (f == NONBLOCKING || f == NONBLOCKING_C) return MPI_Wait(r, MPI_STATUS_IGNORE);
    for (int s = 0; s < 2 && rc == MPI_SUCCESS; ++s) {
        rc = MPI_Start(r);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(r, MPI_STATUS_IGNORE);
    }
    int frc = MPI_Request_free(r);
    return rc != MPI_SUCCESS ? rc : frc;
}

static int bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, enum Form f)
{
    MPI_Request r;
    switch (f) {
        case BLOCKING: return MPI_Bcast(b, n, t, root, c);
        case BLOCKING_C: return MPI_Bcast_c(b, n, t, root, c);
        case NONBLOCKING: return finish(MPI_Ibcast(b, n, t, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Ibcast_c(b, n, t, root, c, &r), f, &r);
        case PERSISTENT: return finish(MPI_Bcast_init(b, n, t, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Bcast_init_c(b, n, t, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}
static int reduce(const void *s, void *b, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, enum Form f)
{
    MPI_Request r;
    switch (f) {
        case BLOCKING: return MPI_Reduce(s, b, n, t, op, root, c);
        case BLOCKING_C: return MPI_Reduce_c(s, b, n, t, op, root, c);
        case NONBLOCKING: return finish(MPI_Ireduce(s, b, n, t, op, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Ireduce_c(s, b, n, t, op, root, c, &r), f, &r);
        case PERSISTENT: return finish(MPI_Reduce_init(s, b, n, t, op, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Reduce_init_c(s, b, n, t, op, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}
static int gather(const void *s, int sn, MPI_Datatype st, void *b, int rn, MPI_Datatype rt, int root, MPI_Comm c,
                  enum Form f)
{
    MPI_Request r;
    switch (f) {
        case BLOCKING: return MPI_Gather(s, sn, st, b, rn, rt, root, c);
        case BLOCKING_C: return MPI_Gather_c(s, sn, st, b, rn, rt, root, c);
        case NONBLOCKING: return finish(MPI_Igather(s, sn, st, b, rn, rt, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Igather_c(s, sn, st, b, rn, rt, root, c, &r), f, &r);
        case PERSISTENT: return finish(MPI_Gather_init(s, sn, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Gather_init_c(s, sn, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}
static int scatter(const void *s, int sn, MPI_Datatype st, void *b, int rn, MPI_Datatype rt, int root, MPI_Comm c,
                   enum Form f)
{
    MPI_Request r;
    switch (f) {
        case BLOCKING: return MPI_Scatter(s, sn, st, b, rn, rt, root, c);
        case BLOCKING_C: return MPI_Scatter_c(s, sn, st, b, rn, rt, root, c);
        case NONBLOCKING: return finish(MPI_Iscatter(s, sn, st, b, rn, rt, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Iscatter_c(s, sn, st, b, rn, rt, root, c, &r), f, &r);
        case PERSISTENT: return finish(MPI_Scatter_init(s, sn, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Scatter_init_c(s, sn, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}
/* counts / displs: int arrays; the _c forms get converted copies (NULL stays NULL). */
struct large_vectors {
    MPI_Count counts[MAXP];
    MPI_Aint displs[MAXP];
    const MPI_Count *lcp;
    const MPI_Aint *ldp;
};
static void widen(struct large_vectors *v, const int *counts, const int *displs)
{
    for (int i = 0; i < MAXP; ++i) {
        v->counts[i] = counts ? counts[i] : 0;
        v->displs[i] = displs ? displs[i] : 0;
    }
    v->lcp = counts ? v->counts : NULL;
    v->ldp = displs ? v->displs : NULL;
}
static int gatherv(const void *s, int sn, MPI_Datatype st, void *b, const int *counts, const int *displs,
                   MPI_Datatype rt, int root, MPI_Comm c, enum Form f)
{
    MPI_Request r;
    struct large_vectors v;
    widen(&v, counts, displs);
    const MPI_Count *lcp = v.lcp;
    const MPI_Aint *ldp = v.ldp;
    switch (f) {
        case BLOCKING: return MPI_Gatherv(s, sn, st, b, counts, displs, rt, root, c);
        case BLOCKING_C: return MPI_Gatherv_c(s, sn, st, b, lcp, ldp, rt, root, c);
        case NONBLOCKING: return finish(MPI_Igatherv(s, sn, st, b, counts, displs, rt, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Igatherv_c(s, sn, st, b, lcp, ldp, rt, root, c, &r), f, &r);
        case PERSISTENT:
            return finish(MPI_Gatherv_init(s, sn, st, b, counts, displs, rt, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Gatherv_init_c(s, sn, st, b, lcp, ldp, rt, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}
static int scatterv(const void *s, const int *counts, const int *displs, MPI_Datatype st, void *b, int rn,
                    MPI_Datatype rt, int root, MPI_Comm c, enum Form f)
{
    MPI_Request r;
    struct large_vectors v;
    widen(&v, counts, displs);
    const MPI_Count *lcp = v.lcp;
    const MPI_Aint *ldp = v.ldp;
    switch (f) {
        case BLOCKING: return MPI_Scatterv(s, counts, displs, st, b, rn, rt, root, c);
        case BLOCKING_C: return MPI_Scatterv_c(s, lcp, ldp, st, b, rn, rt, root, c);
        case NONBLOCKING: return finish(MPI_Iscatterv(s, counts, displs, st, b, rn, rt, root, c, &r), f, &r);
        case NONBLOCKING_C: return finish(MPI_Iscatterv_c(s, lcp, ldp, st, b, rn, rt, root, c, &r), f, &r);
        case PERSISTENT:
            return finish(MPI_Scatterv_init(s, counts, displs, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
        default: return finish(MPI_Scatterv_init_c(s, lcp, ldp, st, b, rn, rt, root, c, MPI_INFO_NULL, &r), f, &r);
    }
}

#define EXPECT_OK(rc, ...)                                                                   \
    do {                                                                                     \
        int rc_ = (rc);                                                                      \
        char what_[160];                                                                     \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                          \
        CHECK(rc_ == MPI_SUCCESS, "%s: returned error class %d", what_, error_class_of(rc_)); \
    } while (0)

/* ---- intercommunicator ----------------------------------------------------------------- */
static void inter_round(MPI_Comm inter, int group, int rank, int lsize, int rsize, int rg, int j, enum Form f)
{
    int lroot = rg == 0 ? 0 : lsize - 1, rroot = rg == 0 ? 0 : rsize - 1;
    int in_root_group = rg == group, is_root = in_root_group && rank == lroot;
    int root = in_root_group ? (is_root ? MPI_ROOT : MPI_PROC_NULL) : rroot;
    int idle = in_root_group && !is_root;
    int buf[N * MAXP], out[N * MAXP], counts[MAXP], displs[MAXP];
    const char *fn = form_name[f];

    /* bcast: the root's N ints to every process of the other group */
    for (int i = 0; i < N; ++i) buf[i] = is_root ? V(group, rank, i) : -1;
    if (idle)
        EXPECT_OK(bcast(junk_buf(j, buf), junk_count(j), junk_type(j), root, inter, f), "inter bcast %s idle junk %d",
                  fn, j);
    else
        EXPECT_OK(bcast(buf, N, MPI_INT, root, inter, f), "inter bcast %s", fn);
    if (!in_root_group)
        for (int i = 0; i < N; ++i)
            CHECK(buf[i] == V(rg, rroot, i), "inter bcast %s: item %d = %d, want %d", fn, i, buf[i], V(rg, rroot, i));

    /* reduce: the root gets the other group's sum */
    for (int i = 0; i < N; ++i) buf[i] = V(group, rank, i), out[i] = -1;
    if (idle)
        EXPECT_OK(reduce(junk_buf(j, buf), junk_buf(j, out), junk_count(j), junk_type(j), junk_op(j), root, inter, f),
                  "inter reduce %s idle junk %d", fn, j);
    else if (is_root) /* sendbuf is not significant at the root */
        EXPECT_OK(reduce(junk_buf(j, out), out, N, MPI_INT, MPI_SUM, root, inter, f), "inter reduce %s root junk %d",
                  fn, j);
    else /* recvbuf is not significant in the sending group */
        EXPECT_OK(reduce(buf, junk_buf(j, buf), N, MPI_INT, MPI_SUM, root, inter, f), "inter reduce %s junk %d", fn, j);
    if (is_root)
        for (int i = 0; i < N; ++i) {
            int want = 0;
            for (int r = 0; r < rsize; ++r) want += V(1 - group, r, i);
            CHECK(out[i] == want, "inter reduce %s: item %d = %d, want %d", fn, i, out[i], want);
        }

    /* gather: 2 ints from every process of the other group */
    int two[2] = {V(group, rank, 0), V(group, rank, 1)};
    for (int i = 0; i < 2 * rsize; ++i) out[i] = -1;
    if (idle)
        EXPECT_OK(gather(junk_buf(j, two), junk_count(j), junk_type(j), junk_buf(j, out), junk_count(j), junk_type(j),
                         root, inter, f), "inter gather %s idle junk %d", fn, j);
    else if (is_root)
        EXPECT_OK(gather(junk_buf(j, two), junk_count(j), junk_type(j), out, 2, MPI_INT, root, inter, f),
                  "inter gather %s root junk %d", fn, j);
    else
        EXPECT_OK(gather(two, 2, MPI_INT, junk_buf(j, out), junk_count(j), junk_type(j), root, inter, f),
                  "inter gather %s junk %d", fn, j);
    if (is_root)
        for (int r = 0; r < rsize; ++r)
            CHECK(out[2 * r] == V(1 - group, r, 0) && out[2 * r + 1] == V(1 - group, r, 1),
                  "inter gather %s: from %d got %d %d", fn, r, out[2 * r], out[2 * r + 1]);

    /* gatherv: r + 1 ints from remote rank r */
    for (int r = 0; r < rsize; ++r) counts[r] = r + 1, displs[r] = r * N;
    for (int i = 0; i < N; ++i) buf[i] = V(group, rank, i + 10);
    for (int i = 0; i < N * rsize; ++i) out[i] = -1;
    if (idle)
        EXPECT_OK(gatherv(junk_buf(j, buf), junk_count(j), junk_type(j), junk_buf(j, out), NULL, NULL, junk_type(j),
                          root, inter, f), "inter gatherv %s idle junk %d", fn, j);
    else if (is_root)
        EXPECT_OK(gatherv(junk_buf(j, buf), junk_count(j), junk_type(j), out, counts, displs, MPI_INT, root, inter, f),
                  "inter gatherv %s root junk %d", fn, j);
    else
        EXPECT_OK(gatherv(buf, rank + 1, MPI_INT, junk_buf(j, out), NULL, NULL, junk_type(j), root, inter, f),
                  "inter gatherv %s junk %d", fn, j);
    if (is_root)
        for (int r = 0; r < rsize; ++r)
            for (int i = 0; i < N; ++i) {
                int want = i <= r ? V(1 - group, r, i + 10) : -1;
                CHECK(out[r * N + i] == want, "inter gatherv %s: from %d item %d = %d, want %d", fn, r, i,
                      out[r * N + i], want);
            }

    /* scatter: 2 ints to every process of the other group */
    for (int r = 0; r < rsize; ++r) buf[2 * r] = V(group, r, 5), buf[2 * r + 1] = V(group, r, 6);
    int got[2] = {-1, -1};
    if (idle)
        EXPECT_OK(scatter(junk_buf(j, buf), junk_count(j), junk_type(j), junk_buf(j, got), junk_count(j),
                          junk_type(j), root, inter, f), "inter scatter %s idle junk %d", fn, j);
    else if (is_root)
        EXPECT_OK(scatter(buf, 2, MPI_INT, junk_buf(j, got), junk_count(j), junk_type(j), root, inter, f),
                  "inter scatter %s root junk %d", fn, j);
    else
        EXPECT_OK(scatter(junk_buf(j, buf), junk_count(j), junk_type(j), got, 2, MPI_INT, root, inter, f),
                  "inter scatter %s junk %d", fn, j);
    if (!in_root_group)
        CHECK(got[0] == V(rg, rank, 5) && got[1] == V(rg, rank, 6), "inter scatter %s: got %d %d", fn, got[0], got[1]);

    /* scatterv: r + 1 ints to remote rank r */
    for (int r = 0; r < rsize; ++r) {
        counts[r] = r + 1, displs[r] = r * N;
        for (int i = 0; i < N; ++i) buf[r * N + i] = V(group, r, i + 20);
    }
    for (int i = 0; i < N; ++i) out[i] = -1;
    if (idle)
        EXPECT_OK(scatterv(junk_buf(j, buf), NULL, NULL, junk_type(j), junk_buf(j, out), junk_count(j), junk_type(j),
                           root, inter, f), "inter scatterv %s idle junk %d", fn, j);
    else if (is_root)
        EXPECT_OK(scatterv(buf, counts, displs, MPI_INT, junk_buf(j, out), junk_count(j), junk_type(j), root, inter, f),
                  "inter scatterv %s root junk %d", fn, j);
    else
        EXPECT_OK(scatterv(junk_buf(j, buf), NULL, NULL, junk_type(j), out, rank + 1, MPI_INT, root, inter, f),
                  "inter scatterv %s junk %d", fn, j);
    if (!in_root_group)
        for (int i = 0; i < N; ++i) {
            int want = i <= rank ? V(rg, rank, i + 20) : -1;
            CHECK(out[i] == want, "inter scatterv %s: item %d = %d, want %d", fn, i, out[i], want);
        }
}

/* ---- intracommunicator ----------------------------------------------------------------- */
static void intra_round(MPI_Comm w, int me, int n, int root, int j, enum Form f)
{
    int buf[N * MAXP], out[N * MAXP], counts[MAXP], displs[MAXP];
    const char *fn = form_name[f];
    int is_root = me == root;

    /* gather: recv arguments only at the root; the root in place sends nothing */
    int two[2] = {V(0, me, 0), V(0, me, 1)};
    for (int i = 0; i < 2 * n; ++i) out[i] = -1;
    if (is_root) {
        out[2 * me] = two[0], out[2 * me + 1] = two[1];
        EXPECT_OK(gather(MPI_IN_PLACE, junk_count(j), junk_type(j), out, 2, MPI_INT, root, w, f),
                  "gather %s in-place root junk %d", fn, j);
        for (int r = 0; r < n; ++r)
            CHECK(out[2 * r] == V(0, r, 0) && out[2 * r + 1] == V(0, r, 1), "gather %s: from %d got %d %d", fn, r,
                  out[2 * r], out[2 * r + 1]);
    } else {
        EXPECT_OK(gather(two, 2, MPI_INT, junk_buf(j, out), junk_count(j), junk_type(j), root, w, f),
                  "gather %s junk %d", fn, j);
    }

    /* gatherv: r + 1 ints from rank r */
    for (int r = 0; r < n; ++r) counts[r] = r + 1, displs[r] = r * N;
    for (int i = 0; i < N; ++i) buf[i] = V(0, me, i + 10);
    for (int i = 0; i < N * n; ++i) out[i] = -1;
    if (is_root)
        EXPECT_OK(gatherv(buf, me + 1, MPI_INT, out, counts, displs, MPI_INT, root, w, f), "gatherv %s root", fn);
    else
        EXPECT_OK(gatherv(buf, me + 1, MPI_INT, junk_buf(j, out), NULL, NULL, junk_type(j), root, w, f),
                  "gatherv %s junk %d", fn, j);
    if (is_root)
        for (int r = 0; r < n; ++r)
            for (int i = 0; i < N; ++i) {
                int want = i <= r ? V(0, r, i + 10) : -1;
                CHECK(out[r * N + i] == want, "gatherv %s: from %d item %d = %d, want %d", fn, r, i, out[r * N + i],
                      want);
            }

    /* scatter: send arguments only at the root; the root in place receives nothing */
    for (int r = 0; r < n; ++r) buf[2 * r] = V(1, r, 5), buf[2 * r + 1] = V(1, r, 6);
    int got[2] = {-1, -1};
    if (is_root)
        EXPECT_OK(scatter(buf, 2, MPI_INT, MPI_IN_PLACE, junk_count(j), junk_type(j), root, w, f),
                  "scatter %s in-place root junk %d", fn, j);
    else {
        EXPECT_OK(scatter(junk_buf(j, buf), junk_count(j), junk_type(j), got, 2, MPI_INT, root, w, f),
                  "scatter %s junk %d", fn, j);
        CHECK(got[0] == V(1, me, 5) && got[1] == V(1, me, 6), "scatter %s: got %d %d", fn, got[0], got[1]);
    }

    /* scatterv: r + 1 ints to rank r */
    for (int r = 0; r < n; ++r) {
        counts[r] = r + 1, displs[r] = r * N;
        for (int i = 0; i < N; ++i) buf[r * N + i] = V(1, r, i + 20);
    }
    for (int i = 0; i < N; ++i) out[i] = -1;
    if (is_root)
        EXPECT_OK(scatterv(buf, counts, displs, MPI_INT, out, me + 1, MPI_INT, root, w, f), "scatterv %s root", fn);
    else
        EXPECT_OK(scatterv(junk_buf(j, buf), NULL, NULL, junk_type(j), out, me + 1, MPI_INT, root, w, f),
                  "scatterv %s junk %d", fn, j);
    for (int i = 0; i < N; ++i) {
        int want = i <= me ? V(1, me, i + 20) : -1;
        CHECK(out[i] == want, "scatterv %s: item %d = %d, want %d", fn, i, out[i], want);
    }

    /* reduce: recvbuf only at the root */
    for (int i = 0; i < N; ++i) buf[i] = V(0, me, i), out[i] = -1;
    if (is_root)
        EXPECT_OK(reduce(buf, out, N, MPI_INT, MPI_SUM, root, w, f), "reduce %s root", fn);
    else
        EXPECT_OK(reduce(buf, junk_buf(j, buf), N, MPI_INT, MPI_SUM, root, w, f),
                  "reduce %s junk %d", fn, j);
    if (is_root)
        for (int i = 0; i < N; ++i) {
            int want = 0;
            for (int r = 0; r < n; ++r) want += V(0, r, i);
            CHECK(out[i] == want, "reduce %s: item %d = %d, want %d", fn, i, out[i], want);
        }
}

int main(int argc, char **argv)
{
    int wrank, wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (wsize > MAXP) {
        if (wrank == 0) fprintf(stderr, "coll_root_args: at most %d ranks\n", MAXP);
        MPI_Finalize();
        return 1;
    }
    MPI_Type_contiguous(2, MPI_INT, &uncommitted); /* never committed: invalid for communication */

    for (int f = 0; f < FORMS; ++f)
        for (int j = 0; j < JUNKS; ++j)
            for (int root = 0; root < wsize; ++root) intra_round(MPI_COMM_WORLD, wrank, wsize, root, j, (enum Form)f);

    if (wsize >= 2) {
        int nA = wsize / 2, inA = wrank < nA;
        MPI_Comm local, inter;
        MPI_Comm_split(MPI_COMM_WORLD, inA, wrank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? nA : 0, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        int rank, lsize, rsize;
        MPI_Comm_rank(inter, &rank);
        MPI_Comm_size(inter, &lsize);
        MPI_Comm_remote_size(inter, &rsize);
        for (int f = 0; f < FORMS; ++f)
            for (int j = 0; j < JUNKS; ++j)
                for (int rg = 0; rg < 2; ++rg) inter_round(inter, inA ? 0 : 1, rank, lsize, rsize, rg, j, (enum Form)f);
        /* Still in step: an allreduce over both groups after all of that. */
        int one = 1, sum = 0;
        EXPECT_OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter), "inter allreduce after the rounds");
        CHECK(sum == rsize, "inter allreduce after the rounds: %d, want %d", sum, rsize);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }
    MPI_Type_free(&uncommitted);
    MPI_Finalize();
    return report("coll_root_args");
}
