/* Communicator info hints (MPI-4.1, "Communicator Info"): MPI_Comm_get_info returns
 * the hints the implementation recognizes, and an implementation may ignore
 * others. Axon recognizes the standard assertions (mpi_assert_*) and ignores
 * unknown keys, as MPICH does: an unknown key given to MPI_Comm_set_info,
 * MPI_Comm_dup_with_info or MPI_Comm_split_type never comes back, while a
 * recognized one comes back with its value and is inherited by MPI_Comm_dup. */
#include "../mpi/check.h"

static int has_key(MPI_Info info, const char *key, char *value, int len)
{
    int flag = 0, buflen = len;
    CHECK_MPI(MPI_Info_get_string(info, key, &buflen, value, &flag));
    return flag;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm dup, withinfo, split, dup2;
    MPI_Info in, out;
    char v[64];

    CHECK_MPI(MPI_Info_create(&in));
    CHECK_MPI(MPI_Info_set(in, "axon_test_unknown_key", "true"));
    CHECK_MPI(MPI_Info_set(in, "mpi_assert_no_any_source", "true"));

    /* set_info: the unknown key is dropped, the assertion kept. */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_set_info(dup, in));
    CHECK_MPI(MPI_Comm_get_info(dup, &out));
    CHECK(!has_key(out, "axon_test_unknown_key", v, sizeof v), "set_info kept an unknown key");
    CHECK(has_key(out, "mpi_assert_no_any_source", v, sizeof v) && strcmp(v, "true") == 0,
          "set_info lost mpi_assert_no_any_source");
    CHECK_MPI(MPI_Info_free(&out));

    /* dup inherits the recognized hints only. */
    CHECK_MPI(MPI_Comm_dup(dup, &dup2));
    CHECK_MPI(MPI_Comm_get_info(dup2, &out));
    CHECK(!has_key(out, "axon_test_unknown_key", v, sizeof v), "dup inherited an unknown key");
    CHECK(has_key(out, "mpi_assert_no_any_source", v, sizeof v), "dup lost mpi_assert_no_any_source");
    CHECK_MPI(MPI_Info_free(&out));

    /* dup_with_info and split_type filter the same way. */
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &withinfo));
    CHECK_MPI(MPI_Comm_get_info(withinfo, &out));
    CHECK(!has_key(out, "axon_test_unknown_key", v, sizeof v), "dup_with_info kept an unknown key");
    CHECK(has_key(out, "mpi_assert_no_any_source", v, sizeof v), "dup_with_info lost the assertion");
    CHECK_MPI(MPI_Info_free(&out));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, in, &split));
    CHECK_MPI(MPI_Comm_get_info(split, &out));
    CHECK(!has_key(out, "axon_test_unknown_key", v, sizeof v), "split_type kept an unknown key");
    CHECK_MPI(MPI_Info_free(&out));

    /* The communicators still work. */
    int rank, size, sum = 0;
    MPI_Comm_rank(withinfo, &rank);
    MPI_Comm_size(withinfo, &size);
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, withinfo));
    CHECK(sum == size * (size - 1) / 2, "allreduce on dup_with_info: %d", sum);

    CHECK_MPI(MPI_Info_free(&in));
    CHECK_MPI(MPI_Comm_free(&split));
    CHECK_MPI(MPI_Comm_free(&withinfo));
    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK_MPI(MPI_Comm_free(&dup));
    MPI_Finalize();
    return report("comm_hints");
}
