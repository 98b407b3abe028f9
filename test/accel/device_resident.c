/* Reductions on GPU buffers that stay in device memory (src/coll/device_reduce.cpp).
 * For every op / type pair the kernels reduce, counts 0, 1, 7 (not a
 * multiple of the ranks) and 1000: Allreduce (also in place, nonblocking,
 * persistent), Reduce (in place at the root, nonblocking), Reduce_scatter_block
 * (also in place), Reduce_scatter with uneven counts, Scan (in place,
 * nonblocking), Exscan. Expected values come from MPI_Reduce_local on host
 * copies (the host table's semantics, bit for bit). Each call is checked for
 * its path: axon_coll_device_resident_reductions grows by one for a resident
 * call and not otherwise, and the fake driver's copy counters show no
 * device-to-host or host-to-device copy at all during a resident call when
 * the messages go through CUDA IPC (the user's buffers never reach host
 * memory), and device-to-host copies during a staged one.
 *   device_resident ipc        AXON_COLL_DEVICE_RESIDENT=all: resident; IPC between ranks: no host copies; no cuMemAlloc in
 *                              steady state (10 calls of each form); a mixed call (rank 0
 *                              GPU buffers, the others host) nonblocking
 *   device_resident staging    resident, messages staged by the pml (run with AXON_ACCEL_IPC=0)
 *   device_resident nokernels  AXON_ACCEL_KERNELS=0: every call staged
 *   device_resident matched    the default (AXON_COLL_DEVICE_RESIDENT=matched): nonblocking, persistent and
 *                              point-to-point blocking calls resident, and blocking mixed calls
 *                              (rank 0 GPU buffers, the others host) correct
 * Not resident in any mode: MPI_DOUBLE_INT (padded: not contiguous), a non-commutative
 * user op (kept in rank order on the host).
 * (skips, exit 77, without a CUDA driver or device) */
#include <mpi.h>
#include <stdint.h>

#include "../mpi/check.h"
#include "../mpi/counters.h"
#include "device.h"

enum kind { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, BOOL_, CF32, FLOAT_INT, DOUBLE_INT, INT_INT };
struct tcase {
    MPI_Datatype type;
    const char *name;
    enum kind kind;
    size_t extent;
    int resident; /* the kernels reduce it on the device */
};
enum { ARITH = 1, MINMAX = 2, BITS = 4, LOGIC = 8, LOC = 16 };
static const MPI_Op arith_ops[] = {MPI_SUM, MPI_PROD};
static const MPI_Op minmax_ops[] = {MPI_MIN, MPI_MAX};
static const MPI_Op bit_ops[] = {MPI_BAND, MPI_BOR, MPI_BXOR};
static const MPI_Op logic_ops[] = {MPI_LAND, MPI_LOR, MPI_LXOR};
static const MPI_Op loc_ops[] = {MPI_MINLOC, MPI_MAXLOC};

struct dint { double v; int i; };
struct fint { float v; int i; };

static int rank, size, mode_resident, ipc, matched;
static int fake; /* the fake driver: its counters can be read */
enum { ALL, MATCHED, NOKERNELS };
static int mode;

/* Small values: sums and products over 4 ranks fit every type exactly. */
static int v(int r, size_t i, int round) { return (int)((r * 7 + i * 3 + (size_t)round) % 3); }

static void put(const struct tcase *t, void *buf, size_t i, int x, int r)
{
    char *p = (char *)buf + i * t->extent;
    switch (t->kind) {
    case I8: *(int8_t *)p = (int8_t)x; break;
    case U8: *(uint8_t *)p = (uint8_t)x; break;
    case I16: *(int16_t *)p = (int16_t)x; break;
    case U16: *(uint16_t *)p = (uint16_t)x; break;
    case I32: *(int32_t *)p = x; break;
    case U32: *(uint32_t *)p = (uint32_t)x; break;
    case I64: *(int64_t *)p = x; break;
    case U64: *(uint64_t *)p = (uint64_t)x; break;
    case F32: *(float *)p = (float)x; break;
    case F64: *(double *)p = x; break;
    case BOOL_: *(_Bool *)p = x & 1; break;
    case CF32: ((float *)p)[0] = (float)x; ((float *)p)[1] = (float)(x - 1); break;
    case FLOAT_INT: ((struct fint *)p)->v = (float)x; ((struct fint *)p)->i = r; break;
    case DOUBLE_INT: ((struct dint *)p)->v = x; ((struct dint *)p)->i = r; break;
    case INT_INT: ((int *)p)[0] = x; ((int *)p)[1] = r; break;
    }
}

/* Item i of a and b are equal (the data bytes: padding is not data). */
static int same(const struct tcase *t, const void *a, const void *b, size_t i)
{
    const char *x = (const char *)a + i * t->extent, *y = (const char *)b + i * t->extent;
    if (t->kind == DOUBLE_INT)
        return ((const struct dint *)x)->v == ((const struct dint *)y)->v && ((const struct dint *)x)->i == ((const struct dint *)y)->i;
    return memcmp(x, y, t->extent) == 0;
}

/* Host image of rank r's n items starting at item `first`. */
static void *host_items(const struct tcase *t, size_t n, int r, size_t first, int round)
{
    void *h = xmalloc(n * t->extent + 1);
    memset(h, 0, n * t->extent + 1);
    for (size_t i = 0; i < n; i++) put(t, h, i, v(r, first + i, round), r);
    return h;
}

static void *dev_items(const struct tcase *t, size_t n, int r, size_t first, int round)
{
    void *h = host_items(t, n, r, first, round);
    void *d = dev_malloc(n * t->extent);
    dev_put(d, h, n * t->extent);
    free(h);
    return d;
}

static void *dev_marked(const struct tcase *t, size_t n)
{
    void *d = dev_malloc(n * t->extent);
    void *h = xmalloc(n * t->extent + 1);
    memset(h, 0x5a, n * t->extent + 1);
    dev_put(d, h, n * t->extent);
    free(h);
    return d;
}

/* The rank-order reduction over ranks [lo, hi) of items first.. (host). */
static void *expected(const struct tcase *t, MPI_Op op, size_t n, int lo, int hi, size_t first, int round)
{
    void *acc = host_items(t, n, hi - 1, first, round);
    for (int r = hi - 2; r >= lo; r--) {
        void *x = host_items(t, n, r, first, round);
        if (n) CHECK_MPI(MPI_Reduce_local(x, acc, (int)n, t->type, op));
        free(x);
    }
    return acc;
}

static void verify(const char *what, const struct tcase *t, MPI_Op op, const void *d, size_t n, int lo, int hi,
                   size_t first, int round)
{
    if (n == 0) return;
    void *want = expected(t, op, n, lo, hi, first, round);
    void *got = xmalloc(n * t->extent + 1);
    dev_get(got, d, n * t->extent);
    for (size_t i = 0; i < n; i++)
        if (!same(t, want, got, i)) {
            CHECK(0, "%s %s n=%zu: item %zu differs from the host reduction", what, t->name, n, i);
            break;
        }
    free(got);
    free(want);
}

/* The path of one call: snapshot before, check after. */
static struct fake_cuda_stats snap;
static unsigned long long resident_before;
static void before(void)
{
    snap = dev_stats();
    resident_before = axon_counter("axon_coll_device_resident_reductions");
}
/* `counted`: how much the counter must grow (-1: not checked); `resident`:
 * whether the call runs resident (-1: either, as the counter says). A
 * resident call over IPC copies nothing between host and device; a staged
 * one with data copies it to the host. */
static void after(const char *what, const struct tcase *t, size_t n, int counted, int resident)
{
    struct fake_cuda_stats now = dev_stats();
    unsigned long long grew = axon_counter("axon_coll_device_resident_reductions") - resident_before;
    unsigned long dtoh = now.copies_dtoh - snap.copies_dtoh, htod = now.copies_htod - snap.copies_htod;
    if (counted >= 0)
        CHECK(grew == (unsigned long long)counted, "%s %s n=%zu: resident counter +%llu, expected +%d", what, t->name, n,
              grew, counted);
    if (resident < 0) resident = grew > 0;
    if (!fake) return;
    if (resident && ipc)
        CHECK(dtoh == 0 && htod == 0, "%s %s n=%zu: resident call copied %lu device->host, %lu host->device", what,
              t->name, n, dtoh, htod);
    if (!resident && n > 0) CHECK(dtoh > 0, "%s %s n=%zu: staged call made no device->host copy", what, t->name, n);
}

static void dev_refill(const struct tcase *t, void *d, size_t n, int r, int round)
{
    void *h = host_items(t, n, r, 0, round);
    dev_put(d, h, n * t->extent);
    free(h);
}

static void run_case(const struct tcase *t, MPI_Op op, size_t n)
{
    const int count = (int)n;
    const int res = mode_resident && t->resident;
    /* matched: blocking reduce / allreduce may take the node segment or the direct version (staged). */
    const int rooted = matched ? -1 : res;
    MPI_Request req;
    void *s = dev_items(t, n, rank, 0, 0), *r = dev_marked(t, n);

    before();
    CHECK_MPI(MPI_Allreduce(s, r, count, t->type, op, MPI_COMM_WORLD));
    after("allreduce", t, n, rooted, rooted);
    verify("allreduce", t, op, r, n, 0, size, 0, 0);
    dev_free(r);
    r = dev_items(t, n, rank, 0, 1);
    before();
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, r, count, t->type, op, MPI_COMM_WORLD));
    after("allreduce in place", t, n, rooted, rooted);
    verify("allreduce in place", t, op, r, n, 0, size, 0, 1);
    before();
    CHECK_MPI(MPI_Iallreduce(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    after("iallreduce", t, n, res, res);
    verify("iallreduce", t, op, r, n, 0, size, 0, 0);
    before();
    CHECK_MPI(MPI_Allreduce_init(s, r, count, t->type, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    after("allreduce_init", t, n, res, res);
    for (int round = 2; round < 4; round++) {
        dev_refill(t, s, n, rank, round);
        before();
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        after("allreduce_init start", t, n, 0, res); /* counted at init, not per start */
        verify("allreduce_init start", t, op, r, n, 0, size, 0, round);
    }
    CHECK_MPI(MPI_Request_free(&req));
    dev_free(s);
    dev_free(r);

    /* Reduce to the last rank, in place there; Ireduce to rank 0. */
    int root = size - 1;
    s = dev_items(t, n, rank, 0, 0);
    r = dev_marked(t, n);
    before();
    CHECK_MPI(MPI_Reduce(s, r, count, t->type, op, root, MPI_COMM_WORLD));
    after("reduce", t, n, rooted, rooted);
    if (rank == root) verify("reduce", t, op, r, n, 0, size, 0, 0);
    dev_free(r);
    r = dev_items(t, n, rank, 0, 1);
    before();
    CHECK_MPI(MPI_Reduce(rank == root ? MPI_IN_PLACE : r, r, count, t->type, op, root, MPI_COMM_WORLD));
    after("reduce in place", t, n, rooted, rooted);
    if (rank == root) verify("reduce in place", t, op, r, n, 0, size, 0, 1);
    dev_free(r);
    r = dev_marked(t, n);
    before();
    CHECK_MPI(MPI_Ireduce(s, r, count, t->type, op, 0, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    after("ireduce", t, n, res, res);
    if (rank == 0) verify("ireduce", t, op, r, n, 0, size, 0, 0);
    dev_free(s);
    dev_free(r);

    /* Reduce_scatter_block (n per rank), in place; Reduce_scatter with counts n + i % 2. */
    size_t total = n * (size_t)size;
    s = dev_items(t, total, rank, 0, 0);
    r = dev_marked(t, n);
    before();
    CHECK_MPI(MPI_Reduce_scatter_block(s, r, count, t->type, op, MPI_COMM_WORLD));
    after("reduce_scatter_block", t, n, res, res);
    verify("reduce_scatter_block", t, op, r, n, 0, size, n * (size_t)rank, 0);
    before();
    CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, s, count, t->type, op, MPI_COMM_WORLD));
    after("reduce_scatter_block in place", t, n, res, res);
    verify("reduce_scatter_block in place", t, op, s, n, 0, size, n * (size_t)rank, 0);
    dev_free(s);
    dev_free(r);
    {
        int *counts = (int *)xmalloc((size_t)size * sizeof(int));
        size_t sum = 0, mine = 0;
        for (int i = 0; i < size; i++) {
            counts[i] = count + i % 2;
            if (i < rank) mine += (size_t)counts[i];
            sum += (size_t)counts[i];
        }
        s = dev_items(t, sum, rank, 0, 0);
        r = dev_marked(t, (size_t)counts[rank]);
        before();
        CHECK_MPI(MPI_Reduce_scatter(s, r, counts, t->type, op, MPI_COMM_WORLD));
        after("reduce_scatter", t, sum, res, res);
        verify("reduce_scatter", t, op, r, (size_t)counts[rank], 0, size, mine, 0);
        dev_free(s);
        dev_free(r);
        free(counts);
    }

    /* Scan, in place, Iscan; Exscan, Iexscan. */
    s = dev_items(t, n, rank, 0, 0);
    r = dev_marked(t, n);
    before();
    CHECK_MPI(MPI_Scan(s, r, count, t->type, op, MPI_COMM_WORLD));
    after("scan", t, n, res, res);
    verify("scan", t, op, r, n, 0, rank + 1, 0, 0);
    before();
    CHECK_MPI(MPI_Exscan(s, r, count, t->type, op, MPI_COMM_WORLD));
    after("exscan", t, n, res, res);
    if (rank > 0) verify("exscan", t, op, r, n, 0, rank, 0, 0);
    before();
    CHECK_MPI(MPI_Iexscan(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    after("iexscan", t, n, res, res);
    if (rank > 0) verify("iexscan", t, op, r, n, 0, rank, 0, 0);
    dev_free(r);
    r = dev_items(t, n, rank, 0, 1);
    before();
    CHECK_MPI(MPI_Scan(MPI_IN_PLACE, r, count, t->type, op, MPI_COMM_WORLD));
    after("scan in place", t, n, res, res);
    verify("scan in place", t, op, r, n, 0, rank + 1, 0, 1);
    before();
    CHECK_MPI(MPI_Iscan(s, r, count, t->type, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    after("iscan", t, n, res, res);
    verify("iscan", t, op, r, n, 0, rank + 1, 0, 0);
    dev_free(s);
    dev_free(r);
}

/* A non-commutative, associative user op: a op b = a (the left operand). */
static void left(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* cuMemAlloc calls so far (the fake counts every entry point). */
static unsigned long mem_allocs(void)
{
    int (*calls)(const char **, unsigned long *, int) = NULL;
    *(void **)&calls = dlsym(dev.lib, "fake_cuda_calls");
    const char *names[256];
    unsigned long counts[256];
    int k = calls ? calls(names, counts, 256) : 0;
    for (int i = 0; i < k && i < 256; i++)
        if (strcmp(names[i], "cuMemAlloc") == 0) return counts[i];
    CHECK(0, "the fake driver does not count cuMemAlloc");
    return 0;
}

/* A call whose rank 0 passes GPU buffers and the others host buffers
 * (`blocking`: MPI_Allreduce, else MPI_Iallreduce). */
static void mixed(int blocking, int want)
{
    const size_t n = 1000;
    int *h = (int *)xmalloc(n * sizeof(int)), *out = (int *)xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) h[i] = rank * 1000 + (int)i;
    void *s = h, *r = out;
    if (rank == 0) {
        s = dev_malloc(n * sizeof(int));
        r = dev_malloc(n * sizeof(int));
        dev_put(s, h, n * sizeof(int));
    }
    before();
    if (blocking) {
        CHECK_MPI(MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    } else {
        MPI_Request req;
        CHECK_MPI(MPI_Iallreduce(s, r, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    unsigned long long grew = axon_counter("axon_coll_device_resident_reductions") - resident_before;
    if (want >= 0) CHECK(grew == (unsigned long long)(rank == 0 && want), "mixed %s: resident counter +%llu", blocking ? "allreduce" : "iallreduce", grew);
    if (rank == 0) dev_get(out, r, n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        if (out[i] != 1000 * size * (size - 1) / 2 + size * (int)i) {
            CHECK(0, "mixed %s [%zu] = %d", blocking ? "allreduce" : "iallreduce", i, out[i]);
            break;
        }
    if (rank == 0) {
        dev_free(s);
        dev_free(r);
    }
    free(h);
    free(out);
}

int main(int argc, char **argv)
{
    int rc = dev_open();
    if (rc) return rc;
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
    const char *m = argc > 1 ? argv[1] : "ipc";
    fake = dev.fake_stats != NULL;
    mode = strcmp(m, "nokernels") == 0 ? NOKERNELS : strcmp(m, "matched") == 0 ? MATCHED : ALL;
    ipc = strcmp(m, "ipc") == 0;
    matched = mode == MATCHED;
    mode_resident = mode != NOKERNELS;
    if (mode == NOKERNELS) setenv("AXON_ACCEL_KERNELS", "0", 1);
    /* matched is the default: that run sets nothing, so it checks the default too. */
    if (!matched) setenv("AXON_COLL_DEVICE_RESIDENT", "all", 1);
    /* Every size on the device (the default threshold is 1 MiB). */
    setenv("AXON_ACCEL_COLL_KERNEL_MIN", "0", 1);
    MPI_Init(&argc, &argv);
    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* IPC needs a peer: with one rank nothing is sent at all. */

    const struct tcase types[] = {
        {MPI_INT8_T, "int8", I8, 1, 1},          {MPI_UINT8_T, "uint8", U8, 1, 1},
        {MPI_INT16_T, "int16", I16, 2, 1},       {MPI_UINT16_T, "uint16", U16, 2, 1},
        {MPI_INT, "int", I32, 4, 1},             {MPI_UNSIGNED, "unsigned", U32, 4, 1},
        {MPI_INT64_T, "int64", I64, 8, 1},       {MPI_UINT64_T, "uint64", U64, 8, 1},
        {MPI_FLOAT, "float", F32, 4, 1},         {MPI_DOUBLE, "double", F64, 8, 1},
        {MPI_C_BOOL, "c_bool", BOOL_, sizeof(_Bool), 1}, {MPI_C_FLOAT_COMPLEX, "float complex", CF32, 8, 1},
        {MPI_FLOAT_INT, "float_int", FLOAT_INT, sizeof(struct fint), 1},
        {MPI_DOUBLE_INT, "double_int", DOUBLE_INT, sizeof(struct dint), 0},
        {MPI_2INT, "2int", INT_INT, 2 * sizeof(int), 1},
    };
    const int groups[] = {ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX | BITS | LOGIC,
                          ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX | BITS | LOGIC,
                          ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX | BITS | LOGIC, ARITH | MINMAX,
                          ARITH | MINMAX, LOGIC, ARITH, LOC, LOC, LOC};
    const size_t counts[] = {0, 1, 7, 1000};
    unsigned long launches = dev_stats().kernel_reductions;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        struct { const MPI_Op *ops; size_t n; int bit; } sets[] = {
            {arith_ops, 2, ARITH}, {minmax_ops, 2, MINMAX}, {bit_ops, 3, BITS}, {logic_ops, 3, LOGIC}, {loc_ops, 2, LOC}};
        for (size_t si = 0; si < 5; si++) {
            if (!(groups[ti] & sets[si].bit)) continue;
            for (size_t oi = 0; oi < sets[si].n; oi++)
                for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                    run_case(&types[ti], sets[si].ops[oi], counts[ci]);
        }
    }
    /* The combines ran as kernels (each rank combines when there are peers). */
    unsigned long ran = dev_stats().kernel_reductions - launches;
    if (mode_resident && size > 1 && fake) CHECK(ran > 0, "no reduction kernel ran");
    if (!mode_resident) CHECK(ran == 0, "%lu reduction kernels ran with AXON_ACCEL_KERNELS=0", ran);
    CHECK(dev_stats().kernel_faults == 0, "%lu kernels touched memory outside device allocations", dev_stats().kernel_faults);

    /* A non-commutative user op: staged, operands in rank order. */
    {
        MPI_Op op;
        CHECK_MPI(MPI_Op_create(left, 0, &op));
        const struct tcase ti = {MPI_INT, "int (left op)", I32, 4, 0};
        for (int pass = 0; pass < 2; pass++) {
            size_t n = pass ? 7 : 1000;
            void *s = dev_items(&ti, n, rank, 0, 0), *r = dev_marked(&ti, n);
            before();
            CHECK_MPI(MPI_Allreduce(s, r, (int)n, MPI_INT, op, MPI_COMM_WORLD));
            after("allreduce (non-commutative)", &ti, n, 0, 0);
            verify("allreduce (non-commutative)", &ti, op, r, n, 0, size, 0, 0);
            MPI_Request req;
            before();
            CHECK_MPI(MPI_Iscan(s, r, (int)n, MPI_INT, op, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            after("iscan (non-commutative)", &ti, n, 0, 0);
            verify("iscan (non-commutative)", &ti, op, r, n, 0, rank + 1, 0, 0);
            dev_free(s);
            dev_free(r);
        }
        CHECK_MPI(MPI_Op_free(&op));
    }

    /* Ranks mixing GPU and host buffers in one call: nonblocking runs the
     * same schedule everywhere; blocking only with "matched". */
    if (size > 1) {
        mixed(0, mode_resident);
        if (matched) mixed(1, -1);
    }

    /* Steady state: after a first call, 10 calls of each form allocate no
     * device memory (scratch from the pool, cached IPC mappings). */
    if (mode_resident && fake) {
        const size_t n = 65536;
        const struct tcase *tf = &types[8];
        void *s = dev_items(tf, n * (size_t)size, rank, 0, 0), *r = dev_marked(tf, n * (size_t)size);
        MPI_Request req;
        for (int warm = 0; warm < 2; warm++) {
            unsigned long allocs = mem_allocs();
            for (int i = 0; i < (warm ? 10 : 1); i++) {
                CHECK_MPI(MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Iallreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req));
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Reduce_scatter_block(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Scan(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            }
            if (warm) CHECK(mem_allocs() == allocs, "10 calls of each form: %lu cuMemAlloc calls", mem_allocs() - allocs);
        }
        verify("scan (steady state)", tf, MPI_SUM, r, n, 0, rank + 1, 0, 0);
        dev_free(s);
        dev_free(r);
    }

    /* Host buffers are not counted. */
    int x = rank, y = 0;
    before();
    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size * (size - 1) / 2, "host allreduce = %d", y);
    CHECK(axon_counter("axon_coll_device_resident_reductions") == resident_before, "a host allreduce counted as resident");

    MPI_T_finalize();
    MPI_Finalize();
    return report("device_resident");
}
