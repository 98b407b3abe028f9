/* MPI-IO data access with the default view (etype MPI_BYTE):
 * - explicit offsets: each rank writes its block, then (after sync + barrier,
 *   the standard's consistency rule) reads its neighbour's block;
 * - individual pointers: write / read advance the pointer, seek (SET, CUR,
 *   END), get_position, get_byte_offset;
 * - a short read at the end of the file: the status counts what arrived;
 * - a derived memory type (vector with holes) written and read back;
 * - collective forms (_all, _at_all), split collectives (_begin / _end) and
 *   nonblocking forms (iwrite_at / iread_at / iread / iwrite_all ...),
 *   MPI_Get_count and MPI_Get_elements on their statuses;
 * - zero-count accesses report count 0. */
#include "io_test.h"

#define BLOCK 1000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_make_dir(MPI_COMM_WORLD);
    const char *path = io_path("access.dat");
    MPI_File fh;
    MPI_Status st;
    int count;
    unsigned char *out = xmalloc(BLOCK), *in = xmalloc(BLOCK);

    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));

    /* Explicit offsets, read back by the neighbour. */
    fill_pattern(out, BLOCK, 100 + rank);
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * BLOCK, out, BLOCK, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == BLOCK, "write_at count %d", count);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    int peer = (rank + 1) % size;
    memset(in, 0, BLOCK);
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * BLOCK, in, BLOCK, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == BLOCK, "read_at count %d", count);
    CHECK_PATTERN(in, BLOCK, 100 + peer, "rank %d's block", peer);

    /* Short read at the end of the file. */
    MPI_Offset end = (MPI_Offset)size * BLOCK;
    CHECK_MPI(MPI_File_read_at(fh, end - 10, in, 100, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 10, "short read returned %d bytes, expected 10", count);
    CHECK_MPI(MPI_File_read_at(fh, end + 50, in, 100, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 0, "read past the end returned %d bytes", count);
    /* A read of ints that stops inside an int: MPI_Get_count is MPI_UNDEFINED,
     * MPI_Get_elements counts the whole ints, the byte count is exact. */
    int ints[8];
    CHECK_MPI(MPI_File_read_at(fh, end - 10, ints, 8, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == MPI_UNDEFINED, "count of 10 bytes as MPI_INT: %d", count);
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 10, "bytes of the short int read: %d", count);

    /* Individual pointers: each rank reads the whole file in pieces. */
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    for (int r = 0; r < size; r++) {
        MPI_Offset pos;
        CHECK_MPI(MPI_File_get_position(fh, &pos));
        CHECK(pos == (MPI_Offset)r * BLOCK, "position %lld before block %d", (long long)pos, r);
        memset(in, 0, BLOCK);
        CHECK_MPI(MPI_File_read(fh, in, BLOCK, MPI_BYTE, &st));
        CHECK_PATTERN(in, BLOCK, 100 + r, "block %d through the individual pointer", r);
    }
    MPI_Offset pos;
    CHECK_MPI(MPI_File_seek(fh, -BLOCK, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == end - BLOCK, "SEEK_END: %lld", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, 10, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == end - BLOCK + 10, "SEEK_CUR: %lld", (long long)pos);
    CHECK(error_class_of(MPI_File_seek(fh, -1, MPI_SEEK_SET)) == MPI_ERR_ARG, "seek to a negative position");
    MPI_Offset byte = -1;
    CHECK_MPI(MPI_File_get_byte_offset(fh, 123, &byte));
    CHECK(byte == 123, "byte offset %lld", (long long)byte);
    /* A read at the end moves the pointer by what was read. */
    CHECK_MPI(MPI_File_seek(fh, end - 4, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read(fh, in, 100, MPI_BYTE, &st));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 4 && pos == end, "read at the end: %d bytes, pointer %lld", count, (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);

    /* A derived memory type: every other int of 2*N. */
    enum { N = 64 };
    int sparse[2 * N], dense[N], back[2 * N];
    for (int i = 0; i < 2 * N; i++)
        sparse[i] = i % 2 ? -1 : rank * 10000 + i / 2;
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Offset region = end + (MPI_Offset)rank * N * sizeof(int);
    CHECK_MPI(MPI_File_write_at_all(fh, region, sparse, 1, every_other, &st));
    MPI_Get_elements(&st, MPI_INT, &count);
    CHECK(count == N, "elements written %d", count);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Offset peer_region = end + (MPI_Offset)peer * N * sizeof(int);
    CHECK_MPI(MPI_File_read_at_all(fh, peer_region, dense, N, MPI_INT, &st));
    for (int i = 0; i < N; i++)
        CHECK(dense[i] == peer * 10000 + i, "dense[%d] = %d", i, dense[i]);
    for (int i = 0; i < 2 * N; i++)
        back[i] = -7;
    CHECK_MPI(MPI_File_read_at(fh, peer_region, back, 1, every_other, &st));
    MPI_Get_count(&st, every_other, &count);
    CHECK(count == 1, "count of the vector type %d", count);
    for (int i = 0; i < 2 * N; i++)
        CHECK(back[i] == (i % 2 ? -7 : peer * 10000 + i / 2), "back[%d] = %d (holes untouched)", i, back[i]);
    MPI_Type_free(&every_other);

    /* Collective individual-pointer forms and split collectives. */
    MPI_Offset base = end + (MPI_Offset)size * N * sizeof(int);
    CHECK_MPI(MPI_File_seek(fh, base + (MPI_Offset)rank * 16, MPI_SEEK_SET));
    char msg[24];
    snprintf(msg, sizeof msg, "rank-%03d-record", rank);
    CHECK_MPI(MPI_File_write_all(fh, msg, 16, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == base + (MPI_Offset)rank * 16 + 16, "pointer after write_all %lld", (long long)pos);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    char got[16];
    CHECK_MPI(MPI_File_read_at_all_begin(fh, base + (MPI_Offset)peer * 16, got, 16, MPI_CHAR));
    CHECK(error_class_of(MPI_File_read_all_begin(fh, in, 1, MPI_BYTE)) == MPI_ERR_IO,
          "a second split collective was accepted");
    CHECK_MPI(MPI_File_read_at_all_end(fh, got, &st));
    CHECK(error_class_of(MPI_File_read_at_all_end(fh, got, &st)) == MPI_ERR_IO, "an _end without a _begin");
    MPI_Get_count(&st, MPI_CHAR, &count);
    char expect[24];
    snprintf(expect, sizeof expect, "rank-%03d-record", peer);
    CHECK(count == 16 && memcmp(got, expect, 16) == 0, "split read_at_all: %d bytes '%.16s'", count, got);
    CHECK_MPI(MPI_File_seek(fh, base + (MPI_Offset)peer * 16, MPI_SEEK_SET));
    memset(got, 0, sizeof got);
    CHECK_MPI(MPI_File_read_all_begin(fh, got, 16, MPI_CHAR));
    CHECK_MPI(MPI_File_read_all_end(fh, got, &st));
    CHECK(memcmp(got, expect, 16) == 0, "split read_all: '%.16s'", got);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset base2 = base + (MPI_Offset)size * 16;
    CHECK_MPI(MPI_File_write_at_all_begin(fh, base2 + (MPI_Offset)rank * 16, msg, 16, MPI_CHAR));
    CHECK_MPI(MPI_File_write_at_all_end(fh, msg, &st));
    MPI_Get_count(&st, MPI_CHAR, &count);
    CHECK(count == 16, "split write count %d", count);

    /* Nonblocking forms. */
    MPI_Offset base3 = base2 + (MPI_Offset)size * 16;
    MPI_Request req;
    fill_pattern(out, BLOCK, 300 + rank);
    CHECK_MPI(MPI_File_iwrite_at(fh, base3 + (MPI_Offset)rank * BLOCK, out, BLOCK, MPI_BYTE, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == BLOCK, "iwrite_at count %d", count);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    memset(in, 0, BLOCK);
    CHECK_MPI(MPI_File_iread_at(fh, base3 + (MPI_Offset)peer * BLOCK, in, BLOCK / 4, MPI_INT, &req));
    int flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Test(&req, &flag, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == BLOCK / 4, "iread_at count %d", count);
    CHECK_PATTERN(in, BLOCK, 300 + peer, "iread_at of rank %d's block", peer);
    CHECK_MPI(MPI_File_seek(fh, base3 + (MPI_Offset)peer * BLOCK, MPI_SEEK_SET));
    memset(in, 0, BLOCK);
    CHECK_MPI(MPI_File_iread(fh, in, BLOCK, MPI_BYTE, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_PATTERN(in, BLOCK, 300 + peer, "iread");
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == base3 + (MPI_Offset)(peer + 1) * BLOCK, "pointer after iread %lld", (long long)pos);
    memset(in, 0, BLOCK);
    CHECK_MPI(MPI_File_iread_at_all(fh, base3 + (MPI_Offset)peer * BLOCK, in, BLOCK, MPI_BYTE, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_PATTERN(in, BLOCK, 300 + peer, "iread_at_all");
    /* iread past the end: a complete request with count 0. */
    MPI_Offset fsize;
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    CHECK_MPI(MPI_File_iread_at(fh, fsize, in, 10, MPI_BYTE, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 0, "iread at the end: %d", count);
    MPI_Barrier(MPI_COMM_WORLD);
    /* iwrite_all then Waitall together with another request */
    MPI_Request reqs[2];
    CHECK_MPI(MPI_File_seek(fh, fsize + (MPI_Offset)rank * 8, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iwrite_all(fh, "ABCDEFGH", 8, MPI_CHAR, &reqs[0]));
    CHECK_MPI(MPI_File_iwrite_at_all(fh, fsize + (MPI_Offset)(size + rank) * 8, "abcdefgh", 8, MPI_CHAR, &reqs[1]));
    MPI_Status sts[2];
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    for (int i = 0; i < 2; i++) {
        MPI_Get_count(&sts[i], MPI_CHAR, &count);
        CHECK(count == 8, "waitall status %d count %d", i, count);
    }
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    char all[16];
    CHECK_MPI(MPI_File_read_at(fh, fsize + (MPI_Offset)peer * 8, all, 8, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_read_at(fh, fsize + (MPI_Offset)(size + peer) * 8, all + 8, 8, MPI_CHAR, &st));
    CHECK(memcmp(all, "ABCDEFGHabcdefgh", 16) == 0, "iwrite_all / iwrite_at_all data '%.16s'", all);

    /* Zero-count accesses set the status to count 0. */
    memset(&st, 0xff, sizeof st);
    CHECK_MPI(MPI_File_read(fh, in, 0, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0, "zero-count read: count %d", count);
    memset(&st, 0xff, sizeof st);
    CHECK_MPI(MPI_File_write_shared(fh, in, 0, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0, "zero-count write_shared: count %d", count);

    CHECK_MPI(MPI_File_close(&fh));
    free(out);
    free(in);
    io_remove_dir(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("io_access");
}
