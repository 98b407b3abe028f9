/* The node-level reduce and allreduce paths that coll_driver's sweep does
 * not reach, with exact results:
 *   - large reduces (16 KiB - 1.5 MiB) on the segment, which two ranks
 *     stream to the root (several steps above the slot size): roots 0 and
 *     1, MPI_IN_PLACE at the root, a commutative and a non-commutative op
 *     (where the operand order matters), a contiguous derived type, MPI_MAX
 *     on doubles; the send buffers and a non-root's receive buffer stay as
 *     they were;
 *   - many small blocking reduces and allreduces in a row whose arguments
 *     change from call to call (count, type, op, root, in place), mixed
 *     with other collectives, so that a call that repeats its predecessor's
 *     arguments and one that does not are both checked.
 * Optional argument: the segment's slot size (AXON_COLL_SHM_CHUNK), to take
 * the large reduces through many steps. */
#include "../mpi/check.h"

static int rank, size;

/* Rank r's item i: distinct per rank and item, small enough that sums and
 * products of a few ranks do not overflow. */
static int ival(int r, long i) { return (int)((i * 7 + r * 13 + 1) % 1000) - 500; }

/* A non-commutative op on pairs (a, b) standing for x -> a*x + b:
 * in o inout = inout(in(x)), the composition, wraps in unsigned. */
typedef struct { unsigned a, b; } affine;
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; ++i) {
        affine r = {y[i].a * x[i].a, y[i].a * x[i].b + y[i].b};
        y[i] = r;
    }
}
static affine aval(int r, long i) { return (affine){(unsigned)(2 * r + 3 + i % 5), (unsigned)(r * 1000 + i)}; }
/* x_0 o x_1 o ... o x_{n-1} in rank order (x_0 applied first). */
static affine aexpect(int n, long i)
{
    affine e = aval(0, i);
    for (int r = 1; r < n; ++r) {
        affine x = aval(r, i);
        affine t = {x.a * e.a, x.a * e.b + x.b};
        e = t;
    }
    return e;
}

static MPI_Op op_compose;
static MPI_Datatype t_affine, t_triple;

/* One large reduce: `kind` 0 int sum, 1 affine composition, 2 triples of
 * int (contiguous derived type) sum, 3 double max. */
static void large(long count, int kind, int root, int in_place)
{
    size_t esz = kind == 1 ? sizeof(affine) : kind == 2 ? 3 * sizeof(int) : kind == 3 ? sizeof(double) : sizeof(int);
    long items = kind == 2 ? 3 * count : count;
    char *s = malloc((size_t)count * esz), *r = malloc((size_t)count * esz);
    for (long i = 0; i < count; ++i) {
        if (kind == 1) ((affine *)s)[i] = aval(rank, i);
        else if (kind == 3) ((double *)s)[i] = (double)ival(rank, i) + 0.25 * rank;
    }
    if (kind == 0 || kind == 2)
        for (long i = 0; i < items; ++i) ((int *)s)[i] = ival(rank, i);
    char *copy = malloc((size_t)count * esz);
    memcpy(copy, s, (size_t)count * esz);
    memset(r, 0x5a, (size_t)count * esz);
    int here = rank == root;
    if (in_place && here) memcpy(r, s, (size_t)count * esz);
    MPI_Datatype dt = kind == 1 ? t_affine : kind == 2 ? t_triple : kind == 3 ? MPI_DOUBLE : MPI_INT;
    MPI_Op op = kind == 1 ? op_compose : kind == 3 ? MPI_MAX : MPI_SUM;
    CHECK_MPI(MPI_Reduce(in_place && here ? MPI_IN_PLACE : s, r, (int)count, dt, op, root, MPI_COMM_WORLD));
    int bad = 0;
    if (!here) {
        for (size_t b = 0; b < (size_t)count * esz && !bad; ++b) bad = ((unsigned char *)r)[b] != 0x5a;
        CHECK(!bad, "kind %d count %ld root %d: a non-root's receive buffer was written", kind, count, root);
    }
    for (long i = 0; here && i < items && !bad; ++i) {
        if (kind == 1) {
            affine e = aexpect(size, i), g = ((affine *)r)[i];
            bad = g.a != e.a || g.b != e.b;
            if (bad) CHECK(0, "compose count %ld root %d in_place %d: item %ld = (%u,%u), want (%u,%u)", count, root, in_place, i, g.a, g.b, e.a, e.b);
        } else if (kind == 3) {
            double e = (double)ival(0, i);
            for (int q = 1; q < size; ++q)
                if ((double)ival(q, i) + 0.25 * q > e) e = (double)ival(q, i) + 0.25 * q;
            bad = ((double *)r)[i] != e;
            if (bad) CHECK(0, "max count %ld root %d in_place %d: item %ld = %g, want %g", count, root, in_place, i, ((double *)r)[i], e);
        } else {
            int e = 0;
            for (int q = 0; q < size; ++q) e += ival(q, i);
            bad = ((int *)r)[i] != e;
            if (bad) CHECK(0, "sum kind %d count %ld root %d in_place %d: item %ld = %d, want %d", kind, count, root, in_place, i, ((int *)r)[i], e);
        }
    }
    /* The send buffer is read only. */
    if (!(in_place && here)) CHECK(memcmp(s, copy, (size_t)count * esz) == 0, "kind %d count %ld root %d: send buffer changed", kind, count, root);
    free(copy);
    free(s);
    free(r);
}

/* Small calls in a row: call k's arguments are derived from k, and every
 * rank derives the same ones. */
static void small_series(void)
{
    enum { CALLS = 3000, MAXN = 300 };
    int in[MAXN], out[MAXN];
    double din[MAXN], dout[MAXN];
    for (int k = 0; k < CALLS; ++k) {
        /* runs of identical calls (what a remembered choice serves) broken by changes */
        int phase = k / 7;
        int n = 1 + (phase * 37) % MAXN;   /* 4 B .. 1200 B */
        int root = phase % size;
        int all = (phase / 3) % 2;         /* allreduce or reduce */
        int use_double = phase % 5 == 4;
        int ip = phase % 4 == 1;
        int do_max = phase % 6 == 5;
        for (int i = 0; i < n; ++i) {
            in[i] = ival(rank, i + k), out[i] = -7;
            din[i] = 0.5 * ival(rank, i + k), dout[i] = -7;
        }
        int here = all || rank == root;
        void *sb = use_double ? (void *)din : (void *)in, *rb = use_double ? (void *)dout : (void *)out;
        if (ip && here) {
            memcpy(rb, sb, (size_t)n * (use_double ? sizeof(double) : sizeof(int)));
            sb = MPI_IN_PLACE;
        }
        MPI_Datatype dt = use_double ? MPI_DOUBLE : MPI_INT;
        MPI_Op op = do_max ? MPI_MAX : MPI_SUM;
        if (all) CHECK_MPI(MPI_Allreduce(sb, rb, n, dt, op, MPI_COMM_WORLD));
        else CHECK_MPI(MPI_Reduce(sb, rb, n, dt, op, root, MPI_COMM_WORLD));
        for (int i = 0; i < n; ++i) {
            long e = do_max ? ival(0, i + k) : 0;
            for (int q = 0; q < size; ++q) {
                if (do_max) { if (ival(q, i + k) > e) e = ival(q, i + k); }
                else e += ival(q, i + k);
            }
            if (!here) {
                int untouched = use_double ? dout[i] == -7 : out[i] == -7;
                if (!untouched) { CHECK(0, "call %d: non-root %d receive buffer written", k, rank); break; }
                continue;
            }
            double got = use_double ? dout[i] : out[i], want = use_double ? 0.5 * (double)e : (double)e;
            if (got != want) {
                CHECK(0, "call %d (%s n %d root %d in_place %d %s %s): item %d = %g, want %g", k, all ? "allreduce" : "reduce",
                      n, root, ip, use_double ? "double" : "int", do_max ? "max" : "sum", i, got, want);
                break;
            }
        }
        /* now and then another collective in between */
        if (k % 50 == 49) {
            int b = rank == 0 ? k : -1;
            CHECK_MPI(MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD));
            CHECK(b == k, "bcast in between: %d, want %d", b, k);
        }
    }
}

/* Allreduce 4-16 KiB, calls in a row with operands derived from the call. */
static void shared_series(void)
{
    enum { CALLS = 240, MAXN = 4100 };
    static int in[MAXN], out[MAXN];
    static affine ain[MAXN / 2], aout[MAXN / 2];
    const int counts[] = {1024, 1030, 2048, 4100};
    for (int k = 0; k < CALLS; ++k) {
        int n = counts[k % 4];
        int ip = k % 3 == 1, aff = k % 5 == 2;
        if (aff) {
            int m = n / 2;
            for (int i = 0; i < m; ++i) ain[i] = aval(rank, i + k), aout[i] = (affine){7, 7};
            if (ip) memcpy(aout, ain, sizeof(affine) * (size_t)m);
            CHECK_MPI(MPI_Allreduce(ip ? MPI_IN_PLACE : ain, aout, m, t_affine, op_compose, MPI_COMM_WORLD));
            for (int i = 0; i < m; ++i) {
                affine e = aexpect(size, i + k), g = aout[i];
                if (g.a != e.a || g.b != e.b) {
                    CHECK(0, "call %d compose m %d in_place %d: item %d = (%u,%u), want (%u,%u)", k, m, ip, i, g.a, g.b, e.a, e.b);
                    break;
                }
            }
            continue;
        }
        for (int i = 0; i < n; ++i) in[i] = ival(rank, i + 3 * k), out[i] = -7;
        if (ip) memcpy(out, in, sizeof(int) * (size_t)n);
        CHECK_MPI(MPI_Allreduce(ip ? MPI_IN_PLACE : in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; ++i) {
            int e = 0;
            for (int q = 0; q < size; ++q) e += ival(q, i + 3 * k);
            if (out[i] != e) {
                CHECK(0, "call %d sum n %d in_place %d: item %d = %d, want %d", k, n, ip, i, out[i], e);
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) setenv("AXON_COLL_SHM_CHUNK", argv[1], 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &t_affine);
    MPI_Type_commit(&t_affine);
    MPI_Type_contiguous(3, MPI_INT, &t_triple);
    MPI_Type_commit(&t_triple);
    MPI_Op_create(compose, 0, &op_compose);
    /* bytes: just above the every-reader limit, 64 KiB, over one 512 KiB
       slot, 1.5 MiB */
    const long bytes[] = {16 * 1024 + 48, 64 * 1024, 512 * 1024 + 24, 1536 * 1024};
    for (int b = 0; b < 4; ++b)
        for (int kind = 0; kind < 4; ++kind) {
            size_t esz = kind == 1 ? sizeof(affine) : kind == 2 ? 12 : kind == 3 ? sizeof(double) : sizeof(int);
            long count = bytes[b] / (long)esz;
            for (int root = 0; root < 2 && root < size; ++root)
                for (int ip = 0; ip < 2; ++ip) large(count, kind, root, ip);
        }
    small_series();
    shared_series();
    MPI_Op_free(&op_compose);
    MPI_Type_free(&t_affine);
    MPI_Type_free(&t_triple);
    MPI_Finalize();
    return report("coll_reduce_paths");
}
