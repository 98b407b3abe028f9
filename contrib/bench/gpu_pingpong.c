/* What one GPU copy costs when two processes share the GPU and take turns,
 * as two MPI ranks on one GPU do in a ping-pong: each process has its own
 * CUDA context; on its turn a process makes one copy, waits for it, and
 * passes the turn through a flag in shared memory. Not an MPI program: it
 * isolates the driver from the library, to find which part of a device
 * round trip costs what (a copy, the wait, the switch between contexts,
 * CPU binding, the context's scheduling flags).
 *
 *   gpu_pingpong [-c none|dtoh|htod|dtod|ipc] [-w sync|event|legacy]
 *                [-s auto|spin|yield|blocking] [-m BYTES|LO:HI] [-n ROUNDS]
 *                [-b] [-o] [-y] [-1]
 *
 *   -c  the copy on each turn (host memory pinned; ipc: device to device
 *       from the other process's allocation, mapped with cuIpcOpenMemHandle)
 *   -w  how the copy is waited for: cuMemcpyAsync + cuStreamSynchronize,
 *       cuMemcpyAsync + cuEventRecord + cuEventQuery polled, or cuMemcpy on
 *       the legacy stream followed by cuCtxSynchronize
 *   -s  the primary context's scheduling flag (set before it is retained)
 *   -b  bind process 0 to CPU 0 and process 1 to CPU 1
 *   -o  only process 0 copies; process 1 passes the turn straight back
 *       (one context does GPU work: the baseline)
 *   -y  a process waiting for its turn calls sched_yield between polls
 *   -1  one process, one context, no turns: each "turn" is one copy and its
 *       wait (ipc becomes dtod: a process cannot open its own handle), the
 *       floor with no second context on the GPU
 *   -m  one size, or every power of two from LO to HI (K, M suffixes)
 *
 * Prints one line per size: the median, minimum and 90th percentile time
 * per turn (a round is two turns) over batches of 10 rounds. Exit 1 with
 * "no CUDA device: why" without a driver or GPU. The driver is dlopen'ed
 * (BENCH_CUDA_LIBRARY, default libcuda.so.1). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.h"

typedef int cu_result;
typedef unsigned long long cu_ptr;
typedef struct { char reserved[64]; } cu_ipc_handle;

enum { CTX_SCHED_AUTO = 0, CTX_SCHED_SPIN = 1, CTX_SCHED_YIELD = 2, CTX_SCHED_BLOCKING = 4 };
enum { NOT_READY = 600 };  /* CUDA_ERROR_NOT_READY */
#define STREAM_LEGACY ((void *)0x1)

static struct {
    cu_result (*init)(unsigned);
    cu_result (*count)(int *);
    cu_result (*device_get)(int *, int);
    cu_result (*set_flags)(int, unsigned);
    cu_result (*retain)(void **, int);
    cu_result (*set_current)(void *);
    cu_result (*alloc)(cu_ptr *, size_t);
    cu_result (*alloc_host)(void **, size_t);
    cu_result (*stream_create)(void **, unsigned);
    cu_result (*copy_async)(cu_ptr, cu_ptr, size_t, void *);
    cu_result (*copy)(cu_ptr, cu_ptr, size_t);
    cu_result (*stream_sync)(void *);
    cu_result (*ctx_sync)(void);
    cu_result (*event_create)(void **, unsigned);
    cu_result (*event_record)(void *, void *);
    cu_result (*event_query)(void *);
    cu_result (*ipc_get)(cu_ipc_handle *, cu_ptr);
    cu_result (*ipc_open)(cu_ptr *, cu_ipc_handle, unsigned);
} cu;

/* Shared between the two processes. */
struct shared {
    _Atomic int turn;     /* whose turn: 0 or 1; -1 = stop */
    _Atomic int ready;    /* processes with their buffers set up */
    _Atomic int failed;
    cu_ipc_handle handle[2];
};

static int open_driver(void)
{
    const struct cuda_symbol syms[] = {
        {(void **)&cu.init, "cuInit"},
        {(void **)&cu.count, "cuDeviceGetCount"},
        {(void **)&cu.device_get, "cuDeviceGet"},
        {(void **)&cu.retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.set_current, "cuCtxSetCurrent"},
        {(void **)&cu.alloc, "cuMemAlloc_v2"},
        {(void **)&cu.alloc_host, "cuMemAllocHost_v2"},
        {(void **)&cu.stream_create, "cuStreamCreate"},
        {(void **)&cu.copy_async, "cuMemcpyAsync"},
        {(void **)&cu.copy, "cuMemcpy"},
        {(void **)&cu.stream_sync, "cuStreamSynchronize"},
        {(void **)&cu.ctx_sync, "cuCtxSynchronize"},
        {(void **)&cu.event_create, "cuEventCreate"},
        {(void **)&cu.event_record, "cuEventRecord"},
        {(void **)&cu.event_query, "cuEventQuery"},
        {(void **)&cu.ipc_get, "cuIpcGetMemHandle"},
        {(void **)&cu.ipc_open, "cuIpcOpenMemHandle_v2"},
    };
    void *lib = NULL;
    const char *why = cuda_load(syms, sizeof syms / sizeof syms[0], &lib);
    if (why) {
        printf("no CUDA device: %s\n", why);
        return -1;
    }
    /* Needed only for -s other than auto. */
    cu.set_flags = (cu_result(*)(int, unsigned))dlsym(lib, "cuDevicePrimaryCtxSetFlags_v2");
    return 0;
}

enum copy_kind { C_NONE, C_DTOH, C_HTOD, C_DTOD, C_IPC };
enum wait_kind { W_SYNC, W_EVENT, W_LEGACY };

static struct {
    enum copy_kind copy;
    enum wait_kind wait;
    unsigned sched;
    size_t bytes;
    int rounds, bind, only0, yield, single;
} opt = {C_IPC, W_SYNC, CTX_SCHED_AUTO, 1, 2000, 0, 0, 0, 0};

static size_t max_bytes;  /* the largest size of a sweep (-1 allocates it once) */

static struct {
    void *stream, *event;
    cu_ptr mine, other;   /* device buffers: this process's, the peer's mapping (ipc) */
    cu_ptr second;        /* a second own device buffer (dtod) */
    void *host;           /* pinned */
} b;

/* One copy, waited for as -w says. */
static int one_copy(void)
{
    cu_ptr dst = 0, src = 0;
    switch (opt.copy) {
    case C_NONE: return 0;
    case C_DTOH: dst = (cu_ptr)(uintptr_t)b.host; src = b.mine; break;
    case C_HTOD: dst = b.mine; src = (cu_ptr)(uintptr_t)b.host; break;
    case C_DTOD: dst = b.second; src = b.mine; break;
    case C_IPC: dst = b.mine; src = b.other; break;
    }
    if (opt.wait == W_LEGACY) return cu.copy(dst, src, opt.bytes) || cu.ctx_sync();
    if (cu.copy_async(dst, src, opt.bytes, b.stream)) return -1;
    if (opt.wait == W_SYNC) return cu.stream_sync(b.stream);
    if (cu.event_record(b.event, b.stream)) return -1;
    cu_result rc;
    while ((rc = cu.event_query(b.event)) == NOT_READY) {}
    return rc;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void wait_turn(struct shared *s, int me)
{
    int t;
    while ((t = atomic_load_explicit(&s->turn, memory_order_acquire)) != me && t != -1) {
        if (opt.yield) sched_yield();
        else cpu_relax();
    }
}

static int setup(struct shared *s, int me)
{
    int dev = 0, n = 0;
    void *ctx = NULL;
    if (cu.init(0) || cu.count(&n) || n <= 0 || cu.device_get(&dev, 0)) {
        if (me == 0) printf("no CUDA device: the driver reports none usable\n");
        return -1;
    }
    if (opt.sched != CTX_SCHED_AUTO && (!cu.set_flags || cu.set_flags(dev, opt.sched))) {
        if (me == 0) printf("cannot set the context's scheduling flag\n");
        return -1;
    }
    if (cu.retain(&ctx, dev) || cu.set_current(ctx)) return -1;
    if (cu.stream_create(&b.stream, 0) || cu.event_create(&b.event, 2 /* disable timing */)) return -1;
    size_t n_alloc = opt.bytes < 4096 ? 4096 : opt.bytes;
    if (opt.single && max_bytes > n_alloc) n_alloc = max_bytes;
    if (cu.alloc(&b.mine, n_alloc) || cu.alloc(&b.second, n_alloc) || cu.alloc_host(&b.host, n_alloc)) return -1;
    memset(b.host, me, n_alloc);
    if (opt.single) return 0;
    if (cu.ipc_get(&s->handle[me], b.mine)) return -1;
    atomic_fetch_add(&s->ready, 1);
    while (atomic_load(&s->ready) < 2)
        if (atomic_load(&s->failed)) return -1;
    if (opt.copy == C_IPC && cu.ipc_open(&b.other, s->handle[1 - me], 1 /* lazy peer access */)) return -1;
    return 0;
}

static int run(struct shared *s, int me)
{
    if (opt.bind) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    static int set_up;
    if (!set_up && setup(s, me)) {
        atomic_store(&s->failed, 1);
        atomic_store(&s->turn, -1);
        return 1;
    }
    set_up = opt.single;  /* one process: its buffers serve every size (two: a fresh pair per size) */
    const int batch = 10, warm = 100;
    int samples = opt.rounds / batch;
    double *per_turn = calloc((size_t)samples, sizeof *per_turn);
    int do_copy = me == 0 || !opt.only0;
    for (int i = -warm / batch; i < samples; ++i) {
        double t0 = now_seconds();
        for (int r = 0; r < batch; ++r) {
            if (opt.single) {
                /* Both turns in this process: two copies per round. */
                if (one_copy() || one_copy()) {
                    fprintf(stderr, "a copy failed\n");
                    return 1;
                }
                continue;
            }
            wait_turn(s, me);
            if (atomic_load(&s->turn) == -1) return atomic_load(&s->failed);
            if (do_copy && one_copy()) {
                fprintf(stderr, "process %d: a copy failed\n", me);
                atomic_store(&s->failed, 1);
                atomic_store(&s->turn, -1);
                return 1;
            }
            atomic_store_explicit(&s->turn, 1 - me, memory_order_release);
        }
        if (i >= 0) per_turn[i] = (now_seconds() - t0) / (2.0 * batch) * 1e6;
    }
    if (me == 0) {
        if (!opt.single) {
            wait_turn(s, 0);
            atomic_store(&s->turn, -1);
        }
        qsort(per_turn, (size_t)samples, sizeof *per_turn, by_value);
        static const char *copies[] = {"none", "dtoh", "htod", "dtod", "ipc"};
        static const char *waits[] = {"sync", "event", "legacy"};
        const char *sched = opt.sched == CTX_SCHED_SPIN ? "spin" : opt.sched == CTX_SCHED_YIELD ? "yield"
                            : opt.sched == CTX_SCHED_BLOCKING ? "blocking" : "auto";
        printf("copy=%-4s wait=%-6s sched=%-8s bytes=%zu bind=%s copier=%s waiter=%s procs=%d  per turn: median %.2f us  "
               "min %.2f  p90 %.2f\n",
               copies[opt.copy], waits[opt.wait], sched, opt.bytes, opt.bind ? "cpu0,1" : "none",
               opt.single ? "one" : opt.only0 ? "proc0" : "both", opt.yield ? "yield" : "spin", opt.single ? 1 : 2,
               per_turn[samples / 2], per_turn[0], per_turn[samples * 9 / 10]);
        fflush(stdout);
    }
    free(per_turn);
    return 0;
}

/* "4096", "4K", "4M". */
static size_t parse_size(const char *v)
{
    char *end = NULL;
    size_t n = strtoull(v, &end, 0);
    if (end && (*end == 'K' || *end == 'k')) n <<= 10;
    else if (end && (*end == 'M' || *end == 'm')) n <<= 20;
    return n;
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(v, names[i])) return i;
    fprintf(stderr, "gpu_pingpong: unknown value '%s'\n", v);
    exit(2);
}

int main(int argc, char **argv)
{
    static const char *const copies[] = {"none", "dtoh", "htod", "dtod", "ipc"};
    static const char *const waits[] = {"sync", "event", "legacy"};
    static const char *const scheds[] = {"auto", "spin", "yield", "blocking"};
    static const unsigned sched_flags[] = {CTX_SCHED_AUTO, CTX_SCHED_SPIN, CTX_SCHED_YIELD, CTX_SCHED_BLOCKING};
    int c;
    size_t lo = 1, hi = 1;
    while ((c = getopt(argc, argv, "c:w:s:m:n:boy1")) != -1) {
        switch (c) {
        case 'c': opt.copy = (enum copy_kind)pick(optarg, copies, 5); break;
        case 'w': opt.wait = (enum wait_kind)pick(optarg, waits, 3); break;
        case 's': opt.sched = sched_flags[pick(optarg, scheds, 4)]; break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            lo = parse_size(optarg);
            hi = colon ? parse_size(colon + 1) : lo;
            break;
        }
        case '1': opt.single = 1; break;
        case 'n': opt.rounds = atoi(optarg); break;
        case 'b': opt.bind = 1; break;
        case 'o': opt.only0 = 1; break;
        case 'y': opt.yield = 1; break;
        default:
            fprintf(stderr, "usage: gpu_pingpong [-c none|dtoh|htod|dtod|ipc] [-w sync|event|legacy] "
                            "[-s auto|spin|yield|blocking] [-m BYTES|LO:HI] [-n ROUNDS] [-b] [-o] [-y] [-1]\n");
            return 2;
        }
    }
    if (opt.single && opt.copy == C_IPC) opt.copy = C_DTOD;  /* no own handle to open */
    if (lo == 0) lo = 1;
    if (hi < lo) hi = lo;
    max_bytes = hi;
    if (opt.rounds < 20) opt.rounds = 20;
    if (open_driver()) return 1;
    /* Before any CUDA call: a CUDA context does not survive fork. */
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) return 1;
    int rc = 0;
    for (size_t n = lo; n <= hi && rc == 0; n = n * 2 > n ? n * 2 : hi + 1) {
        opt.bytes = n;
        memset(s, 0, sizeof *s);
        fflush(stdout);
        if (opt.single) {
            rc = run(s, 0);
            continue;
        }
        /* Two fresh processes per size, each with its own context; this
         * one never initialises CUDA (a context does not survive fork). */
        pid_t child[2];
        for (int me = 0; me < 2; ++me) {
            if ((child[me] = fork()) < 0) return 1;
            if (child[me] == 0) _exit(run(s, me));
        }
        for (int me = 0; me < 2; ++me) {
            int status = 0;
            waitpid(child[me], &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status)) rc = 1;
        }
    }
    return rc;
}
