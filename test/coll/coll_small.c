/* Small blocking reduce and bcast on the paths that let ranks run calls
 * ahead:
 *
 *   coll_small flat   the direct flat reduce and bcast (every rank sends to
 *                     the root / the root sends to every rank;
 *                     AXON_COLL_REDUCE_FLAT=1, AXON_COLL_BCAST_FLAT=1, node
 *                     level off), up to and past their limits (2048 bytes,
 *                     or 16 KiB on an oversubscribed node);
 *   coll_small tree   the direct binomial trees (both set to 0);
 *   coll_small shm    the node segment (forced), whose small reduce steps
 *                     keep operands in the flag lines (up to 48 B) or in a
 *                     rank's 64-byte aligned share of the small area (1 KiB
 *                     / ranks), so that non-roots run up to 8 steps ahead.
 *
 * Sizes sit around every limit (48 B inline; 192 / 256 / 320 / 512 B shares
 * at 5 / 4 / 3 / 2 ranks; 2048 B), every rank is root in turn, and each
 * root makes 20 calls in a row (more than the 8 sets of flag lines, so the
 * lines and small areas are reused while non-roots run ahead), with small
 * broadcasts from the same root in between (they share the small area) and
 * an allreduce at the end of each run; then each root makes 20 broadcasts
 * of the size in a row. Results are exact: MPI_SUM on ints,
 * a non-commutative user op on MPI_2INT (composition of affine maps, so the
 * operand order shows), MPI_IN_PLACE at the root. */
#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;

/* (m, c) stands for x -> m x + c (mod 2^32); a op b = a after b. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        unsigned m = a[2 * i] * b[2 * i], c = a[2 * i] * b[2 * i + 1] + a[2 * i + 1];
        b[2 * i] = m;
        b[2 * i + 1] = c;
    }
}

static unsigned value(int r, int call, int j, int k) { return (unsigned)(r * 7919 + call * 131 + j * 17 + k) * 2u + 1u; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "flat";
    if (!strcmp(mode, "flat") || !strcmp(mode, "tree")) {
        setenv("AXON_COLL_NODE_LEVEL", "0", 1);
        setenv("AXON_COLL_REDUCE_FLAT", strcmp(mode, "flat") ? "0" : "1", 1);
        setenv("AXON_COLL_BCAST_FLAT", strcmp(mode, "flat") ? "0" : "1", 1);
    } else {
        force_algorithm("reduce", "shm");
        force_algorithm("bcast", "shm");
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(compose, 0, &op));
    static const int sizes[] = {4,    8,    44,   48,   52,   64,   128,  188,  192,   196,   252,   256,  260,
                                316,  320,  324,  504,  512,  520,  1016, 1024, 1032,  2040,  2048,  2056, 4096,
                                8192, 16376, 16384, 16392};
    enum { CALLS = 20, MAXB = 16392 };
    unsigned *in = malloc(MAXB), *out = malloc(MAXB), *want = malloc(MAXB), *b = malloc(MAXB);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int bytes = sizes[z];
        for (int root = 0; root < size; root++) {
            for (int call = 0; call < CALLS; call++) {
                int pairs = bytes / 8, ints = bytes / 4;
                int affine = call % 2 == 0 && pairs > 0;
                int in_place = call % 3 == 1 && rank == root;
                /* my operand */
                for (int j = 0; j < ints; j++) in[j] = affine ? value(rank, call, j / 2, j % 2) : value(rank, call, j, 0);
                unsigned *mine = in;
                if (in_place) {
                    memcpy(out, in, (size_t)ints * 4);
                    mine = NULL;
                } else {
                    memset(out, 0xee, MAXB);
                }
                int rc = affine ? MPI_Reduce(mine ? (void *)mine : MPI_IN_PLACE, out, pairs, MPI_2INT, op, root,
                                             MPI_COMM_WORLD)
                                : MPI_Reduce(mine ? (void *)mine : MPI_IN_PLACE, out, ints, MPI_INT, MPI_SUM, root,
                                             MPI_COMM_WORLD);
                CHECK(rc == MPI_SUCCESS, "reduce %d B root %d call %d: rc %d", bytes, root, call, rc);
                if (rank == root) {
                    if (affine) {
                        /* x_0 op x_1 op ... op x_{n-1}, left to right */
                        for (int p = 0; p < pairs; p++) {
                            unsigned m = value(0, call, p, 0), c = value(0, call, p, 1);
                            for (int r = 1; r < size; r++) {
                                unsigned m2 = value(r, call, p, 0), c2 = value(r, call, p, 1);
                                unsigned nm = m * m2, nc = m * c2 + c;
                                m = nm;
                                c = nc;
                            }
                            want[2 * p] = m;
                            want[2 * p + 1] = c;
                        }
                    } else {
                        for (int j = 0; j < ints; j++) {
                            unsigned s = 0;
                            for (int r = 0; r < size; r++) s += value(r, call, j, 0);
                            want[j] = s;
                        }
                    }
                    int n = affine ? 2 * pairs : ints, bad = -1;
                    for (int j = 0; j < n && bad < 0; j++)
                        if (out[j] != want[j]) bad = j;
                    CHECK(bad < 0, "%s reduce %d B root %d call %d%s: int %d is %u, want %u", affine ? "affine" : "sum",
                          bytes, root, call, in_place ? " (in place)" : "", bad, bad < 0 ? 0 : out[bad],
                          bad < 0 ? 0 : want[bad]);
                }
                if (call % 4 == 3) {
                    /* a small bcast from the same root between the reduces */
                    int bb = bytes < 1024 ? bytes : 1024;
                    for (int j = 0; j < bb / 4; j++) b[j] = rank == root ? value(root, call, j, 5) : 0;
                    CHECK_MPI(MPI_Bcast(b, bb / 4, MPI_INT, root, MPI_COMM_WORLD));
                    int bad = -1;
                    for (int j = 0; j < bb / 4 && bad < 0; j++)
                        if (b[j] != value(root, call, j, 5)) bad = j;
                    CHECK(bad < 0, "bcast %d B root %d: int %d wrong", bb, root, bad);
                }
            }
            int one = 1, sum = 0;
            CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            CHECK(sum == size, "allreduce after %d B root %d: %d", bytes, root, sum);
            /* broadcasts in a row: the root runs ahead of the receivers */
            for (int call = 0; call < CALLS; call++) {
                int ints = bytes / 4, bad = -1;
                for (int j = 0; j < ints; j++) b[j] = rank == root ? value(root, call, j, 9) : 0;
                CHECK_MPI(MPI_Bcast(b, ints, MPI_INT, root, MPI_COMM_WORLD));
                for (int j = 0; j < ints && bad < 0; j++)
                    if (b[j] != value(root, call, j, 9)) bad = j;
                CHECK(bad < 0, "bcast %d B root %d call %d: int %d is %u, want %u", bytes, root, call, bad,
                      bad < 0 ? 0 : b[bad], bad < 0 ? 0 : value(root, call, bad, 9));
            }
        }
    }
    free(in);
    free(out);
    free(want);
    free(b);
    MPI_Op_free(&op);
    MPI_Finalize();
    return report("coll_small");
}
