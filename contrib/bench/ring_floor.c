/* The floor under any MPI's small-message latency on one node: what moving
 * a few bytes between two processes through shared memory costs with no
 * MPI at all. Not an MPI program.
 *
 * A one-way shared-memory message is a cache line changing hands twice
 * (the sender's store takes it, the receiver's load fetches it back); an MPI
 * adds its matching and calls on top. This program measures the line alone
 * and a ping-pong of 32-byte records laid out as btl/sm lays out an 8-byte
 * message (header word stored last with release, read with acquire, two
 * records per line), so `pt2pt_latency` can be read against it.
 *
 *   ring_floor [-n ROUNDS] [-c CPU_A,CPU_B]    default 200000 rounds, CPUs 0,1
 *
 * Prints the median over 5 batches, in nanoseconds one way:
 *   line             a flag word passed back and forth (no payload)
 *   record_pause     32-byte records through a ring per direction, the
 *                    waiter pausing (x86 PAUSE) between polls
 *   record_spin      the same, polling without a pause
 *   pause            one PAUSE instruction on CPU_A (the price of a poll's pause)
 * Exit 1 with the reason when a CPU cannot be used. */
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

enum { kRing = 1 << 16, kRecord = 32, kBatches = 5 };

struct shared {
    _Alignas(64) _Atomic uint64_t flag;
    _Alignas(64) uint8_t ring[2][kRing]; /* [0]: A -> B, [1]: B -> A */
};

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/* The flag alternates: side 0 writes odd values, side 1 even ones. */
static void line_side(struct shared *s, int side, long rounds) {
    for (long i = 0; i < rounds; i++) {
        uint64_t mine = 2 * (uint64_t)i + 1 + (uint64_t)side;
        if (side == 1)
            while (atomic_load_explicit(&s->flag, memory_order_acquire) != mine - 1) relax();
        atomic_store_explicit(&s->flag, mine, memory_order_release);
        if (side == 0)
            while (atomic_load_explicit(&s->flag, memory_order_acquire) != mine + 1) relax();
    }
}

/* One record each way per round; the reader zeroes the header it consumed
 * (the ring stays all-zero ahead of the writer, as btl/sm's consumer keeps it). */
static void record_side(struct shared *s, int side, long rounds, int pause, uint64_t *base) {
    uint8_t *out = s->ring[side], *in = s->ring[1 - side];
    uint64_t pos = *base, payload = 1;
    for (long i = 0; i < rounds; i++) {
        for (int turn = 0; turn < 2; turn++) {
            uint64_t at = pos & (kRing - 1);
            if ((turn == 0) == (side == 0)) { /* send */
                memset(out + at + 8, 0x5a, 16);
                memcpy(out + at + 24, &payload, 8);
                atomic_store_explicit((_Atomic uint64_t *)(out + at), 0xa5a5000100000008ull, memory_order_release);
            } else { /* receive */
                _Atomic uint64_t *word = (_Atomic uint64_t *)(in + at);
                while (atomic_load_explicit(word, memory_order_acquire) == 0)
                    if (pause) relax();
                memcpy(&payload, in + at + 24, 8);
                payload++;
                atomic_store_explicit(word, 0, memory_order_relaxed);
            }
        }
        pos += kRecord;
    }
    *base = pos;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v) {
    qsort(v, kBatches, sizeof *v, cmp);
    return v[kBatches / 2];
}

int main(int argc, char **argv) {
    long rounds = 200000;
    int cpu_a = 0, cpu_b = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) rounds = atol(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc && sscanf(argv[++i], "%d,%d", &cpu_a, &cpu_b) == 2) {
        } else {
            fprintf(stderr, "usage: ring_floor [-n ROUNDS] [-c CPU_A,CPU_B]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("ring_floor: mmap");
        return 1;
    }
    memset(s, 0, sizeof *s);
    /* Both CPUs are checked here, before the sides depend on each other. */
    if (pin(cpu_b) != 0) {
        fprintf(stderr, "ring_floor: cannot run on CPU %d\n", cpu_b);
        return 1;
    }
    if (pin(cpu_a) != 0) {
        fprintf(stderr, "ring_floor: cannot run on CPU %d\n", cpu_a);
        return 1;
    }
    double line[kBatches], rec_pause[kBatches], rec_spin[kBatches], pause_ns[kBatches];
    /* Both sides run every phase in the same order; a phase's time is side A's
     * (side B mirrors it), one way = round trip / 2. */
    pid_t child = fork();
    if (child < 0) {
        perror("ring_floor: fork");
        return 1;
    }
    int side = child == 0 ? 1 : 0;
    if (side == 1) pin(cpu_b); /* checked above */
    uint64_t pos = 0;
    for (int b = 0; b < kBatches; b++) {
        double t0 = now_ns();
        line_side(s, side, rounds);
        double t1 = now_ns();
        record_side(s, side, rounds, 1, &pos);
        double t2 = now_ns();
        record_side(s, side, rounds, 0, &pos);
        double t3 = now_ns();
        line[b] = (t1 - t0) / (2.0 * rounds);
        rec_pause[b] = (t2 - t1) / (2.0 * rounds);
        rec_spin[b] = (t3 - t2) / (2.0 * rounds);
        /* Restart the flag together: side B waits for A's reset. */
        if (side == 0) {
            double p0 = now_ns();
            for (long i = 0; i < rounds; i++) relax();
            pause_ns[b] = (now_ns() - p0) / rounds;
            atomic_store_explicit(&s->flag, UINT64_MAX, memory_order_release);
            while (atomic_load_explicit(&s->flag, memory_order_acquire) != 0) relax();
        } else {
            while (atomic_load_explicit(&s->flag, memory_order_acquire) != UINT64_MAX) relax();
            atomic_store_explicit(&s->flag, 0, memory_order_release);
        }
    }
    if (side == 1) _exit(0);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    printf("# ring_floor: %ld rounds per batch, CPUs %d,%d, median of %d batches, ns one way\n", rounds, cpu_a,
           cpu_b, kBatches);
    printf("line          %8.1f\n", median(line));
    printf("record_pause  %8.1f\n", median(rec_pause));
    printf("record_spin   %8.1f\n", median(rec_spin));
    printf("pause         %8.1f\n", median(pause_ns));
    return 0;
}
