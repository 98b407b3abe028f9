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
 * Axon's GPU kernels are emulated on the host (fake_cuda_kernels.inc:
 * module load, function handles, launches that run in stream order), and
 * a dma-buf export hands out a duplicate of an allocation's memfd.
 *
 * FAKE_CUDA_DEVICES=0 makes the fake report no device (cuInit fails like a
 * driver without GPU), N > 1 several devices (fake_cuda_devices.c: names,
 * UUIDs, PCI addresses, peer access for axon_info --doctor);
 * FAKE_CUDA_KERNELS=0 makes it refuse the kernel module, FAKE_CUDA_DMABUF=0
 * deny dma-buf support, FAKE_CUDA_STREAMS=0 refuse to create streams,
 * FAKE_CUDA_SYNC_MEMOPS=0 refuse CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
 * FAKE_CUDA_REUSE_FREED=1 give a freed device address to the next
 * allocation of the same size (with a new buffer id). As the
 * real driver, calls that act on "the current context" (allocations,
 * copies, IPC handles, pointer attributes, the legacy stream) fail with
 * CUDA_ERROR_INVALID_CONTEXT on a thread without one. Every entry point
 * counts its calls (fake_cuda_calls). */
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

#include "fake_cuda_internal.h"

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

static int devices(void) { return fake_devices(); }
int fake_devices(void) { return fake_knob("FAKE_CUDA_DEVICES", 1); }
int fake_initialized(void) { return initialized; }
int fake_knob(const char *name, int fallback)
{
    const char *e = getenv(name);
    return e && *e ? atoi(e) : fallback;
}

unsigned long fake_calls[FAKE_CALL_COUNT];
#define FAKE_CALL_NAME(name) #name,
static const char *const fake_call_names[FAKE_CALL_COUNT] = {FAKE_CUDA_CALLS(FAKE_CALL_NAME)};

/* The per-entry-point call counts: fills names[] and counts[] (up to max
 * entries) and returns how many entry points there are. */
EXPORT int fake_cuda_calls(const char **names, unsigned long *counts, int max)
{
    for (int i = 0; i < FAKE_CALL_COUNT && i < max; i++) {
        names[i] = fake_call_names[i];
        counts[i] = __atomic_load_n(&fake_calls[i], __ATOMIC_RELAXED);
    }
    return FAKE_CALL_COUNT;
}

EXPORT void fake_cuda_stats(struct fake_cuda_stats *out)
{
    pthread_mutex_lock(&mu);
    *out = stats;
    out->pending_writes = 0;
    for (struct pending_write *w = pending_head; w; w = w->next) out->pending_writes++;
    pthread_mutex_unlock(&mu);
}

EXPORT CUresult cuInit(unsigned flags)
{
    COUNT(cuInit);
    (void)flags;
    if (devices() <= 0)
        return CUDA_ERROR_NO_DEVICE;
    initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    COUNT(cuDeviceGetCount);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *n = devices();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    COUNT(cuDeviceGet);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { COUNT(cuCtxGetCurrent); *c = current; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { COUNT(cuCtxSetCurrent); current = c; return CUDA_SUCCESS; }

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    COUNT(cuDevicePrimaryCtxRetain);
    (void)d;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    primary_active = 1;
    *c = FAKE_CTX;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    COUNT(cuDevicePrimaryCtxGetState);
    (void)d;
    *flags = 0;
    *active = primary_active;
    return CUDA_SUCCESS;
}

/* The application's view (PROT_NONE unless CPU-accessible) and the fake's
 * read-write view of one memfd. */
static int map_twice(int fd, size_t len, int cpu_accessible, void **app, void **rw)
{
    /* FAKE_CUDA_ALLOC_AT=<hex address>: the application's view goes there
     * (a test re-using addresses of host memory it has just unmapped). */
    const char *at = getenv("FAKE_CUDA_ALLOC_AT");
    void *hint = at && *at ? (void *)(uintptr_t)strtoull(at, NULL, 16) : NULL;
    if (hint) {  /* the fixed view first: the other one must not take its place */
        *app = mmap(hint, len, cpu_accessible ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                    fd, 0);
        if (*app == MAP_FAILED) return 0;
        *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (*rw == MAP_FAILED) { munmap(*app, len); return 0; }
        return 1;
    }
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

/* Freed device ranges (kept reserved, see unmap_twice), for
 * FAKE_CUDA_REUSE_FREED=1: a later cuMemAlloc of the same size takes the
 * most recently freed one, as the real driver commonly hands a freed
 * address out again (a test of what tells the new allocation from the old
 * one: its buffer id). */
struct freed_range { uintptr_t base; size_t len; struct freed_range *next; };
static struct freed_range *freed;

static int reuse_freed(int fd, size_t len, void **app, void **rw)
{
    struct freed_range **pp = &freed;
    pthread_mutex_lock(&mu);
    while (*pp && (*pp)->len != len) pp = &(*pp)->next;
    struct freed_range *f = *pp;
    if (f) *pp = f->next;
    pthread_mutex_unlock(&mu);
    if (!f) return 0;
    *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *app = *rw == MAP_FAILED ? MAP_FAILED : mmap((void *)f->base, len, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
    free(f);
    if (*app == MAP_FAILED) { if (*rw != MAP_FAILED) munmap(*rw, len); return 0; }
    return 1;
}

static CUresult alloc_shared(CUdeviceptr *p, size_t size, int kind)
{
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    size_t len = size ? size : 1;
    int fd = memfd_create("fake_cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    void *m = MAP_FAILED, *rw = MAP_FAILED;
    if (!(kind == K_DEVICE && fake_knob("FAKE_CUDA_REUSE_FREED", 0) && reuse_freed(fd, len, &m, &rw)) &&
        !map_twice(fd, len, kind == K_MANAGED, &m, &rw)) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&mu);
    add_locked((uintptr_t)m, (uintptr_t)rw, size, fd, kind);
    pthread_mutex_unlock(&mu);
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t size) { COUNT(cuMemAlloc); return alloc_shared(p, size, K_DEVICE); }

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags)
{
    COUNT(cuMemAllocManaged);
    (void)flags;
    return alloc_shared(p, size, K_MANAGED);
}

EXPORT CUresult cuMemFree(CUdeviceptr p)
{
    COUNT(cuMemFree);
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
    if (a->kind == K_DEVICE && fake_knob("FAKE_CUDA_REUSE_FREED", 0)) {
        struct freed_range *f = malloc(sizeof *f);
        f->base = a->base;
        f->len = a->size ? a->size : 1;
        f->next = freed;
        freed = f;
    }
    remove_locked(a);
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost(void **p, size_t size)
{
    COUNT(cuMemAllocHost);
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
    COUNT(cuMemFreeHost);
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (!a || a->kind != K_PINNED) { pthread_mutex_unlock(&mu); return CUDA_ERROR_INVALID_VALUE; }
    remove_locked(a);
    pthread_mutex_unlock(&mu);
    free(p);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostRegister(void *p, size_t size, unsigned flags) { COUNT(cuMemHostRegister); (void)p; (void)size; (void)flags; return CUDA_SUCCESS; }
EXPORT CUresult cuMemHostUnregister(void *p) { COUNT(cuMemHostUnregister); (void)p; return CUDA_SUCCESS; }

EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    COUNT(cuMemGetAddressRange);
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
    COUNT(cuPointerGetAttributes);
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
 * holds the kernel launches not run yet (see fake_cuda_kernels.inc). */
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

/* The kernel emulation (module load, function handles, launches, the
 * kernels' semantics): fake_cuda_kernels.inc. */
#include "fake_cuda_kernels.inc"

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

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { COUNT(cuMemcpy); return do_copy(dst, src, n, 0, NULL); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { COUNT(cuMemcpyAsync); return do_copy(dst, src, n, 1, s); }
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) { COUNT(cuMemcpyHtoD); return do_copy(dst, (CUdeviceptr)(uintptr_t)src, n, 0, NULL); }
EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { COUNT(cuMemcpyDtoH); return do_copy((CUdeviceptr)(uintptr_t)dst, src, n, 0, NULL); }
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) { COUNT(cuMemcpyDtoD); return do_copy(dst, src, n, 0, NULL); }
EXPORT CUresult cuCtxSynchronize(void)
{
    COUNT(cuCtxSynchronize);
    pthread_mutex_lock(&mu);
    run_all_streams_locked();
    flush_pending_locked();
    CUresult rc = sticky_locked();
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr, CUdeviceptr p)
{
    COUNT(cuPointerSetAttribute);
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_knob("FAKE_CUDA_SYNC_MEMOPS", 1)) return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&mu);
    struct alloc *a = find_locked((uintptr_t)p);
    if (a && a->kind == K_DEVICE) a->sync_memops = *(const unsigned *)value != 0;
    pthread_mutex_unlock(&mu);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
    COUNT(cuMemsetD8);
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
    COUNT(cuStreamCreate);
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_knob("FAKE_CUDA_STREAMS", 1)) return CUDA_ERROR_OUT_OF_MEMORY;
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
    COUNT(cuStreamDestroy);
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
/* The gate (fake_cuda_gate): while a test holds it closed, waits for the
 * GPU (cuStreamSynchronize, cuEventSynchronize) block and cuEventQuery
 * answers "not ready", so a test can see what other threads can do while
 * one waits for its copy. */
static int gate_closed, gate_waiters, gate_polls;

static void pass_gate(void)
{
    if (!__atomic_load_n(&gate_closed, __ATOMIC_ACQUIRE)) return;
    __atomic_fetch_add(&gate_waiters, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&gate_closed, __ATOMIC_ACQUIRE)) usleep(100);
    __atomic_fetch_sub(&gate_waiters, 1, __ATOMIC_ACQ_REL);
}

/* close: 1 closes the gate, 0 opens it, -1 leaves it. Returns how many
 * threads block at it, plus 1 once an event was polled while closed. */
EXPORT int fake_cuda_gate(int close)
{
    if (close == 1) __atomic_store_n(&gate_polls, 0, __ATOMIC_RELEASE);
    if (close >= 0) __atomic_store_n(&gate_closed, close, __ATOMIC_RELEASE);
    return __atomic_load_n(&gate_waiters, __ATOMIC_ACQUIRE) + (__atomic_load_n(&gate_polls, __ATOMIC_ACQUIRE) > 0);
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    COUNT(cuStreamSynchronize);
    pass_gate();
    /* A pseudo-stream is the current context's. */
    if (pseudo_stream(s) && !current) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&mu);
    stream_moves_on_locked(s);
    CUresult rc = sticky_locked();
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    COUNT(cuEventCreate);
    (void)flags;
    *e = (CUevent)calloc(1, sizeof(struct fake_event));
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(CUevent e) { COUNT(cuEventDestroy); free(e); return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    COUNT(cuEventRecord);
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
    COUNT(cuEventQuery);
    struct fake_event *fe = (struct fake_event *)e;
    if (__atomic_load_n(&gate_closed, __ATOMIC_ACQUIRE)) {
        __atomic_fetch_add(&gate_polls, 1, __ATOMIC_ACQ_REL);
        usleep(100);
        return CUDA_ERROR_NOT_READY;
    }
    pthread_mutex_lock(&mu);
    CUresult rc = CUDA_ERROR_NOT_READY;
    if (fe->queries_left > 0) fe->queries_left--;
    else rc = event_reached_locked(fe);
    pthread_mutex_unlock(&mu);
    return rc;
}
EXPORT CUresult cuEventSynchronize(CUevent e)
{
    COUNT(cuEventSynchronize);
    pass_gate();
    struct fake_event *fe = (struct fake_event *)e;
    pthread_mutex_lock(&mu);
    fe->queries_left = 0;
    CUresult rc = event_reached_locked(fe);
    pthread_mutex_unlock(&mu);
    return rc;
}

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    COUNT(cuIpcGetMemHandle);
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
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
    COUNT(cuIpcOpenMemHandle);
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
    COUNT(cuIpcCloseMemHandle);
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
 * dma-buf unless FAKE_CUDA_DMABUF=0 (fake_cuda_devices.c reports it). */
static int dmabuf_supported(void) { return fake_knob("FAKE_CUDA_DMABUF", 1) != 0; }

EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t size, CUmemRangeHandleType type,
                                              unsigned long long flags)
{
    COUNT(cuMemGetHandleForAddressRange);
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
    COUNT(cuGetErrorString);
    *s = rc == CUDA_SUCCESS ? "no error" : "fake CUDA error";
    return CUDA_SUCCESS;
}
