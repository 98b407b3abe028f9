/* Windowed streaming bandwidth (see bandwidth.h).
 *
 * One step is one window: WINDOW nonblocking sends of the same buffer (the
 * receiver posts WINDOW receives into one buffer, like the OSU benchmarks),
 * completed with MPI_Waitall. Unidirectional: the receiver then sends a
 * 4-byte ack, so the sender's clock covers delivery, not just local buffer
 * release. Bidirectional: both ranks post their receives and sends at once
 * and wait for all of them; no ack is needed since each side waits for the
 * other's data.
 *
 * A repetition is a number of windows timed together; the figure per size is
 * the median over repetitions (min and max shown too), in MB/s with
 * MB = 10^6 bytes. */
#include "bandwidth.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>

enum {
    ACK_BYTES = 4,
    MIN_WARMUP_WINDOWS = 2,
};

/* Windows per repetition shrink as 1/window bytes above this, so one
 * repetition moves about 16 MiB (a couple of milliseconds) at large sizes,
 * never less than one window. Short repetitions matter on a shared machine:
 * a scheduler tick stolen by another process spoils only the repetitions it
 * lands in, and the median skips those; long ones would all be spoiled. */
static const size_t REPETITION_BYTES_PIVOT = (size_t)16 << 20;

/* `base` windows, or fewer when that many would move more than the pivot;
 * never below `floor_count` (nor above what -i / -x asked for). */
static long windows_scaled(long base, size_t window_bytes, long floor_count)
{
    long count = base;
    if (window_bytes > 0 && (double)window_bytes * (double)base > (double)REPETITION_BYTES_PIVOT)
        count = (long)(REPETITION_BYTES_PIVOT / window_bytes);
    if (floor_count > base)
        floor_count = base;
    return count < floor_count ? floor_count : count;
}

typedef struct stream {
    unsigned char *send_buf, *recv_buf;
    size_t size;
    int window;
    int rank;
    int bidirectional;
    MPI_Request *requests;
    MPI_Status *statuses;  /* only filled by the checked window */
    unsigned char ack[ACK_BYTES];
} stream;

static void one_window_with_status(stream *s, MPI_Status *statuses)
{
    const int count = (int)s->size;
    if (s->bidirectional) {
        const int peer = 1 - s->rank;
        /* Receives first, so arriving data finds a posted buffer. */
        for (int w = 0; w < s->window; w++)
            MPI_Irecv(s->recv_buf, count, MPI_BYTE, peer, BENCH_TAG_DATA, MPI_COMM_WORLD,
                      &s->requests[w]);
        for (int w = 0; w < s->window; w++)
            MPI_Isend(s->send_buf, count, MPI_BYTE, peer, BENCH_TAG_DATA, MPI_COMM_WORLD,
                      &s->requests[s->window + w]);
        MPI_Waitall(2 * s->window, s->requests, statuses);
    } else if (s->rank == 0) {
        for (int w = 0; w < s->window; w++)
            MPI_Isend(s->send_buf, count, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD,
                      &s->requests[w]);
        MPI_Waitall(s->window, s->requests, statuses);
        MPI_Recv(s->ack, ACK_BYTES, MPI_BYTE, 1, BENCH_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < s->window; w++)
            MPI_Irecv(s->recv_buf, count, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD,
                      &s->requests[w]);
        MPI_Waitall(s->window, s->requests, statuses);
        MPI_Send(s->ack, ACK_BYTES, MPI_BYTE, 0, BENCH_TAG_ACK, MPI_COMM_WORLD);
    }
}

static void one_window(void *context)
{
    one_window_with_status(context, MPI_STATUSES_IGNORE);
}

/* One untimed window through the same calls, with every receive's length and
 * the received bytes checked on each receiving rank. */
static void verify_window(const bench_options *opt, stream *s, size_t capacity)
{
    const unsigned seed_from_rank[2] = {0xb0a710u, 0xb0a711u};
    bench_poison(s->recv_buf, capacity);
    bench_fill_pattern(s->send_buf, s->size, seed_from_rank[s->rank]);
    one_window_with_status(s, s->statuses);
    int receives = s->bidirectional || s->rank == 1;
    if (!receives)
        return;
    const int peer = 1 - s->rank;
    char where[64];
    for (int w = 0; w < s->window; w++) {
        snprintf(where, sizeof where, "message %d of the window from rank %d", w, peer);
        /* Lengths per message; the bytes once (all land in one buffer). */
        bench_check_or_abort(opt, s->recv_buf, capacity, s->size, seed_from_rank[peer],
                             &s->statuses[w], where);
    }
}

int bandwidth_main(int argc, char **argv, const char *program, int bidirectional)
{
    MPI_Init(&argc, &argv);
    const bench_defaults defaults = {
        .min_size = 1, .max_size = 4u << 20,
        .iterations = 100, .warmup = 10, .reps = 11, .window = 64,
        .size_time_cap_s = 1.0, .accepted = BENCH_OPT_REPS | BENCH_OPT_WINDOW,
        .what = bidirectional
                    ? "bidirectional windowed bandwidth between ranks 0 and 1 (MB/s, both directions summed)"
                    : "windowed streaming bandwidth from rank 0 to rank 1 (MB/s)",
    };
    bench_options opt;
    bench_parse_options(argc, argv, program, &defaults, &opt);
    if (opt.max_size > (size_t)0x7fffffff - BENCH_GUARD_BYTES) {
        if (opt.rank == 0)
            fprintf(stderr, "%s: sizes above 2 GiB need MPI_Count calls; not supported\n", program);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    size_t *sizes = NULL;
    size_t size_count = bench_size_list(opt.min_size, opt.max_size, &sizes);
    size_t capacity = opt.max_size + BENCH_GUARD_BYTES;
    stream s = {
        .send_buf = bench_alloc_buffer(&opt, capacity),
        .recv_buf = bench_alloc_buffer(&opt, capacity),
        .window = opt.window, .rank = opt.rank, .bidirectional = bidirectional,
        .requests = malloc(2 * (size_t)opt.window * sizeof(MPI_Request)),
        .statuses = malloc(2 * (size_t)opt.window * sizeof(MPI_Status)),
    };
    double *rates = malloc((size_t)opt.reps * sizeof *rates);
    if (!s.requests || !s.statuses || !rates)
        MPI_Abort(MPI_COMM_WORLD, 1);

    char extra[64];
    snprintf(extra, sizeof extra, "reps: %d  window: %d", opt.reps, opt.window);
    bench_print_header(&opt, "size_bytes  median_MBps  min_MBps  max_MBps  windows_per_rep",
                       extra);

    const double directions = bidirectional ? 2.0 : 1.0;
    for (size_t k = 0; k < size_count; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (!bench_is_measuring(&opt))
            continue;
        s.size = sizes[k];
        verify_window(&opt, &s, capacity);

        size_t window_bytes = s.size * (size_t)opt.window;
        long wanted = windows_scaled(opt.iterations, window_bytes, 1);
        long warmup = windows_scaled(opt.warmup, window_bytes, MIN_WARMUP_WINDOWS);
        double per_window = bench_warmup(&opt, warmup, 0.25 * opt.size_time_cap_s, one_window, &s);
        long windows_per_rep = 0;
        if (opt.rank == 0)
            windows_per_rep = bench_plan_steps(&opt, wanted, 1, per_window * (double)opt.reps);
        windows_per_rep = bench_share_count(&opt, windows_per_rep);

        for (int r = 0; r < opt.reps; r++) {
            double start = MPI_Wtime();
            for (long w = 0; w < windows_per_rep; w++)
                one_window(&s);
            double seconds = MPI_Wtime() - start;
            rates[r] = directions * (double)window_bytes * (double)windows_per_rep / seconds / 1e6;
        }
        if (opt.rank == 0) {
            bench_summary sum = bench_summarize(rates, (size_t)opt.reps);
            printf("%zu  %.2f  %.2f  %.2f  %ld\n", s.size, sum.median, sum.min, sum.max,
                   windows_per_rep);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(rates);
    free(s.statuses);
    free(s.requests);
    bench_free_buffer(s.send_buf);
    bench_free_buffer(s.recv_buf);
    free(sizes);
    MPI_Finalize();
    return 0;
}
