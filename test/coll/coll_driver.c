/* Collective correctness driver: `coll_driver NAME` checks one collective
 * (blocking, nonblocking and persistent forms) with every algorithm, forced
 * through Axon's MPI_T control variable AXON_COLL_<NAME>_ALGORITHM (other
 * MPIs run their own choice), over sizes from 0 to a few MiB, roots, MPI_IN_PLACE, a strided
 * derived type (holes must stay untouched) and a non-commutative user op
 * (2x2 matrix product over a derived type with holes: operand order matters).
 * Results are compared exactly with values computed locally. */
#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;
static MPI_Datatype strided; /* MPI_INT with an 8-byte extent: every other int */
static MPI_Datatype mat;     /* 4 unsigned (a b c d), extent 24 bytes */
static MPI_Op matmul;        /* non-commutative */

#define HOLE (-7)

static int val(int r, long i) { return (r + 1) * 1000 + (int)(i % 997); }

/* A buffer of `count` ints seen through MPI_INT (stride 1) or `strided` (2). */
typedef struct {
    MPI_Datatype type;
    int stride;
} dt_t;

static int *ints(long count, int stride)
{
    long n = count * stride + 1;
    int *p = malloc((size_t)n * sizeof(int));
    for (long i = 0; i < n; ++i) p[i] = HOLE;
    return p;
}
static int holes_ok(const int *p, long count, int stride)
{
    for (long i = 0; i < count * stride + 1; ++i)
        if (i % stride != 0 || i == count * stride)
            if (p[i] != HOLE) return 0;
    return 1;
}

/* ---- the matrix op -------------------------------------------------------- */
typedef struct { unsigned a, b, c, d, pad[2]; } m2;
static m2 mmul(m2 x, m2 y)
{
    m2 r;
    memset(&r, 0, sizeof r);
    r.a = x.a * y.a + x.b * y.c; r.b = x.a * y.b + x.b * y.d;
    r.c = x.c * y.a + x.d * y.c; r.d = x.c * y.b + x.d * y.d;
    r.pad[0] = r.pad[1] = 0xdead;
    return r;
}
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    m2 *x = in, *y = inout;
    for (int i = 0; i < *len; ++i) {
        unsigned keep0 = y[i].pad[0], keep1 = y[i].pad[1];
        y[i] = mmul(x[i], y[i]);
        y[i].pad[0] = keep0, y[i].pad[1] = keep1;
    }
}
static m2 mval(int r, long i)
{
    m2 m = {(unsigned)r + 1, (unsigned)(i % 3) + 1, 1, (unsigned)r + 2, {0xdead, 0xdead}};
    return m;
}
static int meq(m2 x, m2 y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

/* ---- running one call in each form --------------------------------------- */
static int mode; /* 0 blocking, 1 nonblocking, 2 persistent */
#define RUN(blocking, nonblocking, persistent)                                   \
    do {                                                                         \
        MPI_Request rq_ = MPI_REQUEST_NULL;                                      \
        if (mode == 0) {                                                         \
            CHECK_MPI(blocking);                                                 \
        } else if (mode == 1) {                                                  \
            CHECK_MPI(nonblocking);                                              \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                        \
        } else {                                                                 \
            CHECK_MPI(persistent);                                               \
            CHECK_MPI(MPI_Start(&rq_));                                          \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                        \
            CHECK_MPI(MPI_Request_free(&rq_));                                   \
        }                                                                        \
    } while (0)
#define RQ &rq_
#define INFO MPI_INFO_NULL

static const char *ctx_alg = "";
static long ctx_count;
#define EXPECT(cond, what, ...)                                                             \
    CHECK(cond, "%s alg=%s mode=%d count=%ld: " what, coll, ctx_alg, mode, ctx_count, __VA_ARGS__)
static const char *coll = "";

/* ---- tests ---------------------------------------------------------------- */
static const long sizes[] = {0, 1, 7, 1000, 16384};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void t_barrier(long count)
{
    (void)count;
    RUN(MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, RQ),
        MPI_Barrier_init(MPI_COMM_WORLD, INFO, RQ));
}

static void t_bcast(long count, dt_t d, int root)
{
    int *b = ints(count, d.stride);
    for (long i = 0; i < count; ++i) b[i * d.stride] = rank == root ? val(root, i) : -1;
    RUN(MPI_Bcast(b, (int)count, d.type, root, MPI_COMM_WORLD),
        MPI_Ibcast(b, (int)count, d.type, root, MPI_COMM_WORLD, RQ),
        MPI_Bcast_init(b, (int)count, d.type, root, MPI_COMM_WORLD, INFO, RQ));
    for (long i = 0; i < count; ++i)
        if (b[i * d.stride] != val(root, i)) { EXPECT(0, "item %ld = %d, want %d", i, b[i * d.stride], val(root, i)); break; }
    EXPECT(holes_ok(b, count, d.stride), "holes written (root %d)", root);
    free(b);
}

/* gather / gatherv (v: rank r sends count + r items, displacements leave gaps). */
static void t_gather(long count, dt_t sd, dt_t rd, int root, int in_place, int v)
{
    int *rc = calloc(size, sizeof(int)), *dp = calloc(size, sizeof(int)), total = 0;
    for (int r = 0; r < size; ++r) {
        rc[r] = (int)count + (v ? r : 0);
        dp[r] = total + (v ? 1 : 0);
        total = dp[r] + rc[r];
    }
    long mine = rc[rank];
    int *s = ints(mine, sd.stride), *rb = ints(total, rd.stride);
    for (long i = 0; i < mine; ++i) s[i * sd.stride] = val(rank, i);
    void *sbuf = s;
    if (in_place && rank == root) {
        for (long i = 0; i < mine; ++i) rb[(dp[rank] + i) * rd.stride] = val(rank, i);
        sbuf = MPI_IN_PLACE;
    }
    if (!v)
        RUN(MPI_Gather(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, root, MPI_COMM_WORLD),
            MPI_Igather(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, root, MPI_COMM_WORLD, RQ),
            MPI_Gather_init(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, root, MPI_COMM_WORLD, INFO, RQ));
    else
        RUN(MPI_Gatherv(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, root, MPI_COMM_WORLD),
            MPI_Igatherv(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, root, MPI_COMM_WORLD, RQ),
            MPI_Gatherv_init(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, root, MPI_COMM_WORLD, INFO, RQ));
    if (rank == root) {
        int bad = 0;
        for (int r = 0; r < size && !bad; ++r)
            for (long i = 0; i < rc[r]; ++i)
                if (rb[(dp[r] + i) * rd.stride] != val(r, i)) {
                    EXPECT(0, "root %d in_place %d: from %d item %ld = %d", root, in_place, r, i, rb[(dp[r] + i) * rd.stride]);
                    bad = 1;
                    break;
                }
        if (v) /* the gaps between blocks stay untouched */
            for (int r = 0; r < size; ++r)
                EXPECT(rb[(dp[r] - 1) * rd.stride] == HOLE, "gap before block %d written", r);
    }
    free(s), free(rb), free(rc), free(dp);
}

static void t_scatter(long count, dt_t sd, dt_t rd, int root, int in_place, int v)
{
    int *sc = calloc(size, sizeof(int)), *dp = calloc(size, sizeof(int)), total = 0;
    for (int r = 0; r < size; ++r) {
        sc[r] = (int)count + (v ? r : 0);
        dp[r] = total + (v ? 1 : 0);
        total = dp[r] + sc[r];
    }
    long mine = sc[rank];
    int *s = ints(total, sd.stride), *rb = ints(mine, rd.stride);
    if (rank == root)
        for (int r = 0; r < size; ++r)
            for (long i = 0; i < sc[r]; ++i) s[(dp[r] + i) * sd.stride] = val(r, i);
    void *rbuf = in_place && rank == root ? MPI_IN_PLACE : (void *)rb;
    if (!v)
        RUN(MPI_Scatter(s, (int)count, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD),
            MPI_Iscatter(s, (int)count, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD, RQ),
            MPI_Scatter_init(s, (int)count, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD, INFO, RQ));
    else
        RUN(MPI_Scatterv(s, sc, dp, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD),
            MPI_Iscatterv(s, sc, dp, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD, RQ),
            MPI_Scatterv_init(s, sc, dp, sd.type, rbuf, (int)mine, rd.type, root, MPI_COMM_WORLD, INFO, RQ));
    if (!(in_place && rank == root)) {
        for (long i = 0; i < mine; ++i)
            if (rb[i * rd.stride] != val(rank, i)) { EXPECT(0, "root %d: item %ld = %d", root, i, rb[i * rd.stride]); break; }
        EXPECT(holes_ok(rb, mine, rd.stride), "holes written (root %d)", root);
    } else {
        for (long i = 0; i < mine; ++i)
            if (s[(dp[rank] + i) * sd.stride] != val(rank, i)) { EXPECT(0, "in place: root block changed at %ld", i); break; }
    }
    free(s), free(rb), free(sc), free(dp);
}

static void t_allgather(long count, dt_t sd, dt_t rd, int in_place, int v)
{
    int *rc = calloc(size, sizeof(int)), *dp = calloc(size, sizeof(int)), total = 0;
    for (int r = 0; r < size; ++r) {
        rc[r] = (int)count + (v ? (r * 3) % 4 : 0);
        dp[r] = total + (v ? 2 : 0);
        total = dp[r] + rc[r];
    }
    long mine = rc[rank];
    int *s = ints(mine, sd.stride), *rb = ints(total, rd.stride);
    for (long i = 0; i < mine; ++i) s[i * sd.stride] = val(rank, i);
    void *sbuf = s;
    if (in_place) {
        for (long i = 0; i < mine; ++i) rb[(dp[rank] + i) * rd.stride] = val(rank, i);
        sbuf = MPI_IN_PLACE;
    }
    if (!v)
        RUN(MPI_Allgather(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD),
            MPI_Iallgather(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD, RQ),
            MPI_Allgather_init(sbuf, (int)mine, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD, INFO, RQ));
    else
        RUN(MPI_Allgatherv(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, MPI_COMM_WORLD),
            MPI_Iallgatherv(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, MPI_COMM_WORLD, RQ),
            MPI_Allgatherv_init(sbuf, (int)mine, sd.type, rb, rc, dp, rd.type, MPI_COMM_WORLD, INFO, RQ));
    int bad = 0;
    for (int r = 0; r < size && !bad; ++r)
        for (long i = 0; i < rc[r]; ++i)
            if (rb[(dp[r] + i) * rd.stride] != val(r, i)) {
                EXPECT(0, "in_place %d: from %d item %ld = %d", in_place, r, i, rb[(dp[r] + i) * rd.stride]);
                bad = 1;
                break;
            }
    if (v)
        for (int r = 0; r < size; ++r) EXPECT(rb[(dp[r] - 1) * rd.stride] == HOLE, "gap before block %d written", r);
    free(s), free(rb), free(rc), free(dp);
}

/* alltoall: block for rank d from rank r holds val(r * 64 + d, i).
 * kind 0 alltoall, 1 alltoallv (counts vary, gaps), 2 alltoallw. */
static int a2a_count(long count, int from, int to, int kind) { return (int)count + (kind ? (from + to) % 3 : 0); }
static void t_alltoall(long count, dt_t sd, dt_t rd, int in_place, int kind)
{
    int *sc = calloc(size, sizeof(int)), *sdp = calloc(size, sizeof(int));
    int *rc = calloc(size, sizeof(int)), *rdp = calloc(size, sizeof(int));
    MPI_Datatype *st = malloc(size * sizeof(MPI_Datatype)), *rt = malloc(size * sizeof(MPI_Datatype));
    int stot = 0, rtot = 0;
    for (int r = 0; r < size; ++r) {
        sc[r] = a2a_count(count, rank, r, kind);
        sdp[r] = stot + (kind ? 1 : 0);
        stot = sdp[r] + sc[r];
        rc[r] = a2a_count(count, r, rank, kind);
        rdp[r] = rtot + (kind ? 1 : 0);
        rtot = rdp[r] + rc[r];
        st[r] = sd.type, rt[r] = rd.type;
    }
    if (in_place) { /* in place: the send layout is the receive layout */
        memcpy(sc, rc, size * sizeof(int));
        memcpy(sdp, rdp, size * sizeof(int));
    }
    int *s = ints(stot, sd.stride), *rb = ints(rtot, rd.stride);
    for (int r = 0; r < size; ++r)
        for (long i = 0; i < sc[r]; ++i) {
            if (in_place) rb[(rdp[r] + i) * rd.stride] = val(rank * 64 + r, i);
            else s[(sdp[r] + i) * sd.stride] = val(rank * 64 + r, i);
        }
    void *sbuf = in_place ? MPI_IN_PLACE : (void *)s;
    if (kind == 0) {
        RUN(MPI_Alltoall(sbuf, (int)count, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD),
            MPI_Ialltoall(sbuf, (int)count, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD, RQ),
            MPI_Alltoall_init(sbuf, (int)count, sd.type, rb, (int)count, rd.type, MPI_COMM_WORLD, INFO, RQ));
    } else if (kind == 1) {
        RUN(MPI_Alltoallv(sbuf, sc, sdp, sd.type, rb, rc, rdp, rd.type, MPI_COMM_WORLD),
            MPI_Ialltoallv(sbuf, sc, sdp, sd.type, rb, rc, rdp, rd.type, MPI_COMM_WORLD, RQ),
            MPI_Alltoallv_init(sbuf, sc, sdp, sd.type, rb, rc, rdp, rd.type, MPI_COMM_WORLD, INFO, RQ));
    } else {
        int *sb = calloc(size, sizeof(int)), *rbd = calloc(size, sizeof(int));
        for (int r = 0; r < size; ++r) {
            sb[r] = sdp[r] * sd.stride * (int)sizeof(int);
            rbd[r] = rdp[r] * rd.stride * (int)sizeof(int);
        }
        RUN(MPI_Alltoallw(sbuf, sc, sb, st, rb, rc, rbd, rt, MPI_COMM_WORLD),
            MPI_Ialltoallw(sbuf, sc, sb, st, rb, rc, rbd, rt, MPI_COMM_WORLD, RQ),
            MPI_Alltoallw_init(sbuf, sc, sb, st, rb, rc, rbd, rt, MPI_COMM_WORLD, INFO, RQ));
        free(sb), free(rbd);
    }
    int bad = 0;
    for (int r = 0; r < size && !bad; ++r)
        for (long i = 0; i < rc[r]; ++i)
            if (rb[(rdp[r] + i) * rd.stride] != val(r * 64 + rank, i)) {
                EXPECT(0, "kind %d in_place %d: from %d item %ld = %d want %d", kind, in_place, r, i,
                       rb[(rdp[r] + i) * rd.stride], val(r * 64 + rank, i));
                bad = 1;
                break;
            }
    if (kind)
        for (int r = 0; r < size; ++r) EXPECT(rb[(rdp[r] - 1) * rd.stride] == HOLE, "gap before block %d written", r);
    free(s), free(rb), free(sc), free(sdp), free(rc), free(rdp), free(st), free(rt);
}

/* Reductions: MPI_SUM over MPI_INT and the matrix product over `mat`.
 * which: 0 reduce, 1 allreduce, 2 scan, 3 exscan, 4 reduce_scatter_block, 5 reduce_scatter. */
static void t_reduction(int which, long count, int noncomm, int root, int in_place)
{
    int n = size;
    long *cnt = calloc(n, sizeof(long)), *off = calloc(n, sizeof(long));
    long total = count;
    if (which >= 4) {
        total = 0;
        for (int r = 0; r < n; ++r) {
            cnt[r] = which == 4 ? count : count + (r % 2) * 3;
            off[r] = total;
            total += cnt[r];
        }
    }
    long outn = which >= 4 ? cnt[rank] : count;
    size_t esz = noncomm ? sizeof(m2) : sizeof(int);
    MPI_Datatype dt = noncomm ? mat : MPI_INT;
    MPI_Op op = noncomm ? matmul : MPI_SUM;
    char *s = calloc(total + 1, esz), *rb = calloc(total + 1, esz);
    for (long i = 0; i < total; ++i) {
        if (noncomm) ((m2 *)s)[i] = mval(rank, i);
        else ((int *)s)[i] = val(rank, i);
    }
    int use_in_place = in_place && (which != 0 || rank == root);
    if (use_in_place) memcpy(rb, s, total * esz);
    const void *sbuf = use_in_place ? MPI_IN_PLACE : s;
    int *rcs = calloc(n, sizeof(int));
    for (int r = 0; r < n; ++r) rcs[r] = which >= 4 ? (int)cnt[r] : 0;
    int c = (int)count;
    switch (which) {
    case 0:
        RUN(MPI_Reduce(sbuf, rb, c, dt, op, root, MPI_COMM_WORLD), MPI_Ireduce(sbuf, rb, c, dt, op, root, MPI_COMM_WORLD, RQ),
            MPI_Reduce_init(sbuf, rb, c, dt, op, root, MPI_COMM_WORLD, INFO, RQ));
        break;
    case 1:
        RUN(MPI_Allreduce(sbuf, rb, c, dt, op, MPI_COMM_WORLD), MPI_Iallreduce(sbuf, rb, c, dt, op, MPI_COMM_WORLD, RQ),
            MPI_Allreduce_init(sbuf, rb, c, dt, op, MPI_COMM_WORLD, INFO, RQ));
        break;
    case 2:
        RUN(MPI_Scan(sbuf, rb, c, dt, op, MPI_COMM_WORLD), MPI_Iscan(sbuf, rb, c, dt, op, MPI_COMM_WORLD, RQ),
            MPI_Scan_init(sbuf, rb, c, dt, op, MPI_COMM_WORLD, INFO, RQ));
        break;
    case 3:
        RUN(MPI_Exscan(sbuf, rb, c, dt, op, MPI_COMM_WORLD), MPI_Iexscan(sbuf, rb, c, dt, op, MPI_COMM_WORLD, RQ),
            MPI_Exscan_init(sbuf, rb, c, dt, op, MPI_COMM_WORLD, INFO, RQ));
        break;
    case 4:
        RUN(MPI_Reduce_scatter_block(sbuf, rb, c, dt, op, MPI_COMM_WORLD),
            MPI_Ireduce_scatter_block(sbuf, rb, c, dt, op, MPI_COMM_WORLD, RQ),
            MPI_Reduce_scatter_block_init(sbuf, rb, c, dt, op, MPI_COMM_WORLD, INFO, RQ));
        break;
    default:
        RUN(MPI_Reduce_scatter(sbuf, rb, rcs, dt, op, MPI_COMM_WORLD),
            MPI_Ireduce_scatter(sbuf, rb, rcs, dt, op, MPI_COMM_WORLD, RQ),
            MPI_Reduce_scatter_init(sbuf, rb, rcs, dt, op, MPI_COMM_WORLD, INFO, RQ));
        break;
    }
    /* Expected: ranks lo..hi combined in rank order. */
    int lo = 0, hi = n - 1, check = 1;
    if (which == 0) check = rank == root;
    if (which == 2) hi = rank;
    if (which == 3) { hi = rank - 1; check = rank > 0; }
    long base = which >= 4 ? off[rank] : 0;
    for (long i = 0; check && i < outn; ++i) {
        long j = base + i;
        if (noncomm) {
            m2 e = mval(lo, j);
            for (int r = lo + 1; r <= hi; ++r) e = mmul(e, mval(r, j));
            m2 got = ((m2 *)rb)[i];
            if (!meq(got, e)) { EXPECT(0, "which %d root %d in_place %d noncomm: item %ld wrong", which, root, in_place, i); break; }
        } else {
            int e = 0;
            for (int r = lo; r <= hi; ++r) e += val(r, j);
            int got = ((int *)rb)[i];
            if (got != e) { EXPECT(0, "which %d root %d in_place %d: item %ld = %d want %d", which, root, in_place, i, got, e); break; }
        }
    }
    free(s), free(rb), free(cnt), free(off), free(rcs);
}

/* ---- driving -------------------------------------------------------------- */
static void set_alg(const char *alg)
{
    force_algorithm(coll, alg);
    ctx_alg = alg;
}

static void run_all(const char *name)
{
    dt_t di = {MPI_INT, 1}, ds = {strided, 2};
    dt_t types[2] = {di, ds};
    int roots[2] = {0, size - 1};
    for (size_t z = 0; z < NSIZES; ++z) {
        long count = sizes[z];
        ctx_count = count;
        for (mode = 0; mode < 3; ++mode) {
            /* the 64 KiB size in blocking form only, to keep the run short */
            if (count > 1000 && mode) continue;
            if (!strcmp(name, "barrier")) t_barrier(count);
            for (int ri = 0; ri < 2; ++ri) {
                int root = roots[ri];
                if (ri && size == 1) break;
                for (int t = 0; t < 2; ++t) {
                    if (!strcmp(name, "bcast")) t_bcast(count, types[t], root);
                    for (int ip = 0; ip < 2; ++ip) {
                        dt_t sd = types[t], rd = types[(t + ip) % 2]; /* also mixed send/recv types */
                        if (!strcmp(name, "gather")) t_gather(count, sd, rd, root, ip, 0);
                        if (!strcmp(name, "gatherv")) t_gather(count, sd, rd, root, ip, 1);
                        if (!strcmp(name, "scatter")) t_scatter(count, sd, rd, root, ip, 0);
                        if (!strcmp(name, "scatterv")) t_scatter(count, sd, rd, root, ip, 1);
                        if (ri == 0) {
                            if (!strcmp(name, "allgather")) t_allgather(count, sd, rd, ip, 0);
                            if (!strcmp(name, "allgatherv")) t_allgather(count, sd, rd, ip, 1);
                            if (!strcmp(name, "alltoall")) t_alltoall(count, sd, rd, ip, 0);
                            if (!strcmp(name, "alltoallv")) t_alltoall(count, sd, rd, ip, 1);
                            if (!strcmp(name, "alltoallw")) t_alltoall(count, sd, rd, ip, 2);
                        }
                    }
                }
                for (int nc = 0; nc < 2; ++nc)
                    for (int ip = 0; ip < 2; ++ip) {
                        if (!strcmp(name, "reduce")) t_reduction(0, count, nc, root, ip);
                        if (ri) continue;
                        if (!strcmp(name, "allreduce")) t_reduction(1, count, nc, 0, ip);
                        if (!strcmp(name, "scan")) t_reduction(2, count, nc, 0, ip);
                        if (!strcmp(name, "exscan")) t_reduction(3, count, nc, 0, ip);
                        if (!strcmp(name, "reduce_scatter_block")) t_reduction(4, count, nc, 0, ip);
                        if (!strcmp(name, "reduce_scatter")) t_reduction(5, count, nc, 0, ip);
                    }
            }
        }
    }
    /* A few MiB, blocking, for the algorithms where size changes the path. */
    mode = 0;
    long big = 1L << 20; /* 4 MiB of ints */
    ctx_count = big;
    if (!strcmp(name, "bcast")) { t_bcast(big, di, 0); t_bcast(big, di, size - 1); }
    if (!strcmp(name, "allreduce")) { t_reduction(1, big, 0, 0, 0); t_reduction(1, big / 16, 1, 0, 1); }
    if (!strcmp(name, "reduce")) t_reduction(0, big, 0, size - 1, 0);
    if (!strcmp(name, "allgather")) { t_allgather(big / size, di, di, 0, 0); t_allgather(big / (4 * size), ds, di, 1, 0); }
    if (!strcmp(name, "allgatherv")) t_allgather(big / (4 * size), di, ds, 0, 1);
    if (!strcmp(name, "alltoall")) { t_alltoall(big / (size * size), di, di, 0, 0); t_alltoall(big / (4 * size * size), ds, di, 1, 0); }
    /* several node-segment steps per block */
    if (!strcmp(name, "gather")) { t_gather(big / (2 * size), di, di, size - 1, 0, 0); t_gather(big / (4 * size), ds, di, 0, 1, 0); }
    if (!strcmp(name, "scatter")) { t_scatter(big / (2 * size), di, di, size - 1, 0, 0); t_scatter(big / (4 * size), di, ds, 0, 1, 0); }
}

static const char *algs_of(const char *name)
{
    static const char *table[][2] = {
        {"barrier", "dissemination shm hierarchical"},
        {"bcast", "binomial knomial scatter_allgather pipeline shm hierarchical"},
        {"gather", "binomial linear shm"},
        {"gatherv", "linear"},
        {"scatter", "binomial linear shm"},
        {"scatterv", "linear"},
        {"allgather", "ring recursive_doubling bruck shm"},
        {"allgatherv", "ring linear shm"},
        {"alltoall", "pairwise bruck linear shm"},
        {"alltoallv", "pairwise linear"},
        {"alltoallw", "pairwise linear"},
        {"reduce", "binomial knomial shm hierarchical"},
        {"allreduce", "recursive_doubling reduce_bcast ring rabenseifner shm hierarchical"},
        {"reduce_scatter", "reduce_scatterv pairwise"},
        {"reduce_scatter_block", "reduce_scatterv pairwise"},
        {"scan", "linear recursive_doubling"},
        {"exscan", "linear recursive_doubling"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (!strcmp(table[i][0], name)) return table[i][1];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: coll_driver COLLECTIVE [NODE_SIZE [SHM_CHUNK]]\n");
        return 2;
    }
    coll = argv[1];
    /* NODE_SIZE: pretend nodes of that many consecutive ranks, so that the
       hierarchical algorithms run their leader phase on one host. */
    if (argc > 2) setenv("AXON_COLL_NODE_SIZE", argv[2], 1);
    /* CHUNK: slot size of the node segment (small: many steps per call). */
    if (argc > 3) setenv("AXON_COLL_SHM_CHUNK", argv[3], 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_UNSIGNED, &four);
    MPI_Type_create_resized(four, 0, sizeof(m2), &mat);
    MPI_Type_commit(&mat);
    MPI_Type_free(&four);
    MPI_Op_create(matmul_fn, 0, &matmul);

    const char *algs = algs_of(coll);
    /* With a pretend node size only the node-level algorithms are of interest. */
    if (argc > 2 && algs && strstr(algs, "hierarchical")) algs = "hierarchical";
    /* "0" (real topology, test/netns): the default choice only. */
    if (argc > 2 && algs && !strcmp(argv[2], "0")) algs = "";
    CHECK(algs != NULL, "unknown collective %s", coll);
    if (algs) {
        char list[256], *save = NULL;
        snprintf(list, sizeof list, "%s", algs);
        for (char *alg = strtok_r(list, " ", &save); alg; alg = strtok_r(NULL, " ", &save)) {
            set_alg(alg);
            run_all(coll);
        }
        set_alg("auto");
        run_all(coll);
    }
    MPI_Op_free(&matmul);
    MPI_Type_free(&strided);
    MPI_Type_free(&mat);
    MPI_Finalize();
    return report(coll);
}
