/* Datatype pack/unpack and local reductions on GPU buffers (docs/cuda.md,
 * "GPU kernels"): MPI_Pack / MPI_Unpack / MPI_Reduce_local with device
 * buffers must give exactly the bytes the same calls give on host copies
 * (holes untouched), and the MPI_T counters must show where the work ran.
 *
 *   kernels gpu      the GPU kernels must do it (real driver, or the fake,
 *                    which runs the kernels' semantics on the host; skips,
 *                    exit 77, without a driver, a GPU or kernels built in)
 *   kernels staged   every device operation goes through host copies (a
 *                    build without kernels)
 *   kernels gpu-off  AXON_ACCEL_KERNELS=0 (staged)
 *   kernels noload   the fake driver refuses to load the module
 *                    (FAKE_CUDA_KERNELS=0: a GPU the fatbin cannot serve): staged
 * With the fake driver the launches it saw must match too.
 *
 * Vector, indexed, struct, resized, subarray and nested types, count 1 and
 * more, up to a few MiB; every predefined op x (integer, float, double,
 * complex, bool, byte, value-index pair) type, each result compared byte for
 * byte with MPI_Reduce_local on host copies (error classes too); derived
 * reduction types with holes; misaligned, mixed host/device and user-op
 * calls (always staged). */
#include <math.h>
#include <mpi.h>
#include <stdint.h>

#include "../mpi/check.h"
#include "device.h"

static int gpu_mode;                   /* kernels expected to run */
static unsigned long long want_packs;  /* expected counter increments */
static unsigned long long want_reductions;
static unsigned long long want_staged;
static unsigned long long want_kernel_packs; /* pack/unpack kernel launches (the fake counts them) */

/* ---- MPI_T counters ------------------------------------------------------- */
static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_packs, h_reductions, h_staged;

static void pvar_open(const char *name, MPI_T_pvar_handle *h)
{
    int index = -1, n = 0;
    CHECK_MPI(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, h, &n));
}

static unsigned long long pvar(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(session, h, &v));
    return v;
}

/* ---- buffers ----------------------------------------------------------------- */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void *dev_copy_of(const void *h, size_t n)
{
    void *d = dev_malloc(n);
    dev_put(d, h, n);
    return d;
}

/* Floats compare bit for bit, except that any NaN matches any NaN: the bits
 * of a NaN made by an invalid operation (inf * 0) differ between CPUs and
 * GPUs (x86: 0xffc00000, NVIDIA: 0x7fffffff) and MPI does not specify them. */
static int float_bytes;  /* 4 or 8 while comparing float/double data, else 0 */
static int both_nan(const unsigned char *g, const unsigned char *w)
{
    if (float_bytes == 4) {
        float x, y;
        memcpy(&x, g, 4);
        memcpy(&y, w, 4);
        return isnan(x) && isnan(y);
    }
    double x, y;
    memcpy(&x, g, 8);
    memcpy(&y, w, 8);
    return isnan(x) && isnan(y);
}

static void check_bytes(const void *got, const void *want, size_t n, const char *what)
{
    if (float_bytes) {
        const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
        for (size_t i = 0; i + (size_t)float_bytes <= n; i += (size_t)float_bytes)
            if (memcmp(g + i, w + i, (size_t)float_bytes) != 0 && !both_nan(g + i, w + i)) {
                CHECK(0, "%s: element at byte %zu of %zu differs", what, i, n);
                return;
            }
        return;
    }
    const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i]) {
            CHECK(0, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, g[i], w[i]);
            return;
        }
}

/* ---- pack / unpack -------------------------------------------------------------- */

/* MPI_Pack and MPI_Unpack of `count` items of `t`: device user buffer and
 * device packed buffer (the GPU's job), and the two mixed placements
 * (staged), against the host calls. */
static void pack_case(const char *name, MPI_Datatype t, int count)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &textent);
    /* The buffer starts at the origin (as a user's array would: a device
     * pointer before its allocation would not be device memory). */
    CHECK(tlb >= 0, "%s: true lb %ld", name, (long)tlb);
    size_t span = (size_t)(tlb + (count - 1) * extent + textent);
    tlb = 0;
    int psize = 0;
    CHECK_MPI(MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize));
    char what[160];
    unsigned char *hu = (unsigned char *)xmalloc(span), *hp = (unsigned char *)xmalloc((size_t)psize);
    unsigned char *got = (unsigned char *)xmalloc(span > (size_t)psize ? span : (size_t)psize);
    fill_pattern(hu, span, 11);
    unsigned char *du = (unsigned char *)dev_copy_of(hu, span);
    memset(got, 0xee, (size_t)psize);
    unsigned char *dp = (unsigned char *)dev_copy_of(got, (size_t)psize);

    int pos = 0;
    CHECK_MPI(MPI_Pack(hu - tlb, count, t, hp, psize, &pos, MPI_COMM_WORLD));
    CHECK(pos == psize, "%s: host pack position %d", name, pos);
    pos = 0;
    CHECK_MPI(MPI_Pack(du - tlb, count, t, dp, psize, &pos, MPI_COMM_WORLD));
    CHECK(pos == psize, "%s: device pack position %d of %d", name, pos, psize);
    dev_get(got, dp, (size_t)psize);
    snprintf(what, sizeof what, "%s x%d: device pack", name, count);
    check_bytes(got, hp, (size_t)psize, what);

    /* Device user -> host packed (staged). */
    memset(got, 0xee, (size_t)psize);
    pos = 0;
    CHECK_MPI(MPI_Pack(du - tlb, count, t, got, psize, &pos, MPI_COMM_WORLD));
    snprintf(what, sizeof what, "%s x%d: device -> host pack", name, count);
    check_bytes(got, hp, (size_t)psize, what);

    /* Unpack into a device buffer holding other bytes: the holes keep them. */
    unsigned char *hu2 = (unsigned char *)xmalloc(span);
    fill_pattern(hu2, span, 12);
    unsigned char *du2 = (unsigned char *)dev_copy_of(hu2, span);
    unsigned char *du3 = (unsigned char *)dev_copy_of(hu2, span);
    pos = 0;
    CHECK_MPI(MPI_Unpack(hp, psize, &pos, hu2 - tlb, count, t, MPI_COMM_WORLD));
    pos = 0;
    CHECK_MPI(MPI_Unpack(dp, psize, &pos, du2 - tlb, count, t, MPI_COMM_WORLD));
    CHECK(pos == psize, "%s: device unpack position %d of %d", name, pos, psize);
    dev_get(got, du2, span);
    snprintf(what, sizeof what, "%s x%d: device unpack", name, count);
    check_bytes(got, hu2, span, what);
    /* Host packed -> device user (staged). */
    pos = 0;
    CHECK_MPI(MPI_Unpack(hp, psize, &pos, du3 - tlb, count, t, MPI_COMM_WORLD));
    dev_get(got, du3, span);
    snprintf(what, sizeof what, "%s x%d: host -> device unpack", name, count);
    check_bytes(got, hu2, span, what);

    /* Contiguous data is one device-to-device copy, kernels or not. */
    int size = 0;
    MPI_Type_size(t, &size);
    int contiguous = lb == 0 && size == extent && textent == extent;
    if (gpu_mode && !contiguous)
        want_kernel_packs += 2;
    if (gpu_mode || contiguous) {
        want_packs += 2;
        want_staged += 2;
    } else {
        want_staged += 4;
    }
    dev_free(du);
    dev_free(du2);
    dev_free(du3);
    dev_free(dp);
    free(hu);
    free(hu2);
    free(hp);
    free(got);
}

static void pack_tests(void)
{
    MPI_Datatype t[12];
    const char *names[12];
    int n = 0;
    /* Many small blocks. */
    MPI_Type_vector(1000, 3, 5, MPI_INT, &t[n]);
    names[n++] = "vector(1000,3,5,int)";
    /* Few big blocks (16-byte copies), about 2 MiB per item. */
    MPI_Type_vector(4, 65536, 70001, MPI_DOUBLE, &t[n]);
    names[n++] = "vector(4,65536,70001,double)";
    /* Odd byte blocks: byte-wide copies. */
    MPI_Type_vector(777, 3, 7, MPI_CHAR, &t[n]);
    names[n++] = "vector(777,3,7,char)";
    /* Indexed with varied block lengths (blocks of 1..64 floats). */
    {
        int bl[300], disp[300], at = 0;
        for (int i = 0; i < 300; i++) {
            bl[i] = 1 + (i * 37) % 64;
            disp[i] = at + (i % 5);
            at = disp[i] + bl[i] + 3;
        }
        MPI_Type_indexed(300, bl, disp, MPI_FLOAT, &t[n]);
        names[n++] = "indexed(300,float)";
    }
    /* Struct of basic types with padding, resized to 40 bytes. */
    {
        int bl[3] = {1, 2, 3};
        MPI_Aint disp[3] = {0, 8, 24};
        MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        MPI_Datatype s;
        MPI_Type_create_struct(3, bl, disp, types, &s);
        MPI_Type_create_resized(s, 0, 40, &t[n]);
        MPI_Type_free(&s);
        names[n++] = "struct{int,2double,3char}/40";
    }
    /* Resized vector with a negative lower bound and room between items. */
    {
        MPI_Datatype v;
        MPI_Type_vector(16, 2, 4, MPI_SHORT, &v);
        MPI_Type_create_resized(v, -8, 200, &t[n]);
        MPI_Type_free(&v);
        names[n++] = "resized(vector(16,2,4,short),-8,200)";
    }
    /* 3-D subarray of doubles (C order). */
    {
        int sizes[3] = {64, 64, 64}, sub[3] = {30, 20, 10}, start[3] = {5, 7, 9};
        MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t[n]);
        names[n++] = "subarray(64^3 -> 30x20x10,double)";
    }
    /* Nested: hvector of a non-contiguous type (units repeated). */
    {
        MPI_Datatype inner;
        MPI_Type_vector(5, 1, 3, MPI_INT, &inner);
        MPI_Type_create_hvector(100, 1, 80, inner, &t[n]);
        MPI_Type_free(&inner);
        names[n++] = "hvector(100,1,80,vector(5,1,3,int))";
    }
    /* Contiguous (one device copy). */
    MPI_Type_contiguous(1000, MPI_INT, &t[n]);
    names[n++] = "contiguous(1000,int)";
    for (int i = 0; i < n; i++) {
        CHECK_MPI(MPI_Type_commit(&t[i]));
        pack_case(names[i], t[i], 1);
        pack_case(names[i], t[i], 3);
        MPI_Type_free(&t[i]);
    }
    /* A freed type's address reused by another type must not reuse the
     * first one's cached layout. */
    for (int round = 0; round < 3; round++) {
        MPI_Datatype v;
        MPI_Type_vector(100 + round, 1 + round, 4 + round, MPI_INT, &v);
        MPI_Type_commit(&v);
        pack_case("vector (reused handle)", v, 2);
        MPI_Type_free(&v);
    }
}

/* ---- reductions ------------------------------------------------------------------- */

enum kind { K_INT, K_FLOAT, K_DOUBLE, K_CFLOAT, K_CDOUBLE, K_BOOL, K_PAIR_F, K_PAIR_D, K_PAIR_L, K_PAIR_I, K_PAIR_S };

static const struct {
    MPI_Datatype type;
    const char *name;
    size_t size; /* extent */
    enum kind kind;
} rtypes[] = {
    {MPI_INT8_T, "int8", 1, K_INT},       {MPI_INT16_T, "int16", 2, K_INT},
    {MPI_INT32_T, "int32", 4, K_INT},     {MPI_INT64_T, "int64", 8, K_INT},
    {MPI_UINT8_T, "uint8", 1, K_INT},     {MPI_UINT16_T, "uint16", 2, K_INT},
    {MPI_UINT32_T, "uint32", 4, K_INT},   {MPI_UINT64_T, "uint64", 8, K_INT},
    {MPI_INT, "int", 4, K_INT},           {MPI_LONG, "long", sizeof(long), K_INT},
    {MPI_UNSIGNED_CHAR, "uchar", 1, K_INT}, {MPI_BYTE, "byte", 1, K_INT},
    {MPI_FLOAT, "float", 4, K_FLOAT},     {MPI_DOUBLE, "double", 8, K_DOUBLE},
    {MPI_C_FLOAT_COMPLEX, "cfloat", 8, K_CFLOAT}, {MPI_C_DOUBLE_COMPLEX, "cdouble", 16, K_CDOUBLE},
    {MPI_C_BOOL, "bool", 1, K_BOOL},
    {MPI_FLOAT_INT, "float_int", 8, K_PAIR_F}, {MPI_DOUBLE_INT, "double_int", 16, K_PAIR_D},
    {MPI_LONG_INT, "long_int", 16, K_PAIR_L}, {MPI_2INT, "2int", 8, K_PAIR_I},
    {MPI_SHORT_INT, "short_int", 8, K_PAIR_S},
};

static const struct {
    MPI_Op op;
    const char *name;
} rops[] = {
    {MPI_SUM, "sum"}, {MPI_PROD, "prod"}, {MPI_MIN, "min"},   {MPI_MAX, "max"},
    {MPI_LAND, "land"}, {MPI_LOR, "lor"}, {MPI_LXOR, "lxor"}, {MPI_BAND, "band"},
    {MPI_BOR, "bor"}, {MPI_BXOR, "bxor"}, {MPI_MINLOC, "minloc"}, {MPI_MAXLOC, "maxloc"},
};

/* A float worth testing: normal values of many magnitudes, signed zeros,
 * subnormals, huge values whose product overflows; NaN only where the
 * result is an operand (MIN/MAX: NaN arithmetic payloads differ by CPU). */
static double some_value(int allow_nan)
{
    uint64_t r = rnd();
    switch (r % 16) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return (r & 256) ? 1e-40 : -3e-42; /* float subnormals */
    case 3: return (r & 256) ? 1e-310 : -4e-320; /* double subnormals */
    case 4: return (r & 256) ? 3e30 : -2e200;
    case 5: return allow_nan ? NAN : 1.5;
    default: return ldexp((double)(int64_t)(r >> 11) / (double)(1ull << 52), (int)((r >> 3) % 41) - 20);
    }
}

static void gen(enum kind k, unsigned char *p, size_t n, size_t size, int allow_nan)
{
    for (size_t i = 0; i < n * size; i++) p[i] = (unsigned char)rnd(); /* padding too */
    for (size_t i = 0; i < n; i++) {
        unsigned char *e = p + i * size;
        int index = (int)(rnd() % 100);
        long small = (long)(rnd() % 7) - 3; /* ties for MINLOC/MAXLOC */
        switch (k) {
        case K_INT: break;
        case K_BOOL: *e = (unsigned char)(rnd() & 1); break;
        case K_FLOAT: { float f = (float)some_value(allow_nan); memcpy(e, &f, 4); break; }
        case K_DOUBLE: { double d = some_value(allow_nan); memcpy(e, &d, 8); break; }
        case K_CFLOAT: { float f[2] = {(float)some_value(0), (float)some_value(0)}; memcpy(e, f, 8); break; }
        case K_CDOUBLE: { double d[2] = {some_value(0), some_value(0)}; memcpy(e, d, 16); break; }
        case K_PAIR_F: { float v = (float)small; memcpy(e, &v, 4); memcpy(e + 4, &index, 4); break; }
        case K_PAIR_D: { double v = (double)small; memcpy(e, &v, 8); memcpy(e + 8, &index, 4); break; }
        case K_PAIR_L: { memcpy(e, &small, sizeof small); memcpy(e + sizeof(long), &index, 4); break; }
        case K_PAIR_I: { int v = (int)small; memcpy(e, &v, 4); memcpy(e + 4, &index, 4); break; }
        case K_PAIR_S: { short v = (short)small; memcpy(e, &v, 2); memcpy(e + 4, &index, 4); break; }
        }
    }
}

/* One MPI_Reduce_local on device buffers against the host call. Returns
 * the error class. */
static int reduce_case(const char *what, MPI_Datatype t, MPI_Op op, const unsigned char *a, const unsigned char *b,
                       size_t span, MPI_Aint tlb, int count, int expect_gpu)
{
    unsigned char *ref = (unsigned char *)xmalloc(span), *got = (unsigned char *)xmalloc(span);
    memcpy(ref, b, span);
    int rc_host = error_class_of(MPI_Reduce_local(a - tlb, ref - tlb, count, t, op));
    unsigned char *da = (unsigned char *)dev_copy_of(a, span), *db = (unsigned char *)dev_copy_of(b, span);
    int rc_dev = error_class_of(MPI_Reduce_local(da - tlb, db - tlb, count, t, op));
    CHECK(rc_dev == rc_host, "%s: device error class %d, host %d", what, rc_dev, rc_host);
    if (rc_host == MPI_SUCCESS && rc_dev == MPI_SUCCESS) {
        dev_get(got, db, span);
        check_bytes(got, ref, span, what);
        if (gpu_mode && expect_gpu) want_reductions++;
        else want_staged++;
    }
    dev_free(da);
    dev_free(db);
    free(ref);
    free(got);
    return rc_host;
}

static int my_sum_calls;
static void my_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    my_sum_calls++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] = (int)((unsigned)((int *)inout)[i] + (unsigned)((int *)in)[i]);
}

static void reduce_tests(void)
{
    char what[160];
    const int n = 4099;
    int supported = 0;
    for (size_t ti = 0; ti < sizeof rtypes / sizeof rtypes[0]; ti++) {
        for (size_t oi = 0; oi < sizeof rops / sizeof rops[0]; oi++) {
            size_t span = rtypes[ti].size * n;
            unsigned char *a = (unsigned char *)xmalloc(span), *b = (unsigned char *)xmalloc(span);
            int nan_ok = rops[oi].op == MPI_MIN || rops[oi].op == MPI_MAX;
            gen(rtypes[ti].kind, a, n, rtypes[ti].size, nan_ok);
            gen(rtypes[ti].kind, b, n, rtypes[ti].size, nan_ok);
            snprintf(what, sizeof what, "reduce %s %s", rops[oi].name, rtypes[ti].name);
            enum kind k = rtypes[ti].kind;
            float_bytes = k == K_FLOAT || k == K_CFLOAT ? 4 : k == K_DOUBLE || k == K_CDOUBLE ? 8 : 0;
            int rc_case = reduce_case(what, rtypes[ti].type, rops[oi].op, a, b, span, 0, n, 1);
            float_bytes = 0;
            if (rc_case == MPI_SUCCESS) supported++;
            free(a);
            free(b);
        }
    }
    /* 10 ops on 11 integer types, 3 on byte, 4 on 2 floats, 2 on 2 complex,
     * 3 on bool, 2 on 5 pairs. */
    CHECK(supported == 11 * 10 + 3 + 8 + 4 + 3 + 10, "%d op x type pairs allowed", supported);

    /* Big arrays: 8 MiB of doubles, 4 MiB of ints. */
    {
        const int big = 1 << 20;
        unsigned char *a = (unsigned char *)xmalloc((size_t)big * 8), *b = (unsigned char *)xmalloc((size_t)big * 8);
        gen(K_DOUBLE, a, big, 8, 0);
        gen(K_DOUBLE, b, big, 8, 0);
        reduce_case("reduce sum double 1M", MPI_DOUBLE, MPI_SUM, a, b, (size_t)big * 8, 0, big, 1);
        reduce_case("reduce bxor int 1M", MPI_INT, MPI_BXOR, a, b, (size_t)big * 4, 0, big, 1);
        free(a);
        free(b);
    }

    /* Derived types with holes: the op runs on the blocks only. */
    {
        MPI_Datatype v, w;
        MPI_Type_vector(100, 3, 7, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        MPI_Aint lb, extent, tlb, textent;
        MPI_Type_get_extent(v, &lb, &extent);
        MPI_Type_get_true_extent(v, &tlb, &textent);
        size_t span = (size_t)(4 * extent + textent);
        unsigned char *a = (unsigned char *)xmalloc(span), *b = (unsigned char *)xmalloc(span);
        gen(K_DOUBLE, a, span / 8, 8, 0);
        gen(K_DOUBLE, b, span / 8, 8, 0);
        reduce_case("reduce sum vector(100,3,7,double) x5", v, MPI_SUM, a, b, span, tlb, 5, 1);
        reduce_case("reduce max vector(100,3,7,double) x5", v, MPI_MAX, a, b, span, tlb, 5, 1);
        MPI_Type_create_resized(v, 0, extent + 24, &w);
        MPI_Type_commit(&w);
        MPI_Type_get_extent(w, &lb, &extent);
        span = (size_t)(2 * extent + textent);
        reduce_case("reduce prod resized vector x3", w, MPI_PROD, a, b, span, tlb, 3, 1);
        MPI_Type_free(&v);
        MPI_Type_free(&w);
        free(a);
        free(b);

        int bl[4] = {1, 5, 2, 9}, disp[4] = {0, 3, 11, 20};
        MPI_Type_indexed(4, bl, disp, MPI_INT, &v);
        MPI_Type_commit(&v);
        MPI_Type_get_extent(v, &lb, &extent);
        MPI_Type_get_true_extent(v, &tlb, &textent);
        span = (size_t)(6 * extent + textent);
        a = (unsigned char *)xmalloc(span);
        b = (unsigned char *)xmalloc(span);
        gen(K_INT, a, span, 1, 0);
        gen(K_INT, b, span, 1, 0);
        reduce_case("reduce min indexed int x7", v, MPI_MIN, a, b, span, 0, 7, 1);
        MPI_Type_free(&v);
        free(a);
        free(b);
    }

    /* Always through host copies: a misaligned device int array, a host
     * input with a device inout, a user-defined op. */
    {
        const int m = 1000;
        size_t span = (size_t)m * 4 + 1;
        unsigned char *a = (unsigned char *)xmalloc(span), *b = (unsigned char *)xmalloc(span);
        gen(K_INT, a, span, 1, 0);
        gen(K_INT, b, span, 1, 0);
        unsigned char *ref = (unsigned char *)xmalloc(span), *got = (unsigned char *)xmalloc(span);
        /* The host reference on aligned copies (misaligned ints are
         * undefined behaviour on the host). */
        {
            int *al = (int *)xmalloc((size_t)m * 4), *bl = (int *)xmalloc((size_t)m * 4);
            memcpy(al, a + 1, (size_t)m * 4);
            memcpy(bl, b + 1, (size_t)m * 4);
            CHECK_MPI(MPI_Reduce_local(al, bl, m, MPI_INT, MPI_SUM));
            memcpy(ref, b, span);
            memcpy(ref + 1, bl, (size_t)m * 4);
            free(al);
            free(bl);
        }
        unsigned char *da = (unsigned char *)dev_copy_of(a, span), *db = (unsigned char *)dev_copy_of(b, span);
        CHECK_MPI(MPI_Reduce_local(da + 1, db + 1, m, MPI_INT, MPI_SUM));
        dev_get(got, db, span);
        check_bytes(got, ref, span, "reduce sum int, misaligned device buffers");
        want_staged++;

        memcpy(ref, b, span);
        CHECK_MPI(MPI_Reduce_local(a, ref, m, MPI_INT, MPI_PROD));
        dev_put(db, b, span);
        CHECK_MPI(MPI_Reduce_local(a, db, m, MPI_INT, MPI_PROD));
        dev_get(got, db, span);
        check_bytes(got, ref, span, "reduce prod int, host in, device inout");
        want_staged++;

        MPI_Op user;
        MPI_Op_create(my_sum, 1, &user);
        memcpy(ref, b, span);
        CHECK_MPI(MPI_Reduce_local(a, ref, m, MPI_INT, user));
        dev_put(db, b, span);
        CHECK_MPI(MPI_Reduce_local(da, db, m, MPI_INT, user));
        dev_get(got, db, span);
        check_bytes(got, ref, span, "reduce user op, device buffers");
        CHECK(my_sum_calls == 2, "user op called %d times", my_sum_calls);
        want_staged++;
        MPI_Op_free(&user);

        /* Errors keep their classes with device buffers. */
        CHECK(error_class_of(MPI_Reduce_local(da, db, m, MPI_BYTE, MPI_SUM)) == MPI_ERR_OP, "sum on byte");
        CHECK(error_class_of(MPI_Reduce_local(da, db, m, MPI_FLOAT, MPI_BAND)) == MPI_ERR_OP, "band on float");
        dev_free(da);
        dev_free(db);
        free(a);
        free(b);
        free(ref);
        free(got);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "gpu";
    if (strcmp(mode, "gpu-off") == 0) setenv("AXON_ACCEL_KERNELS", "0", 1);
    if (strcmp(mode, "noload") == 0) setenv("FAKE_CUDA_KERNELS", "0", 1);
    /* run.sh real asks `kernels --probe` first (the real-driver modes). */
    int probe = strcmp(mode, "--probe") == 0;
    int rc = dev_open();
    if (rc) return rc;
    gpu_mode = strcmp(mode, "gpu") == 0;
#ifndef AXON_HAVE_CUDA_KERNELS
    if (probe || gpu_mode) {
        printf("skip: Axon was built without the GPU kernels (no nvcc at configure time)\n");
        return 77;
    }
#endif
    if (probe) return 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    pvar_open("axon_accel_gpu_packs", &h_packs);
    pvar_open("axon_accel_gpu_reductions", &h_reductions);
    pvar_open("axon_accel_host_staged_ops", &h_staged);
    unsigned long long packs0 = pvar(h_packs), red0 = pvar(h_reductions), staged0 = pvar(h_staged);
    struct fake_cuda_stats fake0 = dev_stats();

    pack_tests();
    reduce_tests();

    unsigned long long packs = pvar(h_packs) - packs0, red = pvar(h_reductions) - red0,
                       staged = pvar(h_staged) - staged0;
    CHECK(packs == want_packs, "GPU packs %llu, expected %llu", packs, want_packs);
    CHECK(red == want_reductions, "GPU reductions %llu, expected %llu", red, want_reductions);
    CHECK(staged == want_staged, "staged operations %llu, expected %llu", staged, want_staged);
    printf("%s: %llu GPU packs, %llu GPU reductions, %llu staged\n", mode, packs, red, staged);
    if (dev.fake_stats) {
        /* The fake saw exactly those launches, ran each, and none touched
         * memory outside its buffers. */
        struct fake_cuda_stats f = dev_stats();
        unsigned long kp = f.kernel_packs + f.kernel_unpacks - fake0.kernel_packs - fake0.kernel_unpacks;
        unsigned long kr = f.kernel_reductions - fake0.kernel_reductions;
        CHECK(kp == want_kernel_packs, "fake: %lu pack/unpack launches, expected %llu", kp, want_kernel_packs);
        CHECK(kr == want_reductions, "fake: %lu reduction launches, expected %llu", kr, want_reductions);
        CHECK(f.kernels_run == f.kernel_launches, "fake: %lu of %lu launches ran", f.kernels_run, f.kernel_launches);
        CHECK(f.kernel_faults == 0, "fake: %lu kernels faulted", f.kernel_faults);
        CHECK(f.module_loads == (gpu_mode ? 1u : 0u), "fake: %lu module loads", f.module_loads);
        printf("fake driver: %lu pack/unpack and %lu reduction launches\n", kp, kr);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return report("accel kernels");
}
