/* Node-level (shm) allgather, alltoall, allreduce and reduce around the
 * limits where src/coll/shm/ switches paths, with exact results:
 *
 *   - allgather / alltoall: even ranks pass MPI_INT (contiguous: the byte
 *     path that copies with memcpy), odd ranks a strided type with the same
 *     signature (the general stream path), in the same call; blocks of 1 int
 *     up to several segment steps, in place too. The holes of the strided
 *     receive buffers must stay untouched.
 *   - allreduce / reduce (same type everywhere, as MPI requires): counts
 *     around 48 bytes (operands inside the arrival line), around one step
 *     that every reader reduces itself (16 KiB / (ranks - 1)), and several
 *     steps; MPI_SUM on MPI_INT and a non-commutative user op (order kept).
 *
 * argv[1] (optional): slot size AXON_COLL_SHM_CHUNK, so that blocks take
 * many steps. The algorithms are forced to shm (MPI_T control variables),
 * so oversubscribed runs take the segment too; at the end the allreduce's
 * algorithm changes between calls. Run at np 1..5. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;
static MPI_Datatype strided; /* one int, extent two ints */

#define HOLE (-7777)

static int val(int who, long j) { return who * 100003 + (int)(j % 99991) + 1; }

/* Receive buffer for `n` ints of MPI_INT (dense) or of `strided` (every
 * other int, holes filled with HOLE). */
static int *rbuf(long n, int dense)
{
    long len = dense ? n : 2 * n;
    int *b = malloc((size_t)(len + 1) * sizeof(int));
    for (long i = 0; i < len + 1; ++i) b[i] = HOLE;
    return b;
}
static int at(const int *b, long i, int dense) { return dense ? b[i] : b[2 * i]; }
static void set(int *b, long i, int dense, int v) { if (dense) b[i] = v; else b[2 * i] = v; }
/* Every hole (odd index) and the guard after the data still HOLE. */
static int holes_ok(const int *b, long n, int dense)
{
    if (dense) return b[n] == HOLE;
    for (long i = 0; i < n; ++i)
        if (b[2 * i + 1] != HOLE) return 0;
    return b[2 * n] == HOLE;
}

static void t_allgather(long c, int in_place)
{
    int dense = rank % 2 == 0;
    MPI_Datatype t = dense ? MPI_INT : strided;
    int *r = rbuf(c * size, dense);
    int *s = rbuf(c, dense);
    for (long j = 0; j < c; ++j) set(s, j, dense, val(rank, j));
    if (in_place)
        for (long j = 0; j < c; ++j) set(r, rank * c + j, dense, val(rank, j));
    int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : s, (int)c, t, r, (int)c, t, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "allgather %ld in_place %d: rc %d", c, in_place, rc);
    int bad = 0;
    for (int i = 0; i < size && !bad; ++i)
        for (long j = 0; j < c && !bad; ++j)
            if (at(r, i * c + j, dense) != val(i, j)) {
                CHECK(0, "allgather %ld in_place %d: block %d item %ld = %d want %d", c, in_place, i, j,
                      at(r, i * c + j, dense), val(i, j));
                bad = 1;
            }
    CHECK(holes_ok(r, c * size, dense), "allgather %ld in_place %d: holes written", c, in_place);
    free(r), free(s);
}

/* Block for rank i from rank k: item j = val(k * size + i, j). */
static void t_alltoall(long c, int in_place)
{
    int dense = rank % 2 == 1; /* the other way round than allgather */
    MPI_Datatype t = dense ? MPI_INT : strided;
    int *r = rbuf(c * size, dense);
    int *s = rbuf(c * size, dense);
    int *src = in_place ? r : s;
    for (int i = 0; i < size; ++i)
        for (long j = 0; j < c; ++j) set(src, i * c + j, dense, val(rank * size + i, j));
    int rc = MPI_Alltoall(in_place ? MPI_IN_PLACE : s, (int)c, t, r, (int)c, t, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "alltoall %ld in_place %d: rc %d", c, in_place, rc);
    int bad = 0;
    for (int k = 0; k < size && !bad; ++k)
        for (long j = 0; j < c && !bad; ++j)
            if (at(r, k * c + j, dense) != val(k * size + rank, j)) {
                CHECK(0, "alltoall %ld in_place %d: block %d item %ld = %d want %d", c, in_place, k, j,
                      at(r, k * c + j, dense), val(k * size + rank, j));
                bad = 1;
            }
    CHECK(holes_ok(r, c * size, dense), "alltoall %ld in_place %d: holes written", c, in_place);
    free(r), free(s);
}

/* Non-commutative: 2x2 integer matrices (mod 2^32), one per item. */
typedef struct { unsigned a, b, c, d; } m2;
static m2 mmul(m2 x, m2 y)
{
    m2 z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}
static m2 mval(int who, long j) { m2 m = {(unsigned)(who + 2), (unsigned)(j + 1), 1u, (unsigned)(who * 3 + j % 5)}; return m; }
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    m2 *a = in, *b = inout;
    for (int i = 0; i < *len; ++i) b[i] = mmul(a[i], b[i]);
}
static MPI_Op matmul;
static MPI_Datatype mat;

static void t_reduce(long c, int root, int noncomm)
{
    /* root < 0: allreduce */
    int all = root < 0, reader = all || rank == root;
    if (noncomm) {
        m2 *s = malloc((size_t)(c + 1) * sizeof(m2)), *r = malloc((size_t)(c + 1) * sizeof(m2));
        for (long j = 0; j < c; ++j) s[j] = mval(rank, j);
        memset(r, 0x5a, (size_t)(c + 1) * sizeof(m2));
        int rc = all ? MPI_Allreduce(s, r, (int)c, mat, matmul, MPI_COMM_WORLD)
                     : MPI_Reduce(s, r, (int)c, mat, matmul, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "reduce %ld root %d noncomm: rc %d", c, root, rc);
        for (long j = 0; reader && j < c; ++j) {
            m2 e = mval(0, j);
            for (int k = 1; k < size; ++k) e = mmul(e, mval(k, j));
            if (memcmp(&e, &r[j], sizeof e) != 0) {
                CHECK(0, "reduce %ld root %d noncomm: item %ld wrong", c, root, j);
                break;
            }
        }
        unsigned char guard[sizeof(m2)];
        memset(guard, 0x5a, sizeof guard);
        CHECK(!reader || memcmp(&r[c], guard, sizeof guard) == 0, "reduce %ld root %d noncomm: guard written", c, root);
        free(s), free(r);
        return;
    }
    int *s = malloc((size_t)(c + 1) * sizeof(int)), *r = malloc((size_t)(c + 1) * sizeof(int));
    for (long j = 0; j < c; ++j) s[j] = val(rank, j);
    for (long j = 0; j <= c; ++j) r[j] = HOLE;
    int rc = all ? MPI_Allreduce(s, r, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
                 : MPI_Reduce(s, r, (int)c, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "reduce %ld root %d: rc %d", c, root, rc);
    for (long j = 0; reader && j < c; ++j) {
        int e = 0;
        for (int k = 0; k < size; ++k) e += val(k, j);
        if (r[j] != e) {
            CHECK(0, "reduce %ld root %d: item %ld = %d want %d", c, root, j, r[j], e);
            break;
        }
    }
    CHECK(r[c] == HOLE, "reduce %ld root %d: guard written", c, root);
    free(s), free(r);
}

int main(int argc, char **argv)
{
    if (argc > 1) setenv("AXON_COLL_SHM_CHUNK", argv[1], 1);
    /* (MPI_T works before MPI_Init: the first collective uses these.) */
    force_algorithm("allgather", "shm");
    force_algorithm("alltoall", "shm");
    force_algorithm("allreduce", "shm");
    force_algorithm("reduce", "shm");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(matmul_fn, 0, &matmul);

    /* 1 int; 12 ints = 48 bytes (inline) and 13; per-pair inline limit of
     * alltoall (48 / (n - 1) bytes); one 64 KiB slot and beyond. */
    long blocks[] = {1, 2, 11, 12, 13, 48 / 4 / (size > 1 ? size - 1 : 1), 1000, 16384, 16385, 40000};
    /* (with small slots 16385 ints take many steps already: the largest
     * sizes would only make the run long) */
    int small_slots = argc > 1;
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0] - (size_t)small_slots; ++k)
        for (int ip = 0; ip < 2; ++ip) {
            t_allgather(blocks[k], ip);
            t_alltoall(blocks[k], ip);
        }
    /* 16 KiB / (n - 1): the largest step every reader reduces itself;
     * 128 KiB / (n - 1) when the node is oversubscribed. */
    long one = 16384 / 4 / (size > 1 ? size - 1 : 1);
    long one_over = 131072 / 4 / (size > 1 ? size - 1 : 1);
    long counts[] = {1, 11, 12, 13, one - 1, one, one + 1, one_over, one_over + 1, 70000};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0] - (size_t)small_slots; ++k) {
        t_reduce(counts[k], -1, 0);
        t_reduce(counts[k], size - 1, 0);
        t_reduce(counts[k], 0, 0);
        /* matrices: 16 bytes per item */
        long m = counts[k] / 4 + 1;
        t_reduce(m, -1, 1);
        t_reduce(m, size - 1, 1);
    }
    /* The allreduce's algorithm written between calls: each call uses the
     * last value written (the segment, the library's choice, the
     * point-to-point ones), and a refused write (no such item) keeps it. */
    {
        static const char *steps[] = {"shm", "auto", "recursive_doubling", "ring", "shm", "auto"};
        for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
            force_algorithm("allreduce", steps[k]);
            if (cvar_library_is_axon())
                CHECK(cvar_write_int("AXON_COLL_ALLREDUCE_ALGORITHM", 999) == MPI_T_ERR_INVALID,
                      "step %zu: item 999 accepted", k);
            int x = rank, y = -1;
            CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            CHECK(y == size * (size - 1) / 2, "step %zu (%s): sum %d", k, steps[k], y);
        }
    }
    MPI_Op_free(&matmul);
    MPI_Type_free(&mat);
    MPI_Type_free(&strided);
    MPI_Finalize();
    return report("coll_mixed");
}
