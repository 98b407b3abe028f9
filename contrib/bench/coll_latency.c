/* coll_latency: time per collective call over a size sweep, all ranks
 * taking part. `-c OP` picks the collective: allreduce, bcast, reduce,
 * allgather, alltoall, barrier, or a nonblocking form (iallreduce, ibcast,
 * ireduce, iallgather, ialltoall, ibarrier).
 *
 * Size is bytes per rank's contribution (allreduce/reduce: the vector, as
 * MPI_INT; bcast: the message; allgather/alltoall: one block). Each sample
 * is a batch of calls timed on every rank after a barrier, and its time is
 * the per-call time averaged over the ranks; the median, min and max of that
 * over the samples are reported. The nonblocking forms
 * post the call, compute for about as long as the blocking call takes
 * (measured first), then wait: the reported time is the whole post +
 * compute + wait, and `overlap_pct` says how much of the communication hid
 * behind the compute (100 = fully hidden, 0 = none).
 * `-b` times the loop of the OSU collective benchmarks instead: every call
 * timed alone and followed by an untimed MPI_Barrier; the figure is still
 * the call's time averaged over the ranks, and `iteration_us` adds the
 * whole call + barrier on the slowest rank (with more ranks than cores the
 * barrier decides who runs first in the next call: docs/collectives.md).
 * After timing, one call is checked for exact results. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIN_SAMPLES = 5, BATCH_UP_TO = 16384, BATCH = 10, SCALE_PIVOT = 16384, MIN_CALLS = 20, CAP_BARRIERS = 3 };

typedef struct run {
    const char *op;
    int nonblocking;
    size_t size;
    int *send, *recv;  /* host or device memory (-d cuda) */
    size_t capacity;
    int rank, nranks;
    double compute_us; /* nonblocking: compute time per call */
    int osu_loop;      /* -b: each call timed alone, an untimed barrier after it */
} run;

static volatile double sink;
static void compute_for(double us)
{
    double end = MPI_Wtime() + us * 1e-6, x = 1.0;
    while (MPI_Wtime() < end)
        for (int i = 0; i < 64; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* "iallreduce" -> "allreduce" (no blocking name starts with 'i'). */
static const char *base_op(const char *op) { return op[0] == 'i' ? op + 1 : op; }

/* One call of the collective (nonblocking: post, compute, wait). */
static void one_call(void *context)
{
    run *r = context;
    const char *op = base_op(r->op);
    int ints = (int)(r->size / sizeof(int)), bytes = (int)r->size;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Request *q = r->nonblocking ? &rq : NULL;
    if (!strcmp(op, "allreduce")) {
        if (q) MPI_Iallreduce(r->send, r->recv, ints, MPI_INT, MPI_SUM, MPI_COMM_WORLD, q);
        else MPI_Allreduce(r->send, r->recv, ints, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(op, "reduce")) {
        if (q) MPI_Ireduce(r->send, r->recv, ints, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, q);
        else MPI_Reduce(r->send, r->recv, ints, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    } else if (!strcmp(op, "bcast")) {
        if (q) MPI_Ibcast(r->recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, q);
        else MPI_Bcast(r->recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    } else if (!strcmp(op, "allgather")) {
        if (q) MPI_Iallgather(r->send, bytes, MPI_BYTE, r->recv, bytes, MPI_BYTE, MPI_COMM_WORLD, q);
        else MPI_Allgather(r->send, bytes, MPI_BYTE, r->recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
    } else if (!strcmp(op, "alltoall")) {
        if (q) MPI_Ialltoall(r->send, bytes, MPI_BYTE, r->recv, bytes, MPI_BYTE, MPI_COMM_WORLD, q);
        else MPI_Alltoall(r->send, bytes, MPI_BYTE, r->recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
    } else {
        if (q) MPI_Ibarrier(MPI_COMM_WORLD, q);
        else MPI_Barrier(MPI_COMM_WORLD);
    }
    if (q) {
        compute_for(r->compute_us);
        MPI_Wait(q, MPI_STATUS_IGNORE);
    }
}

/* Exact result of one call with known inputs; aborts on a mismatch. */
static void verify(run *r)
{
    const char *op = base_op(r->op);
    size_t ints = r->size / sizeof(int), n = (size_t)r->nranks;
    /* Host copies: the buffers may be device memory. */
    int *s = malloc(r->capacity), *d = malloc(r->capacity);
    size_t words = (!strcmp(op, "allgather") || !strcmp(op, "alltoall")) ? n * r->size / sizeof(int) : r->size / sizeof(int);
    for (size_t i = 0; i < words; i++) s[i] = (int)(r->rank * 131 + i), d[i] = -1;
    if (!strcmp(op, "bcast")) memcpy(d, s, r->size);
    bench_copy_in(r->send, s, words * sizeof(int));
    bench_copy_in(r->recv, d, words * sizeof(int));
    one_call(r);
    bench_copy_out(d, r->recv, words * sizeof(int));
    int bad = 0;
    if (!strcmp(op, "allreduce") || (!strcmp(op, "reduce") && r->rank == 0)) {
        for (size_t i = 0; i < ints && !bad; i++) {
            long e = 0;
            for (size_t k = 0; k < n; k++) e += (long)(k * 131 + i);
            bad = d[i] != (int)e;
        }
    } else if (!strcmp(op, "bcast")) {
        /* root 0's values: 0 * 131 + i */
        for (size_t i = 0; i < ints && !bad; i++) bad = d[i] != (int)i;
    } else if (!strcmp(op, "allgather")) {
        for (size_t k = 0; k < n && !bad; k++)
            for (size_t i = 0; i < ints && !bad; i++) bad = d[k * ints + i] != (int)(k * 131 + i);
    } else if (!strcmp(op, "alltoall")) {
        for (size_t k = 0; k < n && !bad; k++)
            for (size_t i = 0; i < ints && !bad; i++)
                bad = d[k * ints + i] != (int)(k * 131 + (size_t)r->rank * ints + i);
    }
    free(s);
    free(d);
    if (bad) {
        fprintf(stderr, "coll_latency: DATA CHECK FAILED: %s, %zu bytes, rank %d\n", r->op, r->size, r->rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* Median over `samples` batches of the per-call time (us) averaged over all
 * ranks; rank 0's plan is shared so every rank makes the same calls. The
 * average over ranks (as the OSU benchmarks report) and not rank 0's time
 * alone: with more ranks than cores, which rank of a CPU leaves the
 * barrier first locks in for a whole run, and that rank's call also holds
 * its CPU partner's call and two hand-offs (docs/performance.md), so one
 * rank's time swings between runs by the whole partner's call. */
static bench_summary measure(const bench_options *opt, run *r, double *samples, double *iterations,
                             long *samples_out)
{
    long batch = r->size <= BATCH_UP_TO ? BATCH : 1;
    long wanted = bench_scale_count(opt->iterations, r->size, SCALE_PIVOT, MIN_CALLS);
    double warm = 0;
    /* warm-up: every rank runs the same number of calls */
    long warm_calls = bench_scale_count(opt->warmup, r->size, SCALE_PIVOT, 5);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < warm_calls; i++) one_call(r);
    warm = (MPI_Wtime() - t0) / (double)warm_calls;
    /* The barrier before each sample counts against the time cap too: with
     * tens of ranks per core it can cost more than the batch it precedes
     * (0.6 s for MPICH at 64 ranks on 2 cores). */
    t0 = MPI_Wtime();
    for (int i = 0; i < CAP_BARRIERS; i++) MPI_Barrier(MPI_COMM_WORLD);
    double plan[2] = {warm, (MPI_Wtime() - t0) / CAP_BARRIERS};
    MPI_Bcast(plan, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    warm = plan[0];
    long count = wanted / batch;
    double per_sample = (warm + (r->osu_loop ? plan[1] : 0)) * (double)batch + plan[1];
    if (per_sample > 0 && (double)count * per_sample > opt->size_time_cap_s)
        count = (long)(opt->size_time_cap_s / per_sample);
    if (count < MIN_SAMPLES) count = MIN_SAMPLES;
    if (count > opt->iterations) count = opt->iterations;
    long c = count;
    MPI_Bcast(&c, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    for (long s = 0; s < c; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        if (r->osu_loop) {
            double in_calls = 0;
            for (long b = 0; b < batch; b++) {
                double t = MPI_Wtime();
                one_call(r);
                in_calls += MPI_Wtime() - t;
                MPI_Barrier(MPI_COMM_WORLD);
            }
            samples[s] = in_calls * 1e6 / (double)batch;
        } else {
            for (long b = 0; b < batch; b++) one_call(r);
            samples[s] = (MPI_Wtime() - start) * 1e6 / (double)batch;
        }
        iterations[s] = (MPI_Wtime() - start) * 1e6 / (double)batch;
    }
    /* Per-sample mean over ranks (and the slowest rank's iteration), summed
     * after the timing so that no extra synchronization runs between
     * samples. */
    MPI_Allreduce(MPI_IN_PLACE, samples, (int)c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, iterations, (int)c, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (long s = 0; s < c; s++) samples[s] /= (double)opt->nranks;
    *samples_out = c;
    return bench_summarize(samples, (size_t)c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    /* -c OP is ours; the rest goes to the common parser. */
    const char *op = "allreduce";
    int kept = 1, osu_loop = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            op = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "-b")) {
            osu_loop = 1;
            continue;
        }
        argv[kept++] = argv[i];
    }
    argc = kept;
    static const char *ops[] = {"allreduce", "bcast", "reduce", "allgather", "alltoall", "barrier",
                                "iallreduce", "ibcast", "ireduce", "iallgather", "ialltoall", "ibarrier"};
    int known = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) known |= !strcmp(ops[i], op);
    const bench_defaults defaults = {
        .min_size = 4, .max_size = 1u << 20,
        .iterations = 2000, .warmup = 100, .reps = 1, .window = 1,
        .size_time_cap_s = 0.5, .accepted = 0,
        .what = "time per collective call in microseconds (-c allreduce|bcast|reduce|allgather|alltoall|barrier, "
                "or the i-forms with overlap; -b: each call followed by an untimed barrier, the OSU loop)",
    };
    bench_options opt;
    bench_parse_options(argc, argv, "coll_latency", &defaults, &opt);
    opt.measuring = opt.nranks; /* every rank times every batch */
    if (!known) {
        if (opt.rank == 0) fprintf(stderr, "coll_latency: unknown collective '%s'\n", op);
        MPI_Finalize();
        return 2;
    }
    int is_barrier = !strcmp(base_op(op), "barrier");
    size_t *sizes = NULL;
    size_t size_count = is_barrier ? 1 : bench_size_list(opt.min_size, opt.max_size, &sizes);
    size_t per_rank_max = opt.max_size + sizeof(int);
    size_t capacity = per_rank_max * (size_t)opt.nranks + BENCH_GUARD_BYTES;
    run r = {.op = op, .nonblocking = op[0] == 'i', .rank = opt.rank, .nranks = opt.nranks, .osu_loop = osu_loop};
    if (osu_loop && (r.nonblocking || is_barrier)) {
        if (opt.rank == 0) fprintf(stderr, "coll_latency: -b needs a blocking collective other than barrier\n");
        MPI_Finalize();
        return 2;
    }
    r.send = bench_alloc_buffer(&opt, capacity);
    r.recv = bench_alloc_buffer(&opt, capacity);
    r.capacity = capacity;
    size_t sample_room = (size_t)(opt.iterations > MIN_SAMPLES ? opt.iterations : MIN_SAMPLES);
    double *samples = malloc(sample_room * sizeof *samples), *iterations = malloc(sample_room * sizeof *iterations);
    char extra[160];
    snprintf(extra, sizeof extra, "collective: %s; batch of %d calls up to %d B%s", op, BATCH, BATCH_UP_TO,
             osu_loop ? "; OSU loop: an untimed barrier after every call" : "");
    bench_print_header(&opt, r.nonblocking ? "size_bytes  median_us  min_us  max_us  samples  overlap_pct"
                             : osu_loop    ? "size_bytes  median_us  min_us  max_us  samples  iteration_us"
                                           : "size_bytes  median_us  min_us  max_us  samples",
                       extra);
    for (size_t k = 0; k < size_count; k++) {
        r.size = is_barrier ? 0 : sizes[k] / sizeof(int) * sizeof(int);
        if (!is_barrier && sizes[k] && r.size == 0) continue; /* below one int */
        long n = 0;
        double pure = 0;
        if (r.nonblocking) {
            /* the communication alone: no compute */
            r.compute_us = 0;
            pure = measure(&opt, &r, samples, iterations, &n).median;
            MPI_Bcast(&pure, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            r.compute_us = pure;
        }
        bench_summary sum = measure(&opt, &r, samples, iterations, &n);
        double iteration = bench_summarize(iterations, (size_t)n).median;
        verify(&r);
        if (opt.rank == 0) {
            if (r.nonblocking) {
                double hidden = pure > 0 ? (pure + r.compute_us - sum.median) / pure * 100.0 : 0;
                if (hidden < 0) hidden = 0;
                if (hidden > 100) hidden = 100;
                printf("%zu  %.3f  %.3f  %.3f  %ld  %.0f\n", r.size, sum.median, sum.min, sum.max, n, hidden);
            } else if (osu_loop) {
                printf("%zu  %.3f  %.3f  %.3f  %ld  %.3f\n", r.size, sum.median, sum.min, sum.max, n, iteration);
            } else {
                printf("%zu  %.3f  %.3f  %.3f  %ld\n", r.size, sum.median, sum.min, sum.max, n);
            }
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(samples);
    free(iterations);
    bench_free_buffer(r.send);
    bench_free_buffer(r.recv);
    free(sizes);
    MPI_Finalize();
    return 0;
}
