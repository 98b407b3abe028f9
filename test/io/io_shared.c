/* MPI-IO shared file pointer, ordered access, sequential mode and atomic mode:
 * - write_shared: every record lands whole exactly once, the shared pointer
 *   ends after all of them; read_shared after seek_shared reads each once;
 * - write_ordered with rank r writing r+1 ints of value r gives exactly
 *   0 1 1 2 2 2 ...; read_ordered gives each rank its own; the split forms;
 * - iwrite_shared / iread_shared;
 * - MPI_MODE_SEQUENTIAL: explicit offsets and seek fail with
 *   MPI_ERR_UNSUPPORTED_OPERATION, MPI_DISPLACEMENT_CURRENT works;
 * - atomic mode: overlapping non-contiguous writes of all ranks leave the
 *   region as one rank's data, and a concurrent reader never sees a mix. */
#include "io_test.h"

#define R 32 /* bytes per record */
#define K 5  /* records per rank */

static void make_record(char *rec, int rank, int k)
{
    memset(rec, 'a' + rank % 26, R);
    snprintf(rec, R, "r%03d-k%02d", rank, k);
    rec[R - 1] = '\n';
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
    MPI_Offset pos;

    /* ---- write_shared / read_shared ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("shared.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    char rec[R];
    for (int k = 0; k < K; k++) {
        make_record(rec, rank, k);
        CHECK_MPI(MPI_File_write_shared(fh, rec, R, MPI_CHAR, &st));
        MPI_Get_count(&st, MPI_CHAR, &count);
        CHECK(count == R, "write_shared count %d", count);
    }
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == (MPI_Offset)size * K * R, "shared pointer %lld after all records", (long long)pos);
    int nrec = size * K;
    char *file = xmalloc((size_t)nrec * R);
    CHECK_MPI(MPI_File_read_at(fh, 0, file, nrec * R, MPI_CHAR, &st));
    MPI_Get_count(&st, MPI_CHAR, &count);
    CHECK(count == nrec * R, "file has %d bytes", count);
    int *seen = calloc((size_t)nrec, sizeof(int));
    for (int i = 0; i < nrec; i++) {
        int r = -1, k = -1;
        if (sscanf(file + (size_t)i * R, "r%03d-k%02d", &r, &k) == 2 && r >= 0 && r < size && k >= 0 && k < K) {
            char expect[R];
            make_record(expect, r, k);
            CHECK(memcmp(expect, file + (size_t)i * R, R) == 0, "record %d is torn", i);
            seen[r * K + k]++;
        } else {
            CHECK(0, "record %d unreadable", i);
        }
    }
    for (int i = 0; i < nrec; i++)
        CHECK(seen[i] == 1, "record r%d-k%d written %d times", i / K, i % K, seen[i]);
    /* Records of one rank come in its order. */
    int last = -1;
    for (int i = 0; i < nrec; i++) {
        int r = -1, k = -1;
        sscanf(file + (size_t)i * R, "r%03d-k%02d", &r, &k);
        if (r == rank) {
            CHECK(k == last + 1, "own records out of order: k%d after k%d", k, last);
            last = k;
        }
    }
    /* read_shared: together the ranks read every record once. */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 0, "seek_shared: %lld", (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody moves the pointer before all have looked */
    memset(seen, 0, (size_t)nrec * sizeof(int));
    int *mine_seen = calloc((size_t)nrec, sizeof(int));
    for (int k = 0; k < K; k++) {
        CHECK_MPI(MPI_File_read_shared(fh, rec, R, MPI_CHAR, &st));
        MPI_Get_count(&st, MPI_CHAR, &count);
        int r = -1, kk = -1;
        if (count == R && sscanf(rec, "r%03d-k%02d", &r, &kk) == 2 && r >= 0 && r < size && kk >= 0 && kk < K)
            mine_seen[r * K + kk]++;
        else
            CHECK(0, "read_shared got %d bytes", count);
    }
    MPI_Allreduce(mine_seen, seen, nrec, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < nrec; i++)
        CHECK(seen[i] == 1, "record %d read %d times by read_shared", i, seen[i]);
    /* At the end: nothing left. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_read_shared(fh, rec, R, MPI_CHAR, &st));
    MPI_Get_count(&st, MPI_CHAR, &count);
    CHECK(count == 0, "read_shared at the end: %d bytes", count);
    MPI_Barrier(MPI_COMM_WORLD);
    free(file);
    free(seen);
    free(mine_seen);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- ordered ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("ordered.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int vals[64], back[64];
    for (int i = 0; i < rank + 1; i++)
        vals[i] = rank;
    CHECK_MPI(MPI_File_write_ordered(fh, vals, rank + 1, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == rank + 1, "write_ordered count %d", count);
    int total = size * (size + 1) / 2;
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == total, "shared pointer after write_ordered: %lld, expected %d", (long long)pos, total);
    MPI_Barrier(MPI_COMM_WORLD);
    /* A second round with the split form: values 100 + rank. */
    for (int i = 0; i < rank + 1; i++)
        vals[i] = 100 + rank;
    CHECK_MPI(MPI_File_write_ordered_begin(fh, vals, rank + 1, MPI_INT));
    CHECK_MPI(MPI_File_write_ordered_end(fh, vals, &st));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    int *all = xmalloc(2 * total * sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, 2 * total, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 2 * total, "ordered file: %d ints", count);
    for (int round = 0, i = 0; round < 2; round++)
        for (int r = 0; r < size; r++)
            for (int j = 0; j <= r; j++, i++)
                CHECK(all[i] == r + 100 * round, "ordered int %d: %d, expected %d", i, all[i], r + 100 * round);
    free(all);
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, &st));
    for (int i = 0; i < rank + 1; i++)
        CHECK(back[i] == rank, "read_ordered int %d: %d", i, back[i]);
    CHECK_MPI(MPI_File_read_ordered_begin(fh, back, rank + 1, MPI_INT));
    CHECK_MPI(MPI_File_read_ordered_end(fh, back, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == rank + 1, "read_ordered_end count %d", count);
    for (int i = 0; i < rank + 1; i++)
        CHECK(back[i] == 100 + rank, "split read_ordered int %d: %d", i, back[i]);
    /* Nonblocking shared-pointer forms: one int each after the data. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    MPI_Request req;
    int one = 1000 + rank;
    CHECK_MPI(MPI_File_iwrite_shared(fh, &one, 1, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 1, "iwrite_shared count %d", count);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_File_seek_shared(fh, 2 * total, MPI_SEEK_SET));
    int got = -1, sum = 0, expect_sum = 0;
    CHECK_MPI(MPI_File_iread_shared(fh, &got, 1, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Allreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        expect_sum += 1000 + r;
    CHECK(sum == expect_sum, "iread_shared values sum to %d, expected %d", sum, expect_sum);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- sequential mode ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("seq.dat"),
                            MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
    CHECK(error_class_of(MPI_File_write_at(fh, 0, "x", 1, MPI_CHAR, &st)) == MPI_ERR_UNSUPPORTED_OPERATION,
          "write_at in sequential mode");
    CHECK(error_class_of(MPI_File_write(fh, "x", 1, MPI_CHAR, &st)) == MPI_ERR_UNSUPPORTED_OPERATION,
          "write with the individual pointer in sequential mode");
    CHECK(error_class_of(MPI_File_seek(fh, 0, MPI_SEEK_SET)) == MPI_ERR_UNSUPPORTED_OPERATION,
          "seek in sequential mode");
    CHECK_MPI(MPI_File_write_ordered(fh, "hdr", rank == 0 ? 3 : 0, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset vdisp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &vdisp, &et, &ft, rep));
    CHECK(vdisp == 3, "MPI_DISPLACEMENT_CURRENT gave displacement %lld", (long long)vdisp);
    CHECK_MPI(MPI_File_write_ordered(fh, &rank, 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("seq.dat"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    char hdr[3];
    int ranks[64];
    CHECK_MPI(MPI_File_read_at(fh, 0, hdr, 3, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_read_at(fh, 3, ranks, size, MPI_INT, &st));
    CHECK(memcmp(hdr, "hdr", 3) == 0, "sequential header");
    for (int r = 0; r < size; r++)
        CHECK(ranks[r] == r, "sequential int %d: %d", r, ranks[r]);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- atomic mode ---- */
    enum { BLK = 16, NB = 64, INTS = BLK * NB };
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("atomic.dat"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                            &fh));
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    /* Every other block of BLK ints: one write is NB separate pieces. */
    MPI_Datatype vec;
    MPI_Type_vector(NB, BLK, 2 * BLK, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, vec, "native", MPI_INFO_NULL));
    int *data = xmalloc(INTS * sizeof(int)), *check = xmalloc(INTS * sizeof(int));
    int mixed = 0;
    for (int iter = 0; iter < 20; iter++) {
        if (rank == 0 && size > 1 && iter % 2) {
            CHECK_MPI(MPI_File_read_at(fh, 0, check, INTS, MPI_INT, &st));
            MPI_Get_count(&st, MPI_INT, &count);
            for (int i = 1; i < count; i++)
                if (check[i] != check[0])
                    mixed = 1;
        } else {
            for (int i = 0; i < INTS; i++)
                data[i] = rank + 1;
            CHECK_MPI(MPI_File_write_at(fh, 0, data, INTS, MPI_INT, &st));
        }
    }
    CHECK(!mixed, "a concurrent reader saw a mix of writes in atomic mode");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_read_at(fh, 0, check, INTS, MPI_INT, &st));
    for (int i = 1; i < INTS; i++)
        if (check[i] != check[0]) {
            CHECK(0, "atomic writes mixed: int %d is %d, int 0 is %d", i, check[i], check[0]);
            break;
        }
    CHECK(check[0] >= 1 && check[0] <= size, "atomic region holds %d", check[0]);
    free(data);
    free(check);
    MPI_Type_free(&vec);
    CHECK_MPI(MPI_File_close(&fh));

    io_remove_dir(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("io_shared");
}
