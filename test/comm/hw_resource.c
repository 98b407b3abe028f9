/* MPI_Get_hw_resource_info (MPI-4.1): keys "hwloc://<type>" with "true" or
 * "false", consistent with MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED) given
 * the same key as the resource type: a communicator where "true", and
 * MPI_COMM_NULL where "false". */
#include "../mpi/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Info hw;
    CHECK_MPI(MPI_Get_hw_resource_info(&hw));
    int nkeys = 0;
    MPI_Info_get_nkeys(hw, &nkeys);
    int saw_pu = 0, saw_core = 0;
    for (int k = 0; k < nkeys; k++) {
        char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
        MPI_Info_get_nthkey(hw, k, key);
        int vlen = MPI_MAX_INFO_VAL, flag = 0;
        MPI_Info_get_string(hw, key, &vlen, value, &flag);
        CHECK(strncmp(key, "hwloc://", 8) == 0, "key '%s'", key);
        CHECK(strcmp(value, "true") == 0 || strcmp(value, "false") == 0, "%s = '%s'", key, value);
        if (strcmp(key, "hwloc://PU") == 0) saw_pu = 1;
        if (strcmp(key, "hwloc://Core") == 0) saw_core = 1;

        /* The split agrees with the value on every process (collective). */
        MPI_Info split_info;
        MPI_Info_create(&split_info);
        MPI_Info_set(split_info, "mpi_hw_resource_type", key);
        MPI_Comm level;
        CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, split_info, &level));
        int inside = strcmp(value, "true") == 0;
        CHECK(inside == (level != MPI_COMM_NULL), "%s = %s but split gave %s", key, value,
              level == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
        if (level != MPI_COMM_NULL) MPI_Comm_free(&level);
        MPI_Info_free(&split_info);
    }
    /* Every machine hwloc knows has processing units and cores. */
    CHECK(saw_pu && saw_core, "PU %d, Core %d among %d keys", saw_pu, saw_core, nkeys);
    MPI_Info_free(&hw);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Get_hw_resource_info(NULL), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "NULL: class %d", cls);
    MPI_Finalize();
    return report("comm_hw_resource");
}
