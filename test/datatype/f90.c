/* MPI_Type_create_f90_integer / _real / _complex: the kind chosen for
 * (p, r) as Fortran's SELECTED_*_KIND would (sizes), the same handle for the
 * same arguments, the envelope and contents (MPI_COMBINER_F90_*, the values
 * asked for), that the types carry data and reduce like their base type, and
 * the error classes for kinds that do not exist and for MPI_Type_free.
 * Open MPI 4.1 agrees on the error classes; Debian's MPICH 4.0.2 knows no
 * kind beyond 8 bytes and lets these types be freed. */
#include "../mpi/check.h"

static int size_of(MPI_Datatype t)
{
    int size = -1;
    MPI_Type_size(t, &size);
    return size;
}

static void check_envelope(MPI_Datatype t, int combiner, int ni, int p, int r)
{
    int nints = -1, naddr = -1, ntypes = -1, comb = -1;
    CHECK_MPI(MPI_Type_get_envelope(t, &nints, &naddr, &ntypes, &comb));
    CHECK(comb == combiner, "combiner %d, expected %d", comb, combiner);
    CHECK(nints == ni && naddr == 0 && ntypes == 0, "envelope %d %d %d", nints, naddr, ntypes);
    int ints[2] = {-1, -1};
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    CHECK_MPI(MPI_Type_get_contents(t, 2, 0, 0, ints, addrs, types));
    if (ni == 2) {
        CHECK(ints[0] == p && ints[1] == r, "contents (%d, %d), expected (%d, %d)", ints[0], ints[1], p, r);
    } else {
        CHECK(ints[0] == r, "contents (%d), expected (%d)", ints[0], r);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);  /* errors without a communicator */

    /* Sizes: the smallest kind with enough precision and range. */
    struct { int p, r, real_size; } reals[] = {
        {6, 37, 4}, {3, MPI_UNDEFINED, 4}, {MPI_UNDEFINED, 30, 4}, {7, 37, 8}, {6, 38, 8},
        {15, 307, 8}, {MPI_UNDEFINED, 300, 8}, {16, 307, 16}, {33, 4931, 16},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; ++i) {
        MPI_Datatype real = MPI_DATATYPE_NULL, cplx = MPI_DATATYPE_NULL, again = MPI_DATATYPE_NULL;
        CHECK_MPI(MPI_Type_create_f90_real(reals[i].p, reals[i].r, &real));
        CHECK_MPI(MPI_Type_create_f90_complex(reals[i].p, reals[i].r, &cplx));
        CHECK(size_of(real) == reals[i].real_size, "real(%d,%d): size %d, expected %d", reals[i].p,
              reals[i].r, size_of(real), reals[i].real_size);
        CHECK(size_of(cplx) == 2 * reals[i].real_size, "complex(%d,%d): size %d", reals[i].p, reals[i].r,
              size_of(cplx));
        CHECK_MPI(MPI_Type_create_f90_real(reals[i].p, reals[i].r, &again));
        CHECK(again == real, "a second call with (%d,%d) gave another handle", reals[i].p, reals[i].r);
        check_envelope(real, MPI_COMBINER_F90_REAL, 2, reals[i].p, reals[i].r);
        check_envelope(cplx, MPI_COMBINER_F90_COMPLEX, 2, reals[i].p, reals[i].r);
    }
    struct { int r, size; } ints[] = {{1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 4}, {9, 4}, {10, 8}, {18, 8}, {19, 16}, {38, 16}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        CHECK_MPI(MPI_Type_create_f90_integer(ints[i].r, &t));
        CHECK(size_of(t) == ints[i].size, "integer(%d): size %d, expected %d", ints[i].r, size_of(t), ints[i].size);
        check_envelope(t, MPI_COMBINER_F90_INTEGER, 1, 0, ints[i].r);
    }

    /* Kinds that do not exist, and freeing: MPI_ERR_ARG / MPI_ERR_TYPE. */
    MPI_Datatype none = MPI_DATATYPE_NULL;
    int cls = -1;
    MPI_Error_class(MPI_Type_create_f90_real(34, 37, &none), &cls);
    CHECK(cls == MPI_ERR_ARG, "real(34,37): class %d", cls);
    MPI_Error_class(MPI_Type_create_f90_real(6, 5000, &none), &cls);
    CHECK(cls == MPI_ERR_ARG, "real(6,5000): class %d", cls);
    MPI_Error_class(MPI_Type_create_f90_complex(MPI_UNDEFINED, MPI_UNDEFINED, &none), &cls);
    CHECK(cls == MPI_ERR_ARG, "complex(UNDEFINED,UNDEFINED): class %d", cls);
    MPI_Error_class(MPI_Type_create_f90_integer(39, &none), &cls);
    CHECK(cls == MPI_ERR_ARG, "integer(39): class %d", cls);
    MPI_Datatype dbl = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_create_f90_real(15, 307, &dbl));
    MPI_Datatype kept = dbl;
    MPI_Error_class(MPI_Type_free(&dbl), &cls);
    CHECK(cls == MPI_ERR_TYPE, "MPI_Type_free of an f90 type: class %d", cls);
    CHECK(dbl == kept, "the handle was changed by a failed free");

    /* They carry data and reduce like their base types. */
    MPI_Datatype i8 = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_create_f90_integer(18, &i8));
    long long mine[3] = {rank + 1, 1LL << 40, -rank}, sum[3] = {0, 0, 0};
    CHECK_MPI(MPI_Allreduce(mine, sum, 3, i8, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum[0] == (long long)size * (size + 1) / 2 && sum[1] == (long long)size << 40 &&
              sum[2] == -(long long)size * (size - 1) / 2,
          "integer(18) allreduce: %lld %lld %lld", sum[0], sum[1], sum[2]);
    double d[2] = {rank + 0.5, 0}, dmax[2];
    CHECK_MPI(MPI_Allreduce(d, dmax, 2, dbl, MPI_MAX, MPI_COMM_WORLD));
    CHECK(dmax[0] == size - 0.5 && dmax[1] == 0, "real(15,307) allreduce max: %g %g", dmax[0], dmax[1]);
    if (size > 1) {
        double z[4];
        if (rank == 0) {
            for (int i = 0; i < 4; ++i) z[i] = i * 1.25;
            MPI_Datatype c16;
            CHECK_MPI(MPI_Type_create_f90_complex(15, 300, &c16));
            CHECK_MPI(MPI_Send(z, 2, c16, 1, 7, MPI_COMM_WORLD));
        } else if (rank == 1) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(z, 4, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &st));
            int n = -1;
            MPI_Get_count(&st, MPI_DOUBLE, &n);
            CHECK(n == 4 && z[0] == 0 && z[1] == 1.25 && z[2] == 2.5 && z[3] == 3.75, "complex data: %d %g %g %g %g",
                  n, z[0], z[1], z[2], z[3]);
        }
    }
    MPI_Finalize();
    return report("datatype_f90");
}
