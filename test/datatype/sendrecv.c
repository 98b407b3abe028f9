/* Derived and predefined datatypes in point-to-point communication, between
 * partner ranks (0<->1, 2<->3, a rank without a partner talks to itself):
 * vector -> contiguous, struct with holes, a receive posted for more items
 * than arrive, MPI_Get_count / MPI_Get_elements on whole and partial items,
 * a large (rendezvous-sized) vector, MPI_Type_free while a send is pending,
 * an uncommitted type -> MPI_ERR_TYPE, and every predefined C type (pairs and
 * fixed-size ints included) sent and received byte for byte. */
#include "../mpi/check.h"

static int rank, size, partner;

/* Sends from `sbuf` and receives into `rbuf` with the partner. */
static void exchange(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                     int tag, MPI_Status *status)
{
    CHECK_MPI(MPI_Sendrecv(sbuf, scount, stype, partner, tag, rbuf, rcount, rtype, partner, tag, MPI_COMM_WORLD,
                           status));
}

static void test_vector_to_contiguous(void)
{
    /* A 6x4 matrix of doubles; column 1 is a vector(6, 1, 4). */
    double m[24], col[6];
    for (int i = 0; i < 24; i++) m[i] = rank * 1000 + i;
    MPI_Datatype column;
    CHECK_MPI(MPI_Type_vector(6, 1, 4, MPI_DOUBLE, &column));
    CHECK_MPI(MPI_Type_commit(&column));
    MPI_Status st;
    exchange(m + 1, 1, column, col, 6, MPI_DOUBLE, 1, &st);
    for (int i = 0; i < 6; i++)
        CHECK(col[i] == partner * 1000 + 1 + 4 * i, "column element %d: %g", i, col[i]);
    int count = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == 6, "Get_count of the column as doubles: %d", count);

    /* And back: contiguous -> vector into column 2, other elements untouched. */
    double in[24];
    for (int i = 0; i < 24; i++) in[i] = -1;
    for (int i = 0; i < 6; i++) col[i] = rank * 100 + i;
    exchange(col, 6, MPI_DOUBLE, in + 2, 1, column, 2, &st);
    for (int i = 0; i < 24; i++) {
        double want = (i % 4 == 2) ? partner * 100 + i / 4 : -1;
        CHECK(in[i] == want, "vector receive element %d: %g, expected %g", i, in[i], want);
    }
    MPI_Get_count(&st, column, &count);
    CHECK(count == 1, "Get_count as the column type: %d", count);
    MPI_Type_free(&column);
}

struct rec {
    int id;
    double value;
    char tag;
};

static void test_struct_with_holes(void)
{
    MPI_Datatype rt;
    CHECK_MPI(MPI_Type_create_struct(3, (const int[]){1, 1, 1},
                                     (const MPI_Aint[]){offsetof(struct rec, id), offsetof(struct rec, value),
                                                        offsetof(struct rec, tag)},
                                     (const MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_CHAR}, &rt));
    CHECK_MPI(MPI_Type_commit(&rt));
    MPI_Aint lb, extent;
    MPI_Type_get_extent(rt, &lb, &extent);
    CHECK(lb == 0 && extent == (MPI_Aint)sizeof(struct rec), "struct extent %ld", (long)extent);

    struct rec out[4], in[6];
    memset(out, 0x55, sizeof out);
    for (int i = 0; i < 4; i++) {
        out[i].id = rank * 10 + i;
        out[i].value = rank + i / 4.0;
        out[i].tag = (char)('a' + i);
    }
    memset(in, 0x77, sizeof in);
    MPI_Status st;
    /* Posted for 6, 4 arrive. */
    exchange(out, 4, rt, in, 6, rt, 3, &st);
    for (int i = 0; i < 4; i++)
        CHECK(in[i].id == partner * 10 + i && in[i].value == partner + i / 4.0 && in[i].tag == 'a' + i,
              "struct %d: %d %g %c", i, in[i].id, in[i].value, in[i].tag);
    /* Holes (the padding after id and after tag) are not written. */
    const unsigned char *raw = (const unsigned char *)in;
    for (size_t b = sizeof(int); b < offsetof(struct rec, value); b++)
        CHECK(raw[b] == 0x77, "padding byte %zu written: %02x", b, raw[b]);
    for (size_t b = offsetof(struct rec, tag) + 1; b < sizeof(struct rec); b++)
        CHECK(raw[b] == 0x77, "tail padding byte %zu written: %02x", b, raw[b]);
    /* Items past the 4 that arrived stay untouched. */
    raw = (const unsigned char *)&in[4];
    for (size_t b = 0; b < 2 * sizeof(struct rec); b++)
        CHECK(raw[b] == 0x77, "item past the message written at byte %zu", b);
    int count = -1, elements = -1;
    MPI_Get_count(&st, rt, &count);
    MPI_Get_elements(&st, rt, &elements);
    CHECK(count == 4, "Get_count: %d", count);
    CHECK(elements == 12, "Get_elements: %d", elements);
    MPI_Count ccount = -1, celements = -1, xelements = -1;
    MPI_Get_count_c(&st, rt, &ccount);
    MPI_Get_elements_c(&st, rt, &celements);
    MPI_Get_elements_x(&st, rt, &xelements);
    CHECK(ccount == 4 && celements == 12 && xelements == 12, "_c/_x counts %lld %lld %lld", (long long)ccount,
          (long long)celements, (long long)xelements);

    /* A partial item: 13 + 4 bytes = one whole item (13 bytes) and the int of
     * the next: Get_count is MPI_UNDEFINED, Get_elements 4. */
    unsigned char bytes[32];
    int position = 0;
    MPI_Pack(out, 2, rt, bytes, sizeof bytes, &position, MPI_COMM_WORLD);
    CHECK(position == 26, "packed 2 structs: %d bytes", position);
    memset(in, 0x77, sizeof in);
    exchange(bytes, 17, MPI_BYTE, in, 6, rt, 4, &st);
    MPI_Get_count(&st, rt, &count);
    MPI_Get_elements(&st, rt, &elements);
    CHECK(count == MPI_UNDEFINED, "Get_count on 1 item + 4 bytes: %d", count);
    CHECK(elements == 4, "Get_elements on 1 item + 4 bytes: %d", elements);
    CHECK(in[0].id == partner * 10 && in[1].id == partner * 10 + 1, "partial item: ids %d %d", in[0].id,
          in[1].id);
    raw = (const unsigned char *)&in[1].value;
    for (size_t b = 0; b < sizeof(double); b++)
        CHECK(raw[b] == 0x77, "partial item: value byte %zu written", b);
    /* 13 + 6 bytes: the message ends inside the double: MPI_UNDEFINED, as for
     * a basic type (6 bytes as MPI_INT). MPICH returns the whole elements
     * (4) here for derived types but MPI_UNDEFINED for basic ones; Axon
     * treats both alike. */
    exchange(bytes, 19, MPI_BYTE, in, 6, rt, 5, &st);
    MPI_Get_elements(&st, rt, &elements);
    CHECK(elements == MPI_UNDEFINED, "Get_elements ending inside a double: %d", elements);
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 19, "Get_count in bytes: %d", count);
    MPI_Type_free(&rt);
}

/* A large message of a struct type with holes (rendezvous or fragments),
 * received with room for more items than arrive, and a message whose length
 * ends inside an item. */
static void test_large_struct(void)
{
    MPI_Datatype rt;
    CHECK_MPI(MPI_Type_create_struct(3, (const int[]){1, 1, 1},
                                     (const MPI_Aint[]){offsetof(struct rec, id), offsetof(struct rec, value),
                                                        offsetof(struct rec, tag)},
                                     (const MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_CHAR}, &rt));
    CHECK_MPI(MPI_Type_commit(&rt));
    const int n = 20000, room = 25000;
    struct rec *out = xmalloc(sizeof(struct rec) * n), *in = xmalloc(sizeof(struct rec) * room);
    for (int i = 0; i < n; i++) {
        out[i].id = rank * 100000 + i;
        out[i].value = i * 0.25;
        out[i].tag = (char)(i % 127);
    }
    memset(in, 0x33, sizeof(struct rec) * room);
    MPI_Status st;
    exchange(out, n, rt, in, room, rt, 40, &st);
    int count = -1, bad = 0;
    MPI_Get_count(&st, rt, &count);
    CHECK(count == n, "large struct Get_count: %d", count);
    for (int i = 0; i < n; i++)
        if ((in[i].id != partner * 100000 + i || in[i].value != i * 0.25 || in[i].tag != (char)(i % 127)) &&
            bad++ < 5)
            CHECK(0, "large struct item %d: %d %g %d", i, in[i].id, in[i].value, in[i].tag);
    const unsigned char *raw = (const unsigned char *)&in[n];
    for (size_t b = 0; b < sizeof(struct rec) * (size_t)(room - n); b++)
        if (raw[b] != 0x33 && bad++ < 5) CHECK(0, "large struct: byte %zu past the message written", b);

    /* 100000 bytes of packed records: 7692 whole items (13 bytes each) and 4
     * bytes (the id) of the next. */
    const int bytes = 100000;
    unsigned char *packed = xmalloc((size_t)n * 13);
    int position = 0;
    CHECK_MPI(MPI_Pack(out, n, rt, packed, n * 13, &position, MPI_COMM_WORLD));
    memset(in, 0x33, sizeof(struct rec) * room);
    exchange(packed, bytes, MPI_BYTE, in, room, rt, 41, &st);
    int elements = -1;
    MPI_Get_count(&st, rt, &count);
    MPI_Get_elements(&st, rt, &elements);
    CHECK(count == MPI_UNDEFINED, "large partial: Get_count %d", count);
    CHECK(elements == 7692 * 3 + 1, "large partial: Get_elements %d", elements);
    CHECK(in[7691].id == partner * 100000 + 7691 && in[7691].tag == (char)(7691 % 127) &&
              in[7692].id == partner * 100000 + 7692,
          "large partial: last items %d %d", in[7691].id, in[7692].id);
    raw = (const unsigned char *)&in[7692].value;
    CHECK(raw[0] == 0x33 && raw[7] == 0x33, "large partial: the value after the last id was written");
    free(packed);
    free(out);
    free(in);
    MPI_Type_free(&rt);
}

static void test_large_vector(void)
{
    /* 200000 doubles at stride 2: 1.6 MB of data, far beyond the eager limit. */
    const int n = 200000;
    double *sparse = xmalloc(sizeof(double) * 2 * n), *dense = xmalloc(sizeof(double) * n);
    for (int i = 0; i < 2 * n; i++) sparse[i] = rank * 1e7 + i;
    MPI_Datatype vt;
    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vt));
    CHECK_MPI(MPI_Type_commit(&vt));
    MPI_Request req;
    CHECK_MPI(MPI_Isend(sparse, 1, vt, partner, 7, MPI_COMM_WORLD, &req));
    /* Freeing the type while the send is pending is allowed. */
    CHECK_MPI(MPI_Type_free(&vt));
    CHECK_MPI(MPI_Recv(dense, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (dense[i] != partner * 1e7 + 2 * i && bad++ < 5) CHECK(0, "large vector element %d: %g", i, dense[i]);

    /* Dense -> vector, receive posted first, type freed while pending. */
    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vt));
    CHECK_MPI(MPI_Type_commit(&vt));
    for (int i = 0; i < 2 * n; i++) sparse[i] = -1;
    for (int i = 0; i < n; i++) dense[i] = rank + i * 0.5;
    CHECK_MPI(MPI_Irecv(sparse, 1, vt, partner, 8, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Type_free(&vt));
    CHECK_MPI(MPI_Send(dense, n, MPI_DOUBLE, partner, 8, MPI_COMM_WORLD));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&req, &st));
    bad = 0;
    for (int i = 0; i < 2 * n; i++) {
        double want = (i % 2 == 0) ? partner + (i / 2) * 0.5 : -1;
        if (sparse[i] != want && bad++ < 5) CHECK(0, "large vector receive element %d: %g", i, sparse[i]);
    }
    int count = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == n, "large vector Get_count: %d", count);
    free(sparse);
    free(dense);
}

static void test_errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[8] = {0};
    MPI_Datatype loose;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &loose));
    int rc = MPI_Send(buf, 1, loose, partner, 9, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "send with an uncommitted type: class %d", error_class_of(rc));
    MPI_Request req;
    rc = MPI_Irecv(buf, 1, loose, partner, 9, MPI_COMM_WORLD, &req);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "irecv with an uncommitted type: class %d", error_class_of(rc));
    MPI_Type_free(&loose);
    rc = MPI_Send(buf, 1, MPI_DATATYPE_NULL, partner, 9, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "send with MPI_DATATYPE_NULL: class %d", error_class_of(rc));
    rc = MPI_Send(buf, -1, MPI_INT, partner, 9, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "send with count -1: class %d", error_class_of(rc));

    /* Truncation with a derived type: 3 pairs sent, room for 2. */
    MPI_Datatype two;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &two));
    CHECK_MPI(MPI_Type_commit(&two));
    int sbuf[6] = {1, 2, 3, 4, 5, 6};
    MPI_Status st;
    rc = MPI_Sendrecv(sbuf, 3, two, partner, 10, buf, 2, two, partner, 10, MPI_COMM_WORLD, &st);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE || (error_class_of(rc) == MPI_ERR_IN_STATUS &&
                                                     error_class_of(st.MPI_ERROR) == MPI_ERR_TRUNCATE),
          "truncated receive: class %d", error_class_of(rc));
    MPI_Type_free(&two);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_predefined(void)
{
    static const MPI_Datatype types[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
        MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
        MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX,
        MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_FLOAT_INT,
        MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_PACKED};
    const int ntypes = (int)(sizeof types / sizeof types[0]);
    for (int k = 0; k < ntypes; k++) {
        MPI_Aint lb, extent;
        int tsize;
        char name[MPI_MAX_OBJECT_NAME];
        int len;
        MPI_Type_get_extent(types[k], &lb, &extent);
        MPI_Type_size(types[k], &tsize);
        MPI_Type_get_name(types[k], name, &len);
        const int count = 5;
        unsigned char *s = xmalloc((size_t)extent * count), *r = xmalloc((size_t)extent * count);
        fill_pattern(s, (size_t)extent * count, (unsigned)(k + 1));
        memset(r, 0, (size_t)extent * count);
        MPI_Status st;
        exchange(s, count, types[k], r, count, types[k], 20 + k, &st);
        int got = -1;
        MPI_Get_count(&st, types[k], &got);
        CHECK(got == count, "%s: Get_count %d", name, got);
        /* Compare the data (not the padding) through MPI_Pack of both. */
        unsigned char *ps = xmalloc((size_t)tsize * count), *pr = xmalloc((size_t)tsize * count);
        int p1 = 0, p2 = 0;
        /* What the partner sent is the pattern with its seed: same k. */
        CHECK_MPI(MPI_Pack(s, count, types[k], ps, tsize * count, &p1, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Pack(r, count, types[k], pr, tsize * count, &p2, MPI_COMM_WORLD));
        CHECK(p1 == tsize * count && p2 == p1 && memcmp(ps, pr, (size_t)p1) == 0, "%s: data differs", name);
        free(ps);
        free(pr);
        free(s);
        free(r);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    partner = pair_partner(rank, size);
    test_vector_to_contiguous();
    test_struct_with_holes();
    test_large_vector();
    test_large_struct();
    test_errors();
    test_predefined();
    MPI_Finalize();
    return report("datatype_sendrecv");
}
