/* What one steady-state message costs in CUDA driver calls (and mallocs),
 * with the fake driver counting every entry point (fake_cuda_calls): fails
 * on any call a message should not make. np 2: the ranks ping-pong, each
 * case warmed up first, then ROUNDS round trips measured per rank.
 *
 *   driver_calls ipc     with the fake (device messages between the ranks by IPC)
 *   driver_calls noipc   with AXON_ACCEL_IPC=0 (device messages eager or staged)
 *
 * Both ranks hold a CUDA context and device memory, as a CUDA application
 * does: host traffic must then still cost no driver call at all. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"
#include "device.h"

/* mallocs made by the main thread while `counting` (other threads, e.g.
 * PMIx's, are not this library's messages). Under AddressSanitizer, which
 * owns malloc and free itself, nothing is counted (the malloc budgets then
 * hold trivially; the driver-call budgets still apply). */
static __thread int counting;
static unsigned long mallocs;
#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n)
{
    if (counting) mallocs++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    if (counting) mallocs++;
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    if (counting) mallocs++;
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
#endif

#define ROUNDS 50
#define MAX_CALLS 128
static int rank;
static int (*fake_calls)(const char **, unsigned long *, int);
static const char *names[MAX_CALLS];

static int snapshot(unsigned long *counts) { return fake_calls(names, counts, MAX_CALLS); }

/* Calls allowed per round trip on a rank (it sends one message and
 * receives one); every entry point not named: none. */
struct budget {
    const char *name;
    unsigned long max;
};
#define END {NULL, 0}
static const struct budget none[] = {END};
/* One copy each way (sender: device to its host copy; receiver: the
 * payload up): a context check, the copy, its wait. */
static const struct budget two_copies[] = {{"cuCtxGetCurrent", 2}, {"cuMemcpyAsync", 2}, {"cuStreamSynchronize", 2},
                                           {"cuEventRecord", 2},   {"cuEventQuery", 8},  END};
/* IPC: the sender's export (one query for the allocation's id), the
 * receiver's copy from the peer's mapping. */
static const struct budget ipc[] = {{"cuCtxGetCurrent", 2}, {"cuPointerGetAttributes", 1}, {"cuMemcpyAsync", 1},
                                    {"cuStreamSynchronize", 1}, {"cuEventRecord", 1},      {"cuEventQuery", 4}, END};
/* Staged: the sender's chunk copied down (async, an event), the
 * receiver's chunk copied up. */
static const struct budget staged[] = {{"cuCtxGetCurrent", 2}, {"cuMemcpyAsync", 2}, {"cuStreamSynchronize", 1},
                                       {"cuEventRecord", 2},   {"cuEventQuery", 8},  END};
/* A host buffer Axon cannot vouch for (an mmap'ed malloc): asked each time. */
static const struct budget asked[] = {{"cuPointerGetAttributes", 4}, END};

static unsigned long allowed(const struct budget *b, const char *name)
{
    for (; b->name; b++)
        if (strcmp(b->name, name) == 0) return b->max;
    return 0;
}

enum kind { PINGPONG, ALLREDUCE, ONEWAY };

/* One round: a ping-pong of n bytes (rank 0 sends first), or an
 * allreduce, or rank 0 -> rank 1 of n bytes answered by 0 bytes. */
static void round_trip(enum kind k, void *sbuf, void *rbuf, size_t n)
{
    int peer = 1 - rank;
    if (k == ALLREDUCE) {
        CHECK_MPI(MPI_Allreduce(sbuf, rbuf, (int)(n / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    } else if (k == ONEWAY) {
        if (rank == 0) {
            CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(rbuf, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(sbuf, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD));
        }
    } else if (rank == 0) {
        CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
    }
}

/* Runs one case and checks this rank's calls against `b` (`b1` on rank 1
 * when the ranks' roles differ). Returns the mallocs per round trip. */
static double measure(const char *what, enum kind k, void *sbuf, void *rbuf, size_t n, const struct budget *b,
                      const struct budget *b1)
{
    unsigned long before[MAX_CALLS], after[MAX_CALLS];
    for (int i = 0; i < 5; i++) round_trip(k, sbuf, rbuf, n);  /* pools, handles, mappings, ranges */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int count = snapshot(before);
    unsigned long m0 = mallocs;
    counting = 1;
    for (int i = 0; i < ROUNDS; i++) round_trip(k, sbuf, rbuf, n);
    counting = 0;
    unsigned long m = mallocs - m0;
    snapshot(after);
    if (rank == 1 && b1) b = b1;
    char line[1024] = "";
    size_t at = 0;
    int bad = 0;
    for (int i = 0; i < count && i < MAX_CALLS; i++) {
        unsigned long made = after[i] - before[i];
        if (!made) continue;
        int over = made > allowed(b, names[i]) * ROUNDS;
        bad += over;
        at += (size_t)snprintf(line + at, sizeof line - at, " %s=%.2f%s", names[i], (double)made / ROUNDS,
                               over ? "(!)" : "");
        if (at >= sizeof line) at = sizeof line - 1;
    }
    printf("rank %d  %-34s driver calls per round trip:%s  mallocs %.2f\n", rank, what, at ? line : " none",
           (double)m / ROUNDS);
    CHECK(!bad, "%s: driver calls a steady-state message should not make (marked (!))", what);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return (double)m / ROUNDS;
}

static char static_buf[4096];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ipc";
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = dev_open();
    if (rc || size != 2 || !(*(void **)&fake_calls = dlsym(dev.lib, "fake_cuda_calls"))) {
        if (rank == 0) printf("skip: needs np 2 and the fake CUDA driver\n");
        MPI_Finalize();
        return 77;
    }
    int noipc = strcmp(mode, "noipc") == 0;
    void *keep = dev_malloc(1 << 20);  /* device memory exists, as in a CUDA application */
    char stack_buf[4096];
    char *heap = malloc(4096), *heap2 = malloc(4096);
    memset(static_buf, 1, sizeof static_buf);
    memset(stack_buf, 2, sizeof stack_buf);
    memset(heap, 3, 4096);

    /* Host memory: no driver call at all, context or not. */
    measure("host 8 B, static array", PINGPONG, static_buf, static_buf + 64, 8, none, NULL);
    measure("host 4 KiB, stack", PINGPONG, stack_buf, stack_buf, 4096, none, NULL);
    double host_mallocs = measure("host 4 KiB, heap", PINGPONG, heap, heap2, 4096, none, NULL);
    measure("host allreduce 8 doubles, heap", ALLREDUCE, heap, heap2, 64, none, NULL);
    char *big = malloc(4 << 20), *big2 = malloc(4 << 20);  /* above glibc's mmap threshold */
    measure("host 1 MiB, mmap'ed malloc", PINGPONG, big, big2, 1 << 20, asked, NULL);

    void *d1 = dev_malloc(1 << 20), *d2 = dev_malloc(1 << 20);
    if (noipc) {
        /* Eager both ways: one copy down into a pinned buffer of the pool
         * (no malloc: as many as host messages of the size), one copy up. */
        double m = measure("device 4 KiB, eager", PINGPONG, d1, d2, 4096, two_copies, NULL);
        CHECK(m <= host_mallocs, "device eager: %.2f mallocs per round trip, host messages %.2f", m, host_mallocs);
        measure("device 64 KiB, staged", PINGPONG, d1, d2, 65536, staged, NULL);
        measure("device -> host 4 KiB, eager", ONEWAY, rank == 0 ? d1 : heap, heap2, 4096,
                (const struct budget[]){{"cuCtxGetCurrent", 1}, {"cuMemcpyAsync", 1}, {"cuStreamSynchronize", 1},
                                        {"cuEventRecord", 1}, {"cuEventQuery", 4}, END},
                none);
    } else {
        /* The handle is read from the arriving packet: no allocation per message. */
        double m = measure("device 4 KiB, IPC", PINGPONG, d1, d2, 4096, ipc, NULL);
        CHECK(m <= host_mallocs, "device IPC: %.2f mallocs per round trip, host messages %.2f", m, host_mallocs);
        measure("device 1 MiB, IPC", PINGPONG, d1, d2, 1 << 20, ipc, NULL);
    }
    /* A host sender, a device receiver above the eager limit: one read
     * into a host buffer, one copy up. */
    char *heap64 = malloc(65536);
    memset(heap64, 4, 65536);
    double hd = measure("host -> device 64 KiB", ONEWAY, rank == 0 ? heap64 : heap, rank == 1 ? d2 : heap2, 65536,
                        none,
                        (const struct budget[]){{"cuCtxGetCurrent", 1}, {"cuMemcpyAsync", 1},
                                                {"cuStreamSynchronize", 1}, {"cuEventRecord", 1},
                                                {"cuEventQuery", 4}, END});
    /* The receiver's bounce buffer comes from the pinned pool (the host
     * sender's side is a host rendezvous, with its own amortized costs). */
    if (rank == 1)
        CHECK(hd <= host_mallocs, "host -> device: %.2f mallocs per message at the receiver, host messages %.2f", hd,
              host_mallocs);
    free(heap64);
    dev_free(d1);
    dev_free(d2);
    dev_free(keep);
    free(big);
    free(big2);
    free(heap);
    free(heap2);
    MPI_Finalize();
    return report("driver_calls");
}
