/* The error code a user error handler leaves in its int* argument is what the
 * failing call returns (as MPICH does): a communicator handler that clears it
 * makes MPI_Send to a bad rank return MPI_SUCCESS, one that replaces it with a
 * user code makes the call return that code; a file handler installed on
 * MPI_FILE_NULL that clears it makes MPI_File_open of a missing file return
 * MPI_SUCCESS. MPI_Comm_call_errhandler itself returns MPI_SUCCESS whatever
 * the handler does. */
#include "../mpi/check.h"

static int comm_calls, file_calls, replacement = MPI_SUCCESS, seen_code;

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    comm_calls++;
    seen_code = *code;
    *code = replacement;
}

static void file_handler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    file_calls++;
    *code = MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int size, buf = 0, cls = -1, user_class, user_code, rc;
    MPI_Errhandler eh;
    MPI_File fh;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_create_errhandler(comm_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    MPI_Errhandler_free(&eh);

    /* Cleared by the handler: the call succeeds. */
    replacement = MPI_SUCCESS;
    rc = MPI_Send(&buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    CHECK(comm_calls == 1, "handler called %d times", comm_calls);
    MPI_Error_class(seen_code, &cls);
    CHECK(cls == MPI_ERR_RANK, "handler saw class %d, expected MPI_ERR_RANK", cls);
    CHECK(rc == MPI_SUCCESS, "MPI_Send returned %d after the handler cleared the code", rc);

    /* Replaced by a user code: the call returns that code. */
    MPI_Add_error_class(&user_class);
    MPI_Add_error_code(user_class, &user_code);
    replacement = user_code;
    rc = MPI_Send(&buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    CHECK(comm_calls == 2, "handler called %d times", comm_calls);
    CHECK(rc == user_code, "MPI_Send returned %d, expected the handler's code %d", rc, user_code);
    MPI_Error_class(rc, &cls);
    CHECK(cls == user_class, "class %d, expected %d", cls, user_class);

    /* MPI_Comm_call_errhandler returns MPI_SUCCESS, not the handler's code. */
    rc = MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    CHECK(comm_calls == 3 && rc == MPI_SUCCESS, "call_errhandler: %d calls, returned %d", comm_calls, rc);

    /* Files: the default handler (MPI_FILE_NULL's) returns the error ... */
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir-axon/errhandler_code", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && (cls == MPI_ERR_NO_SUCH_FILE || cls == MPI_ERR_IO), "open of a missing file: rc %d class %d",
          rc, cls);
    /* ... and a handler on MPI_FILE_NULL that clears the code makes it succeed. */
    MPI_File_create_errhandler(file_handler, &eh);
    MPI_File_set_errhandler(MPI_FILE_NULL, eh);
    MPI_Errhandler_free(&eh);
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir-axon/errhandler_code", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(file_calls == 1, "file handler called %d times", file_calls);
    CHECK(rc == MPI_SUCCESS, "MPI_File_open returned %d after the handler cleared the code", rc);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Finalize();
    return report("attr_errhandler_code");
}
