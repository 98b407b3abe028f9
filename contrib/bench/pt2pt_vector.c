/* pt2pt_vector: ping-pong of a non-contiguous message between ranks 0 and 1;
 * one-way latency is half a round trip.
 *
 * The message is MPI_Type_vector(N, 1, 2, MPI_DOUBLE): every other double of
 * a buffer twice the message size, sent and received with that type on both
 * sides, so the library's datatype engine packs on one side and unpacks on
 * the other. "size" is the data that moves (N * 8 bytes); sizes are rounded
 * down to a whole number of doubles. Timing follows pt2pt_latency: batches of
 * round trips for small messages, the median one-way time over the samples,
 * plus the minimum and maximum. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    BATCHED_UP_TO = 8192,      /* bytes: sizes up to here are timed in batches */
    ROUND_TRIPS_PER_BATCH = 10,
    SCALE_PIVOT = 8192,        /* above this, iterations shrink as 1/size */
    MIN_ROUND_TRIPS = 100,
    MIN_WARMUP = 10,
    MIN_SAMPLES = 5,
};

typedef struct ping_pong {
    unsigned char *send_buf, *recv_buf; /* strided: 2 * size bytes used */
    MPI_Datatype type;                  /* vector of size / 8 doubles, or MPI_DOUBLE with count 0 */
    int count;
    int rank;
} ping_pong;

static void one_round_trip(void *context)
{
    ping_pong *p = context;
    if (p->rank == 0) {
        MPI_Send(p->send_buf, p->count, p->type, 1, BENCH_TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(p->recv_buf, p->count, p->type, 1, BENCH_TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(p->recv_buf, p->count, p->type, 0, BENCH_TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(p->send_buf, p->count, p->type, 0, BENCH_TAG_DATA, MPI_COMM_WORLD);
    }
}

/* Double i of the message lives at double 2*i of the strided buffer. */
static void scatter(unsigned char *strided, const unsigned char *dense, size_t size)
{
    for (size_t i = 0; i < size / 8; i++)
        memcpy(strided + 16 * i, dense + 8 * i, 8);
}

static void gather(unsigned char *dense, const unsigned char *strided, size_t size)
{
    for (size_t i = 0; i < size / 8; i++)
        memcpy(dense + 8 * i, strided + 16 * i, 8);
}

/* Receives one message with the vector type, checks the data (through the
 * shared guard: pattern, byte count, nothing written past it) and that the
 * holes between the doubles were left alone. */
static void receive_checked(const bench_options *opt, ping_pong *p, int from, size_t size, unsigned seed,
                            unsigned char *dense, size_t dense_capacity, const char *where)
{
    MPI_Status status;
    unsigned char poison;
    bench_poison(&poison, 1);
    bench_poison(p->recv_buf, 2 * size);
    MPI_Recv(p->recv_buf, p->count, p->type, from, BENCH_TAG_DATA, MPI_COMM_WORLD, &status);
    for (size_t i = 0; i < size / 8; i++)
        for (size_t b = 8; b < 16; b++)
            if (p->recv_buf[16 * i + b] != poison) {
                fprintf(stderr, "%s: DATA CHECK FAILED on rank %d (%s), size %zu: a hole of the vector was written "
                                "(byte %zu).\n", opt->program, opt->rank, where, size, 16 * i + b);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
    bench_poison(dense, dense_capacity);
    gather(dense, p->recv_buf, size);
    bench_check_or_abort(opt, dense, dense_capacity, size, seed, &status, where);
}

/* One untimed round trip with checked data both ways. */
static void verify_round_trip(const bench_options *opt, ping_pong *p, size_t size, unsigned char *dense,
                              size_t dense_capacity)
{
    const unsigned seed_out = 0x5eed11u, seed_back = 0x5eed12u;
    if (p->rank == 0) {
        bench_fill_pattern(dense, size, seed_out);
        scatter(p->send_buf, dense, size);
        MPI_Send(p->send_buf, p->count, p->type, 1, BENCH_TAG_DATA, MPI_COMM_WORLD);
        receive_checked(opt, p, 1, size, seed_back, dense, dense_capacity, "reply from rank 1");
    } else {
        receive_checked(opt, p, 0, size, seed_out, dense, dense_capacity, "ping from rank 0");
        bench_fill_pattern(dense, size, seed_back);
        scatter(p->send_buf, dense, size);
        MPI_Send(p->send_buf, p->count, p->type, 0, BENCH_TAG_DATA, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const bench_defaults defaults = {
        .min_size = 8, .max_size = 4u << 20,
        .iterations = 10000, .warmup = 1000, .reps = 1, .window = 1,
        .size_time_cap_s = 1.0, .accepted = 0,
        .what = "ping-pong one-way latency of a vector of doubles (stride 2) between ranks 0 and 1 "
                "(microseconds; size = data bytes)",
    };
    bench_options opt;
    bench_parse_options(argc, argv, "pt2pt_vector", &defaults, &opt);
    if (opt.max_size > ((size_t)0x7fffffff - BENCH_GUARD_BYTES) / 2) {
        if (opt.rank == 0)
            fprintf(stderr, "pt2pt_vector: sizes above 1 GiB are not supported\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    size_t *sizes = NULL;
    size_t size_count = bench_size_list(opt.min_size, opt.max_size, &sizes);
    size_t strided_capacity = 2 * opt.max_size + 16;
    size_t dense_capacity = opt.max_size + BENCH_GUARD_BYTES;
    ping_pong p = {
        .send_buf = bench_alloc_touched(strided_capacity),
        .recv_buf = bench_alloc_touched(strided_capacity),
        .type = MPI_DOUBLE, .count = 0, .rank = opt.rank,
    };
    unsigned char *dense = bench_alloc_touched(dense_capacity);
    double *samples = malloc((size_t)(opt.iterations > MIN_SAMPLES ? opt.iterations : MIN_SAMPLES)
                             * sizeof *samples);
    if (!samples)
        MPI_Abort(MPI_COMM_WORLD, 1);

    char extra[128];
    snprintf(extra, sizeof extra, "type: vector(size/8, 1, 2) of MPI_DOUBLE; batch: %d round trips up to %d B",
             ROUND_TRIPS_PER_BATCH, BATCHED_UP_TO);
    bench_print_header(&opt, "size_bytes  median_us  min_us  max_us  samples", extra);

    size_t last_size = (size_t)-1;
    for (size_t k = 0; k < size_count; k++) {
        size_t size = sizes[k] / 8 * 8; /* whole doubles */
        if (size == last_size)
            continue; /* rounding made two sweep points equal */
        last_size = size;
        MPI_Barrier(MPI_COMM_WORLD);
        if (!bench_is_measuring(&opt))
            continue;
        if (size > 0) {
            MPI_Type_vector((int)(size / 8), 1, 2, MPI_DOUBLE, &p.type);
            MPI_Type_commit(&p.type);
            p.count = 1;
        } else {
            p.type = MPI_DOUBLE;
            p.count = 0;
        }
        verify_round_trip(&opt, &p, size, dense, dense_capacity);

        long batch = size <= BATCHED_UP_TO ? ROUND_TRIPS_PER_BATCH : 1;
        long wanted_round_trips = bench_scale_count(opt.iterations, size, SCALE_PIVOT, MIN_ROUND_TRIPS);
        long warmup = bench_scale_count(opt.warmup, size, SCALE_PIVOT, MIN_WARMUP);
        double per_round_trip = bench_warmup(&opt, warmup, 0.25 * opt.size_time_cap_s, one_round_trip, &p);
        long batches = 0;
        if (opt.rank == 0) {
            long wanted_batches = wanted_round_trips / batch;
            batches = bench_plan_steps(&opt, wanted_batches > 0 ? wanted_batches : 1, MIN_SAMPLES,
                                       per_round_trip * (double)batch);
            if (batches > opt.iterations && batches > MIN_SAMPLES)
                batches = opt.iterations; /* samples[] holds no more */
        }
        batches = bench_share_count(&opt, batches);

        if (opt.rank == 0) {
            for (long s = 0; s < batches; s++) {
                double start = MPI_Wtime();
                for (long r = 0; r < batch; r++)
                    one_round_trip(&p);
                samples[s] = (MPI_Wtime() - start) * 1e6 / (2.0 * (double)batch);
            }
            bench_summary sum = bench_summarize(samples, (size_t)batches);
            printf("%zu  %.3f  %.3f  %.3f  %ld\n", size, sum.median, sum.min, sum.max, batches);
            fflush(stdout);
        } else {
            for (long s = 0; s < batches * batch; s++)
                one_round_trip(&p);
        }
        if (p.type != MPI_DOUBLE)
            MPI_Type_free(&p.type);
        p.type = MPI_DOUBLE;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(samples);
    free(dense);
    free(p.send_buf);
    free(p.recv_buf);
    free(sizes);
    MPI_Finalize();
    return 0;
}
