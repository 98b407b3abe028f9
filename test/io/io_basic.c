/* MPI-IO: open / close / delete and the file's attributes.
 * - access-mode errors (MPI_ERR_AMODE), a missing file (MPI_ERR_NO_SUCH_FILE),
 *   MPI_MODE_EXCL on an existing file (MPI_ERR_FILE_EXISTS), reading a
 *   write-only file (MPI_ERR_ACCESS), writing a read-only one (MPI_ERR_READ_ONLY),
 *   all on every rank (the open is collective);
 * - the default file error handler is MPI_ERRORS_RETURN, MPI_FILE_NULL's handler
 *   takes open errors and is inherited by files opened later;
 * - get_amode, get_group, get_info, set_size / get_size / preallocate, sync,
 *   set/get_atomicity, get_type_extent, DELETE_ON_CLOSE, APPEND. */
#include "io_test.h"

static int handler_calls, handler_last_class;
static MPI_File handler_file;

static void count_errors(MPI_File *fh, int *code, ...)
{
    handler_calls++;
    handler_file = *fh;
    MPI_Error_class(*code, &handler_last_class);
}

static int open_class(MPI_Comm comm, const char *path, int amode, MPI_File *fh)
{
    *fh = MPI_FILE_NULL;
    int rc = MPI_File_open(comm, path, amode, MPI_INFO_NULL, fh);
    return error_class_of(rc);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_make_dir(MPI_COMM_WORLD);
    const char *path = io_path("basic.dat");
    MPI_File fh;

    /* The default error handler of files is MPI_ERRORS_RETURN. (The handles
     * MPI_File_get_errhandler returns are not freed: ROMIO does not count
     * them and asserts when they are.) */
    MPI_Errhandler eh;
    CHECK_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "default file error handler is not MPI_ERRORS_RETURN");

    /* Access modes. */
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, &fh) == MPI_ERR_AMODE,
          "RDONLY|CREATE");
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_EXCL, &fh) == MPI_ERR_AMODE, "RDONLY|EXCL");
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE, &fh) == MPI_ERR_AMODE,
          "RDWR|WRONLY");
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_CREATE, &fh) == MPI_ERR_AMODE, "no access mode");
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL | MPI_MODE_CREATE, &fh) ==
              MPI_ERR_AMODE, "RDWR|SEQUENTIAL");
    CHECK(fh == MPI_FILE_NULL, "a failed open left a handle");

    /* Missing file. */
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, &fh) == MPI_ERR_NO_SUCH_FILE, "missing file");
    CHECK(error_class_of(MPI_File_delete(path, MPI_INFO_NULL)) == MPI_ERR_NO_SUCH_FILE, "delete missing file");

    /* Create, then EXCL on the existing file. */
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, &fh) == MPI_SUCCESS,
          "create");
    int amode = 0;
    CHECK_MPI(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL), "amode %d", amode);
    MPI_Group g, wg;
    int cmp = -1;
    CHECK_MPI(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "file group is not the communicator's group");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    /* Files start with the default handler. */
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a new file's handler is not MPI_ERRORS_RETURN");
    /* Reading a write-only file. */
    char buf[64];
    MPI_Status st;
    CHECK(error_class_of(MPI_File_read_at(fh, 0, buf, 4, MPI_CHAR, &st)) == MPI_ERR_ACCESS, "read on WRONLY");
    int value = 1000 + rank;
    CHECK_MPI(MPI_File_write_at(fh, rank * (MPI_Offset)sizeof(int), &value, 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not reset the handle");
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, &fh) ==
              MPI_ERR_FILE_EXISTS, "EXCL on an existing file");

    /* Read only: writing fails, reading what the others wrote works. */
    CHECK(open_class(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, &fh) == MPI_SUCCESS, "open RDONLY");
    CHECK(error_class_of(MPI_File_write_at(fh, 0, &value, 1, MPI_INT, &st)) == MPI_ERR_READ_ONLY, "write on RDONLY");
    MPI_Offset fsize = -1;
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == (MPI_Offset)(size * sizeof(int)), "size %lld", (long long)fsize);
    for (int r = 0; r < size; r++) {
        int got = -1;
        CHECK_MPI(MPI_File_read_at(fh, r * (MPI_Offset)sizeof(int), &got, 1, MPI_INT, &st));
        CHECK(got == 1000 + r, "rank %d's int: %d", r, got);
    }
    MPI_Aint extent = 0;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_DOUBLE, &extent));
    CHECK(extent == sizeof(double), "type extent %ld", (long)extent);
    CHECK_MPI(MPI_File_close(&fh));

    /* The handler of MPI_FILE_NULL takes open errors and new files inherit it. */
    MPI_Errhandler mine;
    CHECK_MPI(MPI_File_create_errhandler(count_errors, &mine));
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    handler_calls = 0;
    open_class(MPI_COMM_WORLD, io_path("absent"), MPI_MODE_RDONLY, &fh);
    CHECK(handler_calls == 1 && handler_last_class == MPI_ERR_NO_SUCH_FILE && handler_file == MPI_FILE_NULL,
          "open error not on MPI_FILE_NULL's handler (%d calls, class %d)", handler_calls, handler_last_class);
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine, "a new file did not inherit MPI_FILE_NULL's handler");
    handler_calls = 0;
    CHECK(error_class_of(MPI_File_read_at(fh, -1, buf, 1, MPI_CHAR, &st)) == MPI_ERR_ARG, "negative offset");
    CHECK(handler_calls == 1 && handler_file == fh, "the file's handler did not run");
    CHECK_MPI(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK(handler_calls == 2 && handler_last_class == MPI_ERR_IO, "MPI_File_call_errhandler");
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&mine));

    /* Sizes: set_size truncates and extends, preallocate never shrinks. */
    CHECK_MPI(MPI_File_set_size(fh, 3));
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 3, "after set_size(3): %lld", (long long)fsize);
    CHECK_MPI(MPI_File_set_size(fh, 100));
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 100, "after set_size(100): %lld", (long long)fsize);
    CHECK_MPI(MPI_File_preallocate(fh, 50));
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 100, "preallocate(50) changed the size: %lld", (long long)fsize);
    CHECK_MPI(MPI_File_preallocate(fh, 4096));
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == 4096, "after preallocate(4096): %lld", (long long)fsize);
    CHECK_MPI(MPI_File_sync(fh));

    /* Atomicity. */
    int flag = -1;
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "atomic mode on by default");
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "atomic mode not set");

    /* Info: the object is new and valid. */
    MPI_Info used;
    CHECK_MPI(MPI_File_get_info(fh, &used));
    int nkeys = -1;
    CHECK_MPI(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys >= 0, "nkeys");
    MPI_Info_free(&used);
    CHECK_MPI(MPI_File_close(&fh));

    /* Delete is not collective: rank 0 removes the file. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!io_exists(path), "file still there after MPI_File_delete");

    /* DELETE_ON_CLOSE. */
    const char *temp = io_path("temp.dat");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, temp, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK(io_exists(temp), "file missing while open");
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!io_exists(temp), "DELETE_ON_CLOSE left the file");

    /* APPEND: the individual pointer starts at the end of the file. */
    const char *app = io_path("append.dat");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, app, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    if (rank == 0)
        CHECK_MPI(MPI_File_write_at(fh, 0, "0123456789", 10, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, app, MPI_MODE_RDWR | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 10, "APPEND: individual pointer at %lld", (long long)pos);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 10, "APPEND: shared pointer at %lld", (long long)pos);
    CHECK_MPI(MPI_File_close(&fh));

    /* Invalid handles. */
    CHECK(error_class_of(MPI_File_get_amode(MPI_FILE_NULL, &amode)) == MPI_ERR_FILE, "MPI_FILE_NULL");

    io_remove_dir(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("io_basic");
}
