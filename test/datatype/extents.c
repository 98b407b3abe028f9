/* Bounds of nested derived datatypes against the standard's definitions
 * (MPI-4.1 5.1: every constructor defines a type map; 5.1.6: lb / ub / extent
 * of a type map, with the alignment epsilon unless an ub marker exists;
 * 5.1.8: true_lb / true_extent ignore markers and epsilon). The rule is
 * documented in docs/datatypes-and-ops.md ("Bounds and the alignment
 * epsilon"). This test keeps its own model of each type: the type map entry
 * by entry (basic element: displacement, size, alignment) plus the marker
 * positions, built exactly as the standard's constructor definitions say,
 * independently of the library. For every type it checks
 *   - lb, extent, true_lb, true_extent and size against the model;
 *   - MPI_Pack of 1 and 2 items moves exactly the model's bytes, in type-map
 *     order (the source holds a position-dependent pattern);
 *   - MPI_Unpack and a send/receive to self write exactly the model's bytes
 *     and nothing else: the destination is guard-filled, including a guard
 *     zone after the last byte, and compared with the model's image
 *     (skipped when entries overlap, where the result is undefined).
 * First fixed cases (the T/U example of the documentation, empty types
 * inside structs, markers), then seeded random trees of every constructor:
 * contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, struct, subarray, darray, resized, dup.
 * Usage: extents [SEED [TYPES]] */
#include "../mpi/check.h"

/* ---- the model -------------------------------------------------------------------------- */
typedef struct {
    long disp;
    int size;
    int align;
} Entry;

typedef struct {
    Entry *e;
    int n, cap;
    int has_lb, has_ub;
    long lb_marker, ub_marker;
} Model;

enum { MAX_ENTRIES = 3000 };

static void model_push(Model *m, long disp, int size, int align)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->e = (Entry *)realloc(m->e, (size_t)m->cap * sizeof(Entry));
        if (!m->e) exit(2);
    }
    m->e[m->n++] = (Entry){disp, size, align};
}
static void model_free(Model *m) { free(m->e), m->e = NULL, m->n = m->cap = 0; }

/* lb, ub (with epsilon), true bounds and size of a type map (MPI-4.1 5.1.6, 5.1.8). */
typedef struct {
    long lb, ub, true_lb, true_ub, size;
} Bounds;
static Bounds model_bounds(const Model *m)
{
    Bounds b = {0, 0, 0, 0, 0};
    long lo = 0, hi = 0;
    int k = 1;
    for (int i = 0; i < m->n; ++i) {
        const Entry *x = &m->e[i];
        if (i == 0 || x->disp < lo) lo = x->disp;
        if (i == 0 || x->disp + x->size > hi) hi = x->disp + x->size;
        if (x->align > k) k = x->align;
        b.size += x->size;
    }
    b.true_lb = lo, b.true_ub = hi;
    b.lb = m->has_lb ? m->lb_marker : lo;
    if (m->has_ub) {
        b.ub = m->ub_marker;
    } else {
        long ub = m->n ? hi : b.lb, extent = ub - b.lb, r = ((extent % k) + k) % k;
        b.ub = ub + (r ? k - r : 0);
    }
    return b;
}
static long model_extent(const Model *m)
{
    Bounds b = model_bounds(m);
    return b.ub - b.lb;
}
/* Appends one copy of `child`'s type map (entries and markers) at `disp`. */
static void model_add(Model *m, const Model *child, long disp)
{
    for (int i = 0; i < child->n; ++i) model_push(m, child->e[i].disp + disp, child->e[i].size, child->e[i].align);
    if (child->has_lb) {
        long p = child->lb_marker + disp;
        if (!m->has_lb || p < m->lb_marker) m->lb_marker = p;
        m->has_lb = 1;
    }
    if (child->has_ub) {
        long p = child->ub_marker + disp;
        if (!m->has_ub || p > m->ub_marker) m->ub_marker = p;
        m->has_ub = 1;
    }
}

/* ---- basic types -------------------------------------------------------------------------- */
typedef struct {
    MPI_Datatype type;
    const char *name;
    int n;           /* entries of its type map */
    long disp[2];
    int size[2], align[2];
} Basic;
static const Basic basics[] = {
    {MPI_CHAR, "MPI_CHAR", 1, {0}, {1}, {1}},
    {MPI_SHORT, "MPI_SHORT", 1, {0}, {2}, {2}},
    {MPI_INT, "MPI_INT", 1, {0}, {4}, {4}},
    {MPI_DOUBLE, "MPI_DOUBLE", 1, {0}, {8}, {8}},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", 1, {0}, {16}, {16}},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 1, {0}, {16}, {8}},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", 2, {0, 8}, {8, 4}, {8, 4}},
    {MPI_SHORT_INT, "MPI_SHORT_INT", 2, {0, 4}, {2, 4}, {2, 4}},
};
enum { BASICS = sizeof basics / sizeof basics[0] };

static void model_basic(Model *m, const Basic *b)
{
    for (int i = 0; i < b->n; ++i) model_push(m, b->disp[i], b->size[i], b->align[i]);
}

/* ---- checks -------------------------------------------------------------------------------- */
static int checked_types;

static void check_bounds(const char *what, MPI_Datatype t, const Model *m)
{
    Bounds b = model_bounds(m);
    MPI_Count size = -1, lb = -1, extent = -1, true_lb = -1, true_extent = -1;
    CHECK_MPI(MPI_Type_size_c(t, &size));
    CHECK_MPI(MPI_Type_get_extent_c(t, &lb, &extent));
    CHECK_MPI(MPI_Type_get_true_extent_c(t, &true_lb, &true_extent));
    CHECK(size == b.size, "%s: size %lld, want %ld", what, (long long)size, b.size);
    CHECK(lb == b.lb && extent == b.ub - b.lb, "%s: lb/extent %lld/%lld, want %ld/%ld", what, (long long)lb,
          (long long)extent, b.lb, b.ub - b.lb);
    CHECK(true_lb == b.true_lb && true_extent == b.true_ub - b.true_lb,
          "%s: true_lb/true_extent %lld/%lld, want %ld/%ld", what, (long long)true_lb, (long long)true_extent,
          b.true_lb, b.true_ub - b.true_lb);
}

static unsigned char src_byte(long address) { return pattern_byte((size_t)(address + (1L << 30)), 77); }
#define GUARD_BYTE 0xE5
#define GUARD_ZONE 64

/* The bytes `count` items of the type map cover, relative to the buffer:
 * [*lo, *hi). */
static void model_span(const Model *m, int count, long extent, long *lo, long *hi)
{
    *lo = 0, *hi = 0;
    for (int k = 0; k < count; ++k)
        for (int i = 0; i < m->n; ++i) {
            long a = m->e[i].disp + k * extent, z = a + m->e[i].size;
            if ((k == 0 && i == 0) || a < *lo) *lo = a;
            if ((k == 0 && i == 0) || z > *hi) *hi = z;
        }
}

static int model_overlaps(const Model *m, int count, long extent, long lo, long hi)
{
    size_t span = (size_t)(hi - lo);
    unsigned char *seen = (unsigned char *)calloc(span ? span : 1, 1);
    int overlap = 0;
    for (int k = 0; k < count && !overlap; ++k)
        for (int i = 0; i < m->n && !overlap; ++i)
            for (int j = 0; j < m->e[i].size; ++j) {
                long a = m->e[i].disp + k * extent + j - lo;
                if (seen[a]) { overlap = 1; break; }
                seen[a] = 1;
            }
    free(seen);
    return overlap;
}

/* Pack, unpack and send/receive `count` items against the model. */
static void check_data(const char *what, MPI_Datatype t, const Model *m, int count)
{
    long extent = model_extent(m), lo, hi;
    Bounds b = model_bounds(m);
    model_span(m, count, extent, &lo, &hi);
    /* Wide enough for what the library thinks the items cover too, so that a
     * wrong bound shows as a failed check, not as a write outside the buffer. */
    MPI_Count tlb, text, llb, lext;
    MPI_Type_get_true_extent_c(t, &tlb, &text);
    MPI_Type_get_extent_c(t, &llb, &lext);
    for (int k = 0; k < count; ++k) {
        long a = (long)tlb + k * (long)lext, z = a + (long)text;
        if (a < lo) lo = a;
        if (z > hi) hi = z;
    }
    size_t span = (size_t)(hi - lo) + 2 * GUARD_ZONE;
    /* buffer position 0 is address `lo - GUARD_ZONE` relative to the type's origin */
    long origin = GUARD_ZONE - lo;
    unsigned char *src = (unsigned char *)xmalloc(span), *dst = (unsigned char *)xmalloc(span);
    unsigned char *want = (unsigned char *)xmalloc(span);
    size_t bytes = (size_t)b.size * (size_t)count;
    unsigned char *packed = (unsigned char *)xmalloc(bytes + 16), *expect = (unsigned char *)xmalloc(bytes + 16);
    for (size_t i = 0; i < span; ++i) src[i] = src_byte((long)i - origin);
    size_t at = 0;
    memset(want, GUARD_BYTE, span);
    for (int k = 0; k < count; ++k)
        for (int i = 0; i < m->n; ++i)
            for (int j = 0; j < m->e[i].size; ++j) {
                long a = m->e[i].disp + k * extent + j;
                expect[at++] = src_byte(a);
                want[a + origin] = src_byte(a);
            }
    /* pack */
    int position = 0, pack_size = -1;
    CHECK_MPI(MPI_Pack_size(count, t, MPI_COMM_SELF, &pack_size));
    CHECK(pack_size == (int)bytes, "%s: pack size %d, want %zu", what, pack_size, bytes);
    memset(packed, GUARD_BYTE, bytes + 16);
    CHECK_MPI(MPI_Pack(src + origin, count, t, packed, (int)bytes + 16, &position, MPI_COMM_SELF));
    CHECK(position == (int)bytes, "%s: %d items packed to %d bytes, want %zu", what, count, position, bytes);
    long bad = -1;
    for (size_t i = 0; i < bytes && bad < 0; ++i)
        if (packed[i] != expect[i]) bad = (long)i;
    CHECK(bad < 0, "%s: %d items: packed byte %ld is 0x%02x, want 0x%02x", what, count, bad,
          bad >= 0 ? packed[bad] : 0, bad >= 0 ? expect[bad] : 0);
    for (size_t i = bytes; i < bytes + 16; ++i)
        if (packed[i] != GUARD_BYTE) {
            CHECK(0, "%s: pack wrote past its %zu bytes", what, bytes);
            break;
        }
    if (!model_overlaps(m, count, extent, lo, hi)) {
        /* unpack the expected stream into a guarded buffer */
        memset(dst, GUARD_BYTE, span);
        position = 0;
        CHECK_MPI(MPI_Unpack(expect, (int)bytes, &position, dst + origin, count, t, MPI_COMM_SELF));
        bad = -1;
        for (size_t i = 0; i < span && bad < 0; ++i)
            if (dst[i] != want[i]) bad = (long)i;
        CHECK(bad < 0, "%s: %d items: unpack left byte %ld (address %ld) 0x%02x, want 0x%02x", what, count, bad,
              bad - origin, bad >= 0 ? dst[bad] : 0, bad >= 0 ? want[bad] : 0);
        /* send to self: type on both sides */
        memset(dst, GUARD_BYTE, span);
        CHECK_MPI(MPI_Sendrecv(src + origin, count, t, 0, 5, dst + origin, count, t, 0, 5, MPI_COMM_SELF,
                               MPI_STATUS_IGNORE));
        bad = -1;
        for (size_t i = 0; i < span && bad < 0; ++i)
            if (dst[i] != want[i]) bad = (long)i;
        CHECK(bad < 0, "%s: %d items: send/receive left byte %ld (address %ld) 0x%02x, want 0x%02x", what, count,
              bad, bad - origin, bad >= 0 ? dst[bad] : 0, bad >= 0 ? want[bad] : 0);
    }
    free(src), free(dst), free(want), free(packed), free(expect);
}

static void check_type(const char *what, MPI_Datatype t, const Model *m)
{
    check_bounds(what, t, m);
    MPI_Datatype c = t;
    CHECK_MPI(MPI_Type_dup(t, &c));
    CHECK_MPI(MPI_Type_commit(&c));
    check_data(what, c, m, 1);
    check_data(what, c, m, 2);
    MPI_Type_free(&c);
    checked_types++;
}

/* ---- the T / U example and other fixed cases ----------------------------------------------- */
static void expect_bounds(const char *what, MPI_Datatype t, long lb, long extent, long true_lb, long true_extent)
{
    MPI_Aint l, e, tl, te;
    MPI_Type_get_extent(t, &l, &e);
    MPI_Type_get_true_extent(t, &tl, &te);
    CHECK(l == lb && e == extent && tl == true_lb && te == true_extent,
          "%s: lb %ld extent %ld true_lb %ld true_extent %ld, want %ld %ld %ld %ld", what, (long)l, (long)e, (long)tl,
          (long)te, lb, extent, true_lb, true_extent);
}

static void fixed_cases(void)
{
    Model mi = {0}, mT = {0}, mU = {0};
    model_basic(&mi, &basics[2]);
    /* T = hvector(3, 4, 25, MPI_INT): ints end at byte 66, rounded to 68 */
    MPI_Datatype T, U;
    CHECK_MPI(MPI_Type_create_hvector(3, 4, 25, MPI_INT, &T));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) model_add(&mT, &mi, 25L * i + 4L * j);
    expect_bounds("T = hvector(3,4,25,MPI_INT)", T, 0, 68, 0, 66);
    check_type("T", T, &mT);
    /* U = hvector(2, 3, 273, T): the last T starts at 273 + 2*68 = 409 and its
     * last int ends at 409 + 66 = 475; rounded to 476 */
    CHECK_MPI(MPI_Type_create_hvector(2, 3, 273, T, &U));
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) model_add(&mU, &mT, 273L * i + 68L * j);
    expect_bounds("U = hvector(2,3,273,T)", U, 0, 476, 0, 475);
    check_type("U", U, &mU);
    /* Other constructors over T (copies of T are 68 bytes apart, each ends
     * 66 bytes after its start): */
    MPI_Datatype X;
    CHECK_MPI(MPI_Type_vector(2, 1, 3, T, &X)); /* T at 0 and 204: ends at 270 -> 272 */
    expect_bounds("vector(2,1,3,T)", X, 0, 272, 0, 270);
    MPI_Type_free(&X);
    int ones[2] = {1, 1}, idisp[2] = {0, 2};
    CHECK_MPI(MPI_Type_indexed(2, ones, idisp, T, &X)); /* T at 0 and 136: 202 -> 204 */
    expect_bounds("indexed({1,1},{0,2},T)", X, 0, 204, 0, 202);
    MPI_Type_free(&X);
    MPI_Aint hdisp[2] = {-30, 1};
    CHECK_MPI(MPI_Type_create_hindexed(2, ones, hdisp, T, &X)); /* -30..36 and 1..67: 97 -> 100 */
    expect_bounds("hindexed({1,1},{-30,1},T)", X, -30, 100, -30, 97);
    MPI_Type_free(&X);
    MPI_Aint sdisp[2] = {0, 70};
    MPI_Datatype stypes[2] = {T, MPI_CHAR};
    CHECK_MPI(MPI_Type_create_struct(2, ones, sdisp, stypes, &X)); /* up to the char at 70: 71 -> 72 */
    expect_bounds("struct{T@0,char@70}", X, 0, 72, 0, 71);
    MPI_Type_free(&X);
    int gsize = 3, subsize = 2, start = 1;
    CHECK_MPI(MPI_Type_create_subarray(1, &gsize, &subsize, &start, MPI_ORDER_C, T, &X));
    expect_bounds("subarray({3},{2},{1},T)", X, 0, 204, 68, 134); /* T at 68 and 136; whole array 3*68 */
    MPI_Type_free(&X);
    int dgs = 4, dist = MPI_DISTRIBUTE_BLOCK, darg = MPI_DISTRIBUTE_DFLT_DARG, dps = 2;
    CHECK_MPI(MPI_Type_create_darray(2, 1, 1, &dgs, &dist, &darg, &dps, MPI_ORDER_C, T, &X));
    expect_bounds("darray(rank 1 of 2, block of 4 T)", X, 0, 272, 136, 134); /* T at 136 and 204 */
    MPI_Type_free(&X);
    MPI_Type_free(&U), MPI_Type_free(&T);
    model_free(&mi), model_free(&mT), model_free(&mU);

    /* The standard's example: {(double,0),(char,8)} has extent 16, and so has
     * a char followed by a double at displacement 1. */
    int two[2] = {1, 1};
    MPI_Aint d_dc[2] = {0, 8}, d_cd[2] = {0, 1};
    MPI_Datatype t_dc[2] = {MPI_DOUBLE, MPI_CHAR}, t_cd[2] = {MPI_CHAR, MPI_DOUBLE}, S;
    CHECK_MPI(MPI_Type_create_struct(2, two, d_dc, t_dc, &S));
    expect_bounds("struct{double@0,char@8}", S, 0, 16, 0, 9);
    MPI_Type_free(&S);
    CHECK_MPI(MPI_Type_create_struct(2, two, d_cd, t_cd, &S));
    expect_bounds("struct{char@0,double@1}", S, 0, 16, 0, 9);
    MPI_Type_free(&S);

    /* A type with an empty type map brings no alignment: a struct of it and a
     * char has extent 1 (its entries are the char alone). */
    MPI_Datatype E, SE, V0, SV, SUB;
    CHECK_MPI(MPI_Type_contiguous(0, MPI_DOUBLE, &E));
    MPI_Aint d00[2] = {0, 0};
    MPI_Datatype t_ec[2] = {E, MPI_CHAR};
    CHECK_MPI(MPI_Type_create_struct(2, two, d00, t_ec, &SE));
    expect_bounds("struct{contiguous(0,MPI_DOUBLE),char}", SE, 0, 1, 0, 1);
    CHECK_MPI(MPI_Type_vector(3, 0, 2, MPI_LONG_DOUBLE, &V0));
    t_ec[0] = V0;
    CHECK_MPI(MPI_Type_create_struct(2, two, d00, t_ec, &SV));
    expect_bounds("struct{vector(3,0,2,MPI_LONG_DOUBLE),char}", SV, 0, 1, 0, 1);
    int sizes[2] = {4, 5}, subsizes[2] = {2, 2}, starts[2] = {1, 1};
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, SE, &SUB));
    expect_bounds("subarray 4x5 of struct{empty,char}", SUB, 0, 20, 6, 7);
    MPI_Type_free(&SUB), MPI_Type_free(&SV), MPI_Type_free(&V0), MPI_Type_free(&SE), MPI_Type_free(&E);

    /* Markers are sticky (MPI-4.1 5.1.6): data beyond an inherited ub marker
     * does not move ub, and no epsilon applies once a marker sets ub. */
    MPI_Datatype R, SR;
    CHECK_MPI(MPI_Type_create_resized(MPI_DOUBLE, 0, 3, &R));
    MPI_Aint d_rc[2] = {0, 5};
    MPI_Datatype t_rc[2] = {R, MPI_CHAR};
    CHECK_MPI(MPI_Type_create_struct(2, two, d_rc, t_rc, &SR));
    expect_bounds("struct{resized(double,0,3)@0,char@5}", SR, 0, 3, 0, 8);
    MPI_Type_free(&SR), MPI_Type_free(&R);
}

/* ---- random trees --------------------------------------------------------------------------- */
static unsigned long long rng_state;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return n ? (unsigned)((rng_state >> 33) % n) : 0;
}
static int rnd_range(int lo, int hi) { return lo + (int)rnd((unsigned)(hi - lo + 1)); }

typedef struct {
    MPI_Datatype type;
    Model m;
    char desc[200];
} Node;

static void node_basic(Node *x)
{
    const Basic *b = &basics[rnd(BASICS)];
    x->type = b->type;
    memset(&x->m, 0, sizeof x->m);
    model_basic(&x->m, b);
    snprintf(x->desc, sizeof x->desc, "%s", b->name);
}
static void node_free(Node *x)
{
    int combiner, ni, na, nt;
    MPI_Type_get_envelope(x->type, &ni, &na, &nt, &combiner);
    if (combiner != MPI_COMBINER_NAMED) MPI_Type_free(&x->type);
    model_free(&x->m);
}

static void make_node(Node *out, int depth);

/* A child no bigger than `limit` entries (replaced by a basic type otherwise). */
static void make_child(Node *c, int depth)
{
    make_node(c, depth);
    if (c->m.n > 60) {
        node_free(c);
        node_basic(c);
    }
}

/* Fills `runs` for one darray dimension: the (start, length) pieces of this
 * process's coordinate; returns their number. */
static int darray_runs(int g, int p, int c, int distrib, int darg, int (*runs)[2])
{
    int n = 0;
    if (distrib == MPI_DISTRIBUTE_NONE) {
        runs[n][0] = 0, runs[n][1] = g, n++;
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        int s = c * b;
        if (s < g) runs[n][0] = s, runs[n][1] = b < g - s ? b : g - s, n++;
    } else {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        for (int s = c * b; s < g; s += p * b) runs[n][0] = s, runs[n][1] = b < g - s ? b : g - s, n++;
    }
    return n;
}

/* Array types: the selected elements (per dimension, the chosen indices)
 * copied in array order at index * ex, then lb 0 and the extent of the whole
 * array (the standard defines subarray and darray through resized). */
static void model_array(Model *m, const Model *old, int ndims, const int *sizes, int (*picked)[16],
                        const int *npicked, int order)
{
    long ex = model_extent(old);
    int idx[3] = {0, 0, 0};
    long total = 1;
    for (int d = 0; d < ndims; ++d) total *= sizes[d];
    for (int d = 0; d < ndims; ++d)
        if (npicked[d] == 0) goto resize;
    for (;;) {
        long lin = 0;
        if (order == MPI_ORDER_C)
            for (int d = 0; d < ndims; ++d) lin = lin * sizes[d] + picked[d][idx[d]];
        else
            for (int d = ndims - 1; d >= 0; --d) lin = lin * sizes[d] + picked[d][idx[d]];
        model_add(m, old, lin * ex);
        /* next index, fastest dimension first */
        int d = order == MPI_ORDER_C ? ndims - 1 : 0, step = order == MPI_ORDER_C ? -1 : 1;
        for (; d >= 0 && d < ndims; d += step) {
            if (++idx[d] < npicked[d]) break;
            idx[d] = 0;
        }
        if (d < 0 || d >= ndims) break;
    }
resize:
    m->has_lb = m->has_ub = 1;
    m->lb_marker = 0, m->ub_marker = total * ex;
}

static void make_node(Node *out, int depth)
{
    memset(&out->m, 0, sizeof out->m);
    if (depth == 0 || rnd(5) == 0) {
        node_basic(out);
        return;
    }
    Node c;
    make_child(&c, depth - 1);
    long ex = model_extent(&c.m), aex = ex < 0 ? -ex : ex; /* resized may make extents negative */
    int kind = (int)rnd(13);
    int rc = MPI_SUCCESS;
    Model *m = &out->m;
    switch (kind) {
        case 0: { /* contiguous */
            int n = rnd_range(0, 4);
            rc = MPI_Type_contiguous(n, c.type, &out->type);
            for (int k = 0; k < n; ++k) model_add(m, &c.m, k * ex);
            snprintf(out->desc, sizeof out->desc, "contiguous(%d, %.150s)", n, c.desc);
            break;
        }
        case 1: /* vector */
        case 2: { /* hvector */
            int n = rnd_range(0, 3), bl = rnd_range(0, 3), stride = rnd_range(-4, 4);
            long sb = kind == 1 ? stride * ex : (long)rnd_range(-3 * (int)aex - 9, 3 * (int)aex + 9);
            if (kind == 1) rc = MPI_Type_vector(n, bl, stride, c.type, &out->type);
            else rc = MPI_Type_create_hvector(n, bl, sb, c.type, &out->type);
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < bl; ++j) model_add(m, &c.m, i * sb + j * ex);
            snprintf(out->desc, sizeof out->desc, "%svector(%d,%d,%ld, %.150s)", kind == 1 ? "" : "h", n, bl,
                     kind == 1 ? (long)stride : sb, c.desc);
            break;
        }
        case 3: /* indexed */
        case 4: /* hindexed */
        case 5: /* indexed_block */
        case 6: { /* hindexed_block */
            int n = rnd_range(0, 3), bls[3], blk = rnd_range(0, 3), ds[3];
            MPI_Aint hds[3];
            for (int i = 0; i < n; ++i) {
                bls[i] = kind <= 4 ? rnd_range(0, 3) : blk;
                ds[i] = rnd_range(-5, 5);
                hds[i] = rnd_range(-3 * (int)aex - 9, 3 * (int)aex + 9);
            }
            if (kind == 3) rc = MPI_Type_indexed(n, bls, ds, c.type, &out->type);
            else if (kind == 4) rc = MPI_Type_create_hindexed(n, bls, hds, c.type, &out->type);
            else if (kind == 5) rc = MPI_Type_create_indexed_block(n, blk, ds, c.type, &out->type);
            else rc = MPI_Type_create_hindexed_block(n, blk, hds, c.type, &out->type);
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < bls[i]; ++j)
                    model_add(m, &c.m, ((kind == 3 || kind == 5) ? ds[i] * ex : hds[i]) + j * ex);
            static const char *names[] = {"indexed", "hindexed", "indexed_block", "hindexed_block"};
            snprintf(out->desc, sizeof out->desc, "%s(%d, %.150s)", names[kind - 3], n, c.desc);
            break;
        }
        case 7: { /* struct of the child and up to two more */
            Node more[2];
            int n = rnd_range(1, 3), bls[3];
            MPI_Aint ds[3];
            MPI_Datatype ts[3];
            for (int i = 1; i < n; ++i) make_child(&more[i - 1], depth - 1);
            for (int i = 0; i < n; ++i) {
                const Node *x = i == 0 ? &c : &more[i - 1];
                long xe = model_extent(&x->m), axe = xe < 0 ? -xe : xe;
                bls[i] = rnd_range(0, 2);
                ds[i] = rnd_range(-2 * (int)axe - 7, 3 * (int)axe + 11);
                ts[i] = x->type;
                for (int j = 0; j < bls[i]; ++j) model_add(m, &x->m, ds[i] + j * xe);
            }
            rc = MPI_Type_create_struct(n, bls, ds, ts, &out->type);
            snprintf(out->desc, sizeof out->desc, "struct(%d: %.60s | %.40s | %.40s)", n, c.desc,
                     n > 1 ? more[0].desc : "", n > 2 ? more[1].desc : "");
            for (int i = 1; i < n; ++i) node_free(&more[i - 1]);
            break;
        }
        case 8: { /* resized */
            long lb = rnd_range(-12, 12);
            long extent = rnd_range(rnd(8) ? 0 : -(int)aex - 8, (int)(aex > 0 ? 2 * aex : 16) + 8);
            rc = MPI_Type_create_resized(c.type, lb, extent, &out->type);
            model_add(m, &c.m, 0);
            m->has_lb = m->has_ub = 1;
            m->lb_marker = lb, m->ub_marker = lb + extent;
            snprintf(out->desc, sizeof out->desc, "resized(%ld,%ld, %.150s)", lb, extent, c.desc);
            break;
        }
        case 9: { /* dup */
            rc = MPI_Type_dup(c.type, &out->type);
            model_add(m, &c.m, 0);
            snprintf(out->desc, sizeof out->desc, "dup(%.180s)", c.desc);
            break;
        }
        case 10:
        case 11: { /* subarray */
            if (ex <= 0) goto as_dup;
            int ndims = rnd_range(1, 3), sizes[3], subs[3], starts[3], picked[3][16], np[3];
            int order = rnd(2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
            for (int d = 0; d < ndims; ++d) {
                sizes[d] = rnd_range(1, 4);
                subs[d] = rnd_range(1, sizes[d]);
                starts[d] = rnd_range(0, sizes[d] - subs[d]);
                np[d] = subs[d];
                for (int i = 0; i < subs[d]; ++i) picked[d][i] = starts[d] + i;
            }
            rc = MPI_Type_create_subarray(ndims, sizes, subs, starts, order, c.type, &out->type);
            model_array(m, &c.m, ndims, sizes, picked, np, order);
            snprintf(out->desc, sizeof out->desc, "subarray(%dd %s, %.150s)", ndims,
                     order == MPI_ORDER_C ? "C" : "F", c.desc);
            break;
        }
        default: { /* darray */
            if (ex <= 0) goto as_dup;
            int ndims = rnd_range(1, 3), gsizes[3], distribs[3], dargs[3], psizes[3], picked[3][16], np[3];
            int order = rnd(2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, size = 1, coords[3];
            for (int d = 0; d < ndims; ++d) {
                gsizes[d] = rnd_range(1, 6);
                distribs[d] = (int)rnd(3) == 0 ? MPI_DISTRIBUTE_NONE
                              : rnd(2)         ? MPI_DISTRIBUTE_BLOCK
                                               : MPI_DISTRIBUTE_CYCLIC;
                psizes[d] = distribs[d] == MPI_DISTRIBUTE_NONE ? 1 : rnd_range(1, 3);
                if (distribs[d] == MPI_DISTRIBUTE_BLOCK)
                    dargs[d] = rnd(2) ? MPI_DISTRIBUTE_DFLT_DARG
                                      : rnd_range((gsizes[d] + psizes[d] - 1) / psizes[d], gsizes[d]);
                else if (distribs[d] == MPI_DISTRIBUTE_CYCLIC)
                    dargs[d] = rnd(2) ? MPI_DISTRIBUTE_DFLT_DARG : rnd_range(1, 3);
                else
                    dargs[d] = MPI_DISTRIBUTE_DFLT_DARG;
                size *= psizes[d];
            }
            int rank = rnd_range(0, size - 1);
            for (int d = ndims - 1, rest = rank; d >= 0; --d) coords[d] = rest % psizes[d], rest /= psizes[d];
            for (int d = 0; d < ndims; ++d) {
                int runs[16][2], nr = darray_runs(gsizes[d], psizes[d], coords[d], distribs[d], dargs[d], runs);
                np[d] = 0;
                for (int r = 0; r < nr; ++r)
                    for (int i = 0; i < runs[r][1]; ++i) picked[d][np[d]++] = runs[r][0] + i;
            }
            rc = MPI_Type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, c.type,
                                        &out->type);
            model_array(m, &c.m, ndims, gsizes, picked, np, order);
            snprintf(out->desc, sizeof out->desc, "darray(%dd rank %d/%d %s, %.140s)", ndims, rank, size,
                     order == MPI_ORDER_C ? "C" : "F", c.desc);
            break;
        }
        as_dup:
            rc = MPI_Type_dup(c.type, &out->type);
            model_add(m, &c.m, 0);
            snprintf(out->desc, sizeof out->desc, "dup(%.180s)", c.desc);
            break;
    }
    CHECK(rc == MPI_SUCCESS, "constructing %s: error class %d", out->desc, error_class_of(rc));
    if (rc != MPI_SUCCESS) {
        model_free(m);
        node_basic(out);
    }
    node_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 12345;
    int types = argc > 2 ? atoi(argv[2]) : 5000;
    fixed_cases();
    rng_state = seed;
    for (int i = 0; i < types && check_failures < 20; ++i) {
        Node x;
        make_node(&x, 4);
        if (x.m.n <= MAX_ENTRIES) {
            char what[260];
            snprintf(what, sizeof what, "type %d (seed %llu) %s", i, seed, x.desc);
            check_type(what, x.type, &x.m);
        }
        node_free(&x);
    }
    printf("extents: %d types checked\n", checked_types);
    MPI_Finalize();
    return report("extents");
}
