/* MPI_Pack / MPI_Unpack / MPI_Pack_size (int and _c): exact packed bytes,
 * position advance over several calls, MPI_ERR_TRUNCATE when the buffer is
 * too small; MPI_Pack_external / Unpack_external "external32" with the
 * big-endian bytes checked literally; MPI_Get_address, MPI_Aint_add/diff. */
#include "../mpi/check.h"

#include <complex.h>
#include <wchar.h>

static void check_bytes(const char *what, const unsigned char *got, const unsigned char *expected, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(got[i] == expected[i], "%s: byte %d is %02x, expected %02x", what, i, got[i], expected[i]);
}

static void test_pack_unpack(void)
{
    /* A struct {char c; double d; int i[2];} packs to 17 bytes, no holes. */
    struct S { char c; double d; int i[2]; } s[2] = {{'a', 1.5, {7, 8}}, {'b', -2.0, {9, 10}}};
    MPI_Datatype st;
    CHECK_MPI(MPI_Type_create_struct(3, (const int[]){1, 1, 2},
                                     (const MPI_Aint[]){offsetof(struct S, c), offsetof(struct S, d),
                                                        offsetof(struct S, i)},
                                     (const MPI_Datatype[]){MPI_CHAR, MPI_DOUBLE, MPI_INT}, &st));
    CHECK_MPI(MPI_Type_commit(&st));
    int size = 0;
    CHECK_MPI(MPI_Pack_size(2, st, MPI_COMM_WORLD, &size));
    CHECK(size >= 34, "MPI_Pack_size of 2 structs: %d", size);
    MPI_Count csize = 0;
    CHECK_MPI(MPI_Pack_size_c(2, st, MPI_COMM_WORLD, &csize));
    CHECK(csize == size, "MPI_Pack_size_c %lld vs %d", (long long)csize, size);

    unsigned char buf[128];
    memset(buf, 0xee, sizeof buf);
    int position = 0;
    /* Several calls append: an int, then two structs, then a short. */
    int head = 0x01020304;
    short tail = 0x0506;
    CHECK_MPI(MPI_Pack(&head, 1, MPI_INT, buf, sizeof buf, &position, MPI_COMM_WORLD));
    CHECK(position == 4, "position after int: %d", position);
    CHECK_MPI(MPI_Pack(s, 2, st, buf, sizeof buf, &position, MPI_COMM_WORLD));
    CHECK(position == 4 + 34, "position after 2 structs: %d", position);
    CHECK_MPI(MPI_Pack(&tail, 1, MPI_SHORT, buf, sizeof buf, &position, MPI_COMM_WORLD));
    CHECK(position == 40, "position after short: %d", position);
    /* Axon's packed format is the native data, no header. */
    {
        unsigned char expect[40];
        int at = 0;
        memcpy(expect + at, &head, 4), at += 4;
        for (int k = 0; k < 2; k++) {
            memcpy(expect + at, &s[k].c, 1), at += 1;
            memcpy(expect + at, &s[k].d, 8), at += 8;
            memcpy(expect + at, s[k].i, 8), at += 8;
        }
        memcpy(expect + at, &tail, 2), at += 2;
        check_bytes("packed stream", buf, expect, 40);
    }
    /* Unpack in the same pieces. */
    struct S r[2];
    memset(r, 0, sizeof r);
    int rhead = 0;
    short rtail = 0;
    position = 0;
    CHECK_MPI(MPI_Unpack(buf, 40, &position, &rhead, 1, MPI_INT, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Unpack(buf, 40, &position, r, 2, st, MPI_COMM_WORLD));
    CHECK(position == 38, "position after unpacking structs: %d", position);
    CHECK_MPI(MPI_Unpack(buf, 40, &position, &rtail, 1, MPI_SHORT, MPI_COMM_WORLD));
    CHECK(position == 40, "position after unpacking all: %d", position);
    CHECK(rhead == head && rtail == tail, "unpacked head %x tail %x", rhead, rtail);
    for (int k = 0; k < 2; k++)
        CHECK(r[k].c == s[k].c && r[k].d == s[k].d && r[k].i[0] == s[k].i[0] && r[k].i[1] == s[k].i[1],
              "unpacked struct %d differs", k);

    /* Output buffer too small: MPI_ERR_TRUNCATE, position unchanged. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char scratch[64];
    position = 30;
    int rc = MPI_Pack(s, 1, st, scratch, 40, &position, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "pack past the end: class %d", error_class_of(rc));
    CHECK(position == 30, "position moved on a failed pack: %d", position);
    position = 30;
    rc = MPI_Unpack(buf, 40, &position, r, 1, st, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "unpack past the end: class %d", error_class_of(rc));
    /* Uncommitted type: MPI_ERR_TYPE. */
    MPI_Datatype loose;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &loose));
    position = 0;
    rc = MPI_Pack(&head, 1, loose, buf, 40, &position, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "pack with an uncommitted type: class %d", error_class_of(rc));
    MPI_Type_free(&loose);
    /* Negative count: MPI_ERR_COUNT. */
    position = 0;
    rc = MPI_Pack(&head, -1, MPI_INT, buf, 40, &position, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "pack with count -1: class %d", error_class_of(rc));
    rc = MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &size);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "pack_size with count -1: class %d", error_class_of(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* Large-count binding. */
    MPI_Count cpos = 0;
    unsigned char cbuf[64];
    CHECK_MPI(MPI_Pack_c(s, 2, st, cbuf, sizeof cbuf, &cpos, MPI_COMM_WORLD));
    CHECK(cpos == 34, "MPI_Pack_c position %lld", (long long)cpos);
    check_bytes("MPI_Pack_c", cbuf, buf + 4, 34);
    memset(r, 0, sizeof r);
    cpos = 0;
    CHECK_MPI(MPI_Unpack_c(cbuf, 34, &cpos, r, 2, st, MPI_COMM_WORLD));
    CHECK(cpos == 34 && r[1].d == -2.0 && r[1].i[1] == 10, "MPI_Unpack_c");
    MPI_Type_free(&st);

    /* A vector packs only its blocks. */
    double grid[12];
    for (int i = 0; i < 12; i++) grid[i] = i;
    MPI_Datatype col;
    CHECK_MPI(MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &col));
    CHECK_MPI(MPI_Type_commit(&col));
    double packed[4];
    position = 0;
    CHECK_MPI(MPI_Pack(grid + 1, 1, col, packed, sizeof packed, &position, MPI_COMM_WORLD));
    CHECK(position == 32 && packed[0] == 1 && packed[1] == 4 && packed[2] == 7 && packed[3] == 10,
          "column pack: %g %g %g %g", packed[0], packed[1], packed[2], packed[3]);
    MPI_Type_free(&col);
}

static void test_external32(void)
{
    unsigned char out[256];
    MPI_Aint position = 0, size = 0;

    int one = 1;
    CHECK_MPI(MPI_Pack_external_size("external32", 1, MPI_INT, &size));
    CHECK(size == 4, "external32 size of MPI_INT: %ld", (long)size);
    CHECK_MPI(MPI_Pack_external("external32", &one, 1, MPI_INT, out, sizeof out, &position));
    CHECK(position == 4, "external32 position after int: %ld", (long)position);
    check_bytes("external32 MPI_INT 1", out, (const unsigned char[]){0, 0, 0, 1}, 4);

    short sh[2] = {-2, 0x1234};
    double d = 1.0;
    float f = 1.5f;
    long long ll = 0x0102030405060708LL;
    unsigned char uc = 0xab;
    CHECK_MPI(MPI_Pack_external("external32", sh, 2, MPI_SHORT, out, sizeof out, &position));
    CHECK_MPI(MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, out, sizeof out, &position));
    CHECK_MPI(MPI_Pack_external("external32", &f, 1, MPI_FLOAT, out, sizeof out, &position));
    CHECK_MPI(MPI_Pack_external("external32", &ll, 1, MPI_LONG_LONG, out, sizeof out, &position));
    CHECK_MPI(MPI_Pack_external("external32", &uc, 1, MPI_UNSIGNED_CHAR, out, sizeof out, &position));
    const unsigned char expect[] = {0, 0, 0, 1,                                     /* int 1 */
                                    0xff, 0xfe, 0x12, 0x34,                         /* shorts */
                                    0x3f, 0xf0, 0, 0, 0, 0, 0, 0,                   /* double 1.0 */
                                    0x3f, 0xc0, 0, 0,                               /* float 1.5 */
                                    1, 2, 3, 4, 5, 6, 7, 8,                         /* long long */
                                    0xab};
    CHECK(position == (MPI_Aint)sizeof expect, "external32 position %ld, expected %zu", (long)position,
          sizeof expect);
    check_bytes("external32 stream", out, expect, (int)sizeof expect);

    /* Unpack the same stream back. */
    MPI_Aint in = 0;
    int r_one = 0;
    short r_sh[2] = {0, 0};
    double r_d = 0;
    float r_f = 0;
    long long r_ll = 0;
    unsigned char r_uc = 0;
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &r_one, 1, MPI_INT));
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, r_sh, 2, MPI_SHORT));
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &r_d, 1, MPI_DOUBLE));
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &r_f, 1, MPI_FLOAT));
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &r_ll, 1, MPI_LONG_LONG));
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &r_uc, 1, MPI_UNSIGNED_CHAR));
    CHECK(in == position, "external32 unpack position %ld", (long)in);
    CHECK(r_one == 1 && r_sh[0] == -2 && r_sh[1] == 0x1234 && r_d == 1.0 && r_f == 1.5f && r_ll == ll &&
              r_uc == 0xab,
          "external32 round trip");

    /* A derived type: vector of ints with holes, big-endian per element. */
    int v[6] = {1, -1, 0x10203040, -1, 256, -1};
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    position = 0;
    CHECK_MPI(MPI_Pack_external_size("external32", 1, vec, &size));
    CHECK(size == 12, "external32 size of the vector: %ld", (long)size);
    CHECK_MPI(MPI_Pack_external("external32", v, 1, vec, out, sizeof out, &position));
    check_bytes("external32 vector", out, (const unsigned char[]){0, 0, 0, 1, 0x10, 0x20, 0x30, 0x40, 0, 0, 1, 0},
                12);
    int back[6] = {0, 0, 0, 0, 0, 0};
    in = 0;
    CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, back, 1, vec));
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 0x10203040 && back[3] == 0 && back[4] == 256 && back[5] == 0,
          "external32 vector unpack");
    MPI_Type_free(&vec);

    /* MPI_LONG is 4 bytes in external32 (MPI-4.1 table 19.2), as in MPICH;
     * a pair type converts member by member, without padding. */
    {
        long l = -2;
        struct { double d; int i; } di = {1.0, 3}, rdi = {0, 0};
        position = 0;
        CHECK_MPI(MPI_Pack_external_size("external32", 1, MPI_LONG, &size));
        CHECK(size == 4, "external32 size of MPI_LONG: %ld", (long)size);
        CHECK_MPI(MPI_Pack_external("external32", &l, 1, MPI_LONG, out, sizeof out, &position));
        CHECK_MPI(MPI_Pack_external("external32", &di, 1, MPI_DOUBLE_INT, out, sizeof out, &position));
        CHECK(position == 16, "external32 long + double_int: %ld bytes", (long)position);
        check_bytes("external32 long, double_int", out,
                    (const unsigned char[]){0xff, 0xff, 0xff, 0xfe, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, 16);
        long rl = 0;
        in = 0;
        CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &rl, 1, MPI_LONG));
        CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &rdi, 1, MPI_DOUBLE_INT));
        CHECK(rl == -2 && rdi.d == 1.0 && rdi.i == 3, "external32 long/double_int round trip: %ld %g %d", rl, rdi.d,
              rdi.i);
    }

    /* long double (x87) is IEEE binary128 in external32; each half of a
     * complex is swapped on its own; wchar_t is 2 bytes. */
    {
        long double ld[2] = {1.0L, -2.5L}, rld[2] = {0, 0};
        double _Complex z = 1.0 + 2.0 * _Complex_I, rz = 0;
        wchar_t w = L'A', rw = 0;
        position = 0;
        CHECK_MPI(MPI_Pack_external("external32", ld, 2, MPI_LONG_DOUBLE, out, sizeof out, &position));
        CHECK_MPI(MPI_Pack_external("external32", &z, 1, MPI_C_DOUBLE_COMPLEX, out, sizeof out, &position));
        CHECK_MPI(MPI_Pack_external("external32", &w, 1, MPI_WCHAR, out, sizeof out, &position));
        CHECK(position == 32 + 16 + 2, "external32 long double/complex/wchar: %ld bytes", (long)position);
        const unsigned char e[50] = {0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0xc0, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0x00, 0, 0, 0, 0, 0, 0,
                                     0x00, 0x41};
        check_bytes("external32 long double/complex/wchar", out, e, 50);
        in = 0;
        CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, rld, 2, MPI_LONG_DOUBLE));
        CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &rz, 1, MPI_C_DOUBLE_COMPLEX));
        CHECK_MPI(MPI_Unpack_external("external32", out, position, &in, &rw, 1, MPI_WCHAR));
        CHECK(rld[0] == 1.0L && rld[1] == -2.5L && rz == z && rw == L'A', "external32 round trip of long double, "
              "complex, wchar");
    }

    /* Too small an output buffer. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    position = 0;
    unsigned char scratch[16];
    int rc = MPI_Pack_external("external32", v, 2, MPI_INT, scratch, 7, &position);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "external32 pack past the end: class %d", error_class_of(rc));
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);

    /* Large-count binding. */
    MPI_Count cpos = 0, csize = 0;
    CHECK_MPI(MPI_Pack_external_size_c("external32", 3, MPI_SHORT, &csize));
    CHECK(csize == 6, "external32 size_c of 3 shorts: %lld", (long long)csize);
    CHECK_MPI(MPI_Pack_external_c("external32", sh, 2, MPI_SHORT, out, sizeof out, &cpos));
    CHECK(cpos == 4, "external32 pack_c position %lld", (long long)cpos);
    check_bytes("external32 pack_c", out, (const unsigned char[]){0xff, 0xfe, 0x12, 0x34}, 4);
}

static void test_addresses(void)
{
    int a[10] = {0};
    MPI_Aint p0, p5;
    CHECK_MPI(MPI_Get_address(&a[0], &p0));
    CHECK_MPI(MPI_Get_address(&a[5], &p5));
    CHECK(MPI_Aint_diff(p5, p0) == 5 * (MPI_Aint)sizeof(int), "Aint_diff: %ld", (long)MPI_Aint_diff(p5, p0));
    CHECK(MPI_Aint_add(p0, 20) == p5, "Aint_add");
    CHECK(MPI_Aint_diff(p0, p5) == -20, "Aint_diff negative");

    /* A struct with absolute addresses used at MPI_BOTTOM. */
    int x = 11;
    double y = 2.5;
    MPI_Aint ax, ay;
    MPI_Get_address(&x, &ax);
    MPI_Get_address(&y, &ay);
    MPI_Datatype abs_type;
    CHECK_MPI(MPI_Type_create_struct(2, (const int[]){1, 1}, (const MPI_Aint[]){ax, ay},
                                     (const MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &abs_type));
    CHECK_MPI(MPI_Type_commit(&abs_type));
    /* Sent from MPI_BOTTOM to oneself, received at MPI_BOTTOM. */
    unsigned char buf[12];
    int self;
    MPI_Comm_rank(MPI_COMM_WORLD, &self);
    CHECK_MPI(MPI_Sendrecv(MPI_BOTTOM, 1, abs_type, self, 5, buf, 12, MPI_BYTE, self, 5, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    int rx;
    double ry;
    memcpy(&rx, buf, 4);
    memcpy(&ry, buf + 4, 8);
    CHECK(rx == 11 && ry == 2.5, "send from MPI_BOTTOM: %d %g", rx, ry);
    x = 0;
    y = 0;
    CHECK_MPI(MPI_Sendrecv(buf, 12, MPI_BYTE, self, 6, MPI_BOTTOM, 1, abs_type, self, 6, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    CHECK(x == 11 && y == 2.5, "receive at MPI_BOTTOM: %d %g", x, y);
    MPI_Type_free(&abs_type);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_pack_unpack();
    test_external32();
    test_addresses();
    MPI_Finalize();
    return report("datatype_pack");
}
