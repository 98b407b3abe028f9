/* A stand-in for the CUDA driver (libcuda.so.1), for testing Axon's
 * device-buffer paths on machines without a GPU. Loaded by the library with
 * AXON_ACCEL_CUDA_LIBRARY=<path to this .so>; tests dlopen the same path to
 * allocate "device" memory and read the statistics.
 *
 * "Device memory" from cuMemAlloc is a memfd mapped twice: the address the
 * application gets is mapped PROT_NONE, so any CPU access to it (a memcpy,
 * process_vm_readv) faults exactly as it would on a GPU, and a second, hidden
 * read-write mapping is what the fake's copy functions use. Allocations are
 * kept in a registry, so cuPointerGetAttributes tells device from host
 * pointers as the real driver does. Managed memory is CPU-accessible (one
 * read-write mapping), as on real hardware. An IPC handle names the owner's
 * pid and memfd; another process on the node opens it through
 * /proc/<pid>/fd/<fd> and maps the same pages the same two ways (the real
 * driver refuses to open a handle in the process that made it; so does the
 * fake). Copies are memcpy; events report "not ready" on
 * their first query so pipelines really wait for them.
 *
 * Like the real driver, a synchronous copy from pageable host memory to
 * device memory returns before its data lands (the real one returns once
 * the source is in its DMA staging area): the fake keeps the data aside and
 * writes it when the legacy stream moves on (the next synchronous copy, a
 * copy on a blocking stream, cuStreamSynchronize of the legacy or a blocking
 * stream, cuCtxSynchronize, cuMemFree). Until then the device memory holds
 * the old bytes for copies on non-blocking streams and for other processes
 * reading it through IPC, as on a GPU. CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on an
 * allocation makes such copies into it complete before they return.
 *
 * Axon's GPU kernels are emulated on the host (see "GPU kernels" below:
 * module load, function handles, launches that run in stream order), and
 * a dma-buf export hands out a duplicate of an allocation's memfd.
 *
 * FAKE_CUDA_DEVICES=0 makes the fake report no device (cuInit fails like a
 * driver without GPU); FAKE_CUDA_KERNELS=0 makes it refuse the kernel
 * module, FAKE_CUDA_DMABUF=0 deny dma-buf support. */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Counters the tests read through fake_cuda_stats(). */
#include "fake_cuda_stats.h"

enum kind { K_DEVICE = 1, K_MANAGED, K_PINNED, K_IPC_MAPPED };

struct alloc {
    uintptr_t base;
    uintptr_t shadow;  /* read-write view of device memory for the copy functions (== base for managed) */
    size_t size;
    int fd;
    int kind;
    int sync_memops;
    unsigned long long id;
    struct alloc *next;
};

/* Pageable-to-device copies not yet written (in issue order). */
struct pending_write {
    uintptr_t to;  /* read-write view */
    size_t n;
    struct pending_write *next;
    unsigned char data[];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static unsigned long long next_id = 1;
static struct fake_cuda_stats stats;
static struct pending_write *pending_head, **pending_tail = &pending_head;
static int initialized;
static int primary_active;
static __thread CUcontext current;
#define FAKE_CTX ((CUcontext)(uintptr_t)0xC0DE)

struct fake_ipc {
    char magic[8];
    int32_t pid;
    int32_t fd;
    uint64_t size;
    uint64_t id;
};

static struct alloc *find_locked(uintptr_t p)
{
    for (struct alloc *a = allocs; a; a = a->next)
        if (p >= a->base && p < a->base + (a->size ? a->size : 1))
            return a;
    return NULL;
}

static struct alloc *add_locked(uintptr_t base, uintptr_t shadow, size_t size, int fd, int kind)
{
    struct alloc *a = calloc(1, sizeof *a);
    a->base = base;
    a->shadow = shadow;
    a->size = size;
    a->fd = fd;
    a->kind = kind;
    a->id = next_id++;
    a->next = allocs;
    allocs = a;
    stats.live_allocations++;
    return a;
}

/* The legacy stream moved on: deferred writes land. */
static void flush_pending_locked(void)
{
    while (pending_head) {
        struct pending_write *w = pending_head;
        pending_head = w->next;
        memcpy((void *)w->to, w->data, w->n);
        free(w);
    }
    pending_tail = &pending_head;
}

/* GPU kernels below: runs every launch the streams hold. */
static void run_all_streams_locked(void);

static void remove_locked(struct alloc *gone)
{
    for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
        if (*pp == gone) {
            *pp = gone->next;
            free(gone);
            stats.live_allocations--;
            return;
        }
    }
}

static int devices(void)
{
    const char *e = getenv("FAKE_CUDA_DEVICES");
    return e ? atoi(e) : 1;
}

EXPORT void fake_cuda_stats(struct fake_cuda_stats *out)
{
    pthread_mutex_lock(&mu);
    *out = stats;
    pthread_mutex_unlock(&mu);
}

EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    if (devices() <= 0)
        return CUDA_ERROR_NO_DEVICE;
    initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }

EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *n = devices();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    primary_active = 1;
    *c = FAKE_CTX;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    (void)d;
    *flags = 0;
    *active = primary_active;
    return CUDA_SUCCESS;
}

/* The application's view (PROT_NONE unless CPU-accessible) and the fake's
 * read-write view of one memfd. */
static int map_twice(int fd, size_t len, int cpu_accessible, void **app, void **rw)
{
    *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*rw == MAP_FAILED) return 0;
    if (cpu_accessible) { *app = *rw; return 1; }
    *app = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
    if (*app == MAP_FAILED) { munmap(*rw, len); return 0; }
    return 1;
}

static void unmap_twice(struct alloc *a)
{
    size_t len = a->size ? a->size : 1;
    /* Under unified addressing the real driver never hands a freed device
     * address to a host allocation: keep the range reserved (inaccessible)
     * instead of unmapping it, so malloc cannot land there either. */
    if (a->kind == K_DEVICE)
        mmap((void *)a->base, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    else
        munmap((void *)a->base, len);
    if (a->shadow != a->base) munmap((void *)a->shadow, len);
}

static CUresult alloc_shared(CUdeviceptr *p, size_t size, int kind)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    size_t len = size ? size : 1;
    int fd = memfd_create("fake_cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    void *m = MAP_FAILED, *rw = MAP_FAILED;
    if (!map_twice(fd, len, kind == K_MANAGED, &m, &rw)) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    pthread_mutex_lock(&mu);
    add_locked((uintptr_t)m, (uintptr_t)rw, size, fd, kind);
    pthread_mutex_unlock(&mu);
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t size) { return alloc_shared(p, size, K_DEVICE); }

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags)
{
    (void)flags;
    return alloc_shared(p, size, K_MANAGED);
}

EXPORT CUresult cuMemFree(CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    /* cuMemFree waits for the device. */
    run_all_streams_locked();
    flush_pending_locked();
    struct alloc *a = find_locked((uintptr_t)p);
    if (!a || a->base != (uintptr_t)p || (a->kind != K_DEVICE && a->kind != K_MANAGED)) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    unmap_twice(a);
    close(a->fd);
    remove_locked(a);
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost(void **p, size_t size)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *p = malloc(size ? size : 1);
    pthread_mutex_lock(&mu);
    add_locked((uintptr_t)*p, (uintptr_t)*p, size, -1, K_PINNED);
    stats.pinned_allocs++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (!a || a->kind != K_PINNED) { pthread_mutex_unlock(&mu); return CUDA_ERROR_INVALID_VALUE; }
    remove_locked(a);
    pthread_mutex_unlock(&mu);
    free(p);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostRegister(void *p, size_t size, unsigned flags) { (void)p; (void)size; (void)flags; return CUDA_SUCCESS; }
EXPORT CUresult cuMemHostUnregister(void *p) { (void)p; return CUDA_SUCCESS; }

EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    if (a && a->kind != K_PINNED) {
        if (base) *base = a->base;
        if (size) *size = a->size;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    stats.pointer_queries++;
    struct alloc *a = find_locked((uintptr_t)p);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = !a ? 0 : a->kind == K_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned char *)data[i] = a && a->kind == K_MANAGED;  /* a bool, as in the real driver */
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = a ? a->base : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[i] = a ? a->size : 0;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data[i] = a ? 0 : -1;
            break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data[i] = a ? a->id : 0;
            break;
        default:
            pthread_mutex_unlock(&mu);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

/* Where the fake reads or writes `p`: the read-write view of device memory. */
static void *cpu_view_locked(uintptr_t p, int *is_device)
{
    struct alloc *a = find_locked(p);
    *is_device = a && a->kind != K_PINNED;
    return a ? (void *)(a->shadow + (p - a->base)) : (void *)p;
}

/* What a stream handle is: NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * are pseudo-handles; others come from cuStreamCreate. A created stream
 * holds the kernel launches not run yet (see "GPU kernels" below). */
struct launch;
struct fake_stream {
    unsigned flags;
    struct launch *queue, **queue_tail;
    struct fake_stream *next;
};
static struct fake_stream *streams;
static int pseudo_stream(CUstream s) { return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }
static int blocking_stream(CUstream s)
{
    if (pseudo_stream(s)) return 1;
    return !(((struct fake_stream *)s)->flags & CU_STREAM_NON_BLOCKING);
}

/* ---- GPU kernels ------------------------------------------------------------
 * Axon's kernels (src/accel/kernels.cu) emulated on the host: the module is
 * Axon's embedded fatbin (checked by its magic only), each kernel name it
 * has gets a function handle, and cuLaunchKernel reads the same parameter
 * block the GPU would (the records of src/accel/kernel_records.h) and runs
 * the kernel's semantics on the fake device memory.
 *
 * A launch on a created stream runs later, in stream order, when that
 * stream synchronises: cuStreamSynchronize of it, an event recorded on it
 * seen complete, the next copy queued on it; and work on the legacy stream
 * (synchronous copies, cuMemsetD8, cuMemFree, cuCtxSynchronize) runs what
 * the blocking streams hold first. So a caller that reads the result, or
 * lets another process read it through IPC, before waiting for the kernel
 * sees the old bytes, as on a GPU. Every byte a kernel touches must lie in
 * one allocation the fake knows (device, managed, pinned, IPC-mapped): else
 * the launch is a fault, reported on stderr, counted, and the next
 * synchronisation returns CUDA_ERROR_ILLEGAL_ADDRESS (sticky, as a real
 * context dies). FAKE_CUDA_KERNELS=0 makes cuModuleLoadData fail (a GPU
 * the fatbin has no code for). */
#include "accel/kernel_records.h"

enum fn_kind { FN_PACK, FN_UNPACK, FN_REDUCE, FN_REDUCE_LAYOUT };
/* Storage types and op codes of kernels.cu, in its order. */
enum { S_I8, S_I16, S_I32, S_I64, S_U8, S_U16, S_U32, S_U64, S_F32, S_F64, S_C32, S_C64, S_PFI, S_PDI, S_PLI,
       S_PII, S_PSI, S_PFF, S_PDD, S_COUNT };
static const char *const storage_names[S_COUNT] = {"i8",  "i16", "i32", "i64", "u8",  "u16", "u32",
                                                   "u64", "f32", "f64", "c32", "c64", "pfi", "pdi",
                                                   "pli", "pii", "psi", "pff", "pdd"};
static const size_t storage_size[S_COUNT] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16, 8, 16, 16, 8, 8, 8, 16};
enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR, OP_MINLOC, OP_MAXLOC };

struct fake_function {
    char name[32];
    int kind;
    int storage;
};
static struct fake_function functions[2 + 2 * S_COUNT];
static int function_count;
static int kernel_fault;  /* sticky: a kernel touched memory it could not reach */

struct fake_module { char magic[8]; };

struct launch {
    const struct fake_function *fn;
    uintptr_t a, b;  /* first and second pointer parameter */
    Layout layout;   /* pack, unpack, reduce_layout */
    unsigned long long n;  /* reduce: elements */
    int arg;         /* per_thread, or the op code */
    struct launch *next;
};

static void init_functions_locked(void)
{
    if (function_count) return;
    struct fake_function *f = functions;
    snprintf(f->name, sizeof f->name, "axon_pack"); f->kind = FN_PACK; f++;
    snprintf(f->name, sizeof f->name, "axon_unpack"); f->kind = FN_UNPACK; f++;
    for (int s = 0; s < S_COUNT; s++) {
        snprintf(f->name, sizeof f->name, "axon_reduce_%s", storage_names[s]);
        f->kind = FN_REDUCE; f->storage = s; f++;
        snprintf(f->name, sizeof f->name, "axon_reduce_layout_%s", storage_names[s]);
        f->kind = FN_REDUCE_LAYOUT; f->storage = s; f++;
    }
    function_count = (int)(f - functions);
}

/* The fake's read-write view of [p, p + n) when it lies in one allocation. */
static unsigned char *kernel_view_locked(uintptr_t p, size_t n)
{
    struct alloc *a = find_locked(p);
    if (!a || n > a->size || p - a->base > a->size - n) return NULL;
    return (unsigned char *)(a->shadow + (p - a->base));
}

/* The view of `rows` runs of `length` bytes, `stride` apart, from `p`:
 * checks the whole footprint once and returns the view of `p`. */
static unsigned char *runs_view_locked(uintptr_t p, unsigned long long length, unsigned long long rows,
                                       long long stride)
{
    long long last = rows > 1 ? (long long)(rows - 1) * stride : 0;
    long long lo = last < 0 ? last : 0, hi = (last > 0 ? last : 0) + (long long)length;
    unsigned char *v = kernel_view_locked(p + (uintptr_t)lo, (size_t)(hi - lo));
    return v ? v - lo : NULL;
}

static long long unit_offset(const Layout *l, unsigned long long u)
{
    return (long long)(u / l->reps) * l->extent + (long long)(u % l->reps) * l->rep_stride;
}

/* inout = in op inout for one element of storage s (kernels.cu's formulas:
 * `in` is the left operand, integer + and * wrap in the unsigned type). */
#define INT_OPS(T, W)                                                          \
    {                                                                          \
        T x, y;                                                                \
        memcpy(&x, in, sizeof x);                                              \
        memcpy(&y, inout, sizeof y);                                           \
        switch (op) {                                                          \
        case OP_SUM: y = (T)((W)x + (W)y); break;                              \
        case OP_PROD: y = (T)((W)x * (W)y); break;                             \
        case OP_MIN: y = x < y ? x : y; break;                                 \
        case OP_MAX: y = x > y ? x : y; break;                                 \
        case OP_LAND: y = (T)((x != 0) & (y != 0)); break;                     \
        case OP_LOR: y = (T)((x != 0) | (y != 0)); break;                      \
        case OP_LXOR: y = (T)((x != 0) ^ (y != 0)); break;                     \
        case OP_BAND: y = (T)(x & y); break;                                   \
        case OP_BOR: y = (T)(x | y); break;                                    \
        case OP_BXOR: y = (T)(x ^ y); break;                                   \
        default: return;                                                       \
        }                                                                      \
        memcpy(inout, &y, sizeof y);                                           \
        return;                                                                \
    }
#define FLOAT_OPS(T)                                                           \
    {                                                                          \
        T x, y;                                                                \
        memcpy(&x, in, sizeof x);                                              \
        memcpy(&y, inout, sizeof y);                                           \
        switch (op) {                                                          \
        case OP_SUM: y = x + y; break;                                         \
        case OP_PROD: y = x * y; break;                                        \
        case OP_MIN: y = x < y ? x : y; break;                                 \
        case OP_MAX: y = x > y ? x : y; break;                                 \
        default: return;                                                       \
        }                                                                      \
        memcpy(inout, &y, sizeof y);                                           \
        return;                                                                \
    }
/* C99 complex multiplication is gcc's __mulsc3 / __muldc3 (Annex G), what
 * kernels.cu reproduces. */
#define COMPLEX_OPS(T)                                                         \
    {                                                                          \
        T _Complex x, y;                                                       \
        memcpy(&x, in, sizeof x);                                              \
        memcpy(&y, inout, sizeof y);                                           \
        switch (op) {                                                          \
        case OP_SUM: y = x + y; break;                                         \
        case OP_PROD: y = x * y; break;                                        \
        default: return;                                                       \
        }                                                                      \
        memcpy(inout, &y, sizeof y);                                           \
        return;                                                                \
    }
/* MINLOC / MAXLOC: value at 0, index at `at`; only the members are written. */
#define PAIR_OPS(V, I, at)                                                     \
    {                                                                          \
        V xv, yv;                                                              \
        I xi, yi;                                                              \
        memcpy(&xv, in, sizeof xv);                                            \
        memcpy(&yv, inout, sizeof yv);                                         \
        memcpy(&xi, in + (at), sizeof xi);                                     \
        memcpy(&yi, inout + (at), sizeof yi);                                  \
        if (op != OP_MINLOC && op != OP_MAXLOC) return;                        \
        int better = op == OP_MAXLOC ? xv > yv : xv < yv;                      \
        if (better) {                                                          \
            memcpy(inout, &xv, sizeof xv);                                     \
            memcpy(inout + (at), &xi, sizeof xi);                              \
        } else if (xv == yv && xi < yi) {                                      \
            memcpy(inout + (at), &xi, sizeof xi);                              \
        }                                                                      \
        return;                                                                \
    }

static void reduce_element(int s, int op, const unsigned char *in, unsigned char *inout)
{
    switch (s) {
    case S_I8: INT_OPS(signed char, unsigned)
    case S_I16: INT_OPS(short, unsigned)
    case S_I32: INT_OPS(int, unsigned)
    case S_I64: INT_OPS(long long, unsigned long long)
    case S_U8: INT_OPS(unsigned char, unsigned)
    case S_U16: INT_OPS(unsigned short, unsigned)
    case S_U32: INT_OPS(unsigned, unsigned)
    case S_U64: INT_OPS(unsigned long long, unsigned long long)
    case S_F32: FLOAT_OPS(float)
    case S_F64: FLOAT_OPS(double)
    case S_C32: COMPLEX_OPS(float)
    case S_C64: COMPLEX_OPS(double)
    case S_PFI: PAIR_OPS(float, int, 4)
    case S_PDI: PAIR_OPS(double, int, 8)
    case S_PLI: PAIR_OPS(long long, int, 8)
    case S_PII: PAIR_OPS(int, int, 4)
    case S_PSI: PAIR_OPS(short, int, 4)
    case S_PFF: PAIR_OPS(float, float, 4)
    case S_PDD: PAIR_OPS(double, double, 8)
    default: return;
    }
}

/* Runs one launch; 0, or -1 on a fault (nothing more is written then). */
static int run_launch_locked(const struct launch *k)
{
    const struct fake_function *fn = k->fn;
    if (fn->kind == FN_REDUCE) {
        size_t size = storage_size[fn->storage], bytes = (size_t)k->n * size;
        if (k->n == 0) return 0;
        unsigned char *inout = kernel_view_locked(k->a, bytes);
        const unsigned char *in = kernel_view_locked(k->b, bytes);
        if (!inout || !in) return -1;
        for (unsigned long long i = 0; i < k->n; i++) reduce_element(fn->storage, k->arg, in + i * size, inout + i * size);
        return 0;
    }
    const Layout *l = &k->layout;
    const unsigned char *pieces = l->piece_count ? kernel_view_locked((uintptr_t)l->pieces, l->piece_count * sizeof(Piece)) : NULL;
    if (l->piece_count && !pieces) return -1;
    if (l->reps == 0 && l->units) return -1;  /* a division by zero on the GPU */
    for (unsigned long long u = 0; u < l->units; u++) {
        const long long user_unit = unit_offset(l, u);
        for (unsigned long long b = 0; b < l->piece_count; b++) {
            Piece pc;
            memcpy(&pc, pieces + b * sizeof pc, sizeof pc);
            if (pc.length == 0 || pc.count == 0) continue;
            uintptr_t at = k->a + (uintptr_t)(user_unit + pc.offset);
            if (fn->kind == FN_REDUCE_LAYOUT) {
                unsigned char *inout = runs_view_locked(at, pc.length, pc.count, pc.stride);
                const unsigned char *in = runs_view_locked(k->b + (uintptr_t)(user_unit + pc.offset), pc.length, pc.count,
                                                           pc.stride);
                if (!inout || !in) return -1;
                size_t size = storage_size[fn->storage];
                for (unsigned long long r = 0; r < pc.count; r++)
                    for (unsigned long long c = 0; c + size <= pc.length; c += size)
                        reduce_element(fn->storage, k->arg, in + (long long)r * pc.stride + c,
                                       inout + (long long)r * pc.stride + c);
                continue;
            }
            /* pack: a = packed, b = user; unpack: a = user, b = packed. */
            uintptr_t user = (fn->kind == FN_PACK ? k->b : k->a) + (uintptr_t)(user_unit + pc.offset);
            uintptr_t packed = (fn->kind == FN_PACK ? k->a : k->b) + (uintptr_t)(u * l->unit_size + pc.packed);
            unsigned char *uv = runs_view_locked(user, pc.length, pc.count, pc.stride);
            unsigned char *pv = kernel_view_locked(packed, (size_t)(pc.length * pc.count));
            if (!uv || !pv) return -1;
            long long stride = pc.count > 1 ? pc.stride : 0;
            for (unsigned long long r = 0; r < pc.count; r++) {
                if (fn->kind == FN_PACK) memmove(pv + r * pc.length, uv + (long long)r * stride, pc.length);
                else memmove(uv + (long long)r * stride, pv + r * pc.length, pc.length);
            }
        }
    }
    return 0;
}

static void run_one_locked(struct launch *k)
{
    stats.kernels_run++;
    if (run_launch_locked(k) != 0) {
        stats.kernel_faults++;
        kernel_fault = 1;
        fprintf(stderr, "fake_cuda: kernel %s touched memory outside any device allocation\n", k->fn->name);
    }
    free(k);
}

/* Runs what a created stream holds, in launch order. */
static void run_stream_locked(struct fake_stream *fs)
{
    while (fs->queue) {
        struct launch *k = fs->queue;
        fs->queue = k->next;
        run_one_locked(k);
    }
    fs->queue_tail = &fs->queue;
}

/* The legacy stream moves on: what the blocking streams hold runs first. */
static void run_blocking_streams_locked(void)
{
    for (struct fake_stream *fs = streams; fs; fs = fs->next)
        if (!(fs->flags & CU_STREAM_NON_BLOCKING)) run_stream_locked(fs);
}

static void run_all_streams_locked(void)
{
    for (struct fake_stream *fs = streams; fs; fs = fs->next) run_stream_locked(fs);
}

/* Work on stream s starts: what precedes it in stream order is done. */
static void stream_moves_on_locked(CUstream s)
{
    if (pseudo_stream(s)) {
        run_blocking_streams_locked();
        flush_pending_locked();
        return;
    }
    run_stream_locked((struct fake_stream *)s);
    if (blocking_stream(s)) flush_pending_locked();
}

static CUresult sticky_locked(void) { return kernel_fault ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS; }

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    const char *e = getenv("FAKE_CUDA_KERNELS");
    if (e && atoi(e) == 0) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    uint32_t magic = 0;
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&magic, image, sizeof magic);
    if (magic != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;  /* not a fatbin */
    struct fake_module *fm = malloc(sizeof *fm);
    memcpy(fm->magic, "FAKEMODL", 8);
    pthread_mutex_lock(&mu);
    init_functions_locked();
    stats.module_loads++;
    pthread_mutex_unlock(&mu);
    *m = (CUmodule)fm;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
    struct fake_module *fm = (struct fake_module *)m;
    if (!fm || memcmp(fm->magic, "FAKEMODL", 8) != 0) return CUDA_ERROR_INVALID_HANDLE;
    memset(fm->magic, 0, sizeof fm->magic);
    free(fm);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    struct fake_module *fm = (struct fake_module *)m;
    if (!fm || memcmp(fm->magic, "FAKEMODL", 8) != 0) return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < function_count; i++)
        if (strcmp(functions[i].name, name) == 0) {
            *f = (CUfunction)&functions[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    const struct fake_function *fn = (const struct fake_function *)f;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (fn < functions || fn >= functions + function_count) return CUDA_ERROR_INVALID_HANDLE;
    /* Axon passes its parameters as kernelParams; a real GPU caps blocks at 1024 threads. */
    if (!params || extra || !gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024 ||
        shared > 48 * 1024)
        return CUDA_ERROR_INVALID_VALUE;
    struct launch *k = calloc(1, sizeof *k);
    k->fn = fn;
    memcpy(&k->a, params[0], sizeof(void *));
    memcpy(&k->b, params[1], sizeof(void *));
    if (fn->kind == FN_REDUCE) memcpy(&k->n, params[2], sizeof k->n);
    else memcpy(&k->layout, params[2], sizeof k->layout);
    memcpy(&k->arg, params[3], sizeof k->arg);
    pthread_mutex_lock(&mu);
    stats.kernel_launches++;
    if (fn->kind == FN_PACK) stats.kernel_packs++;
    else if (fn->kind == FN_UNPACK) stats.kernel_unpacks++;
    else stats.kernel_reductions++;
    /* The kernel starts after the legacy stream's earlier work (blocking
     * streams) and after what its own stream holds. */
    if (blocking_stream(s)) flush_pending_locked();
    if (pseudo_stream(s)) {
        run_blocking_streams_locked();
        run_one_locked(k);
    } else {
        struct fake_stream *fs = (struct fake_stream *)s;
        *fs->queue_tail = k;
        fs->queue_tail = &k->next;
    }
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

/* async: 0 for the synchronous (legacy stream) copies, else the stream. */
static CUresult do_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, int async, CUstream stream)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&mu);
    /* Work on the legacy stream, or on a blocking stream, starts after what
     * the legacy stream holds; a non-blocking stream does not wait. Either
     * starts after the kernels its stream holds. */
    stream_moves_on_locked(async ? stream : NULL);
    int d, s;
    void *to = cpu_view_locked((uintptr_t)dst, &d);
    const void *from = cpu_view_locked((uintptr_t)src, &s);
    struct alloc *source = find_locked((uintptr_t)src);
    struct alloc *target = find_locked((uintptr_t)dst);
    if (d && s) { stats.copies_dtod++; stats.bytes_dtod += n; }
    else if (d) stats.copies_htod++;
    else if (s) stats.copies_dtoh++;
    else stats.copies_htoh++;
    if (d != s && !(d ? source : target)) stats.pageable_copies++;
    if (async) stats.async_copies++;
    if (!async && d && !source && target->kind == K_DEVICE && !target->sync_memops && n > 0) {
        /* Pageable source: the call returns before the data lands. */
        struct pending_write *w = malloc(sizeof *w + n);
        w->to = (uintptr_t)to;
        w->n = n;
        w->next = NULL;
        memcpy(w->data, from, n);
        *pending_tail = w;
        pending_tail = &w->next;
        stats.deferred_copies++;
        pthread_mutex_unlock(&mu);
        return CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    memmove(to, from, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return do_copy(dst, src, n, 0, NULL); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return do_copy(dst, src, n, 1, s); }
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) { return do_copy(dst, (CUdeviceptr)(uintptr_t)src, n, 0, NULL); }
EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { return do_copy((CUdeviceptr)(uintptr_t)dst, src, n, 0, NULL); }
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) { return do_copy(dst, src, n, 0, NULL); }
EXPORT CUresult cuCtxSynchronize(void)
{
    pthread_mutex_lock(&mu);
    run_all_streams_locked();
    flush_pending_locked();
    CUresult rc = sticky_locked();
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr, CUdeviceptr p)
{
    if (attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (a && a->kind == K_DEVICE) a->sync_memops = *(const unsigned *)value != 0;
    pthread_mutex_unlock(&mu);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
    int d;
    pthread_mutex_lock(&mu);
    stream_moves_on_locked(NULL);
    void *to = cpu_view_locked((uintptr_t)dst, &d);
    pthread_mutex_unlock(&mu);
    memset(to, v, n);
    return CUDA_SUCCESS;
}

/* Streams and events: copies are done when issued (kernels when their
 * stream synchronises), but an event reports "not ready" on its first query
 * after each record. */
struct fake_event { int queries_left; CUstream stream; };

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_stream *fs = calloc(1, sizeof *fs);
    fs->flags = flags;
    fs->queue_tail = &fs->queue;
    pthread_mutex_lock(&mu);
    fs->next = streams;
    streams = fs;
    pthread_mutex_unlock(&mu);
    *s = (CUstream)fs;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy(CUstream s)
{
    if (pseudo_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_stream *fs = (struct fake_stream *)s;
    pthread_mutex_lock(&mu);
    run_stream_locked(fs);  /* the driver lets queued work finish */
    for (struct fake_stream **pp = &streams; *pp; pp = &(*pp)->next)
        if (*pp == fs) { *pp = fs->next; break; }
    pthread_mutex_unlock(&mu);
    free(fs);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    pthread_mutex_lock(&mu);
    stream_moves_on_locked(s);
    CUresult rc = sticky_locked();
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)calloc(1, sizeof(struct fake_event));
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(CUevent e) { free(e); return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    struct fake_event *fe = (struct fake_event *)e;
    pthread_mutex_lock(&mu);
    fe->queries_left = 1;
    fe->stream = s;
    stats.event_records++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}
/* The event's stream reached it: what it held before the record is done
 * (the fake runs all it holds: later work may finish early, never late). */
static CUresult event_reached_locked(struct fake_event *fe)
{
    if (!pseudo_stream(fe->stream)) run_stream_locked((struct fake_stream *)fe->stream);
    return sticky_locked();
}
EXPORT CUresult cuEventQuery(CUevent e)
{
    struct fake_event *fe = (struct fake_event *)e;
    pthread_mutex_lock(&mu);
    CUresult rc = CUDA_ERROR_NOT_READY;
    if (fe->queries_left > 0) fe->queries_left--;
    else rc = event_reached_locked(fe);
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuEventSynchronize(CUevent e)
{
    struct fake_event *fe = (struct fake_event *)e;
    pthread_mutex_lock(&mu);
    fe->queries_left = 0;
    CUresult rc = event_reached_locked(fe);
    pthread_mutex_unlock(&mu);
    return rc;
}

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (!a || a->kind != K_DEVICE || a->base != (uintptr_t)p) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct fake_ipc f = {{'F', 'A', 'K', 'E', 'C', 'U', 'D', 'A'}, (int32_t)getpid(), a->fd, a->size, a->id};
    memset(h, 0, sizeof *h);
    memcpy(h, &f, sizeof f);
    stats.ipc_exports++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle h, unsigned flags)
{
    (void)flags;
    struct fake_ipc f;
    memcpy(&f, &h, sizeof f);
    if (memcmp(f.magic, "FAKECUDA", 8) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (f.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  /* as the real driver: not in the exporting process */
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)f.pid, (int)f.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    size_t len = f.size ? f.size : 1;
    void *m, *rw;
    if (!map_twice(fd, len, 0, &m, &rw)) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    pthread_mutex_lock(&mu);
    add_locked((uintptr_t)m, (uintptr_t)rw, f.size, fd, K_IPC_MAPPED);
    stats.ipc_opens++;
    pthread_mutex_unlock(&mu);
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (!a || a->kind != K_IPC_MAPPED) { pthread_mutex_unlock(&mu); return CUDA_ERROR_INVALID_VALUE; }
    unmap_twice(a);
    close(a->fd);
    remove_locked(a);
    stats.ipc_closes++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

/* dma-buf: the "dma-buf" of a device allocation is a duplicate of its memfd,
 * so a test can read the device bytes through it at the offsets a dma-buf
 * would have. Limitation: only ranges that start at an allocation's base
 * (the fd's offset 0); Axon exports whole allocations. The device supports
 * dma-buf unless FAKE_CUDA_DMABUF=0. */
static int dmabuf_supported(void)
{
    const char *e = getenv("FAKE_CUDA_DMABUF");
    return !e || atoi(e) != 0;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice d)
{
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (d < 0 || d >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    if (attr != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) return CUDA_ERROR_INVALID_VALUE;  /* nothing else is asked */
    *value = dmabuf_supported();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t size, CUmemRangeHandleType type,
                                              unsigned long long flags)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0 || !handle || size == 0 ||
        (uintptr_t)p % page != 0 || size % page != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dmabuf_supported()) return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    CUresult rc = CUDA_SUCCESS;
    if (!a || a->kind != K_DEVICE || size > (a->size + page - 1) / page * page) rc = CUDA_ERROR_INVALID_VALUE;
    else if (a->base != (uintptr_t)p) rc = CUDA_ERROR_NOT_SUPPORTED;
    int fd = -1;
    if (rc == CUDA_SUCCESS && (fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0)) < 0) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        *(int *)handle = fd;
        stats.dmabuf_exports++;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

EXPORT CUresult cuGetErrorString(CUresult rc, const char **s)
{
    *s = rc == CUDA_SUCCESS ? "no error" : "fake CUDA error";
    return CUDA_SUCCESS;
}
