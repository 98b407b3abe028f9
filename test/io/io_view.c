/* MPI-IO views:
 * - a strided filetype (vector of 2 blocks of B ints, stride B*size, resized
 *   to the whole pattern) at displacement rank*B ints: the ranks' blocks
 *   interleave in the file; every rank checks the whole file through the
 *   default view, its own data through its view, get_view, get_byte_offset,
 *   SEEK_END in etypes of the view;
 * - a view's holes are left alone (a second pass through a view that skips
 *   half the ints does not touch the other half);
 * - external32: ints and doubles are big-endian in the file and come back
 *   exactly through the view; MPI_File_get_type_extent under external32;
 * - errors: unknown datarep (MPI_ERR_UNSUPPORTED_DATAREP),
 *   MPI_DISPLACEMENT_CURRENT without MPI_MODE_SEQUENTIAL, etypes and
 *   filetypes with negative, decreasing or (writable file) overlapping
 *   displacements (MPI_ERR_IO, as MPICH). */
#include "io_test.h"

#include <stdint.h>

#define B 5

static int big_endian_int(const unsigned char *p)
{
    return (int)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
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

    /* ---- interleaved strided views ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("view.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    MPI_Datatype vec, filetype;
    MPI_Type_vector(2, B, B * size, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * B * size * sizeof(int)), &filetype);
    MPI_Type_commit(&filetype);
    MPI_Type_free(&vec);
    MPI_Offset disp = (MPI_Offset)rank * B * sizeof(int);
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "native", MPI_INFO_NULL));
    enum { N = 4 * B };  /* two tiles */
    int mine[N], back[N];
    for (int i = 0; i < N; i++)
        mine[i] = rank * 100000 + i;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, mine, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "write count %d", count);
    MPI_Offset pos;
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == N, "SEEK_END in the view: %lld etypes, expected %d", (long long)pos, N);
    for (int k = 0; k < N; k++) {
        MPI_Offset byte = -1;
        CHECK_MPI(MPI_File_get_byte_offset(fh, k, &byte));
        MPI_Offset expect = disp + (MPI_Offset)(k / B) * B * size * sizeof(int) + (k % B) * sizeof(int);
        CHECK(byte == expect, "byte offset of etype %d: %lld, expected %lld", k, (long long)byte, (long long)expect);
    }
    MPI_Offset vdisp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &vdisp, &et, &ft, rep));
    MPI_Aint lb, extent;
    int tsize;
    MPI_Type_get_extent(ft, &lb, &extent);
    MPI_Type_size(ft, &tsize);
    CHECK(vdisp == disp && et == MPI_INT && strcmp(rep, "native") == 0, "get_view: disp %lld rep %s", (long long)vdisp,
          rep);
    CHECK(extent == (MPI_Aint)(2 * B * size * sizeof(int)) && tsize == (int)(2 * B * sizeof(int)),
          "get_view filetype: extent %ld size %d", (long)extent, tsize);
    MPI_Type_free(&ft);

    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    /* Own data back through the view, with the individual pointer. */
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all(fh, back, N, MPI_INT, &st));
    for (int i = 0; i < N; i++)
        CHECK(back[i] == mine[i], "own int %d through the view: %d", i, back[i]);
    /* Part of the data from the middle of a block (offset in etypes). */
    CHECK_MPI(MPI_File_read_at(fh, B - 2, back, 4, MPI_INT, &st));
    for (int i = 0; i < 4; i++)
        CHECK(back[i] == mine[B - 2 + i], "int %d from offset %d: %d", i, B - 2, back[i]);

    /* The whole file through the default view. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int total = N * size;
    int *all = xmalloc(total * sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, total, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == total, "file holds %d ints, expected %d", count, total);
    for (int i = 0; i < total; i++) {
        int blk = i / B, owner = blk % size, local = (blk / size) * B + i % B;
        CHECK(all[i] == owner * 100000 + local, "file int %d: %d, expected %d", i, all[i], owner * 100000 + local);
    }

    /* Holes stay untouched: every rank rewrites the first int of each of its
     * blocks through a view of one int per block. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Datatype one, onefile;
    MPI_Type_vector(2, 1, B * size, MPI_INT, &one);
    MPI_Type_create_resized(one, 0, (MPI_Aint)(2 * B * size * sizeof(int)), &onefile);
    MPI_Type_commit(&onefile);
    MPI_Type_free(&one);
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, onefile, "native", MPI_INFO_NULL));
    int marks[4] = {-1, -2, -3, -4};
    CHECK_MPI(MPI_File_write_all(fh, marks, 4, MPI_INT, &st));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, total, MPI_INT, &st));
    for (int i = 0; i < total; i++) {
        int blk = i / B, owner = blk % size, local = (blk / size) * B + i % B;
        int expect = i % B == 0 ? -1 - blk / size : owner * 100000 + local;
        CHECK(all[i] == expect, "after the sparse pass, file int %d: %d, expected %d", i, all[i], expect);
    }
    free(all);
    MPI_Type_free(&onefile);
    MPI_Type_free(&filetype);

    /* Errors of set_view. */
    CHECK(error_class_of(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL)) ==
              MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep");
    CHECK(error_class_of(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native",
                                           MPI_INFO_NULL)) != MPI_SUCCESS,
          "MPI_DISPLACEMENT_CURRENT without MPI_MODE_SEQUENTIAL");
    /* Type maps a view rejects (MPI_ERR_IO, as MPICH): negative or
     * decreasing displacements, and overlaps in a writable file. */
    int lens[2] = {1, 1}, negative[2] = {-2, 2}, decreasing[2] = {3, 0}, overlap_lens[2] = {3, 1},
        overlapping[2] = {0, 1};
    MPI_Datatype bad[3];
    MPI_Type_indexed(2, lens, negative, MPI_INT, &bad[0]);
    MPI_Type_indexed(2, lens, decreasing, MPI_INT, &bad[1]);
    MPI_Type_indexed(2, overlap_lens, overlapping, MPI_INT, &bad[2]);
    for (int i = 0; i < 3; i++) {
        MPI_Type_commit(&bad[i]);
        CHECK(error_class_of(MPI_File_set_view(fh, 0, bad[i], bad[i], "native", MPI_INFO_NULL)) == MPI_ERR_IO,
              "etype %d accepted", i);
    }
    for (int i = 0; i < 3; i++)
        CHECK(error_class_of(MPI_File_set_view(fh, 0, MPI_INT, bad[i], "native", MPI_INFO_NULL)) == MPI_ERR_IO,
              "filetype %d accepted", i);
    CHECK_MPI(MPI_File_close(&fh));
    /* Read only: overlaps are fine, the others are still errors. */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("view.dat"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, bad[2], "native", MPI_INFO_NULL));
    CHECK(error_class_of(MPI_File_set_view(fh, 0, MPI_INT, bad[1], "native", MPI_INFO_NULL)) == MPI_ERR_IO,
          "decreasing filetype accepted read-only");
    CHECK_MPI(MPI_File_close(&fh));
    for (int i = 0; i < 3; i++)
        MPI_Type_free(&bad[i]);

    /* ---- external32 ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("ext32.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    enum { M = 8 };
    int ints[M], ints_back[M];
    double dbl[M], dbl_back[M];
    for (int i = 0; i < M; i++) {
        ints[i] = (rank + 1) * 0x01020304 + i;
        dbl[i] = rank + i * 0.25;
    }
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    MPI_Aint ext = 0;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == 4, "external32 extent of MPI_INT %ld", (long)ext);
    CHECK_MPI(MPI_File_get_view(fh, &vdisp, &et, &ft, rep));
    CHECK(strcmp(rep, "external32") == 0, "datarep %s", rep);
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * M, ints, M, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == M, "external32 write count %d", count);
    MPI_Offset dbl_disp = (MPI_Offset)size * M * 4;
    CHECK_MPI(MPI_File_set_view(fh, dbl_disp, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * M, dbl, M, MPI_DOUBLE, &st));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    /* Raw bytes: big endian. */
    int peer = (rank + 1) % size;
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char raw[M * 8];
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * M * 4, raw, M * 4, MPI_BYTE, &st));
    for (int i = 0; i < M; i++)
        CHECK(big_endian_int(raw + 4 * i) == (peer + 1) * 0x01020304 + i, "external32 int %d in the file: %08x", i,
              big_endian_int(raw + 4 * i));
    CHECK_MPI(MPI_File_read_at(fh, dbl_disp + (MPI_Offset)peer * M * 8, raw, M * 8, MPI_BYTE, &st));
    for (int i = 0; i < M; i++) {
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++)
            bits = bits << 8 | raw[8 * i + b];
        double d;
        memcpy(&d, &bits, 8);
        CHECK(d == peer + i * 0.25, "external32 double %d in the file: %g", i, d);
    }
    /* Back through the views. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * M, ints_back, M, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == M, "external32 read count %d", count);
    for (int i = 0; i < M; i++)
        CHECK(ints_back[i] == (peer + 1) * 0x01020304 + i, "external32 int %d back: %d", i, ints_back[i]);
    CHECK_MPI(MPI_File_set_view(fh, dbl_disp, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * M, dbl_back, M, MPI_DOUBLE, &st));
    for (int i = 0; i < M; i++)
        CHECK(dbl_back[i] == peer + i * 0.25, "external32 double %d back: %g", i, dbl_back[i]);
    CHECK_MPI(MPI_File_close(&fh));

    io_remove_dir(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("io_view");
}
