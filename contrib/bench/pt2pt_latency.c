/* pt2pt_latency: ping-pong between ranks 0 and 1; one-way latency is half a
 * round trip.
 *
 * Per size, rank 0 times samples of round trips: batches of 10 round trips
 * for messages up to 8 KiB (a single round trip there is well under a
 * microsecond and would be dominated by timer resolution and overhead), one
 * round trip per sample above. It reports the median one-way time over the
 * samples, and the minimum and maximum so the noise is visible. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>

enum {
    BATCHED_UP_TO = 8192,      /* bytes: sizes up to here are timed in batches */
    ROUND_TRIPS_PER_BATCH = 10,
    SCALE_PIVOT = 8192,        /* above this, iterations shrink as 1/size */
    MIN_ROUND_TRIPS = 100,
    MIN_WARMUP = 10,
    MIN_SAMPLES = 5,
};

typedef struct ping_pong {
    unsigned char *send_buf, *recv_buf;
    size_t size;
    int rank;
} ping_pong;

static void one_round_trip(void *context)
{
    ping_pong *p = context;
    if (p->rank == 0) {
        MPI_Send(p->send_buf, (int)p->size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(p->recv_buf, (int)p->size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(p->recv_buf, (int)p->size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Send(p->send_buf, (int)p->size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD);
    }
}

/* One untimed round trip with checked data both ways, through the same calls
 * as the timed loop. */
static void verify_round_trip(const bench_options *opt, ping_pong *p, size_t capacity)
{
    const unsigned seed_out = 0x5eed01u, seed_back = 0x5eed02u;
    MPI_Status status;
    bench_poison(p->recv_buf, capacity);
    if (p->rank == 0) {
        bench_fill_pattern(p->send_buf, p->size, seed_out);
        MPI_Send(p->send_buf, (int)p->size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(p->recv_buf, (int)p->size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD, &status);
        bench_check_or_abort(opt, p->recv_buf, capacity, p->size, seed_back, &status,
                             "reply from rank 1");
    } else {
        MPI_Recv(p->recv_buf, (int)p->size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD, &status);
        bench_check_or_abort(opt, p->recv_buf, capacity, p->size, seed_out, &status,
                             "ping from rank 0");
        bench_fill_pattern(p->send_buf, p->size, seed_back);
        MPI_Send(p->send_buf, (int)p->size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const bench_defaults defaults = {
        .min_size = 0, .max_size = 4u << 20,
        .iterations = 10000, .warmup = 1000, .reps = 1, .window = 1,
        .size_time_cap_s = 1.0, .accepted = 0,
        .what = "ping-pong one-way latency between ranks 0 and 1 (microseconds)",
    };
    bench_options opt;
    bench_parse_options(argc, argv, "pt2pt_latency", &defaults, &opt);
    if (opt.max_size > (size_t)0x7fffffff - BENCH_GUARD_BYTES) {
        if (opt.rank == 0)
            fprintf(stderr, "pt2pt_latency: sizes above 2 GiB need MPI_Count calls; not supported\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    size_t *sizes = NULL;
    size_t size_count = bench_size_list(opt.min_size, opt.max_size, &sizes);
    size_t capacity = opt.max_size + BENCH_GUARD_BYTES;
    ping_pong p = {
        .send_buf = bench_alloc_buffer(&opt, capacity),
        .recv_buf = bench_alloc_buffer(&opt, capacity),
        .size = 0, .rank = opt.rank,
    };
    /* Enough room for the largest plan: every round trip its own sample. */
    double *samples = malloc((size_t)(opt.iterations > MIN_SAMPLES ? opt.iterations : MIN_SAMPLES)
                             * sizeof *samples);
    if (!samples)
        MPI_Abort(MPI_COMM_WORLD, 1);

    char extra[96];
    snprintf(extra, sizeof extra, "batch: %d round trips up to %d B", ROUND_TRIPS_PER_BATCH,
             BATCHED_UP_TO);
    bench_print_header(&opt, "size_bytes  median_us  min_us  max_us  samples", extra);

    for (size_t k = 0; k < size_count; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (!bench_is_measuring(&opt))
            continue;
        p.size = sizes[k];
        verify_round_trip(&opt, &p, capacity);

        long batch = p.size <= BATCHED_UP_TO ? ROUND_TRIPS_PER_BATCH : 1;
        long wanted_round_trips = bench_scale_count(opt.iterations, p.size, SCALE_PIVOT,
                                                    MIN_ROUND_TRIPS);
        long warmup = bench_scale_count(opt.warmup, p.size, SCALE_PIVOT, MIN_WARMUP);
        double per_round_trip = bench_warmup(&opt, warmup, 0.25 * opt.size_time_cap_s,
                                             one_round_trip, &p);
        long batches = 0;
        if (opt.rank == 0) {
            long wanted_batches = wanted_round_trips / batch;
            batches = bench_plan_steps(&opt, wanted_batches > 0 ? wanted_batches : 1,
                                       MIN_SAMPLES, per_round_trip * (double)batch);
            if (batches > opt.iterations && batches > MIN_SAMPLES)
                batches = opt.iterations; /* samples[] holds no more */
        }
        batches = bench_share_count(&opt, batches);

        if (opt.rank == 0) {
            for (long s = 0; s < batches; s++) {
                double start = MPI_Wtime();
                for (long r = 0; r < batch; r++) {
                    MPI_Send(p.send_buf, (int)p.size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD);
                    MPI_Recv(p.recv_buf, (int)p.size, MPI_BYTE, 1, BENCH_TAG_DATA, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                }
                samples[s] = (MPI_Wtime() - start) * 1e6 / (2.0 * (double)batch);
            }
            bench_summary sum = bench_summarize(samples, (size_t)batches);
            printf("%zu  %.3f  %.3f  %.3f  %ld\n", p.size, sum.median, sum.min, sum.max, batches);
            fflush(stdout);
        } else {
            for (long s = 0; s < batches * batch; s++) {
                MPI_Recv(p.recv_buf, (int)p.size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Send(p.send_buf, (int)p.size, MPI_BYTE, 0, BENCH_TAG_DATA, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(samples);
    bench_free_buffer(p.send_buf);
    bench_free_buffer(p.recv_buf);
    free(sizes);
    MPI_Finalize();
    return 0;
}
