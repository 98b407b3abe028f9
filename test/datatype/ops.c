/* Predefined ops on every type class they are defined for, through
 * MPI_Reduce_local (exact results); an op on a type class it is not defined
 * for -> MPI_ERR_OP; derived types of one basic type; user ops, commutative
 * and not (Op_create, Op_commutative, Op_free); freeing a predefined op ->
 * MPI_ERR_OP. Every rank runs the same local checks. */
#include "../mpi/check.h"

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

/* inout = in (op) inout; the result must equal `expected` byte for byte. */
static void expect_reduce(const char *what, const void *in, const void *inout0, const void *expected, int count,
                          MPI_Datatype type, MPI_Op op, size_t bytes)
{
    unsigned char buf[512];
    memcpy(buf, inout0, bytes);
    int rc = MPI_Reduce_local(in, buf, count, type, op);
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Reduce_local returned class %d", what, error_class_of(rc));
    if (rc == MPI_SUCCESS)
        CHECK(memcmp(buf, expected, bytes) == 0, "%s: wrong result", what);
}

static void expect_op_error(const char *what, MPI_Datatype type, MPI_Op op)
{
#ifdef SKIP_OP_ERRORS /* for reference runs: MPICH asserts on some of these */
    return;
#endif
    unsigned char a[64] = {0}, b[64] = {0};
    int rc = MPI_Reduce_local(a, b, 1, type, op);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "%s: class %d, expected MPI_ERR_OP", what, error_class_of(rc));
}

/* Integer types: arithmetic, bitwise and (C integers only) logical ops. */
#define TEST_INTEGER(T, MT, c_integer)                                                                          \
    do {                                                                                                        \
        const T a[4] = {3, 6, 1, 0}, b[4] = {5, 2, 1, 9};                                                       \
        const T sum[4] = {8, 8, 2, 9}, prod[4] = {15, 12, 1, 0}, mn[4] = {3, 2, 1, 0}, mx[4] = {5, 6, 1, 9};    \
        const T band[4] = {1, 2, 1, 0}, bor[4] = {7, 6, 1, 9}, bxor[4] = {6, 4, 0, 9};                          \
        const T land[4] = {1, 1, 1, 0}, lor[4] = {1, 1, 1, 1}, lxor[4] = {0, 0, 0, 1};                          \
        expect_reduce(#MT " SUM", a, b, sum, 4, MT, MPI_SUM, sizeof a);                                         \
        expect_reduce(#MT " PROD", a, b, prod, 4, MT, MPI_PROD, sizeof a);                                      \
        expect_reduce(#MT " MIN", a, b, mn, 4, MT, MPI_MIN, sizeof a);                                          \
        expect_reduce(#MT " MAX", a, b, mx, 4, MT, MPI_MAX, sizeof a);                                          \
        expect_reduce(#MT " BAND", a, b, band, 4, MT, MPI_BAND, sizeof a);                                      \
        expect_reduce(#MT " BOR", a, b, bor, 4, MT, MPI_BOR, sizeof a);                                         \
        expect_reduce(#MT " BXOR", a, b, bxor, 4, MT, MPI_BXOR, sizeof a);                                      \
        if (c_integer) {                                                                                        \
            expect_reduce(#MT " LAND", a, b, land, 4, MT, MPI_LAND, sizeof a);                                  \
            expect_reduce(#MT " LOR", a, b, lor, 4, MT, MPI_LOR, sizeof a);                                     \
            expect_reduce(#MT " LXOR", a, b, lxor, 4, MT, MPI_LXOR, sizeof a);                                  \
        }                                                                                                       \
        expect_op_error(#MT " MINLOC", MT, MPI_MINLOC);                                                         \
        expect_op_error(#MT " MAXLOC", MT, MPI_MAXLOC);                                                         \
    } while (0)

/* Signed integers: MIN/MAX/SUM with negative values. */
#define TEST_SIGNED(T, MT)                                                                                      \
    do {                                                                                                        \
        const T a[3] = {-3, 4, -1}, b[3] = {2, -7, -1};                                                         \
        const T sum[3] = {-1, -3, -2}, prod[3] = {-6, -28, 1}, mn[3] = {-3, -7, -1}, mx[3] = {2, 4, -1};        \
        expect_reduce(#MT " SUM signed", a, b, sum, 3, MT, MPI_SUM, sizeof a);                                  \
        expect_reduce(#MT " PROD signed", a, b, prod, 3, MT, MPI_PROD, sizeof a);                               \
        expect_reduce(#MT " MIN signed", a, b, mn, 3, MT, MPI_MIN, sizeof a);                                   \
        expect_reduce(#MT " MAX signed", a, b, mx, 3, MT, MPI_MAX, sizeof a);                                   \
    } while (0)

#define TEST_FLOAT(T, MT)                                                                                       \
    do {                                                                                                        \
        const T a[4] = {1.5, -2, 3, 0.25}, b[4] = {2, 4, -1, 0.5};                                              \
        const T sum[4] = {3.5, 2, 2, 0.75}, prod[4] = {3, -8, -3, 0.125};                                       \
        const T mn[4] = {1.5, -2, -1, 0.25}, mx[4] = {2, 4, 3, 0.5};                                            \
        T r[4];                                                                                                 \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 4, MT, MPI_SUM));                                                      \
        for (int i = 0; i < 4; i++) CHECK(r[i] == sum[i], #MT " SUM %d", i);                                    \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 4, MT, MPI_PROD));                                                     \
        for (int i = 0; i < 4; i++) CHECK(r[i] == prod[i], #MT " PROD %d", i);                                  \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 4, MT, MPI_MIN));                                                      \
        for (int i = 0; i < 4; i++) CHECK(r[i] == mn[i], #MT " MIN %d", i);                                     \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 4, MT, MPI_MAX));                                                      \
        for (int i = 0; i < 4; i++) CHECK(r[i] == mx[i], #MT " MAX %d", i);                                     \
        expect_op_error(#MT " BAND", MT, MPI_BAND);                                                             \
        expect_op_error(#MT " BXOR", MT, MPI_BXOR);                                                             \
        expect_op_error(#MT " LAND", MT, MPI_LAND);                                                             \
        expect_op_error(#MT " LOR", MT, MPI_LOR);                                                               \
        expect_op_error(#MT " MAXLOC", MT, MPI_MAXLOC);                                                         \
    } while (0)

#define TEST_COMPLEX(T, MT)                                                                                     \
    do {                                                                                                        \
        const T a[2] = {1 + 2 * I, 3 - 1 * I}, b[2] = {2 + 0.5 * I, -1 + 1 * I};                                \
        const T sum[2] = {3 + 2.5 * I, 2 + 0 * I}, prod[2] = {1 + 4.5 * I, -2 + 4 * I};                         \
        T r[2];                                                                                                 \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 2, MT, MPI_SUM));                                                      \
        for (int i = 0; i < 2; i++) CHECK(r[i] == sum[i], #MT " SUM %d", i);                                    \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 2, MT, MPI_PROD));                                                     \
        for (int i = 0; i < 2; i++) CHECK(r[i] == prod[i], #MT " PROD %d", i);                                  \
        expect_op_error(#MT " MIN", MT, MPI_MIN);                                                               \
        expect_op_error(#MT " MAX", MT, MPI_MAX);                                                               \
        expect_op_error(#MT " BOR", MT, MPI_BOR);                                                               \
        expect_op_error(#MT " LOR", MT, MPI_LOR);                                                               \
    } while (0)

/* MINLOC/MAXLOC on a value/index pair; a tie keeps the smaller index. */
#define TEST_PAIR(V, MT)                                                                                        \
    do {                                                                                                        \
        struct { V v; int i; } a[3] = {{5, 1}, {3, 2}, {7, 0}}, b[3] = {{5, 0}, {4, 9}, {2, 3}},                \
                                   mn[3] = {{5, 0}, {3, 2}, {2, 3}}, mx[3] = {{5, 0}, {4, 9}, {7, 0}}, r[3];    \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 3, MT, MPI_MINLOC));                                                   \
        for (int k = 0; k < 3; k++) CHECK(r[k].v == mn[k].v && r[k].i == mn[k].i, #MT " MINLOC %d", k);        \
        memcpy(r, b, sizeof r);                                                                                 \
        CHECK_MPI(MPI_Reduce_local(a, r, 3, MT, MPI_MAXLOC));                                                   \
        for (int k = 0; k < 3; k++) CHECK(r[k].v == mx[k].v && r[k].i == mx[k].i, #MT " MAXLOC %d", k);        \
        expect_op_error(#MT " SUM", MT, MPI_SUM);                                                               \
        expect_op_error(#MT " MAX", MT, MPI_MAX);                                                               \
    } while (0)

static void test_predefined_ops(void)
{
    TEST_INTEGER(short, MPI_SHORT, 1);
    TEST_INTEGER(int, MPI_INT, 1);
    TEST_INTEGER(long, MPI_LONG, 1);
    TEST_INTEGER(long long, MPI_LONG_LONG, 1);
    TEST_INTEGER(long long, MPI_LONG_LONG_INT, 1);
    TEST_INTEGER(signed char, MPI_SIGNED_CHAR, 1);
    TEST_INTEGER(unsigned char, MPI_UNSIGNED_CHAR, 1);
    TEST_INTEGER(unsigned short, MPI_UNSIGNED_SHORT, 1);
    TEST_INTEGER(unsigned, MPI_UNSIGNED, 1);
    TEST_INTEGER(unsigned long, MPI_UNSIGNED_LONG, 1);
    TEST_INTEGER(unsigned long long, MPI_UNSIGNED_LONG_LONG, 1);
    TEST_INTEGER(int8_t, MPI_INT8_T, 1);
    TEST_INTEGER(int16_t, MPI_INT16_T, 1);
    TEST_INTEGER(int32_t, MPI_INT32_T, 1);
    TEST_INTEGER(int64_t, MPI_INT64_T, 1);
    TEST_INTEGER(uint8_t, MPI_UINT8_T, 1);
    TEST_INTEGER(uint16_t, MPI_UINT16_T, 1);
    TEST_INTEGER(uint32_t, MPI_UINT32_T, 1);
    TEST_INTEGER(uint64_t, MPI_UINT64_T, 1);
    TEST_INTEGER(MPI_Aint, MPI_AINT, 0);
    TEST_INTEGER(MPI_Offset, MPI_OFFSET, 0);
    TEST_INTEGER(MPI_Count, MPI_COUNT, 0);
    TEST_INTEGER(int32_t, MPI_INTEGER, 0);
    TEST_INTEGER(int64_t, MPI_INTEGER8, 0);
    TEST_SIGNED(short, MPI_SHORT);
    TEST_SIGNED(int, MPI_INT);
    TEST_SIGNED(long, MPI_LONG);
    TEST_SIGNED(int8_t, MPI_INT8_T);
    TEST_SIGNED(int64_t, MPI_INT64_T);
    TEST_SIGNED(signed char, MPI_SIGNED_CHAR);
    TEST_SIGNED(MPI_Aint, MPI_AINT);

    TEST_FLOAT(float, MPI_FLOAT);
    TEST_FLOAT(double, MPI_DOUBLE);
    TEST_FLOAT(long double, MPI_LONG_DOUBLE);
    TEST_FLOAT(float, MPI_REAL);
    TEST_FLOAT(double, MPI_DOUBLE_PRECISION);

    TEST_COMPLEX(float _Complex, MPI_C_FLOAT_COMPLEX);
    TEST_COMPLEX(float _Complex, MPI_C_COMPLEX);
    TEST_COMPLEX(double _Complex, MPI_C_DOUBLE_COMPLEX);
    TEST_COMPLEX(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX);

    TEST_PAIR(float, MPI_FLOAT_INT);
    TEST_PAIR(double, MPI_DOUBLE_INT);
    TEST_PAIR(long, MPI_LONG_INT);
    TEST_PAIR(int, MPI_2INT);
    TEST_PAIR(short, MPI_SHORT_INT);
    TEST_PAIR(long double, MPI_LONG_DOUBLE_INT);

    /* C _Bool: logical ops only. */
    {
        const bool a[4] = {1, 1, 0, 0}, b[4] = {1, 0, 1, 0};
        const bool land[4] = {1, 0, 0, 0}, lor[4] = {1, 1, 1, 0}, lxor[4] = {0, 1, 1, 0};
        expect_reduce("MPI_C_BOOL LAND", a, b, land, 4, MPI_C_BOOL, MPI_LAND, sizeof a);
        expect_reduce("MPI_C_BOOL LOR", a, b, lor, 4, MPI_C_BOOL, MPI_LOR, sizeof a);
        expect_reduce("MPI_C_BOOL LXOR", a, b, lxor, 4, MPI_C_BOOL, MPI_LXOR, sizeof a);
        expect_op_error("MPI_C_BOOL SUM", MPI_C_BOOL, MPI_SUM);
        expect_op_error("MPI_C_BOOL BAND", MPI_C_BOOL, MPI_BAND);
    }
    /* MPI_BYTE: bitwise ops only. */
    {
        const unsigned char a[2] = {0xf0, 0x0f}, b[2] = {0xff, 0x01};
        expect_reduce("MPI_BYTE BAND", a, b, (const unsigned char[]){0xf0, 0x01}, 2, MPI_BYTE, MPI_BAND, 2);
        expect_reduce("MPI_BYTE BOR", a, b, (const unsigned char[]){0xff, 0x0f}, 2, MPI_BYTE, MPI_BOR, 2);
        expect_reduce("MPI_BYTE BXOR", a, b, (const unsigned char[]){0x0f, 0x0e}, 2, MPI_BYTE, MPI_BXOR, 2);
        expect_op_error("MPI_BYTE SUM", MPI_BYTE, MPI_SUM);
        expect_op_error("MPI_BYTE MIN", MPI_BYTE, MPI_MIN);
        expect_op_error("MPI_BYTE LAND", MPI_BYTE, MPI_LAND);
    }
    /* MPI_CHAR takes the C integer ops (as in MPICH); wide characters have no predefined op. */
    {
        const char a[2] = {5, 100}, b[2] = {7, 20};
        expect_reduce("MPI_CHAR SUM", a, b, (const char[]){12, 120}, 2, MPI_CHAR, MPI_SUM, 2);
        expect_reduce("MPI_CHAR MAX", a, b, (const char[]){7, 100}, 2, MPI_CHAR, MPI_MAX, 2);
        expect_reduce("MPI_CHAR BXOR", a, b, (const char[]){2, 112}, 2, MPI_CHAR, MPI_BXOR, 2);
        expect_reduce("MPI_CHAR LAND", a, (const char[]){0, 3}, (const char[]){0, 1}, 2, MPI_CHAR, MPI_LAND, 2);
    }
    expect_op_error("MPI_WCHAR BOR", MPI_WCHAR, MPI_BOR);
}

static void test_derived(void)
{
    /* A contiguous and a vector of MPI_INT: the op applies per int. */
    MPI_Datatype pair, vec;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    const int a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, sum[4] = {11, 22, 33, 44};
    expect_reduce("contiguous(2, MPI_INT) SUM", a, b, sum, 2, pair, MPI_SUM, sizeof a);
    MPI_Type_free(&pair);
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    /* Only ints 0 and 2 take part; 1 and 3 keep inout's values. */
    expect_reduce("vector(2,1,2, MPI_INT) MAX", a, b, (const int[]){10, 20, 30, 40}, 1, vec, MPI_MAX, sizeof a);
    expect_reduce("vector(2,1,2, MPI_INT) SUM", a, b, (const int[]){11, 20, 33, 40}, 1, vec, MPI_SUM, sizeof a);
    MPI_Type_free(&vec);
}

/* inout[i] = 10 * in[i] + inout[i]: not commutative. */
static void shift_add(void *in, void *inout, int *len, MPI_Datatype *type)
{
    CHECK(*type == MPI_INT, "user op called with another type");
    for (int i = 0; i < *len; i++) ((int *)inout)[i] = 10 * ((int *)in)[i] + ((int *)inout)[i];
}

static void max_abs(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) {
        int x = abs(((int *)in)[i]), y = abs(((int *)inout)[i]);
        ((int *)inout)[i] = x > y ? x : y;
    }
}

static void test_user_ops(void)
{
    MPI_Op ncomm, comm;
    int commute = -1;
    CHECK_MPI(MPI_Op_create(shift_add, 0, &ncomm));
    CHECK_MPI(MPI_Op_create(max_abs, 1, &comm));
    CHECK_MPI(MPI_Op_commutative(ncomm, &commute));
    CHECK(commute == 0, "non-commutative user op: Op_commutative %d", commute);
    CHECK_MPI(MPI_Op_commutative(comm, &commute));
    CHECK(commute == 1, "commutative user op: Op_commutative %d", commute);
    CHECK_MPI(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK(commute == 1, "MPI_SUM: Op_commutative %d", commute);

    const int a[3] = {1, -2, 3}, b[3] = {4, 5, -6};
    expect_reduce("user shift_add", a, b, (const int[]){14, -15, 24}, 3, MPI_INT, ncomm, sizeof a);
    expect_reduce("user max_abs", a, b, (const int[]){4, 5, 6}, 3, MPI_INT, comm, sizeof a);
    /* A user op works on any type, MPI_CHAR included. */
    {
        char x[2] = {1, 2}, y[2] = {3, 4};
        CHECK_MPI(MPI_Reduce_local(x, y, 0, MPI_CHAR, comm));
        CHECK(y[0] == 3 && y[1] == 4, "a zero-count reduce leaves inout alone");
    }
    CHECK_MPI(MPI_Op_free(&ncomm));
    CHECK(ncomm == MPI_OP_NULL, "Op_free sets MPI_OP_NULL");
    CHECK_MPI(MPI_Op_free(&comm));

    /* Freeing a predefined op, or MPI_OP_NULL: MPI_ERR_OP. */
    MPI_Op sum = MPI_SUM;
    int rc = MPI_Op_free(&sum);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "Op_free(MPI_SUM): class %d", error_class_of(rc));
    MPI_Op null_op = MPI_OP_NULL;
    rc = MPI_Op_free(&null_op);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "Op_free(MPI_OP_NULL): class %d", error_class_of(rc));
    int x = 1, y = 2;
    rc = MPI_Reduce_local(&x, &y, 1, MPI_INT, MPI_OP_NULL);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "Reduce_local with MPI_OP_NULL: class %d", error_class_of(rc));
    rc = MPI_Reduce_local(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "Reduce_local with MPI_DATATYPE_NULL: class %d", error_class_of(rc));
    rc = MPI_Reduce_local(&x, &y, -1, MPI_INT, MPI_SUM);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "Reduce_local with count -1: class %d", error_class_of(rc));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    /* Calls without a communicator raise on MPI_COMM_SELF (MPICH: WORLD). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_predefined_ops();
    test_derived();
    test_user_ops();
    MPI_Finalize();
    return report("datatype_ops");
}
