/* Shared plumbing for the Axon point-to-point benchmarks.
 *
 * Portable MPI C on purpose: the same sources are compiled with Axon's mpicc,
 * Open MPI's and MPICH's, so only standard MPI calls appear here. */
#ifndef AXON_BENCH_COMMON_H
#define AXON_BENCH_COMMON_H

#include <stddef.h>
#include <mpi.h>

/* Tags: data and acknowledgements never share a tag with the control
 * messages that drive warm-up, so a stray message cannot be mistaken for one. */
enum { BENCH_TAG_DATA = 1, BENCH_TAG_ACK = 2, BENCH_TAG_CTRL = 3 };

/* Which options a program accepts; -m, -i, -x, -t and -h are always there. */
enum { BENCH_OPT_REPS = 1u << 0, BENCH_OPT_WINDOW = 1u << 1 };

/* Defaults a program hands to bench_parse_options(); the user's flags
 * override them. */
typedef struct bench_defaults {
    size_t min_size, max_size;
    long iterations;   /* steps per size (round trips, or windows per repetition) */
    long warmup;       /* untimed steps per size before measuring */
    int reps;          /* repetitions the median is taken over (bandwidth) */
    int window;        /* messages in flight per window (bandwidth) */
    double size_time_cap_s; /* wall-clock cap for one size's timed part */
    unsigned accepted;  /* BENCH_OPT_* */
    const char *what;   /* one line for -h: what the program measures */
} bench_defaults;

typedef struct bench_options {
    const char *program;
    size_t min_size, max_size;
    long iterations, warmup;
    int reps, window;
    double size_time_cap_s;
    int rank, nranks;
    int measuring;   /* ranks 0 .. measuring-1 take part in the timing (2 unless a program says) */
    int device;      /* -d cuda: buffers may be GPU memory */
    char place[2];   /* 'H' or 'D': buffers of rank 0 and of the other ranks (OSU's "D D", "H D") */
} bench_options;

/* Parses argv on every rank identically (all ranks see the same command
 * line). On a usage error rank 0 explains and all ranks leave through
 * MPI_Finalize + exit, so a typo is a clean failure rather than a hang. */
void bench_parse_options(int argc, char **argv, const char *program,
                         const bench_defaults *defaults, bench_options *out);

/* Size sweep: 0 (if MIN is 0), MIN, every power of two in between, MAX.
 * Returns the count; *sizes is malloc'ed (caller frees). */
size_t bench_size_list(size_t min_size, size_t max_size, size_t **sizes);

/* Page-aligned buffer of at least `bytes`, every page written once so the
 * first timed iteration does not pay for page faults. */
void *bench_alloc_touched(size_t bytes);

/* --- GPU buffers --------------------------------------------------------
 * `-d cuda` with placements "D D" / "H D" / "D H" / "H H" after the options
 * (rank 0's buffers, then the others'; default D D), as OSU's benchmarks.
 * The CUDA driver is dlopen'ed (BENCH_CUDA_LIBRARY, default libcuda.so.1),
 * so the programs still build with any MPI and without CUDA; without a
 * driver or device every rank says "no CUDA device" and the program exits 1.
 * bench_alloc_buffer() places a buffer as this rank's placement says; the
 * pattern, poison and check functions below accept device buffers. */
void *bench_alloc_buffer(const bench_options *opt, size_t bytes);
void bench_free_buffer(void *buf);
/* Copies between host memory and a buffer from bench_alloc_buffer. */
void bench_copy_in(void *buf, const void *host, size_t bytes);
void bench_copy_out(void *host, const void *buf, size_t bytes);

/* Prints the header: program, MPI library, ranks, parameters, column names. */
void bench_print_header(const bench_options *opt, const char *columns,
                        const char *extra_info);

/* --- correctness guard ---------------------------------------------------
 * Buffers are filled with a pattern that depends on the message size and a
 * per-direction seed, so stale data from an earlier size or the other
 * direction cannot pass. Receive buffers are poisoned before the check,
 * including a guard zone after the message, so an overrun is caught too. */
enum { BENCH_GUARD_BYTES = 64 };
void bench_fill_pattern(unsigned char *buf, size_t size, unsigned seed);
void bench_poison(unsigned char *buf, size_t bytes);
/* Aborts the job with a clear message if `buf` does not hold the pattern
 * (size bytes), the guard after it was written, or the status count is not
 * `size`. `capacity` is the allocated length of buf. */
void bench_check_or_abort(const bench_options *opt, const unsigned char *buf,
                          size_t capacity, size_t size, unsigned seed,
                          const MPI_Status *status, const char *where);

/* --- warm-up and planning ------------------------------------------------
 * Ranks 0 and 1 run `step` in lockstep. After every warm-up step rank 0 says
 * whether to go on, so it can stop early when a step turns out to be slow
 * (an oversubscribed node can make one round trip cost a scheduler
 * timeslice). Returns, on rank 0, the estimated seconds per step (mean of the
 * second half of the warm-up, the first steps pay for connection set-up). */
typedef void (*bench_step_fn)(void *context);
double bench_warmup(const bench_options *opt, long max_steps, double max_seconds,
                    bench_step_fn step, void *context);

/* Rank 0's value, delivered to rank 1 (the plan both must follow). */
long bench_share_count(const bench_options *opt, long value_on_rank0);

/* Steps for the timed part: `wanted`, lowered so that the size stays under the
 * time cap given the warm-up estimate, never below `at_least`. Rank 0 only. */
long bench_plan_steps(const bench_options *opt, long wanted, long at_least,
                      double seconds_per_step);

/* --- statistics ---------------------------------------------------------- */
typedef struct bench_summary { double median, min, max; } bench_summary;
/* Sorts `values` in place. */
bench_summary bench_summarize(double *values, size_t count);

/* Ranks beyond 0 and 1 (oversubscribed runs with -np 4) have no part in the
 * measurement; they wait in the per-size barrier like an application rank
 * waiting in MPI, which is what makes oversubscription visible. */
int bench_is_measuring(const bench_options *opt);

/* Scales a per-size count down for large messages: `base` up to `pivot`
 * bytes, then base * pivot / size, never below `floor_count`. */
long bench_scale_count(long base, size_t size, size_t pivot, long floor_count);

#endif
