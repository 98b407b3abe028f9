/* Bad input to the datatype calls: negative counts -> MPI_ERR_COUNT,
 * null / freed / predefined-where-forbidden types -> MPI_ERR_TYPE, illegal
 * arguments -> MPI_ERR_ARG, all through MPI_ERRORS_RETURN (datatype calls
 * have no communicator: MPI_COMM_SELF's handler applies); never a crash.
 * Also MPI_Type_match_size and MPI_Type_get_value_index. */
#include "../mpi/check.h"

#define EXPECT_CLASS(call, cls)                                                                    \
    do {                                                                                           \
        int expect_rc_ = (call);                                                                   \
        CHECK(error_class_of(expect_rc_) == (cls), "%s: class %d, expected %s (%d)", #call,        \
              error_class_of(expect_rc_), #cls, (cls));                                            \
    } while (0)

static void test_counts(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    EXPECT_CLASS(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_vector(-1, 1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_hvector(-2, 1, 8, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_indexed(-1, (const int[]){1}, (const int[]){0}, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_indexed(2, (const int[]){1, -1}, (const int[]){0, 4}, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_hindexed(1, (const int[]){-3}, (const MPI_Aint[]){0}, MPI_INT, &t),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_indexed_block(-1, 1, (const int[]){0}, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_indexed_block(1, -1, (const int[]){0}, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_hindexed_block(1, -1, (const MPI_Aint[]){0}, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_struct(-1, (const int[]){1}, (const MPI_Aint[]){0}, (const MPI_Datatype[]){MPI_INT},
                                        &t),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_create_struct(1, (const int[]){-1}, (const MPI_Aint[]){0},
                                        (const MPI_Datatype[]){MPI_INT}, &t),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Type_contiguous_c(-5, MPI_INT, &t), MPI_ERR_COUNT);
    CHECK(t == MPI_DATATYPE_NULL, "a failed constructor wrote newtype");
    int size = 0;
    EXPECT_CLASS(MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &size), MPI_ERR_COUNT);
}

static void test_types(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int size = 0;
    MPI_Aint lb, extent;
    EXPECT_CLASS(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_create_struct(2, (const int[]){1, 1}, (const MPI_Aint[]){0, 8},
                                        (const MPI_Datatype[]){MPI_INT, MPI_DATATYPE_NULL}, &t),
                 MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 4, &t), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_dup(MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_size(MPI_DATATYPE_NULL, &size), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_get_extent(MPI_DATATYPE_NULL, &lb, &extent), MPI_ERR_TYPE);
    MPI_Datatype null_type = MPI_DATATYPE_NULL;
    EXPECT_CLASS(MPI_Type_commit(&null_type), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_free(&null_type), MPI_ERR_TYPE);

    /* Predefined types cannot be freed. */
    MPI_Datatype predefined = MPI_INT;
    EXPECT_CLASS(MPI_Type_free(&predefined), MPI_ERR_TYPE);
    CHECK(predefined == MPI_INT, "a failed MPI_Type_free changed the handle");
    predefined = MPI_DOUBLE_INT;
    EXPECT_CLASS(MPI_Type_free(&predefined), MPI_ERR_TYPE);

    /* Contents of a predefined type: MPI_ERR_TYPE. */
    int ints[4];
    MPI_Aint addrs[4];
    MPI_Datatype types[4];
    EXPECT_CLASS(MPI_Type_get_contents(MPI_INT, 4, 4, 4, ints, addrs, types), MPI_ERR_TYPE);

    /* A freed handle (its object gone) is rejected. */
    MPI_Datatype gone;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &gone));
    MPI_Datatype stale = gone;
    CHECK_MPI(MPI_Type_free(&gone));
    EXPECT_CLASS(MPI_Type_free(&gone), MPI_ERR_TYPE); /* now MPI_DATATYPE_NULL */
    (void)stale;

    /* An uncommitted type in communication. */
    MPI_Datatype loose;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &loose));
    int buf[4] = {0};
    int self;
    MPI_Comm_rank(MPI_COMM_WORLD, &self);
    EXPECT_CLASS(MPI_Send(buf, 1, loose, self, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Recv(buf, 1, loose, self, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TYPE);
    int position = 0;
    EXPECT_CLASS(MPI_Pack(buf, 1, loose, buf + 2, 8, &position, MPI_COMM_WORLD), MPI_ERR_TYPE);
    /* Queries and constructors accept it. */
    CHECK_MPI(MPI_Type_size(loose, &size));
    CHECK(size == 8, "size of an uncommitted type: %d", size);
    MPI_Datatype outer;
    CHECK_MPI(MPI_Type_contiguous(2, loose, &outer));
    CHECK_MPI(MPI_Type_free(&outer));
    CHECK_MPI(MPI_Type_free(&loose));
}

static void test_args(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    /* subarray: subsize larger than size, start past the end, bad order, ndims 0 */
    EXPECT_CLASS(MPI_Type_create_subarray(1, (const int[]){4}, (const int[]){5}, (const int[]){0}, MPI_ORDER_C,
                                          MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_subarray(1, (const int[]){4}, (const int[]){2}, (const int[]){3}, MPI_ORDER_C,
                                          MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_subarray(1, (const int[]){4}, (const int[]){2}, (const int[]){-1}, MPI_ORDER_C,
                                          MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_subarray(1, (const int[]){4}, (const int[]){2}, (const int[]){0}, 12345,
                                          MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_subarray(0, (const int[]){4}, (const int[]){2}, (const int[]){0}, MPI_ORDER_C,
                                          MPI_INT, &t),
                 MPI_ERR_ARG);
    /* darray: rank out of range, grid not matching size, bad distribution */
    EXPECT_CLASS(MPI_Type_create_darray(2, 2, 1, (const int[]){8}, (const int[]){MPI_DISTRIBUTE_BLOCK},
                                        (const int[]){MPI_DISTRIBUTE_DFLT_DARG}, (const int[]){2}, MPI_ORDER_C,
                                        MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_darray(4, 0, 1, (const int[]){8}, (const int[]){MPI_DISTRIBUTE_BLOCK},
                                        (const int[]){MPI_DISTRIBUTE_DFLT_DARG}, (const int[]){2}, MPI_ORDER_C,
                                        MPI_INT, &t),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_darray(2, 0, 1, (const int[]){8}, (const int[]){999},
                                        (const int[]){MPI_DISTRIBUTE_DFLT_DARG}, (const int[]){2}, MPI_ORDER_C,
                                        MPI_INT, &t),
                 MPI_ERR_ARG);
    /* block(2) over 2 processes cannot cover 8 elements */
    EXPECT_CLASS(MPI_Type_create_darray(2, 0, 1, (const int[]){8}, (const int[]){MPI_DISTRIBUTE_BLOCK},
                                        (const int[]){2}, (const int[]){2}, MPI_ORDER_C, MPI_INT, &t),
                 MPI_ERR_ARG);
    CHECK(t == MPI_DATATYPE_NULL, "a failed constructor wrote newtype");

    /* Pack_external with a representation other than external32 */
    int x = 1;
    char out[8];
    MPI_Aint position = 0;
    EXPECT_CLASS(MPI_Pack_external("native", &x, 1, MPI_INT, out, 8, &position), MPI_ERR_ARG);

    /* Type_match_size: no type of that class and size */
    MPI_Datatype m;
    EXPECT_CLASS(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &m), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 7, &m), MPI_ERR_ARG);
}

__attribute__((unused)) static void check_name(MPI_Datatype t, const char *want, const char *what)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len;
    if (t == MPI_DATATYPE_NULL) {
        CHECK(want == NULL, "%s: MPI_DATATYPE_NULL, expected %s", what, want);
        return;
    }
    MPI_Type_get_name(t, name, &len);
    CHECK(want && strcmp(name, want) == 0, "%s: %s, expected %s", what, name, want ? want : "MPI_DATATYPE_NULL");
}

#ifndef NO_VALUE_INDEX /* reference MPIs older than MPI-4.1 lack MPI_Type_get_value_index */
#define HAVE_VALUE_INDEX 1
#endif
static void test_lookups(void)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, &t));
    int size = 0;
    MPI_Type_size(t, &size);
    CHECK(size == 4, "match_size REAL 4: size %d", size);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    MPI_Type_size(t, &size);
    CHECK(size == 8, "match_size REAL 8: size %d", size);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &t));
    MPI_Type_size(t, &size);
    CHECK(size == 8, "match_size INTEGER 8: size %d", size);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    MPI_Type_size(t, &size);
    CHECK(size == 16, "match_size COMPLEX 16: size %d", size);

#ifdef HAVE_VALUE_INDEX
    CHECK_MPI(MPI_Type_get_value_index(MPI_INT, MPI_INT, &t));
    CHECK(t == MPI_2INT, "value_index(INT, INT) is MPI_2INT");
    CHECK_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &t));
    CHECK(t == MPI_DOUBLE_INT, "value_index(DOUBLE, INT) is MPI_DOUBLE_INT");
    CHECK_MPI(MPI_Type_get_value_index(MPI_FLOAT, MPI_INT, &t));
    CHECK(t == MPI_FLOAT_INT, "value_index(FLOAT, INT)");
    CHECK_MPI(MPI_Type_get_value_index(MPI_LONG, MPI_INT, &t));
    CHECK(t == MPI_LONG_INT, "value_index(LONG, INT)");
    CHECK_MPI(MPI_Type_get_value_index(MPI_SHORT, MPI_INT, &t));
    CHECK(t == MPI_SHORT_INT, "value_index(SHORT, INT)");
    CHECK_MPI(MPI_Type_get_value_index(MPI_LONG_DOUBLE, MPI_INT, &t));
    CHECK(t == MPI_LONG_DOUBLE_INT, "value_index(LONG_DOUBLE, INT)");
    CHECK_MPI(MPI_Type_get_value_index(MPI_INT, MPI_DOUBLE, &t));
    check_name(t, NULL, "value_index(INT, DOUBLE)");
    EXPECT_CLASS(MPI_Type_get_value_index(MPI_DATATYPE_NULL, MPI_INT, &t), MPI_ERR_TYPE);
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_counts();
    test_types();
    test_args();
    test_lookups();
    MPI_Finalize();
    return report("datatype_errors");
}
