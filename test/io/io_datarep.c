/* MPI_Register_datarep: a user representation that stores each int as a
 * 64-bit integer in the file.
 * - registering a name twice, or a predefined name, is MPI_ERR_DUP_DATAREP;
 * - file offsets and sizes follow the extent function (8 bytes per int):
 *   MPI_File_get_type_extent, the file size, the raw 64-bit values a native
 *   view reads from another rank's region;
 * - the conversion functions run with the caller's datatype and the number
 *   of predefined items, and the data comes back exactly through the view;
 * - get_view reports the representation's name. */
#include "io_test.h"

#include <stdint.h>

#define N 6

static int calls_read, calls_write, bad_args;
static int extra_token = 42;

static int wide_extent(MPI_Datatype type, MPI_Aint *extent, void *extra)
{
    if (extra != &extra_token)
        bad_args++;
    if (type != MPI_INT)
        return MPI_ERR_TYPE;
    *extent = 8;
    return MPI_SUCCESS;
}

static int wide_write(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position, void *extra)
{
    calls_write++;
    if (type != MPI_INT || extra != &extra_token)
        bad_args++;
    for (int i = 0; i < count; i++) {
        int64_t v = ((int *)userbuf)[position + i];
        memcpy((char *)filebuf + 8 * i, &v, 8);
    }
    return MPI_SUCCESS;
}

static int wide_read(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position, void *extra)
{
    calls_read++;
    if (type != MPI_INT || extra != &extra_token)
        bad_args++;
    for (int i = 0; i < count; i++) {
        int64_t v;
        memcpy(&v, (char *)filebuf + 8 * i, 8);
        ((int *)userbuf)[position + i] = (int)v;
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_make_dir(MPI_COMM_WORLD);
    MPI_File fh;
    MPI_Status st;
    int count;

    CHECK_MPI(MPI_Register_datarep("axon-wide64", wide_read, wide_write, wide_extent, &extra_token));
    CHECK(error_class_of(MPI_Register_datarep("axon-wide64", wide_read, wide_write, wide_extent, &extra_token)) ==
              MPI_ERR_DUP_DATAREP, "registering a name twice");
    CHECK(error_class_of(MPI_Register_datarep("external32", wide_read, wide_write, wide_extent, &extra_token)) ==
              MPI_ERR_DUP_DATAREP, "registering external32");

    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("wide.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "axon-wide64", MPI_INFO_NULL));
    MPI_Aint extent = 0;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_INT, &extent));
    CHECK(extent == 8, "file extent of MPI_INT %ld", (long)extent);
    MPI_Offset disp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    CHECK(strcmp(rep, "axon-wide64") == 0, "datarep %s", rep);

    int data[N], back[N];
    for (int i = 0; i < N; i++)
        data[i] = (rank + 1) * 1000 - i;
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * N, data, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "write count %d", count);
    CHECK(calls_write >= 1, "the write conversion did not run");
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Offset fsize = 0;
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == (MPI_Offset)size * N * 8, "file size %lld, expected %d", (long long)fsize, size * N * 8);

    int peer = (rank + 1) % size;
    for (int i = 0; i < N; i++)
        back[i] = -1;
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * N, back, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "read count %d", count);
    CHECK(calls_read >= 1, "the read conversion did not run");
    for (int i = 0; i < N; i++)
        CHECK(back[i] == (peer + 1) * 1000 - i, "int %d back: %d", i, back[i]);

    /* The raw file through a native view: 64-bit values. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int64_t raw[N];
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * N * 8, raw, N * 8, MPI_BYTE, &st));
    for (int i = 0; i < N; i++)
        CHECK(raw[i] == (peer + 1) * 1000 - i, "raw 64-bit value %d: %lld", i, (long long)raw[i]);
    CHECK(bad_args == 0, "conversion functions got wrong arguments %d times", bad_args);
    CHECK_MPI(MPI_File_close(&fh));

    io_remove_dir(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("io_datarep");
}
