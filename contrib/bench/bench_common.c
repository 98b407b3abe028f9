/* Shared plumbing for the Axon point-to-point benchmarks (see bench_common.h). */
#define _POSIX_C_SOURCE 200112L

#include "bench_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.h"

static void usage(const char *program, const bench_defaults *d)
{
    fprintf(stderr,
            "%s: %s\n"
            "usage: %s [-m [MIN:]MAX] [-i ITER] [-x WARMUP]%s%s [-t SECONDS]\n"
            "  -m MIN:MAX  message sizes in bytes, suffixes K M G (powers of 1024); default %zu:%zu\n"
            "  -i ITER     %s; default %ld, scaled down for large messages\n"
            "  -x WARMUP   untimed steps per size before measuring; default %ld, scaled likewise\n",
            program, d->what, program,
            (d->accepted & BENCH_OPT_REPS) ? " [-r REPS]" : "",
            (d->accepted & BENCH_OPT_WINDOW) ? " [-w WINDOW]" : "",
            d->min_size, d->max_size,
            (d->accepted & BENCH_OPT_REPS) ? "windows per repetition"
                                            : "round trips per size",
            d->iterations, d->warmup);
    if (d->accepted & BENCH_OPT_REPS)
        fprintf(stderr, "  -r REPS     repetitions the median is taken over; default %d\n",
                d->reps);
    if (d->accepted & BENCH_OPT_WINDOW)
        fprintf(stderr, "  -w WINDOW   messages in flight per window; default %d\n", d->window);
    fprintf(stderr,
            "  -t SECONDS  cap on one size's timed part (fewer steps when a step is slow,\n"
            "              e.g. oversubscribed); default %g\n"
            "  -d cuda [D|H D|H]  GPU buffers: placement of rank 0's and the other ranks' buffers\n"
            "              (D: device memory, H: host memory); default D D\n",
            d->size_time_cap_s);
}

/* "64", "4K", "1M": bytes with an optional binary suffix. */
static int parse_size(const char *text, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-')
        return -1;
    unsigned long long scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1ull << 10; end++; break;
    case 'm': case 'M': scale = 1ull << 20; end++; break;
    case 'g': case 'G': scale = 1ull << 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return -1;
    *out = (size_t)(value * scale);
    return 0;
}

static int parse_positive_long(const char *text, long *out)
{
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0)
        return -1;
    *out = value;
    return 0;
}

/* ---- GPU buffers through the CUDA driver, dlopen'ed ----------------------- */
static struct {
    int (*init)(unsigned);
    int (*count)(int *);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*alloc)(unsigned long long *, size_t);
    int (*release)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
} cu;
enum { MAX_DEVICE_BUFFERS = 16 };
static struct { void *p; size_t n; } device_buffers[MAX_DEVICE_BUFFERS];

static const char *device_problem(const bench_options *o)
{
    const struct cuda_symbol syms[] = {
        {(void **)&cu.init, "cuInit"},
        {(void **)&cu.count, "cuDeviceGetCount"},
        {(void **)&cu.retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.set_current, "cuCtxSetCurrent"},
        {(void **)&cu.alloc, "cuMemAlloc_v2"},
        {(void **)&cu.release, "cuMemFree_v2"},
        {(void **)&cu.htod, "cuMemcpyHtoD_v2"},
        {(void **)&cu.dtoh, "cuMemcpyDtoH_v2"},
    };
    const char *why = cuda_load(syms, sizeof syms / sizeof syms[0], NULL);
    if (why)
        return why;
    int n = 0;
    if (cu.init(0) != 0 || cu.count(&n) != 0 || n <= 0)
        return "the driver reports no device";
    /* Ranks of one node spread over its devices. */
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, o->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    void *ctx = NULL;
    if (cu.retain(&ctx, local % n) != 0 || cu.set_current(ctx) != 0)
        return "cannot create a CUDA context";
    return NULL;
}

static void bench_device_open(const bench_options *o)
{
    const char *problem = device_problem(o);
    int bad = problem != NULL, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (problem)
        fprintf(stderr, "%s: rank %d: no CUDA device: %s\n", o->program, o->rank, problem);
    if (any_bad) {
        MPI_Finalize();
        exit(1);
    }
}

static int device_index(const void *p)
{
    for (int i = 0; i < MAX_DEVICE_BUFFERS; i++)
        if (device_buffers[i].p == p && p)
            return i;
    return -1;
}

void *bench_alloc_buffer(const bench_options *o, size_t bytes)
{
    if (!o->device || o->place[o->rank == 0 ? 0 : 1] != 'D')
        return bench_alloc_touched(bytes);
    unsigned long long d = 0;
    int slot = device_index(NULL);
    for (int i = 0; i < MAX_DEVICE_BUFFERS && slot < 0; i++)
        if (!device_buffers[i].p) slot = i;
    if (slot < 0 || cu.alloc(&d, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "bench: cannot allocate %zu bytes of device memory\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    device_buffers[slot].p = (void *)(size_t)d;
    device_buffers[slot].n = bytes;
    void *zero = calloc(1, bytes ? bytes : 1);
    bench_copy_in(device_buffers[slot].p, zero, bytes);
    free(zero);
    return device_buffers[slot].p;
}

void bench_free_buffer(void *buf)
{
    int i = device_index(buf);
    if (i < 0) {
        free(buf);
        return;
    }
    cu.release((unsigned long long)(size_t)buf);
    device_buffers[i].p = NULL;
}

/* A device buffer containing `p`, or -1 (the checks pass interior pointers too). */
static int device_containing(const void *p)
{
    for (int i = 0; i < MAX_DEVICE_BUFFERS; i++) {
        const char *b = device_buffers[i].p;
        if (b && (const char *)p >= b && (const char *)p < b + (device_buffers[i].n ? device_buffers[i].n : 1))
            return i;
    }
    return -1;
}

void bench_copy_in(void *buf, const void *host, size_t bytes)
{
    if (!bytes) return;
    if (device_containing(buf) < 0) memcpy(buf, host, bytes);
    else if (cu.htod((unsigned long long)(size_t)buf, host, bytes) != 0) {
        fprintf(stderr, "bench: copy to the device failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

void bench_copy_out(void *host, const void *buf, size_t bytes)
{
    if (!bytes) return;
    if (device_containing(buf) < 0) memcpy(host, buf, bytes);
    else if (cu.dtoh(host, (unsigned long long)(size_t)buf, bytes) != 0) {
        fprintf(stderr, "bench: copy from the device failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void leave_on_usage_error(const char *program, const bench_defaults *d,
                                 int rank, const char *message, const char *arg)
{
    if (rank == 0) {
        if (message)
            fprintf(stderr, "%s: %s%s%s\n", program, message, arg ? ": " : "", arg ? arg : "");
        usage(program, d);
    }
    MPI_Finalize();
    exit(message ? 2 : 0);
}

void bench_parse_options(int argc, char **argv, const char *program,
                         const bench_defaults *d, bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->program = program;
    o->min_size = d->min_size;
    o->max_size = d->max_size;
    o->iterations = d->iterations;
    o->warmup = d->warmup;
    o->reps = d->reps;
    o->window = d->window;
    o->size_time_cap_s = d->size_time_cap_s;
    MPI_Comm_rank(MPI_COMM_WORLD, &o->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &o->nranks);
    o->measuring = 2;

    /* Hand-rolled rather than getopt: launchers differ in what they leave in
     * argv, and every rank must reach the same verdict on its own. */
    o->place[0] = o->place[1] = 'H';
    int placements = 0;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0)
            leave_on_usage_error(program, d, o->rank, NULL, NULL);
        if ((flag[0] == 'D' || flag[0] == 'H') && flag[1] == '\0') {
            if (placements == 2)
                leave_on_usage_error(program, d, o->rank, "more than two placements", flag);
            o->place[placements++] = flag[0];
            continue;
        }
        if (flag[0] != '-' || flag[1] == '\0' || flag[2] != '\0')
            leave_on_usage_error(program, d, o->rank, "unknown argument", flag);
        if (i + 1 >= argc)
            leave_on_usage_error(program, d, o->rank, "missing value after", flag);
        const char *value = argv[++i];
        long number = 0;
        switch (flag[1]) {
        case 'm': {
            const char *colon = strchr(value, ':');
            size_t lo = 0, hi = 0;
            if (colon) {
                char lo_text[64];
                size_t lo_len = (size_t)(colon - value);
                if (lo_len == 0 || lo_len >= sizeof lo_text)
                    leave_on_usage_error(program, d, o->rank, "bad size range", value);
                memcpy(lo_text, value, lo_len);
                lo_text[lo_len] = '\0';
                if (parse_size(lo_text, &lo) != 0 || parse_size(colon + 1, &hi) != 0)
                    leave_on_usage_error(program, d, o->rank, "bad size range", value);
            } else {
                lo = d->min_size;
                if (parse_size(value, &hi) != 0)
                    leave_on_usage_error(program, d, o->rank, "bad size", value);
            }
            if (lo > hi)
                leave_on_usage_error(program, d, o->rank, "MIN is larger than MAX", value);
            o->min_size = lo;
            o->max_size = hi;
            break;
        }
        case 'i':
            if (parse_positive_long(value, &number) != 0 || number < 1)
                leave_on_usage_error(program, d, o->rank, "-i needs a count >= 1", value);
            o->iterations = number;
            break;
        case 'x':
            if (parse_positive_long(value, &number) != 0)
                leave_on_usage_error(program, d, o->rank, "-x needs a count >= 0", value);
            o->warmup = number;
            break;
        case 'r':
            if (!(d->accepted & BENCH_OPT_REPS))
                leave_on_usage_error(program, d, o->rank,
                                     "-r does not apply (the median is over per-batch samples; "
                                     "use -i for more samples)", NULL);
            if (parse_positive_long(value, &number) != 0 || number < 1 || number > 100000)
                leave_on_usage_error(program, d, o->rank, "-r needs a count in 1..100000", value);
            o->reps = (int)number;
            break;
        case 'w':
            if (!(d->accepted & BENCH_OPT_WINDOW))
                leave_on_usage_error(program, d, o->rank, "-w does not apply", NULL);
            if (parse_positive_long(value, &number) != 0 || number < 1 || number > 65536)
                leave_on_usage_error(program, d, o->rank, "-w needs a count in 1..65536", value);
            o->window = (int)number;
            break;
        case 'd':
            if (strcmp(value, "cuda") != 0)
                leave_on_usage_error(program, d, o->rank, "-d supports only cuda", value);
            o->device = 1;
            break;
        case 't': {
            char *end = NULL;
            double seconds = strtod(value, &end);
            if (end == value || *end != '\0' || !(seconds > 0.0))
                leave_on_usage_error(program, d, o->rank, "-t needs seconds > 0", value);
            o->size_time_cap_s = seconds;
            break;
        }
        default:
            leave_on_usage_error(program, d, o->rank, "unknown option", flag);
        }
    }
    if (o->nranks < 2)
        leave_on_usage_error(program, d, o->rank,
                             "needs at least 2 ranks (ranks 0 and 1 measure)", NULL);
    if (placements == 1)
        leave_on_usage_error(program, d, o->rank, "give two placements (rank 0's, the others')", NULL);
    if (o->device && placements == 0)
        o->place[0] = o->place[1] = 'D';
    if (!o->device && (o->place[0] == 'D' || o->place[1] == 'D'))
        leave_on_usage_error(program, d, o->rank, "device placement D needs -d cuda", NULL);
    if (o->device)
        bench_device_open(o);
}

size_t bench_size_list(size_t min_size, size_t max_size, size_t **sizes)
{
    /* At most: 0, MIN, 64 powers of two, MAX. */
    size_t *list = malloc(68 * sizeof *list);
    if (!list) {
        fprintf(stderr, "bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t count = 0;
    if (min_size == 0)
        list[count++] = 0;
    size_t first = min_size > 0 ? min_size : 1;
    if (first <= max_size)
        list[count++] = first;
    size_t power = 1;
    while (power <= first && power <= ((size_t)-1) / 2)
        power *= 2;
    for (; power < max_size && power > first; power *= 2)
        list[count++] = power;
    if (max_size > first)
        list[count++] = max_size;
    *sizes = list;
    return count;
}

void *bench_alloc_touched(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t rounded = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
    if (rounded == 0)
        rounded = (size_t)page;
    void *buf = NULL;
    if (posix_memalign(&buf, (size_t)page, rounded) != 0) {
        fprintf(stderr, "bench: cannot allocate %zu bytes\n", rounded);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0, rounded);
    return buf;
}

void bench_print_header(const bench_options *o, const char *columns, const char *extra)
{
    if (o->rank != 0)
        return;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    if (length < 0)
        length = 0;
    version[length < MPI_MAX_LIBRARY_VERSION_STRING ? length : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    /* Only the first line: some libraries print whole build reports. */
    char *newline = strpbrk(version, "\r\n");
    if (newline)
        *newline = '\0';
    if (o->measuring >= o->nranks)
        printf("# %s\n# mpi: %s\n# ranks: %d (all measure)\n", o->program, version, o->nranks);
    else if (o->measuring > 2)
        printf("# %s\n# mpi: %s\n# ranks: %d (0 to %d measure)\n", o->program, version, o->nranks,
               o->measuring - 1);
    else
        printf("# %s\n# mpi: %s\n# ranks: %d (0 and 1 measure)\n", o->program, version, o->nranks);
    printf("# sizes: %zu:%zu  iterations: %ld  warmup: %ld  time cap per size: %g s%s%s\n",
           o->min_size, o->max_size, o->iterations, o->warmup, o->size_time_cap_s,
           extra ? "  " : "", extra ? extra : "");
    if (o->device)
        printf("# buffers: cuda; rank 0 %s, other ranks %s\n", o->place[0] == 'D' ? "device" : "host",
               o->place[1] == 'D' ? "device" : "host");
    printf("# %s\n", columns);
    fflush(stdout);
}

static unsigned char pattern_byte(size_t offset, size_t size, unsigned seed)
{
    /* Cheap mix of offset, size and seed: neighbouring bytes, sizes and
     * directions all differ, and no byte run is constant. */
    unsigned x = (unsigned)offset * 2654435761u ^ (unsigned)size * 40503u ^ seed * 97u;
    return (unsigned char)(x >> 13 ^ x);
}

void bench_fill_pattern(unsigned char *buf, size_t size, unsigned seed)
{
    if (device_containing(buf) >= 0) {
        unsigned char *host = malloc(size ? size : 1);
        bench_fill_pattern(host, size, seed);
        bench_copy_in(buf, host, size);
        free(host);
        return;
    }
    for (size_t i = 0; i < size; i++)
        buf[i] = pattern_byte(i, size, seed);
}

enum { POISON_BYTE = 0xA5 };

void bench_poison(unsigned char *buf, size_t bytes)
{
    if (device_containing(buf) >= 0) {
        unsigned char *host = malloc(bytes ? bytes : 1);
        memset(host, POISON_BYTE, bytes);
        bench_copy_in(buf, host, bytes);
        free(host);
        return;
    }
    memset(buf, POISON_BYTE, bytes);
}

/* MPI_Abort tears the job down at once, and a launcher may kill its output
 * forwarding before the explanation just written reaches the user's terminal
 * (seen with MPICH's Hydra). Flush, give it a moment, then abort. */
static void abort_after_report(void)
{
    fflush(stderr);
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

void bench_check_or_abort(const bench_options *o, const unsigned char *buf,
                          size_t capacity, size_t size, unsigned seed,
                          const MPI_Status *status, const char *where)
{
    if (device_containing(buf) >= 0) {
        /* Check a host copy of the device buffer. */
        unsigned char *host = malloc(capacity ? capacity : 1);
        bench_copy_out(host, buf, capacity);
        bench_check_or_abort(o, host, capacity, size, seed, status, where);
        free(host);
        return;
    }
    int received = -1;
    MPI_Get_count(status, MPI_BYTE, &received);
    if (received < 0 || (size_t)received != size) {
        fprintf(stderr,
                "%s: DATA CHECK FAILED on rank %d (%s), size %zu: MPI_Get_count says %d bytes.\n"
                "%s: aborting, timings from a library that moves the wrong data mean nothing.\n",
                o->program, o->rank, where, size, received, o->program);
        abort_after_report();
    }
    for (size_t i = 0; i < size; i++) {
        unsigned char expected = pattern_byte(i, size, seed);
        if (buf[i] != expected) {
            fprintf(stderr,
                    "%s: DATA CHECK FAILED on rank %d (%s), size %zu: byte %zu is 0x%02x, expected 0x%02x.\n"
                    "%s: aborting, timings from a library that moves the wrong data mean nothing.\n",
                    o->program, o->rank, where, size, i, buf[i], expected, o->program);
            abort_after_report();
        }
    }
    size_t guard_end = size + BENCH_GUARD_BYTES < capacity ? size + BENCH_GUARD_BYTES : capacity;
    for (size_t i = size; i < guard_end; i++) {
        if (buf[i] != POISON_BYTE) {
            fprintf(stderr,
                    "%s: DATA CHECK FAILED on rank %d (%s), size %zu: byte %zu past the end of the "
                    "message was overwritten.\n",
                    o->program, o->rank, where, size, i);
            abort_after_report();
        }
    }
}

int bench_is_measuring(const bench_options *o)
{
    return o->rank < 2;
}

double bench_warmup(const bench_options *o, long max_steps, double max_seconds,
                    bench_step_fn step, void *context)
{
    /* At least two steps, so the estimate never rests on the first alone. */
    if (max_steps < 2)
        max_steps = 2;
    double started = MPI_Wtime();
    double second_half_time = 0.0;
    long second_half_steps = 0;
    for (long done = 0;;) {
        double before = MPI_Wtime();
        step(context);
        double took = MPI_Wtime() - before;
        done++;
        if (done > max_steps / 2) {
            second_half_time += took;
            second_half_steps++;
        }
        int go_on = 0;
        if (o->rank == 0) {
            int time_left = MPI_Wtime() - started < max_seconds;
            go_on = done < max_steps && (time_left || done < 2);
            MPI_Send(&go_on, 1, MPI_INT, 1, BENCH_TAG_CTRL, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&go_on, 1, MPI_INT, 0, BENCH_TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (!go_on) {
            if (second_half_steps == 0) { /* stopped early by the time cap */
                second_half_time = took;
                second_half_steps = 1;
            }
            return second_half_time / (double)second_half_steps;
        }
    }
}

long bench_share_count(const bench_options *o, long value)
{
    if (o->rank == 0)
        MPI_Send(&value, 1, MPI_LONG, 1, BENCH_TAG_CTRL, MPI_COMM_WORLD);
    else
        MPI_Recv(&value, 1, MPI_LONG, 0, BENCH_TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return value;
}

long bench_plan_steps(const bench_options *o, long wanted, long at_least,
                      double seconds_per_step)
{
    long steps = wanted;
    if (seconds_per_step > 0.0) {
        double fitting = o->size_time_cap_s / seconds_per_step;
        if (fitting < (double)steps)
            steps = (long)fitting;
    }
    if (steps < at_least)
        steps = at_least;
    return steps;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_summary bench_summarize(double *values, size_t count)
{
    bench_summary s = {0.0, 0.0, 0.0};
    if (count == 0)
        return s;
    qsort(values, count, sizeof *values, compare_doubles);
    s.min = values[0];
    s.max = values[count - 1];
    s.median = count % 2 ? values[count / 2]
                         : 0.5 * (values[count / 2 - 1] + values[count / 2]);
    return s;
}

long bench_scale_count(long base, size_t size, size_t pivot, long floor_count)
{
    long count = base;
    if (size > pivot) {
        double scaled = (double)base * (double)pivot / (double)size;
        count = (long)scaled;
    }
    /* The floor keeps enough samples for a median, but never exceeds what
     * the user asked for with -i. */
    if (floor_count > base)
        floor_count = base;
    if (count < floor_count)
        count = floor_count;
    return count;
}
