/* Non-contiguous datatypes on GPU buffers in point-to-point (docs/cuda.md,
 * "Point-to-point"): vector, indexed, struct of doubles and resized types,
 * packed sizes around the device eager limit (8 KiB) and over a staging
 * chunk (256 KiB), device->device, device->host, host->device (and
 * host->host as the control), managed->device, around a ring (np 1: to oneself). Exact data:
 * the holes of the receive buffer keep their bytes. Also a persistent
 * request started twice, a message shorter than the receive and one that
 * ends inside an item.
 *
 *   device_dtype kernels  a non-contiguous device buffer must be packed /
 *                         unpacked by a GPU kernel (axon_pml_device_kernel_*),
 *                         never shadowed on the host; with AXON_ACCEL_IPC=0
 *                         it travels by staging, else by IPC (np >= 2)
 *   device_dtype shadow   AXON_ACCEL_KERNELS=0: the host-shadow path
 *   device_dtype noload   the fake driver refuses the kernel module
 *                         (FAKE_CUDA_KERNELS=0): the host-shadow path too
 *   device_dtype host     host buffers only, no counters: the expectations
 *                         themselves, checkable against another MPI
 * With the fake driver (test/accel/fake_cuda.c) the kernel launches it saw
 * are checked too. */
#include <mpi.h>
#include <stdint.h>

#include "../mpi/check.h"
#include "../mpi/counters.h"
#include "device.h"

enum mode { M_KERNELS, M_SHADOW, M_HOST };
static enum mode mode;
static int rank, size, to, from, ipc_off;

/* Counters this rank expects (kernel / shadow paths, IPC, staging). */
static unsigned long long want_kpacks, want_kunpacks, want_shadows, want_ipc, want_staged;

/* dev: 0 host, 1 device, 2 managed memory. */
static void *alloc_in(int dev, size_t n) { return dev == 2 ? dev_malloc_managed(n) : dev ? dev_malloc(n) : xmalloc(n); }
static void free_in(int dev, void *b)
{
    if (dev) dev_free(b);
    else free(b);
}
static void put_in(int dev, void *b, const void *h, size_t n)
{
    if (dev) dev_put(b, h, n);
    else memcpy(b, h, n);
}
static void get_from(int dev, void *h, const void *b, size_t n)
{
    if (dev) dev_get(h, b, n);
    else memcpy(h, b, n);
}

/* Bytes `count` items of t span (the types here have lb >= 0). */
static size_t span_of(MPI_Datatype t, int count)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &textent);
    return (size_t)(tlb + (MPI_Aint)(count - 1) * extent + textent);
}

static void expect_bytes(const unsigned char *got, const unsigned char *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, got[i], want[i]);
            return;
        }
}

/* Counts what a message of `bytes` packed bytes does on this rank: one send
 * from a buffer placed `sdev`, one receive into `rdev` (the ring: every rank
 * does both). */
static void expect_paths(int sdev, int rdev, size_t bytes)
{
    if (mode == M_KERNELS) {
        want_kpacks += sdev != 0;
        want_kunpacks += rdev != 0;
    } else if (mode == M_SHADOW) {
        want_shadows += (sdev != 0) + (rdev != 0);
    }
    /* The sender's device data (scratch or user buffer): IPC between two
     * processes, else staging above the device eager limit. A shadowed
     * buffer travels as host data. */
    if (mode == M_KERNELS && sdev && size > 1) {
        if (!ipc_off) want_ipc++;
        else if (bytes > 8192) want_staged++;
    }
}

/* One message of `count` items of t around the ring, sender buffer on the
 * device when sdev, receiver's when rdev. The receiver's buffer holds other
 * bytes first: the holes must keep them. */
static void ring_case(const char *name, MPI_Datatype t, int count, int sdev, int rdev, unsigned seed)
{
    size_t span = span_of(t, count);
    int psize = 0;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    unsigned char *hs = xmalloc(span), *hr = xmalloc(span), *want = xmalloc(span), *got = xmalloc(span);
    unsigned char *packed = xmalloc((size_t)psize + 1);
    /* What `from` sends (its pattern) and what this rank's buffer held. */
    fill_pattern(hs, span, seed + (unsigned)from);
    fill_pattern(want, span, seed + 1000 + (unsigned)rank);
    int pos = 0;
    CHECK_MPI(MPI_Pack(hs, count, t, packed, psize, &pos, MPI_COMM_WORLD));
    pos = 0;
    CHECK_MPI(MPI_Unpack(packed, psize, &pos, want, count, t, MPI_COMM_WORLD));

    fill_pattern(hs, span, seed + (unsigned)rank);
    fill_pattern(hr, span, seed + 1000 + (unsigned)rank);
    void *sbuf = alloc_in(sdev, span), *rbuf = alloc_in(rdev, span);
    put_in(sdev, sbuf, hs, span);
    put_in(rdev, rbuf, hr, span);
    MPI_Request rq;
    MPI_Status st;
    CHECK_MPI(MPI_Irecv(rbuf, count, t, from, 7, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Send(sbuf, count, t, to, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rq, &st));
    int n = -1;
    MPI_Get_count(&st, t, &n);
    CHECK(n == count, "%s: received %d items, expected %d", name, n, count);
    get_from(rdev, got, rbuf, span);
    char what[200];
    static const char *const where[] = {"host", "device", "managed"};
    snprintf(what, sizeof what, "%s x%d (%d B packed) %s->%s", name, count, psize, where[sdev], where[rdev]);
    expect_bytes(got, want, span, what);
    expect_paths(sdev, rdev, (size_t)psize);
    free_in(sdev, sbuf);
    free_in(rdev, rbuf);
    free(hs);
    free(hr);
    free(want);
    free(got);
    free(packed);
}

/* Persistent send and receive of a non-contiguous device buffer, started
 * twice with new data: each start packs / unpacks again and the request
 * keeps the user's buffer and type. */
static void persistent_case(MPI_Datatype t, int count, int dev)
{
    size_t span = span_of(t, count);
    int psize = 0;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    unsigned char *hs = xmalloc(span), *want = xmalloc(span), *got = xmalloc(span), *packed = xmalloc((size_t)psize);
    void *sbuf = alloc_in(dev, span), *rbuf = alloc_in(dev, span);
    MPI_Request rq[2];
    CHECK_MPI(MPI_Recv_init(rbuf, count, t, from, 9, MPI_COMM_WORLD, &rq[0]));
    CHECK_MPI(MPI_Send_init(sbuf, count, t, to, 9, MPI_COMM_WORLD, &rq[1]));
    for (unsigned round = 0; round < 2; round++) {
        fill_pattern(hs, span, 500 + round * 10 + (unsigned)from);
        fill_pattern(want, span, 600 + round);
        int pos = 0;
        MPI_Pack(hs, count, t, packed, psize, &pos, MPI_COMM_WORLD);
        pos = 0;
        MPI_Unpack(packed, psize, &pos, want, count, t, MPI_COMM_WORLD);
        fill_pattern(hs, span, 500 + round * 10 + (unsigned)rank);
        put_in(dev, sbuf, hs, span);
        fill_pattern(got, span, 600 + round);
        put_in(dev, rbuf, got, span);
        CHECK_MPI(MPI_Startall(2, rq));
        CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        get_from(dev, got, rbuf, span);
        expect_bytes(got, want, span, round ? "persistent, round 2" : "persistent, round 1");
        expect_paths(dev, dev, (size_t)psize);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    free_in(dev, sbuf);
    free_in(dev, rbuf);
    free(hs);
    free(want);
    free(got);
    free(packed);
}

/* vector(4,2,3,double) receives `k` doubles sent contiguous from the host:
 * fewer items than posted (k = 8n) and a message ending inside an item (k =
 * 8n + 3: MPI_Get_count says MPI_UNDEFINED, the elements are exact). The
 * holes and the bytes after the message keep theirs. */
static void short_case(MPI_Datatype vec, int k, int posted, int dev)
{
    size_t span = span_of(vec, posted);
    double *src = xmalloc((size_t)k * 8);
    unsigned char *want = xmalloc(span), *got = xmalloc(span);
    fill_pattern(want, span, 77);
    /* What `from` sends lands at item i at i * 88 bytes, blocks of 2
     * doubles at 0, 24, 48, 72. */
    for (int j = 0; j < k; j++) {
        double x = 1000.0 * from + j + 0.25;
        size_t off = (size_t)(j / 8) * 88 + (size_t)((j % 8) / 2) * 24 + (size_t)(j % 2) * 8;
        memcpy(want + off, &x, 8);
        src[j] = 1000.0 * rank + j + 0.25;
    }
    void *rbuf = alloc_in(dev, span);
    fill_pattern(got, span, 77);
    put_in(dev, rbuf, got, span);
    MPI_Request rq;
    MPI_Status st;
    CHECK_MPI(MPI_Irecv(rbuf, posted, vec, from, 11, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Send(src, k, MPI_DOUBLE, to, 11, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rq, &st));
    int n = -2, e = -2;
    MPI_Get_count(&st, vec, &n);
    MPI_Get_elements(&st, vec, &e);
    CHECK(n == (k % 8 ? MPI_UNDEFINED : k / 8), "short message of %d doubles: count %d", k, n);
    CHECK(e == k, "short message of %d doubles: %d elements", k, e);
    get_from(dev, got, rbuf, span);
    char what[100];
    snprintf(what, sizeof what, "short message of %d doubles into %d items", k, posted);
    expect_bytes(got, want, span, what);
    if (dev) {
        /* A whole number of items: the kernel; else the host fallback. */
        if (mode == M_KERNELS && k % 8 == 0) want_kunpacks++;
        else if (mode != M_HOST) want_shadows++;
    }
    free_in(dev, rbuf);
    free(src);
    free(want);
    free(got);
}

static const char *const counter_names[] = {"axon_pml_device_kernel_packs", "axon_pml_device_kernel_unpacks",
                                            "axon_pml_device_shadows", "axon_pml_device_ipc_receives",
                                            "axon_pml_device_staged_sends"};
#define NCOUNTERS 5
static void read_counters(unsigned long long *v)
{
    for (int i = 0; i < NCOUNTERS; i++) v[i] = axon_counter(counter_names[i]);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "kernels";
    int probe = strcmp(m, "--probe") == 0;
    int noload = strcmp(m, "noload") == 0;
    mode = strcmp(m, "shadow") == 0 || noload ? M_SHADOW : strcmp(m, "host") == 0 ? M_HOST : M_KERNELS;
    if (noload) setenv("FAKE_CUDA_KERNELS", "0", 1);
    else if (mode == M_SHADOW) setenv("AXON_ACCEL_KERNELS", "0", 1);
    if (mode != M_HOST) {
        int rc = dev_open();
        if (rc) return rc;
#ifndef AXON_HAVE_CUDA_KERNELS
        if (mode == M_KERNELS) {
            printf("skip: Axon was built without the GPU kernels (no nvcc at configure time)\n");
            return 77;
        }
#endif
    }
    if (probe) return 0;
    const char *ipc = getenv("AXON_ACCEL_IPC");
    ipc_off = ipc && strcmp(ipc, "0") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    unsigned long long c0[NCOUNTERS] = {0};
    struct fake_cuda_stats f0 = dev_stats();
    if (mode != M_HOST) {
        int provided;
        CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
        read_counters(c0);
    }

    MPI_Datatype types[4];
    const char *names[4];
    MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &types[0]);  /* 64 B of 88 */
    names[0] = "vector(4,2,3,double)";
    {
        int bl[3] = {1, 3, 2}, disp[3] = {0, 2, 7};
        MPI_Type_indexed(3, bl, disp, MPI_INT, &types[1]);  /* 24 B of 36 */
        names[1] = "indexed({1,3,2},{0,2,7},int)";
    }
    {
        /* struct { double a; double pad; double b[2]; double pad2[2]; double c; }: 32 B of 56 */
        int bl[3] = {1, 2, 1};
        MPI_Aint disp[3] = {0, 16, 48};
        MPI_Datatype dt[3] = {MPI_DOUBLE, MPI_DOUBLE, MPI_DOUBLE};
        MPI_Type_create_struct(3, bl, disp, dt, &types[2]);
        names[2] = "struct{double,2double,double}";
    }
    {
        MPI_Datatype v;
        MPI_Type_vector(3, 1, 2, MPI_FLOAT, &v);  /* 12 B, true extent 20 */
        MPI_Type_create_resized(v, 0, 32, &types[3]);
        MPI_Type_free(&v);
        names[3] = "resized(vector(3,1,2,float),0,32)";
    }
    /* Packed sizes: one item, just under and over the 8 KiB device eager
     * limit, more than one 256 KiB staging chunk. */
    static const size_t targets[] = {0, 8000, 8400, 300000};
    static const int place[4][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
    unsigned seed = 1;
    for (int ti = 0; ti < 4; ti++) {
        CHECK_MPI(MPI_Type_commit(&types[ti]));
        int tsize = 0;
        MPI_Type_size(types[ti], &tsize);
        for (int si = 0; si < 4; si++) {
            int count = targets[si] ? (int)(targets[si] / (size_t)tsize) : 1;
            for (int pi = 0; pi < 4; pi++) {
                int sdev = mode == M_HOST ? 0 : place[pi][0], rdev = mode == M_HOST ? 0 : place[pi][1];
                if (mode == M_HOST && pi > 0) continue;
                ring_case(names[ti], types[ti], count, sdev, rdev, seed++);
            }
            /* Managed memory packs on the GPU too (the scratch is device memory). */
            if (mode != M_HOST && si == 2) ring_case(names[ti], types[ti], count, 2, 1, seed++);
        }
    }
    persistent_case(types[0], 8400 / 64, mode != M_HOST);
    short_case(types[0], 8 * 40, 45, mode != M_HOST);
    short_case(types[0], 8 * 40 + 3, 45, mode != M_HOST);
    for (int ti = 0; ti < 4; ti++) MPI_Type_free(&types[ti]);

    if (mode != M_HOST) {
        unsigned long long c[NCOUNTERS];
        read_counters(c);
        unsigned long long want[NCOUNTERS] = {want_kpacks, want_kunpacks, want_shadows, want_ipc, want_staged};
        for (int i = 0; i < NCOUNTERS; i++) {
            /* IPC and staging are asserted only where this test predicts
             * them: kernels mode with the fake driver (a real GPU may
             * refuse IPC and stage). */
            if (i >= 3 && (mode != M_KERNELS || !dev.fake_stats)) continue;
            CHECK(c[i] - c0[i] == want[i], "%s: %llu, expected %llu", counter_names[i], c[i] - c0[i], want[i]);
        }
        if (dev.fake_stats) {
            struct fake_cuda_stats f = dev_stats();
            unsigned long kp = f.kernel_packs - f0.kernel_packs, ku = f.kernel_unpacks - f0.kernel_unpacks;
            CHECK(kp == want_kpacks && ku == want_kunpacks, "fake: %lu pack and %lu unpack launches, expected %llu and %llu",
                  kp, ku, want_kpacks, want_kunpacks);
            CHECK(f.kernel_faults == 0, "fake: %lu kernels faulted", f.kernel_faults);
            CHECK(f.kernels_run == f.kernel_launches, "fake: %lu of %lu launches ran", f.kernels_run, f.kernel_launches);
        }
        if (rank == 0)
            printf("%s: kernel packs %llu, unpacks %llu, shadows %llu, ipc %llu, staged %llu (rank 0)\n", m,
                   c[0] - c0[0], c[1] - c0[1], c[2] - c0[2], c[3] - c0[3], c[4] - c0[4]);
        MPI_T_finalize();
    }
    MPI_Finalize();
    return report("accel device datatypes");
}
