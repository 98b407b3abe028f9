/* coll_min: the foundation's collectives (Barrier, Bcast, Reduce, Allreduce)
 * give exact results for every root, in-place variants, several sizes
 * (including rendezvous-sized payloads) and a non-commutative user op whose
 * result depends on operand order. */
#include "check.h"

/* 2x2 integer matrices multiplied in rank order: not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static void matrix_of(int rank, int *m) /* distinct, invertible-ish, small */
{
    m[0] = 1; m[1] = rank + 1; m[2] = rank % 3; m[3] = 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {0, 1, 7, 1000, 300000};

    for (int round = 0; round < 3; round++)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        int *data = xmalloc((size_t)n * sizeof(int)), *result = xmalloc((size_t)n * sizeof(int));
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                data[i] = rank == root ? i * 3 + root : -1;
            CHECK_MPI(MPI_Bcast(data, n, MPI_INT, root, MPI_COMM_WORLD));
            int bad = -1;
            for (int i = 0; i < n && bad < 0; i++)
                if (data[i] != i * 3 + root)
                    bad = i;
            CHECK(bad < 0, "Bcast n %d root %d: element %d", n, root, bad);

            for (int i = 0; i < n; i++)
                data[i] = rank + i;
            memset(result, 0, (size_t)n * sizeof(int));
            CHECK_MPI(MPI_Reduce(data, result, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
            if (rank == root) {
                bad = -1;
                for (int i = 0; i < n && bad < 0; i++)
                    if (result[i] != size * (size - 1) / 2 + size * i)
                        bad = i;
                CHECK(bad < 0, "Reduce SUM n %d root %d: element %d = %d", n, root, bad,
                      bad < 0 ? 0 : result[bad]);
            }
            /* in place at the root */
            for (int i = 0; i < n; i++)
                data[i] = rank * 2 + i;
            CHECK_MPI(MPI_Reduce(rank == root ? MPI_IN_PLACE : data, rank == root ? data : NULL, n, MPI_INT, MPI_MAX, root,
                                 MPI_COMM_WORLD));
            if (rank == root) {
                bad = -1;
                for (int i = 0; i < n && bad < 0; i++)
                    if (data[i] != (size - 1) * 2 + i)
                        bad = i;
                CHECK(bad < 0, "Reduce MAX in place n %d root %d: element %d", n, root, bad);
            }
        }
        for (int i = 0; i < n; i++)
            data[i] = (rank + 1) * (i % 5 + 1);
        CHECK_MPI(MPI_Allreduce(data, result, n, MPI_INT, MPI_PROD, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_INT, MPI_PROD, MPI_COMM_WORLD));
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) {
            int expected = 1;
            for (int r = 0; r < size; r++)
                expected *= (r + 1) * (i % 5 + 1);
            if (result[i] != expected || data[i] != expected)
                bad = i;
        }
        CHECK(bad < 0, "Allreduce PROD n %d: element %d", n, bad);
        free(data);
        free(result);
    }

    /* Non-commutative: the result is m0 * m1 * ... * m(size-1). */
    MPI_Op op;
    MPI_Datatype matrix;
    CHECK_MPI(MPI_Op_create(matmul, 0, &op));
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &matrix));
    CHECK_MPI(MPI_Type_commit(&matrix));
    int commute = -1;
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 0, "Op_commutative of a non-commutative op: %d", commute);
    int expected[4] = {1, 0, 0, 1};
    for (int r = 0; r < size; r++) {
        int m[4];
        matrix_of(r, m);
        int one = 1;
        matmul(expected, m, &one, &matrix); /* m = expected * m */
        memcpy(expected, m, sizeof m);
    }
    int mine[4], product[4];
    matrix_of(rank, mine);
    for (int root = 0; root < size; root++) {
        memset(product, 0, sizeof product);
        CHECK_MPI(MPI_Reduce(mine, product, 1, matrix, op, root, MPI_COMM_WORLD));
        if (rank == root)
            CHECK(memcmp(product, expected, sizeof product) == 0,
                  "non-commutative Reduce to %d: [%d %d %d %d], expected [%d %d %d %d]", root,
                  product[0], product[1], product[2], product[3], expected[0], expected[1],
                  expected[2], expected[3]);
    }
    memset(product, 0, sizeof product);
    CHECK_MPI(MPI_Allreduce(mine, product, 1, matrix, op, MPI_COMM_WORLD));
    CHECK(memcmp(product, expected, sizeof product) == 0, "non-commutative Allreduce: [%d %d %d %d]",
          product[0], product[1], product[2], product[3]);
    CHECK_MPI(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "Op_free did not null the handle");
    CHECK_MPI(MPI_Type_free(&matrix));
    MPI_Finalize();
    return report("coll_min");
}
