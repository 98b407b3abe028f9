/* The floor of a synchronizing collective when ranks outnumber cores: what
 * it costs to hand a CPU from one process to another. Not an MPI program.
 *
 * With 4 ranks on 2 cores, every rank must run once per barrier, allreduce,
 * allgather or alltoall call (its result depends on every rank's input), so
 * each core switches between its two ranks at least once per call: no
 * algorithm can beat one same-CPU hand-off per call. This program measures
 * that hand-off the way the ranks do it (poll a shared word, sched_yield),
 * next to a bare system call and a hand-off between two CPUs.
 *
 *   handoff [-n ROUNDS] [-c CPU_A,CPU_B]    default 100000 rounds, CPUs 0,1
 *
 * Prints the median over 5 batches, in microseconds per hand-off:
 *   syscall          one getppid() (the entry/exit price on this kernel)
 *   yield_alone      sched_yield() with nothing else runnable on the CPU
 *   same_cpu         two processes on CPU_A, each polling a shared word and
 *                    yielding until the other wrote it, then writing it
 *   cross_cpu        the same with the processes on CPU_A and CPU_B
 * Exit 1 with the reason when a CPU cannot be used. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBatches = 5 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, kBatches, sizeof *v, cmp_double);
    return v[kBatches / 2];
}

/* Two processes take turns: process `me` (0 or 1) waits until the shared
 * counter is even (0) or odd (1), yielding the CPU on every poll, then
 * increments it. Both pin themselves first and say so in `ready` (-1: the
 * CPU was refused), so neither waits for a partner that never starts.
 * Returns microseconds per hand-off (measured by process 0), or a negative
 * value when pinning or fork failed. */
static double ping_pong(int cpu_a, int cpu_b, long rounds)
{
    struct shared {
        _Atomic long turn;
        _Atomic int ready[2];
    } *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return -1;
    atomic_store(&sh->turn, 0);
    atomic_store(&sh->ready[0], 0);
    atomic_store(&sh->ready[1], 0);
    pid_t child = fork();
    if (child < 0) {
        munmap(sh, 4096);
        return -1;
    }
    int me = child == 0;
    int ok = pin(me ? cpu_b : cpu_a) == 0;
    atomic_store(&sh->ready[me], ok ? 1 : -1);
    while (atomic_load(&sh->ready[!me]) == 0) sched_yield();
    double elapsed = -1;
    if (ok && atomic_load(&sh->ready[!me]) == 1) {
        double start = now_s();
        for (long i = 0; i < rounds; ++i) {
            long mine = 2 * i + me;
            while (atomic_load(&sh->turn) != mine) sched_yield();
            atomic_store(&sh->turn, mine + 1);
        }
        elapsed = now_s() - start;
    }
    if (me) _exit(elapsed < 0 ? 1 : 0);
    int status = 0;
    waitpid(child, &status, 0);
    munmap(sh, 4096);
    if (elapsed < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return elapsed / (2.0 * (double)rounds) * 1e6;
}

int main(int argc, char **argv)
{
    long rounds = 100000;
    int cpu_a = 0, cpu_b = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            rounds = atol(argv[++i]);
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc && sscanf(argv[i + 1], "%d,%d", &cpu_a, &cpu_b) == 2) {
            ++i;
        } else {
            fprintf(stderr, "usage: handoff [-n ROUNDS] [-c CPU_A,CPU_B]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    if (pin(cpu_a) != 0) {
        fprintf(stderr, "handoff: cannot run on CPU %d\n", cpu_a);
        return 1;
    }

    double syscall_us[kBatches], alone_us[kBatches], same_us[kBatches], cross_us[kBatches];
    for (int b = 0; b < kBatches; ++b) {
        double t = now_s();
        for (long i = 0; i < rounds; ++i) syscall(SYS_getppid);
        syscall_us[b] = (now_s() - t) / (double)rounds * 1e6;
        t = now_s();
        for (long i = 0; i < rounds; ++i) sched_yield();
        alone_us[b] = (now_s() - t) / (double)rounds * 1e6;
        same_us[b] = ping_pong(cpu_a, cpu_a, rounds / 4 + 1);
        cross_us[b] = ping_pong(cpu_a, cpu_b, rounds / 4 + 1);
        if (same_us[b] < 0 || cross_us[b] < 0) {
            fprintf(stderr, "handoff: cannot run a process on CPU %d or %d\n", cpu_a, cpu_b);
            return 1;
        }
    }
    printf("# handoff: microseconds per operation, median of %d batches, CPUs %d,%d\n", kBatches, cpu_a, cpu_b);
    printf("syscall      %.3f\n", median(syscall_us));
    printf("yield_alone  %.3f\n", median(alone_us));
    printf("same_cpu     %.3f\n", median(same_us));
    printf("cross_cpu    %.3f\n", median(cross_us));
    return 0;
}
