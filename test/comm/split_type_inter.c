/* MPI_Comm_split_type on an intercommunicator: it partitions "the group
 * associated with comm" (MPI-4.1 7.4.2), for an intercommunicator its local
 * group, and each result is an intracommunicator of the local group's
 * processes that share the resource, as in MPICH. Here every process is on
 * one node, so MPI_COMM_TYPE_SHARED (and the guided types with
 * mpi_shared_memory) give the whole local group, ordered by key; a process
 * that passes MPI_UNDEFINED gets MPI_COMM_NULL and the others a
 * communicator without it. The two groups are WORLD's even and odd ranks. */
#include "../mpi/check.h"

/* Checks `got` is an intracommunicator of `want_size` processes in which this
 * process has rank `want_rank`, and that it works (a sum over it). */
static void check_result(MPI_Comm got, int want_size, int want_rank, const char *what) {
    CHECK(got != MPI_COMM_NULL, "%s gave MPI_COMM_NULL", what);
    if (got == MPI_COMM_NULL) return;
    int inter = 1, size = -1, rank = -1;
    MPI_Comm_test_inter(got, &inter);
    CHECK(!inter, "%s gave an intercommunicator", what);
    MPI_Comm_size(got, &size);
    MPI_Comm_rank(got, &rank);
    CHECK(size == want_size, "%s: size %d, expected %d", what, size, want_size);
    CHECK(rank == want_rank, "%s: rank %d, expected %d", what, rank, want_rank);
    int sum = -1;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, got));
    CHECK(sum == size * (size - 1) / 2, "%s: allreduce of the ranks gave %d", what, sum);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        printf("needs at least 2 processes\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    /* Leaders: world ranks 0 (even group) and 1 (odd group). */
    CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, wrank % 2 ? 0 : 1, 17, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int lrank, lsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);

    MPI_Comm out = MPI_COMM_NULL;
    int rc = MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, lrank, MPI_INFO_NULL, &out);
    CHECK(error_class_of(rc) == MPI_SUCCESS, "MPI_COMM_TYPE_SHARED on an intercommunicator: error class %d",
          error_class_of(rc));
    check_result(out, lsize, lrank, "MPI_COMM_TYPE_SHARED on an intercommunicator");
    if (out != MPI_COMM_NULL) {
        int cmp = MPI_UNEQUAL;
        MPI_Comm_compare(out, half, &cmp);
        CHECK(cmp == MPI_CONGRUENT, "the result is not the local group (compare says %d)", cmp);
        MPI_Comm_free(&out);
    }

    /* The key orders the result: reversed. */
    rc = MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, lsize - lrank, MPI_INFO_NULL, &out);
    CHECK(error_class_of(rc) == MPI_SUCCESS, "reversed key: error class %d", error_class_of(rc));
    check_result(out, lsize, lsize - 1 - lrank, "MPI_COMM_TYPE_SHARED with a reversed key");
    if (out != MPI_COMM_NULL) MPI_Comm_free(&out);

    /* The guided types with mpi_shared_memory do the same. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    const int guided[] = {MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_RESOURCE_GUIDED};
    for (int g = 0; g < 2; g++) {
        rc = MPI_Comm_split_type(inter, guided[g], lrank, info, &out);
        CHECK(error_class_of(rc) == MPI_SUCCESS, "guided type %d on an intercommunicator: error class %d", guided[g],
              error_class_of(rc));
        check_result(out, lsize, lrank, g ? "RESOURCE_GUIDED mpi_shared_memory" : "HW_GUIDED mpi_shared_memory");
        if (out != MPI_COMM_NULL) MPI_Comm_free(&out);
    }
    MPI_Info_free(&info);

    /* Local rank 0 of each group stays out. */
    rc = MPI_Comm_split_type(inter, lrank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, lrank, MPI_INFO_NULL, &out);
    CHECK(error_class_of(rc) == MPI_SUCCESS, "with MPI_UNDEFINED at local rank 0: error class %d", error_class_of(rc));
    if (lrank == 0)
        CHECK(out == MPI_COMM_NULL, "MPI_UNDEFINED gave a communicator");
    else
        check_result(out, lsize - 1, lrank - 1, "MPI_COMM_TYPE_SHARED without local rank 0");
    if (out != MPI_COMM_NULL) MPI_Comm_free(&out);

    /* The intercommunicator still works afterwards: the leaders swap their world ranks. */
    if (lrank == 0) {
        int token = wrank, got = -1;
        CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, 0, 5, &got, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE));
        CHECK(got == (wrank % 2 ? 0 : 1), "remote leader sent %d", got);
    }

    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return report("comm_split_type_inter");
}
