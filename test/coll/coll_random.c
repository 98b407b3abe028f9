/* Randomized collective sequences: `coll_random [SEED [CALLS]]`.
 *
 * coll_driver checks each collective on its own, one call at a time, on
 * MPI_COMM_WORLD. Real programs mix them: sizes change from call to call
 * (which crosses the small-call shortcuts and the per-communicator memo of
 * the last choice), communicators with other members and other rank orders
 * run side by side, and nonblocking calls stay in flight while blocking ones
 * run. This test draws such a sequence from a seed that every rank shares,
 * so all ranks make the same calls in the same order, and checks every
 * result exactly against values computed locally:
 *
 *   - communicators: world, a dup of it, the even / odd ranks, world in
 *     reverse rank order, world without rank 0;
 *   - barrier, bcast, gather(v), scatter(v), allgather(v), alltoall(v/w),
 *     reduce, allreduce, reduce_scatter(_block), scan, exscan;
 *   - types and ops: MPI_UNSIGNED with MPI_SUM, MPI_MAX, MPI_BXOR, MPI_PROD;
 *     MPI_UNSIGNED with an 8-byte extent (the holes between items must stay
 *     untouched) with a commutative user sum; a pair of unsigned with a
 *     non-commutative user op (composition of affine maps: operand order
 *     matters);
 *   - counts from 0 to about 1 MB per buffer, MPI_IN_PLACE where the
 *     standard allows it, random roots;
 *   - blocking, nonblocking and persistent forms, up to four nonblocking or
 *     persistent calls in flight (completed together) while others run.
 *
 * A failure names the seed and the call number; the same seed replays the
 * same sequence. */
#include "../mpi/check.h"

#define HOLE 0xC0FFEEu
#define MAX_PENDING 4
#define NCOMMS 5
#define BLOCK_SPAN (1L << 22) /* item numbers of one destination block */

/* ---- the shared random sequence ------------------------------------------- */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static long pick(long n) { return n > 0 ? (long)(rnd() % (uint64_t)n) : 0; }

/* Items per rank: mostly small (the shortcuts), some medium, a few large. */
static long draw_count(void)
{
    long p = pick(20);
    if (p == 0) return 0;
    if (p < 8) return 1 + pick(16);
    if (p < 14) return 17 + pick(1008);
    if (p < 19) return 1025 + pick(16 * 1024);
    return 16 * 1024 + pick(240 * 1024);
}

/* ---- values, types, ops ----------------------------------------------------- */
/* Word `word` of item `item` of block `block` of world rank r in call `call`:
 * block is the destination comm rank for scatter / alltoall, else 0. */
static unsigned val(int r, long call, long block, long item, int word)
{
    uint64_t x = (uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)call * 0xBF58476D1CE4E5B9ull ^
                 (uint64_t)(block * BLOCK_SPAN + item) * 0x94D049BB133111EBull ^ (uint64_t)word << 60;
    x ^= x >> 31;
    x *= 0xD6E8FEB86993F2A5ull;
    x ^= x >> 29;
    return (unsigned)x | 1u; /* odd, so products never collapse to 0 */
}

typedef struct {
    MPI_Datatype type;
    int words;  /* unsigned words per item */
    int stride; /* words from one item to the next */
    const char *name;
} kind_t;
static kind_t kinds[3];

/* Predefined ops take MPI_UNSIGNED only (the standard defines them on the
 * listed basic types); the derived types get user ops. */
enum { OP_SUM, OP_MAX, OP_BXOR, OP_PROD, OP_USER_SUM, OP_COMPOSE, NOPS };
static MPI_Op ops[NOPS];
static const char *op_names[NOPS] = {"sum", "max", "bxor", "prod", "user sum (commutative)", "compose"};

/* y = x op y, x from the lower rank. compose: (a, b) o (c, d) = (a c, a d + b),
 * associative, not commutative. */
static void combine(int op, const unsigned *x, unsigned *y, int words)
{
    if (op == OP_COMPOSE) {
        unsigned a = x[0], b = x[1], c = y[0], d = y[1];
        y[0] = a * c;
        y[1] = a * d + b;
        return;
    }
    for (int k = 0; k < words; ++k) {
        if (op == OP_SUM || op == OP_USER_SUM) y[k] = x[k] + y[k];
        else if (op == OP_MAX) y[k] = x[k] > y[k] ? x[k] : y[k];
        else if (op == OP_BXOR) y[k] = x[k] ^ y[k];
        else y[k] = x[k] * y[k];
    }
}
/* On `len` items of *dt (one unsigned each, spaced by the type's extent). */
static void user_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*dt, &lb, &extent);
    for (int i = 0; i < *len; ++i)
        *(unsigned *)((char *)inout + i * extent) += *(const unsigned *)((const char *)in + i * extent);
}
static void compose_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; ++i) combine(OP_COMPOSE, (unsigned *)in + 2 * i, (unsigned *)inout + 2 * i, 2);
}

/* ---- one call --------------------------------------------------------------- */
enum {
    C_BARRIER, C_BCAST, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL,
    C_ALLTOALLV, C_ALLTOALLW, C_REDUCE, C_ALLREDUCE, C_REDUCE_SCATTER_BLOCK, C_REDUCE_SCATTER, C_SCAN, C_EXSCAN, NCALLS
};
static const char *call_names[NCALLS] = {
    "barrier", "bcast", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
    "alltoall", "alltoallv", "alltoallw", "reduce", "allreduce", "reduce_scatter_block", "reduce_scatter", "scan", "exscan"};

static MPI_Comm comms[NCOMMS];
static int *world_of[NCOMMS]; /* comm rank -> world rank */
static const char *comm_names[NCOMMS] = {"world", "dup", "parity", "reversed", "no-rank-0"};
static uint64_t seed;

typedef struct {
    long call;
    int coll, mode; /* mode: 0 blocking, 1 nonblocking, 2 persistent */
    int comm_index, root, in_place, op;
    long count; /* items per rank and block */
    const kind_t *k;
    MPI_Comm comm;
    int rank, size; /* in comm */
    int receives;   /* this rank's receive buffer gets data */
    unsigned *send, *recv;
    long send_items, recv_items;
    int *scounts, *sdispls, *rcounts, *rdispls; /* in items, per comm rank */
    int *sbytes, *rbytes;                       /* alltoallw: displacements in bytes */
    MPI_Datatype *types;                        /* alltoallw: the type for every peer */
    MPI_Request req;
} call_t;

static int world_rank_of(const call_t *c, int r) { return world_of[c->comm_index][r]; }

static void describe(const call_t *c, char *out, size_t len)
{
    snprintf(out, len, "seed %llu call %ld: %s on %s (rank %d of %d), count %ld, %s, op %s, root %d%s, %s",
             (unsigned long long)seed, c->call, call_names[c->coll], comm_names[c->comm_index], c->rank, c->size,
             c->count, c->k->name, op_names[c->op], c->root, c->in_place ? ", in place" : "",
             c->mode == 0 ? "blocking" : c->mode == 1 ? "nonblocking" : "persistent");
}

/* A buffer of `items` items, every word HOLE, and one guard item after them. */
static unsigned *buffer(const kind_t *k, long items)
{
    size_t n = (size_t)(items + 1) * (size_t)k->stride;
    unsigned *p = malloc(n * sizeof(unsigned));
    for (size_t i = 0; i < n; ++i) p[i] = HOLE;
    return p;
}
static unsigned *item_at(const call_t *c, unsigned *p, long item) { return p + item * c->k->stride; }
/* Items [at, at + n) of p: block `block` of world rank r, items [from, from + n). */
static void fill(const call_t *c, unsigned *p, long at, long n, int r, long block, long from)
{
    for (long i = 0; i < n; ++i)
        for (int w = 0; w < c->k->words; ++w) item_at(c, p, at + i)[w] = val(r, c->call, block, from + i, w);
}

/* v counts, symmetric (rank a -> b as b -> a) as in-place alltoallv needs. */
static int vcount(const call_t *c, int a, int b) { return (int)((c->count + (long)(a + b) * 3) % (c->count + 5)); }

/* Sets up counts and buffers for the call on this rank. */
static void prepare(call_t *c)
{
    int n = c->size, me = c->rank;
    long cnt = c->count;
    c->scounts = calloc((size_t)n, sizeof(int));
    c->sdispls = calloc((size_t)n, sizeof(int));
    c->rcounts = calloc((size_t)n, sizeof(int));
    c->rdispls = calloc((size_t)n, sizeof(int));
    /* Displacements leave a gap of one item before every block. */
    long stotal = 0, rtotal = 0;
    for (int r = 0; r < n; ++r) {
        switch (c->coll) {
        case C_GATHERV: case C_ALLGATHERV:
            c->scounts[r] = vcount(c, me, 0);
            c->rcounts[r] = vcount(c, r, 0);
            break;
        case C_SCATTERV:
            c->scounts[r] = vcount(c, r, 0);
            c->rcounts[r] = vcount(c, me, 0);
            break;
        case C_ALLTOALLV: case C_ALLTOALLW:
            c->scounts[r] = vcount(c, me, r);
            c->rcounts[r] = vcount(c, r, me);
            break;
        case C_REDUCE_SCATTER:
            c->rcounts[r] = vcount(c, r, 0);
            break;
        default:
            c->scounts[r] = c->rcounts[r] = (int)cnt;
            break;
        }
        c->sdispls[r] = (int)stotal + 1;
        stotal = c->sdispls[r] + c->scounts[r];
        c->rdispls[r] = (int)rtotal + 1;
        rtotal = c->rdispls[r] + c->rcounts[r];
    }
    int wme = world_rank_of(c, me);
    long red_items = cnt; /* items of one reduction operand */
    if (c->coll == C_REDUCE_SCATTER_BLOCK) red_items = cnt * n;
    if (c->coll == C_REDUCE_SCATTER) {
        red_items = 0;
        for (int r = 0; r < n; ++r) red_items += c->rcounts[r];
    }
    switch (c->coll) {
    case C_BARRIER:
        c->send_items = c->recv_items = 0;
        break;
    case C_BCAST:
        c->send_items = 0;
        c->recv_items = cnt;
        if (me == c->root) fill(c, c->recv = buffer(c->k, cnt), 0, cnt, wme, 0, 0);
        break;
    case C_GATHER: case C_ALLGATHER: case C_GATHERV: case C_ALLGATHERV: {
        int v = c->coll == C_GATHERV || c->coll == C_ALLGATHERV;
        int receives = c->coll == C_ALLGATHER || c->coll == C_ALLGATHERV || me == c->root;
        long mine = v ? c->scounts[0] : cnt;
        c->send_items = mine;
        c->recv_items = receives ? (v ? rtotal : cnt * n) : 0;
        long at = v ? c->rdispls[me] : me * cnt;
        if (c->in_place && receives) {
            c->recv = buffer(c->k, c->recv_items);
            fill(c, c->recv, at, mine, wme, 0, 0);
        } else {
            c->send = buffer(c->k, mine);
            fill(c, c->send, 0, mine, wme, 0, 0);
        }
        break;
    }
    case C_SCATTER: case C_SCATTERV: {
        int v = c->coll == C_SCATTERV;
        c->recv_items = v ? c->rcounts[0] : cnt;
        if (me == c->root) {
            c->send_items = v ? stotal : cnt * n;
            c->send = buffer(c->k, c->send_items);
            for (int r = 0; r < n; ++r) fill(c, c->send, v ? c->sdispls[r] : r * cnt, c->scounts[r], wme, r, 0);
        }
        if (c->in_place && me == c->root) c->recv_items = 0;
        break;
    }
    case C_ALLTOALL: case C_ALLTOALLV: case C_ALLTOALLW: {
        int v = c->coll != C_ALLTOALL;
        c->send_items = v ? stotal : cnt * n;
        c->recv_items = v ? rtotal : cnt * n;
        if (c->in_place) {
            /* The receive layout holds the outgoing blocks. */
            c->recv = buffer(c->k, c->recv_items);
            for (int r = 0; r < n; ++r) fill(c, c->recv, v ? c->rdispls[r] : r * cnt, c->rcounts[r], wme, r, 0);
        } else {
            c->send = buffer(c->k, c->send_items);
            for (int r = 0; r < n; ++r) fill(c, c->send, v ? c->sdispls[r] : r * cnt, c->scounts[r], wme, r, 0);
        }
        break;
    }
    default: { /* reductions */
        int receives = c->coll != C_REDUCE || me == c->root;
        c->send_items = red_items;
        if (c->coll == C_REDUCE_SCATTER_BLOCK) c->recv_items = cnt;
        else if (c->coll == C_REDUCE_SCATTER) c->recv_items = c->rcounts[me];
        else c->recv_items = receives ? cnt : 0;
        if (c->in_place && receives) {
            if (c->recv_items < red_items) c->recv_items = red_items;
            c->recv = buffer(c->k, c->recv_items);
            fill(c, c->recv, 0, red_items, wme, 0, 0);
        } else {
            c->send = buffer(c->k, red_items);
            fill(c, c->send, 0, red_items, wme, 0, 0);
        }
        break;
    }
    }
    if (!c->send) c->send = buffer(c->k, 0);
    if (!c->recv) c->recv = buffer(c->k, c->recv_items);
    if (c->coll == C_ALLTOALLW) {
        c->sbytes = calloc((size_t)n, sizeof(int));
        c->rbytes = calloc((size_t)n, sizeof(int));
        c->types = calloc((size_t)n, sizeof(MPI_Datatype));
        for (int r = 0; r < n; ++r) {
            c->sbytes[r] = c->sdispls[r] * c->k->stride * (int)sizeof(unsigned);
            c->rbytes[r] = c->rdispls[r] * c->k->stride * (int)sizeof(unsigned);
            c->types[r] = c->k->type;
        }
    }
    int rooted = c->coll == C_GATHER || c->coll == C_GATHERV || c->coll == C_REDUCE;
    c->receives = c->coll != C_BARRIER && !(rooted && me != c->root) &&
                  !((c->coll == C_SCATTER || c->coll == C_SCATTERV) && c->in_place && me == c->root) &&
                  !(c->coll == C_EXSCAN && me == 0);
}

#define MPI_OK(expr)                                                                                 \
    do {                                                                                             \
        int rc_ = (expr);                                                                            \
        if (rc_ != MPI_SUCCESS) {                                                                    \
            char what_[256];                                                                         \
            describe(c, what_, sizeof what_);                                                        \
            CHECK(rc_ == MPI_SUCCESS, "%s: returned %d", what_, rc_);                                \
        }                                                                                            \
    } while (0)

/* Runs the call (blocking) or starts it (nonblocking, persistent). */
static void issue(call_t *c)
{
    MPI_Datatype t = c->k->type;
    int n = (int)c->count, root = c->root, m = c->mode, rooted_in_place = c->in_place && c->rank == c->root;
    void *sb = c->in_place ? MPI_IN_PLACE : (void *)c->send, *rb = c->recv;
    MPI_Op op = ops[c->op];
    MPI_Comm comm = c->comm;
    MPI_Info info = MPI_INFO_NULL;
    (void)info; /* unused without persistent forms */
    MPI_Request *rq = &c->req;
    int *sc = c->scounts, *sd = c->sdispls, *rc = c->rcounts, *rd = c->rdispls;
    /* Rooted calls: MPI_IN_PLACE only at the root. */
    if (c->coll == C_GATHER || c->coll == C_GATHERV || c->coll == C_REDUCE) sb = rooted_in_place ? MPI_IN_PLACE : c->send;
    void *scatter_rb = rooted_in_place ? MPI_IN_PLACE : rb;
#if MPI_VERSION >= 4
#define FORMS(B, NB, ...)                                                                             \
    MPI_OK(m == 0 ? MPI_##B(__VA_ARGS__) : m == 1 ? MPI_##NB(__VA_ARGS__, rq) : MPI_##B##_init(__VA_ARGS__, info, rq))
#else /* an MPI-3 peer (for checking this test itself): no persistent forms */
#define FORMS(B, NB, ...) MPI_OK(m == 0 ? MPI_##B(__VA_ARGS__) : MPI_##NB(__VA_ARGS__, rq))
#endif
    switch (c->coll) {
    case C_BARRIER: FORMS(Barrier, Ibarrier, comm); break;
    case C_BCAST: FORMS(Bcast, Ibcast, rb, n, t, root, comm); break;
    case C_GATHER: FORMS(Gather, Igather, sb, n, t, rb, n, t, root, comm); break;
    case C_GATHERV: FORMS(Gatherv, Igatherv, sb, sc[0], t, rb, rc, rd, t, root, comm); break;
    case C_SCATTER: FORMS(Scatter, Iscatter, c->send, n, t, scatter_rb, n, t, root, comm); break;
    case C_SCATTERV: FORMS(Scatterv, Iscatterv, c->send, sc, sd, t, scatter_rb, rc[0], t, root, comm); break;
    case C_ALLGATHER: FORMS(Allgather, Iallgather, sb, n, t, rb, n, t, comm); break;
    case C_ALLGATHERV: FORMS(Allgatherv, Iallgatherv, sb, sc[0], t, rb, rc, rd, t, comm); break;
    case C_ALLTOALL: FORMS(Alltoall, Ialltoall, sb, n, t, rb, n, t, comm); break;
    case C_ALLTOALLV: FORMS(Alltoallv, Ialltoallv, sb, sc, sd, t, rb, rc, rd, t, comm); break;
    case C_ALLTOALLW: FORMS(Alltoallw, Ialltoallw, sb, sc, c->sbytes, c->types, rb, rc, c->rbytes, c->types, comm); break;
    case C_REDUCE: FORMS(Reduce, Ireduce, sb, rb, n, t, op, root, comm); break;
    case C_ALLREDUCE: FORMS(Allreduce, Iallreduce, sb, rb, n, t, op, comm); break;
    case C_REDUCE_SCATTER_BLOCK: FORMS(Reduce_scatter_block, Ireduce_scatter_block, sb, rb, n, t, op, comm); break;
    case C_REDUCE_SCATTER: FORMS(Reduce_scatter, Ireduce_scatter, sb, rb, rc, t, op, comm); break;
    case C_SCAN: FORMS(Scan, Iscan, sb, rb, n, t, op, comm); break;
    default: FORMS(Exscan, Iexscan, sb, rb, n, t, op, comm); break;
    }
#undef FORMS
#if MPI_VERSION >= 4
    if (m == 2) MPI_OK(MPI_Start(&c->req));
#endif
}

/* ---- checking ----------------------------------------------------------------- */
static int failed_call; /* report one mismatch per call */

static void mismatch(const call_t *c, long item, int word, unsigned got, unsigned want)
{
    if (failed_call) return;
    failed_call = 1;
    char what[256];
    describe(c, what, sizeof what);
    CHECK(0, "%s: receive item %ld word %d = %#x, want %#x", what, item, word, got, want);
}

/* Items [at, at + n) of the receive buffer hold block `block`, items from 0,
 * of world rank r. */
static void expect_block(const call_t *c, char *covered, long at, long n, int r, long block)
{
    for (long i = 0; i < n; ++i) {
        const unsigned *got = item_at(c, c->recv, at + i);
        for (int w = 0; w < c->k->words; ++w)
            if (got[w] != val(r, c->call, block, i, w)) mismatch(c, at + i, w, got[w], val(r, c->call, block, i, w));
        covered[at + i] = 1;
    }
}

/* Items [at, at + n) hold items [from, from + n) of the reduction over comm
 * ranks [0, upto). */
static void expect_reduced(const call_t *c, char *covered, long at, long n, long from, int upto)
{
    int words = c->k->words;
    for (long i = 0; i < n; ++i) {
        unsigned acc[2] = {0, 0}, x[2];
        for (int r = upto - 1; r >= 0; --r) {
            for (int w = 0; w < words; ++w) x[w] = val(world_rank_of(c, r), c->call, 0, from + i, w);
            if (r == upto - 1) memcpy(acc, x, sizeof acc);
            else combine(c->op, x, acc, words);
        }
        const unsigned *got = item_at(c, c->recv, at + i);
        for (int w = 0; w < words; ++w)
            if (got[w] != acc[w]) mismatch(c, at + i, w, got[w], acc[w]);
        covered[at + i] = 1;
    }
}

/* Every word of the receive buffer outside the items written must be HOLE. */
static void expect_holes(const call_t *c, const char *covered)
{
    long words = (c->recv_items + 1) * c->k->stride;
    for (long i = 0; i < words; ++i) {
        long item = i / c->k->stride;
        int data = item < c->recv_items && covered[item] && i % c->k->stride < c->k->words;
        if (!data && c->recv[i] != HOLE) {
            if (!failed_call) {
                char what[256];
                describe(c, what, sizeof what);
                CHECK(0, "%s: receive buffer word %ld (outside the data) = %#x", what, i, c->recv[i]);
            }
            failed_call = 1;
            return;
        }
    }
}

static void verify(call_t *c)
{
    int me = c->rank, n = c->size, check_holes = 1;
    long cnt = c->count;
    char *covered = calloc((size_t)c->recv_items + 1, 1);
    failed_call = 0;
    switch (c->coll) {
    case C_BARRIER: break;
    case C_BCAST: expect_block(c, covered, 0, cnt, world_rank_of(c, c->root), 0); break;
    case C_GATHER: case C_ALLGATHER: case C_GATHERV: case C_ALLGATHERV:
        if (!c->receives) break; /* a non-root of a gather */
        for (int r = 0; r < n; ++r) {
            int v = c->coll == C_GATHERV || c->coll == C_ALLGATHERV;
            expect_block(c, covered, v ? c->rdispls[r] : r * cnt, c->rcounts[r], world_rank_of(c, r), 0);
        }
        break;
    case C_SCATTER: case C_SCATTERV:
        if (!c->receives) break; /* the root in place */
        expect_block(c, covered, 0, c->rcounts[c->coll == C_SCATTERV ? 0 : me], world_rank_of(c, c->root), me);
        break;
    case C_ALLTOALL: case C_ALLTOALLV: case C_ALLTOALLW:
        for (int r = 0; r < n; ++r)
            expect_block(c, covered, c->coll != C_ALLTOALL ? c->rdispls[r] : r * cnt, c->rcounts[r],
                         world_rank_of(c, r), me);
        break;
    case C_REDUCE:
        if (me == c->root) expect_reduced(c, covered, 0, cnt, 0, n);
        break;
    case C_ALLREDUCE: expect_reduced(c, covered, 0, cnt, 0, n); break;
    case C_REDUCE_SCATTER_BLOCK: case C_REDUCE_SCATTER: {
        long from = 0;
        for (int r = 0; r < me; ++r) from += c->rcounts[r];
        expect_reduced(c, covered, 0, c->rcounts[me], from, n);
        /* In place, the rest of the input is left in an undefined state. */
        if (c->in_place) check_holes = 0;
        break;
    }
    case C_SCAN: expect_reduced(c, covered, 0, cnt, 0, me + 1); break;
    default: /* exscan: rank 0's receive buffer is undefined */
        if (me > 0) expect_reduced(c, covered, 0, cnt, 0, me);
        else check_holes = 0;
        break;
    }
    if (check_holes) expect_holes(c, covered);
    free(covered);
}

static void finish(call_t *c)
{
    verify(c);
#if MPI_VERSION >= 4
    if (c->mode == 2) MPI_OK(MPI_Request_free(&c->req));
#endif
    free(c->send);
    free(c->recv);
    free(c->scounts);
    free(c->sdispls);
    free(c->rcounts);
    free(c->rdispls);
    free(c->sbytes);
    free(c->rbytes);
    free(c->types);
    free(c);
}

/* ---- the sequence ------------------------------------------------------------- */
static call_t *pending[MAX_PENDING];
static int npending;

static void complete_pending(void)
{
    MPI_Request reqs[MAX_PENDING];
    for (int i = 0; i < npending; ++i) reqs[i] = pending[i]->req;
    CHECK_MPI(MPI_Waitall(npending, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < npending; ++i) {
        pending[i]->req = reqs[i];
        finish(pending[i]);
    }
    npending = 0;
}

/* Draws call `number` (every rank draws alike) and runs it where this rank is
 * a member of the communicator. */
static void one_call(long number)
{
    call_t d;
    memset(&d, 0, sizeof d);
    d.call = number;
    d.coll = (int)pick(NCALLS);
    d.mode = (int)pick(3);
    d.comm_index = (int)pick(NCOMMS);
    long kind = pick(3);
    d.k = &kinds[kind];
    d.op = kind == 0 ? (int)pick(OP_USER_SUM) : kind == 1 ? OP_USER_SUM : OP_COMPOSE;
    long root_draw = pick(1 << 16);
    d.in_place = pick(3) == 0;
    d.count = draw_count();
    int flush = pick(4) == 0; /* complete the calls in flight after this one */
    if (d.coll == C_BCAST) d.in_place = 0;
    if (comms[d.comm_index] == MPI_COMM_NULL) {
        if (flush) complete_pending();
        return;
    }
    d.comm = comms[d.comm_index];
    MPI_Comm_rank(d.comm, &d.rank);
    MPI_Comm_size(d.comm, &d.size);
    d.root = (int)(root_draw % d.size);
    /* Calls whose buffers hold a block per rank stay near 1 MB. */
    if (d.coll == C_GATHER || d.coll == C_GATHERV || d.coll == C_SCATTER || d.coll == C_SCATTERV ||
        d.coll == C_ALLGATHER || d.coll == C_ALLGATHERV || d.coll == C_ALLTOALL || d.coll == C_ALLTOALLV || d.coll == C_ALLTOALLW ||
        d.coll == C_REDUCE_SCATTER_BLOCK || d.coll == C_REDUCE_SCATTER)
        d.count /= d.size;
    call_t *c = malloc(sizeof *c);
    *c = d;
    c->req = MPI_REQUEST_NULL;
    prepare(c);
    issue(c);
    if (c->mode == 0) finish(c);
    else pending[npending++] = c;
    if (flush || npending == MAX_PENDING) complete_pending();
}

int main(int argc, char **argv)
{
    int wrank, wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261128;
    long calls = argc > 2 ? strtol(argv[2], NULL, 0) : 400;
    rng_state = seed * 2654435761u + 1;

    MPI_Datatype strided, pair;
    MPI_Type_create_resized(MPI_UNSIGNED, 0, 2 * sizeof(unsigned), &strided);
    MPI_Type_commit(&strided);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
    MPI_Type_commit(&pair);
    kinds[0] = (kind_t){MPI_UNSIGNED, 1, 1, "MPI_UNSIGNED"};
    kinds[1] = (kind_t){strided, 1, 2, "strided unsigned"};
    kinds[2] = (kind_t){pair, 2, 2, "pair of unsigned"};
    ops[OP_SUM] = MPI_SUM;
    ops[OP_MAX] = MPI_MAX;
    ops[OP_BXOR] = MPI_BXOR;
    ops[OP_PROD] = MPI_PROD;
    MPI_Op_create(user_sum_fn, 1, &ops[OP_USER_SUM]);
    MPI_Op_create(compose_fn, 0, &ops[OP_COMPOSE]);

    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comms[3]);
    MPI_Comm_split(MPI_COMM_WORLD, wrank == 0 ? MPI_UNDEFINED : 0, wrank, &comms[4]);
    for (int i = 0; i < NCOMMS; ++i) {
        if (comms[i] == MPI_COMM_NULL) continue;
        MPI_Group group, world_group;
        int n;
        MPI_Comm_size(comms[i], &n);
        MPI_Comm_group(comms[i], &group);
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        int *ranks = malloc((size_t)n * sizeof(int));
        world_of[i] = malloc((size_t)n * sizeof(int));
        for (int r = 0; r < n; ++r) ranks[r] = r;
        MPI_Group_translate_ranks(group, n, ranks, world_group, world_of[i]);
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);
        free(ranks);
    }

    for (long i = 0; i < calls; ++i) one_call(i);
    complete_pending();

    for (int i = 1; i < NCOMMS; ++i)
        if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
    for (int i = 0; i < NCOMMS; ++i) free(world_of[i]);
    MPI_Op_free(&ops[OP_USER_SUM]);
    MPI_Op_free(&ops[OP_COMPOSE]);
    MPI_Type_free(&strided);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return report("coll_random");
}
