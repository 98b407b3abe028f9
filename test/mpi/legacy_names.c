/* Code written against Open MPI's or MPICH's mpi.h builds with Axon's mpi.h
 * alone (no extra include, no -D) and works:
 *
 *   - the C <-> Fortran handle names (MPI_Fint, MPI_Comm_c2f / _f2c,
 *     MPI_Status_c2f / _f2c) are there: a dup'd communicator survives the
 *     round trip and carries a message;
 *   - the MPI-1 functions MPI-3.0 removed (as HPL calls them) build the same
 *     types as their successors: MPI_Address + MPI_Type_struct describe three
 *     separate buffers that one send fills exactly; MPI_Type_hvector and
 *     MPI_Type_hindexed lay out bytes as MPI_Type_create_hvector /
 *     _create_hindexed do (compared byte for byte through MPI_Pack);
 *     MPI_Type_extent / _lb / _ub report a resized type's bounds;
 *   - MPI_Errhandler_create / _set / _get install a handler that is called
 *     with the error's class and is returned by _get;
 *   - bad arguments give the standard classes: MPI_ERR_TYPE, MPI_ERR_COUNT,
 *     MPI_ERR_ARG, MPI_ERR_COMM. */
#include "../mpi/check.h"

static int handler_calls;
static int handler_class;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

/* The Fortran names: nothing but mpi.h is included above. */
static void check_fortran_names(int rank, int size)
{
    MPI_Comm dup, back;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Fint f = MPI_Comm_c2f(dup);
    back = MPI_Comm_f2c(f);
    CHECK(back == dup, "MPI_Comm_f2c(MPI_Comm_c2f(dup)) is not dup");
    CHECK(MPI_Comm_c2f(MPI_COMM_WORLD) == 0x101, "MPI_COMM_WORLD -> %d", (int)MPI_Comm_c2f(MPI_COMM_WORLD));
    if (size >= 2 && rank < 2) {
        int value = 4711, got = 0;
        MPI_Status status;
        MPI_Fint f_status[MPI_F_STATUS_SIZE];
        if (rank == 0) {
            CHECK_MPI(MPI_Send(&value, 1, MPI_INT, 1, 9, back));
        } else {
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 9, back, &status));
            CHECK(got == 4711, "received %d", got);
            CHECK_MPI(MPI_Status_c2f(&status, f_status));
            CHECK(f_status[MPI_F_SOURCE] == 0 && f_status[MPI_F_TAG] == 9, "Fortran status source %d tag %d",
                  (int)f_status[MPI_F_SOURCE], (int)f_status[MPI_F_TAG]);
        }
    }
    CHECK_MPI(MPI_Comm_free(&dup));
}

/* HPL's use: one struct type over three unrelated buffers, addresses from
 * MPI_Address, sent from MPI_BOTTOM. */
static void check_struct_from_addresses(int rank, int size)
{
    double a[5];
    int b[3];
    char c[7];
    int blocklengths[3] = {5, 3, 7};
    MPI_Aint displacements[3];
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Datatype message;

    for (int i = 0; i < 5; ++i) a[i] = rank == 0 ? 1.5 * i : -1;
    for (int i = 0; i < 3; ++i) b[i] = rank == 0 ? 100 + i : -1;
    for (int i = 0; i < 7; ++i) c[i] = rank == 0 ? (char)('a' + i) : 0;
    CHECK_MPI(MPI_Address(a, &displacements[0]));
    CHECK_MPI(MPI_Address(b, &displacements[1]));
    CHECK_MPI(MPI_Address(c, &displacements[2]));
    MPI_Aint expected;
    CHECK_MPI(MPI_Get_address(b, &expected));
    CHECK(displacements[1] == expected, "MPI_Address differs from MPI_Get_address");
    CHECK_MPI(MPI_Type_struct(3, blocklengths, displacements, types, &message));
    CHECK_MPI(MPI_Type_commit(&message));
    int bytes = 0;
    CHECK_MPI(MPI_Type_size(message, &bytes));
    CHECK(bytes == 5 * 8 + 3 * 4 + 7, "struct size %d", bytes);
    int ints, addrs, ntypes, combiner;
    CHECK_MPI(MPI_Type_get_envelope(message, &ints, &addrs, &ntypes, &combiner));
    CHECK(combiner == MPI_COMBINER_STRUCT, "combiner %d", combiner);

    if (size >= 2 && rank < 2) {
        if (rank == 0) {
            CHECK_MPI(MPI_Send(MPI_BOTTOM, 1, message, 1, 3, MPI_COMM_WORLD));
        } else {
            CHECK_MPI(MPI_Recv(MPI_BOTTOM, 1, message, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < 5; ++i) CHECK(a[i] == 1.5 * i, "a[%d] = %g", i, a[i]);
            for (int i = 0; i < 3; ++i) CHECK(b[i] == 100 + i, "b[%d] = %d", i, b[i]);
            for (int i = 0; i < 7; ++i) CHECK(c[i] == 'a' + i, "c[%d] = %d", i, c[i]);
        }
    }
    CHECK_MPI(MPI_Type_free(&message));
}

/* Packs `type` over a byte ramp and returns how many bytes it wrote. */
static int pack_ramp(MPI_Datatype type, unsigned char *out, int capacity)
{
    unsigned char source[256];
    for (int i = 0; i < 256; ++i) source[i] = (unsigned char)i;
    int position = 0;
    CHECK_MPI(MPI_Type_commit(&type));
    CHECK_MPI(MPI_Pack(source, 1, type, out, capacity, &position, MPI_COMM_SELF));
    CHECK_MPI(MPI_Type_free(&type));
    return position;
}

static void check_vector_and_indexed(void)
{
    MPI_Datatype old_name, new_name;
    unsigned char old_bytes[256], new_bytes[256];

    CHECK_MPI(MPI_Type_hvector(4, 3, 10, MPI_BYTE, &old_name));
    CHECK_MPI(MPI_Type_create_hvector(4, 3, 10, MPI_BYTE, &new_name));
    int n_old = pack_ramp(old_name, old_bytes, sizeof old_bytes);
    int n_new = pack_ramp(new_name, new_bytes, sizeof new_bytes);
    CHECK(n_old == 12 && n_new == 12, "hvector packed %d / %d bytes", n_old, n_new);
    CHECK(memcmp(old_bytes, new_bytes, 12) == 0, "MPI_Type_hvector differs from MPI_Type_create_hvector");
    CHECK(old_bytes[3] == 10 && old_bytes[11] == 32, "hvector bytes %d %d", old_bytes[3], old_bytes[11]);

    int blocklengths[3] = {2, 1, 4};
    MPI_Aint displacements[3] = {40, 3, 17};
    CHECK_MPI(MPI_Type_hindexed(3, blocklengths, displacements, MPI_BYTE, &old_name));
    CHECK_MPI(MPI_Type_create_hindexed(3, blocklengths, displacements, MPI_BYTE, &new_name));
    n_old = pack_ramp(old_name, old_bytes, sizeof old_bytes);
    n_new = pack_ramp(new_name, new_bytes, sizeof new_bytes);
    CHECK(n_old == 7 && n_new == 7, "hindexed packed %d / %d bytes", n_old, n_new);
    CHECK(memcmp(old_bytes, new_bytes, 7) == 0, "MPI_Type_hindexed differs from MPI_Type_create_hindexed");
    CHECK(old_bytes[0] == 40 && old_bytes[2] == 3 && old_bytes[6] == 20, "hindexed bytes %d %d %d", old_bytes[0],
          old_bytes[2], old_bytes[6]);
}

static void check_bounds(void)
{
    MPI_Datatype resized;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -8, 40, &resized));
    MPI_Aint extent = 0, lb = 0, ub = 0;
    CHECK_MPI(MPI_Type_extent(resized, &extent));
    CHECK_MPI(MPI_Type_lb(resized, &lb));
    CHECK_MPI(MPI_Type_ub(resized, &ub));
    CHECK(extent == 40 && lb == -8 && ub == 32, "extent %ld lb %ld ub %ld", (long)extent, (long)lb, (long)ub);
    CHECK_MPI(MPI_Type_extent(MPI_DOUBLE, &extent));
    CHECK(extent == 8, "MPI_DOUBLE extent %ld", (long)extent);
    CHECK_MPI(MPI_Type_free(&resized));
}

static void check_errhandlers_and_errors(void)
{
    MPI_Comm comm;
    MPI_Errhandler handler, got;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Errhandler_create(count_errors, &handler));
    CHECK_MPI(MPI_Errhandler_set(comm, handler));
    CHECK_MPI(MPI_Errhandler_get(comm, &got));
    CHECK(got == handler, "MPI_Errhandler_get returned another handler");
    CHECK_MPI(MPI_Errhandler_free(&got));

    int payload = 0;
    int rc = MPI_Send(&payload, 1, MPI_INT, 0, -5, comm); /* negative tag */
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_TAG, "handler calls %d class %d", handler_calls,
          handler_class);
    CHECK(rc != MPI_SUCCESS, "bad send returned MPI_SUCCESS");
    CHECK_MPI(MPI_Errhandler_free(&handler));

    /* The rest raise on MPI_COMM_SELF: make it return. */
    CHECK_MPI(MPI_Errhandler_set(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Aint extent;
    MPI_Datatype type;
    int rc_class = -1;
    MPI_Error_class(MPI_Type_extent(MPI_DATATYPE_NULL, &extent), &rc_class);
    CHECK(rc_class == MPI_ERR_TYPE, "MPI_Type_extent(MPI_DATATYPE_NULL): class %d", rc_class);
    MPI_Error_class(MPI_Type_hvector(-1, 1, 8, MPI_INT, &type), &rc_class);
    CHECK(rc_class == MPI_ERR_COUNT, "MPI_Type_hvector(count -1): class %d", rc_class);
    MPI_Error_class(MPI_Address(&extent, NULL), &rc_class);
    CHECK(rc_class == MPI_ERR_ARG, "MPI_Address(.., NULL): class %d", rc_class);
    MPI_Error_class(MPI_Errhandler_set(MPI_COMM_NULL, MPI_ERRORS_RETURN), &rc_class);
    CHECK(rc_class == MPI_ERR_COMM, "MPI_Errhandler_set(MPI_COMM_NULL): class %d", rc_class);
    CHECK_MPI(MPI_Comm_free(&comm));
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_fortran_names(rank, size);
    check_struct_from_addresses(rank, size);
    check_vector_and_indexed();
    check_bounds();
    check_errhandlers_and_errors();
    CHECK_MPI(MPI_Finalize());
    return report("legacy_names");
}
