/* MPI_Comm_split_type with MPI_COMM_TYPE_RESOURCE_GUIDED and
 * MPI_COMM_TYPE_HW_GUIDED (MPI-4.1 7.4.2): the info key
 * "mpi_hw_resource_type" names the resource. "mpi_shared_memory" gives the
 * communicator MPI_COMM_TYPE_SHARED gives (same members, same order by key);
 * a resource type the implementation does not know, a missing key and
 * MPI_INFO_NULL give MPI_COMM_NULL on every process; a hardware level that
 * MPI_Get_hw_resource_info reports gives the same members under both split
 * types. */
#include <string.h>

#include "../mpi/check.h"

/* Splits MPI_COMM_WORLD by `split_type` with mpi_hw_resource_type = `value`
 * (no info at all when value is NULL, an info without the key when value is "") */
static MPI_Comm split_by(int split_type, const char *value, int key) {
    MPI_Info info = MPI_INFO_NULL;
    if (value) {
        MPI_Info_create(&info);
        if (value[0]) MPI_Info_set(info, "mpi_hw_resource_type", value);
    }
    MPI_Comm out = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, split_type, key, info, &out));
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return out;
}

/* Whether two communicators have the same members in the same rank order. */
static int same_members(MPI_Comm a, MPI_Comm b) {
    if (a == MPI_COMM_NULL || b == MPI_COMM_NULL) return a == b;
    int result = MPI_UNEQUAL;
    MPI_Comm_compare(a, b, &result);
    return result == MPI_CONGRUENT;
}

static const char *name_of(int split_type) {
    return split_type == MPI_COMM_TYPE_RESOURCE_GUIDED ? "MPI_COMM_TYPE_RESOURCE_GUIDED" : "MPI_COMM_TYPE_HW_GUIDED";
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int reversed = size - rank; /* a key that reverses the order */

    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, reversed, MPI_INFO_NULL, &node));
    CHECK(node != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");

    const int types[] = {MPI_COMM_TYPE_RESOURCE_GUIDED, MPI_COMM_TYPE_HW_GUIDED};
    for (int t = 0; t < 2; t++) {
        const char *type = name_of(types[t]);
        MPI_Comm shm = split_by(types[t], "mpi_shared_memory", reversed);
        CHECK(shm != MPI_COMM_NULL, "%s with mpi_shared_memory gave MPI_COMM_NULL", type);
        CHECK(same_members(shm, node), "%s with mpi_shared_memory differs from MPI_COMM_TYPE_SHARED", type);
        if (shm != MPI_COMM_NULL) {
            int inter = 1, shm_rank = -1, node_rank = -2;
            MPI_Comm_test_inter(shm, &inter);
            CHECK(!inter, "%s gave an intercommunicator", type);
            MPI_Comm_rank(shm, &shm_rank);
            MPI_Comm_rank(node, &node_rank);
            CHECK(shm_rank == node_rank, "%s: rank %d, MPI_COMM_TYPE_SHARED rank %d (key order)", type, shm_rank,
                  node_rank);
            /* It is a working communicator: the ranks' sum. */
            int sum = 0, n = 0;
            MPI_Comm_size(shm, &n);
            CHECK_MPI(MPI_Allreduce(&shm_rank, &sum, 1, MPI_INT, MPI_SUM, shm));
            CHECK(sum == n * (n - 1) / 2, "%s: allreduce gave %d", type, sum);
            MPI_Comm_free(&shm);
        }

        MPI_Comm none = split_by(types[t], "no_such_resource", rank);
        CHECK(none == MPI_COMM_NULL, "%s with an unknown resource type gave a communicator", type);
        if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
        none = split_by(types[t], "", rank);
        CHECK(none == MPI_COMM_NULL, "%s with no mpi_hw_resource_type key gave a communicator", type);
        if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
        none = split_by(types[t], NULL, rank);
        CHECK(none == MPI_COMM_NULL, "%s with MPI_INFO_NULL gave a communicator", type);
        if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
    }

    /* Hardware levels: both guided types agree. */
    MPI_Info hw;
    CHECK_MPI(MPI_Get_hw_resource_info(&hw));
    int nkeys = 0;
    MPI_Info_get_nkeys(hw, &nkeys);
    for (int k = 0; k < nkeys; k++) {
        char level[MPI_MAX_INFO_KEY + 1];
        MPI_Info_get_nthkey(hw, k, level);
        MPI_Comm by_resource = split_by(MPI_COMM_TYPE_RESOURCE_GUIDED, level, rank);
        MPI_Comm by_hw = split_by(MPI_COMM_TYPE_HW_GUIDED, level, rank);
        CHECK(same_members(by_resource, by_hw), "%s: RESOURCE_GUIDED and HW_GUIDED differ", level);
        if (by_resource != MPI_COMM_NULL) MPI_Comm_free(&by_resource);
        if (by_hw != MPI_COMM_NULL) MPI_Comm_free(&by_hw);
    }
    MPI_Info_free(&hw);

    /* MPI_UNDEFINED: no communicator. */
    MPI_Comm undefined = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, rank, MPI_INFO_NULL, &undefined));
    CHECK(undefined == MPI_COMM_NULL, "MPI_UNDEFINED gave a communicator");

    MPI_Comm_free(&node);
    MPI_Finalize();
    return report("comm_split_resource_guided");
}
