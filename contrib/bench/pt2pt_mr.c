/* pt2pt_mr: small-message rate, messages per second (the loop of OSU's
 * osu_mbw_mr). PAIRS senders stream to PAIRS receivers at once: sender i is
 * rank i, its receiver rank i + PAIRS. One step is one window: the sender
 * posts WINDOW MPI_Isend of one buffer, the receiver WINDOW MPI_Irecv into
 * one buffer, both MPI_Waitall, then the receiver sends a 4-byte ack so that
 * the sender's clock covers delivery. Ranks from 2 * PAIRS on take no part
 * and wait in the per-size barrier.
 *
 *   pt2pt_mr [-p PAIRS|all] [-m MIN:MAX] [-w WINDOW] [-i WINDOWS] [-r REPS] ...
 *   defaults: one pair, 1:64 B, window 64, 100 windows per repetition, 11 repetitions
 *
 * A repetition starts after a barrier of the measuring ranks; its rate is
 * PAIRS * WINDOW * windows / (the slowest sender's time), so a pair that
 * lags lowers the figure instead of hiding behind the fast ones. The
 * figure per size is the median over repetitions (min and max too); the MB/s
 * column is that median times the size (10^6 bytes).
 *
 * Before timing each size one window goes through the same calls with a
 * distinct pattern per message (sender, position in the window, size), each
 * into its own receive slot, so lost, reordered or damaged messages abort
 * the run (bench_check_or_abort). */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ACK_BYTES = 4, MIN_WARMUP_WINDOWS = 2 };

typedef struct pair_stream {
    unsigned char *send_buf, *recv_buf; /* one buffer each for the timed windows */
    unsigned char *send_slots, *recv_slots; /* one slot per message for the checked window */
    size_t slot_bytes;
    size_t size;
    int window;
    int is_sender;
    int peer; /* world rank of the other side of this rank's pair */
    MPI_Request *requests;
    MPI_Status *statuses;
    unsigned char ack[ACK_BYTES];
} pair_stream;

/* One window; `slots` chooses the per-message slots of the checked window. */
static void one_window_in(pair_stream *s, int slots, MPI_Status *statuses)
{
    const int count = (int)s->size;
    if (s->is_sender) {
        for (int w = 0; w < s->window; w++)
            MPI_Isend(slots ? s->send_slots + (size_t)w * s->slot_bytes : s->send_buf, count,
                      MPI_BYTE, s->peer, BENCH_TAG_DATA, MPI_COMM_WORLD, &s->requests[w]);
        MPI_Waitall(s->window, s->requests, statuses);
        MPI_Recv(s->ack, ACK_BYTES, MPI_BYTE, s->peer, BENCH_TAG_ACK, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < s->window; w++)
            MPI_Irecv(slots ? s->recv_slots + (size_t)w * s->slot_bytes : s->recv_buf, count,
                      MPI_BYTE, s->peer, BENCH_TAG_DATA, MPI_COMM_WORLD, &s->requests[w]);
        MPI_Waitall(s->window, s->requests, statuses);
        MPI_Send(s->ack, ACK_BYTES, MPI_BYTE, s->peer, BENCH_TAG_ACK, MPI_COMM_WORLD);
    }
}

static unsigned message_seed(int sender, int position, size_t size)
{
    return 0x6d7200u ^ ((unsigned)sender << 20) ^ ((unsigned)position << 8) ^ (unsigned)size;
}

static void verify_window(const bench_options *opt, pair_stream *s)
{
    int sender = s->is_sender ? opt->rank : s->peer;
    size_t all_slots = (size_t)s->window * s->slot_bytes;
    if (s->is_sender) {
        for (int w = 0; w < s->window; w++)
            bench_fill_pattern(s->send_slots + (size_t)w * s->slot_bytes, s->size,
                               message_seed(sender, w, s->size));
    } else {
        bench_poison(s->recv_slots, all_slots);
    }
    one_window_in(s, 1, s->statuses);
    if (s->is_sender)
        return;
    char where[96];
    for (int w = 0; w < s->window; w++) {
        snprintf(where, sizeof where, "message %d of the window from rank %d", w, sender);
        bench_check_or_abort(opt, s->recv_slots + (size_t)w * s->slot_bytes, s->slot_bytes,
                             s->size, message_seed(sender, w, s->size), &s->statuses[w], where);
    }
}

/* "-p N" / "-p all" is ours; the rest goes to the common parser. Returns the
 * pair count asked for, 0 for "all", -1 for a bad value. */
static int take_pairs_option(int *argc, char **argv)
{
    int pairs = 1, kept = 1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < *argc) {
            const char *value = argv[++i];
            char *end = NULL;
            long n = strtol(value, &end, 10);
            if (!strcmp(value, "all"))
                pairs = 0;
            else if (end != value && *end == '\0' && n >= 1 && n <= 1 << 20)
                pairs = (int)n;
            else
                pairs = -1;
            continue;
        }
        argv[kept++] = argv[i];
    }
    *argc = kept;
    return pairs;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int pairs = take_pairs_option(&argc, argv);
    const bench_defaults defaults = {
        .min_size = 1, .max_size = 64,
        .iterations = 100, .warmup = 10, .reps = 11, .window = 64,
        .size_time_cap_s = 1.0, .accepted = BENCH_OPT_REPS | BENCH_OPT_WINDOW,
        .what = "small-message rate in messages/s, PAIRS pairs streaming at once "
                "(-p PAIRS, or -p all: half the ranks send to the other half; default 1)",
    };
    bench_options opt;
    bench_parse_options(argc, argv, "pt2pt_mr", &defaults, &opt);
    if (pairs == 0)
        pairs = opt.nranks / 2;
    if (pairs < 1 || 2 * pairs > opt.nranks) {
        if (opt.rank == 0)
            fprintf(stderr, "pt2pt_mr: -p needs 1..%d pairs (or all) with %d ranks\n",
                    opt.nranks / 2, opt.nranks);
        MPI_Finalize();
        return 2;
    }
    if (opt.max_size > (size_t)0x7fffffff - BENCH_GUARD_BYTES) {
        if (opt.rank == 0)
            fprintf(stderr, "pt2pt_mr: sizes above 2 GiB are not supported\n");
        MPI_Finalize();
        return 2;
    }
    opt.measuring = 2 * pairs;
    const int measuring = opt.rank < 2 * pairs;
    MPI_Comm pair_comm = MPI_COMM_NULL; /* the measuring ranks: their barrier starts a repetition */
    MPI_Comm_split(MPI_COMM_WORLD, measuring ? 0 : MPI_UNDEFINED, opt.rank, &pair_comm);

    size_t *sizes = NULL;
    size_t size_count = bench_size_list(opt.min_size, opt.max_size, &sizes);
    size_t capacity = opt.max_size + BENCH_GUARD_BYTES;
    pair_stream s = {
        .window = opt.window,
        .is_sender = opt.rank < pairs,
        .peer = opt.rank < pairs ? opt.rank + pairs : opt.rank - pairs,
        .slot_bytes = capacity,
    };
    s.send_buf = bench_alloc_touched(capacity);
    s.recv_buf = bench_alloc_touched(capacity);
    s.send_slots = bench_alloc_touched(capacity * (size_t)opt.window);
    s.recv_slots = bench_alloc_touched(capacity * (size_t)opt.window);
    s.requests = malloc((size_t)opt.window * sizeof(MPI_Request));
    s.statuses = malloc((size_t)opt.window * sizeof(MPI_Status));
    double *seconds = malloc((size_t)opt.reps * sizeof *seconds);
    double *rates = malloc((size_t)opt.reps * sizeof *rates);
    if (!s.send_buf || !s.recv_buf || !s.send_slots || !s.recv_slots || !s.requests ||
        !s.statuses || !seconds || !rates)
        MPI_Abort(MPI_COMM_WORLD, 1);

    char extra[128];
    snprintf(extra, sizeof extra, "reps: %d  window: %d  pairs: %d (rank i sends to rank i + %d)",
             opt.reps, opt.window, pairs, pairs);
    bench_print_header(&opt,
                       "size_bytes  median_msgs_per_s  min_msgs_per_s  max_msgs_per_s  median_MBps  windows_per_rep",
                       extra);

    for (size_t k = 0; k < size_count; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (!measuring)
            continue;
        s.size = sizes[k];
        verify_window(&opt, &s);

        /* Warm-up: every pair runs the same count; the slowest sender's time
         * per window plans the repetitions so one size stays under the cap
         * (an oversubscribed window can cost a scheduler timeslice). */
        long warmup = opt.warmup < MIN_WARMUP_WINDOWS ? MIN_WARMUP_WINDOWS : opt.warmup;
        MPI_Barrier(pair_comm);
        double start = MPI_Wtime();
        for (long w = 0; w < warmup; w++)
            one_window_in(&s, 0, MPI_STATUSES_IGNORE);
        double per_window = (MPI_Wtime() - start) / (double)warmup;
        MPI_Allreduce(MPI_IN_PLACE, &per_window, 1, MPI_DOUBLE, MPI_MAX, pair_comm);
        long windows_per_rep = opt.iterations;
        double planned = per_window * (double)opt.reps * (double)windows_per_rep;
        if (per_window > 0 && planned > opt.size_time_cap_s)
            windows_per_rep = (long)(opt.size_time_cap_s / (per_window * (double)opt.reps));
        if (windows_per_rep < 1)
            windows_per_rep = 1;

        for (int r = 0; r < opt.reps; r++) {
            MPI_Barrier(pair_comm);
            start = MPI_Wtime();
            for (long w = 0; w < windows_per_rep; w++)
                one_window_in(&s, 0, MPI_STATUSES_IGNORE);
            /* Receivers count 0: the sender's clock includes the ack. */
            seconds[r] = s.is_sender ? MPI_Wtime() - start : 0.0;
        }
        /* Slowest sender per repetition, gathered after the timing. */
        MPI_Allreduce(MPI_IN_PLACE, seconds, opt.reps, MPI_DOUBLE, MPI_MAX, pair_comm);
        if (opt.rank == 0) {
            double messages = (double)pairs * (double)opt.window * (double)windows_per_rep;
            for (int r = 0; r < opt.reps; r++)
                rates[r] = messages / seconds[r];
            bench_summary sum = bench_summarize(rates, (size_t)opt.reps);
            printf("%zu  %.0f  %.0f  %.0f  %.2f  %ld\n", s.size, sum.median, sum.min, sum.max,
                   sum.median * (double)s.size / 1e6, windows_per_rep);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (pair_comm != MPI_COMM_NULL)
        MPI_Comm_free(&pair_comm);
    free(rates);
    free(seconds);
    free(s.statuses);
    free(s.requests);
    free(s.send_buf);
    free(s.recv_buf);
    free(s.send_slots);
    free(s.recv_slots);
    free(sizes);
    MPI_Finalize();
    return 0;
}
