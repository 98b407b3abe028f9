/* MPI_Publish_name / MPI_Lookup_name / MPI_Unpublish_name through mpirun's
 * name service: rank 0 opens a port and publishes it; every rank looks the
 * name up and must get the exact port name; the upper half then connects to
 * the lower half through the name it looked up; after MPI_Unpublish_name a
 * lookup fails with MPI_ERR_NAME and a second unpublish with
 * MPI_ERR_SERVICE; publishing a name twice gives MPI_ERR_NAME. Run without mpirun (a singleton), lookup / unpublish /
 * spawn fail with MPI_ERR_NAME / MPI_ERR_SERVICE / MPI_ERR_SPAWN. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME] = "", found[MPI_MAX_PORT_NAME] = "";
    char service[64];

    if (!getenv("PMIX_NAMESPACE")) {  /* singleton: no launcher to ask */
        int rc = MPI_Lookup_name("axon-test-none", MPI_INFO_NULL, found);
        CHECK(error_class_of(rc) == MPI_ERR_NAME, "singleton lookup: class %d", error_class_of(rc));
        rc = MPI_Unpublish_name("axon-test-none", MPI_INFO_NULL, "x");
        CHECK(error_class_of(rc) == MPI_ERR_SERVICE, "singleton unpublish: class %d", error_class_of(rc));
        MPI_Comm inter;
        int errcodes[2] = {-1, -1};
        rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, errcodes);
        CHECK(error_class_of(rc) == MPI_ERR_SPAWN, "singleton spawn: class %d", error_class_of(rc));
        CHECK(error_class_of(errcodes[0]) == MPI_ERR_SPAWN, "singleton spawn errcode %d", errcodes[0]);
        MPI_Finalize();
        return report("dpm_names singleton");
    }

    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(service, sizeof service, "axon-test-service-%d", pid);
    if (rank == 0) {
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK_MPI(MPI_Publish_name(service, MPI_INFO_NULL, port));
        int rc = MPI_Publish_name(service, MPI_INFO_NULL, port);
        CHECK(error_class_of(rc) == MPI_ERR_NAME, "publishing twice: class %d", error_class_of(rc));
    }
    MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK_MPI(MPI_Lookup_name(service, MPI_INFO_NULL, found));
    CHECK(strcmp(found, port) == 0, "looked up '%s', published '%s'", found, port);

    if (size >= 2) {
        int accepting = rank < size / 2;
        MPI_Comm local, inter;
        MPI_Comm_split(MPI_COMM_WORLD, accepting, rank, &local);
        if (accepting)
            CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, local, &inter));
        else
            CHECK_MPI(MPI_Comm_connect(found, MPI_INFO_NULL, 0, local, &inter));
        int token = accepting ? 31 : 0;
        CHECK_MPI(MPI_Bcast(&token, 1, MPI_INT, accepting ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
        if (!accepting) CHECK(token == 31, "bcast over the looked-up port gave %d", token);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        MPI_Comm_free(&local);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_MPI(MPI_Unpublish_name(service, MPI_INFO_NULL, port));
        int rc = MPI_Unpublish_name(service, MPI_INFO_NULL, port);
        CHECK(error_class_of(rc) == MPI_ERR_SERVICE, "second unpublish: class %d", error_class_of(rc));
        CHECK_MPI(MPI_Close_port(port));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = MPI_Lookup_name(service, MPI_INFO_NULL, found);
    CHECK(error_class_of(rc) == MPI_ERR_NAME, "lookup after unpublish: class %d", error_class_of(rc));
    MPI_Finalize();
    return report("dpm_names");
}
