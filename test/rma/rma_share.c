/* Win_create memory moved into shared memory (docs/rma.md, "Shared
 * Win_create memory"): the window's pages are moved in place into a memfd
 * that the node's other ranks map, so their Put / Get / accumulates are loads
 * and stores. What must hold whatever MPI runs this:
 * - Put, Get, Accumulate, Fetch_and_op and Compare_and_swap from every rank to
 *   every rank give exact results, on a window in the middle of a malloc'd
 *   block (bytes of the same pages before and after it are other data that
 *   must survive untouched), on a large calloc'd window (its own mmap), on a
 *   stack buffer, on two windows over the same memory, and on a window created
 *   while another thread of the process runs;
 * - the memory keeps its address and contents across MPI_Win_create and
 *   MPI_Win_free, and stays usable after MPI_Win_free.
 * Under Axon (and only there: MPI_Get_library_version says "Axon") it also
 * checks where the pages live, from /proc/self/maps: in Axon's memfd while a
 * window with another rank of the node exists (not on the stack, not while
 * another thread runs, not for the second window over the same memory, and
 * only with AXON_OSC_SHARE_CREATE=1: it is off by default), and private
 * anonymous memory again after MPI_Win_free.
 *   AXON_OSC_SHARE_CREATE=1 mpirun -np N rma_share        (N = 1..4) */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi/check.h"

static int me, np, axon, share_enabled;

enum { NOT_MAPPED, PRIVATE_ANON, AXON_MEMFD, OTHER };

/* What backs the page holding p: private anonymous memory, Axon's memfd, other. */
static int backing(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int kind = NOT_MAPPED;
    uintptr_t at = (uintptr_t)p;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, b, off, inode;
        char perms[8], dev[16];
        int name_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &a, &b, perms, &off, dev, &inode, &name_at) < 6) continue;
        if (at < a || at >= b) continue;
        const char *name = name_at ? line + name_at : "";
        if (strstr(name, "memfd:axon-osc-window")) kind = AXON_MEMFD;
        else if (!strcmp(perms, "rw-p") && inode == 0 && strstr(name, "[stack]") == NULL) kind = PRIVATE_ANON;
        else kind = OTHER;
        break;
    }
    if (f) fclose(f);
    return kind;
}

/* One window of `n` longs at `mem`: every rank Puts into its own slot of
 * every target and Gets it back, Accumulates into a shared counter, takes a
 * Fetch_and_op ticket and does a CAS that only the first rank can win;
 * then each target checks its memory. Slots: [0, np) per origin, np: the
 * accumulate counter, np+1: the tickets, np+2: the CAS word. */
static void exercise(MPI_Win win, long *mem, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < np; t++) {
        long v = me * 1000 + t, back = -1, one = 1, ticket = -1, cmp = 0, swap = me + 1, old = -1;
        MPI_Put(&v, 1, MPI_LONG, t, me, 1, MPI_LONG, win);
        MPI_Win_flush(t, win);
        MPI_Get(&back, 1, MPI_LONG, t, me, 1, MPI_LONG, win);
        MPI_Win_flush(t, win);
        CHECK(back == v, "%s: Get from %d read %ld, Put wrote %ld", what, t, back, v);
        MPI_Accumulate(&one, 1, MPI_LONG, t, np, 1, MPI_LONG, MPI_SUM, win);
        MPI_Fetch_and_op(&one, &ticket, MPI_LONG, t, np + 1, MPI_SUM, win);
        MPI_Compare_and_swap(&swap, &cmp, &old, MPI_LONG, t, np + 2, win);
        MPI_Win_flush(t, win);
        CHECK(ticket >= 0 && ticket < np, "%s: ticket %ld from %d", what, ticket, t);
        CHECK(old >= 0 && old <= np, "%s: CAS at %d returned %ld", what, t, old);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win); /* local access to our own window memory */
    for (int r = 0; r < np; r++)
        CHECK(mem[r] == r * 1000 + me, "%s: slot %d holds %ld, want %d", what, r, mem[r], r * 1000 + me);
    CHECK(mem[np] == np, "%s: counter %ld, want %d", what, mem[np], np);
    CHECK(mem[np + 1] == np, "%s: tickets %ld, want %d", what, mem[np + 1], np);
    CHECK(mem[np + 2] >= 1 && mem[np + 2] <= np, "%s: CAS word %ld", what, mem[np + 2]);
    MPI_Win_unlock(me, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Where the window's pages must live while it exists (Axon only). */
static void expect_backing(const void *p, int want, const char *what)
{
    if (!axon) return;
    int got = backing(p);
    CHECK(got == want, "%s: pages backed by kind %d, want %d", what, got, want);
}

static int shared_expected(void) { return share_enabled && np > 1 ? AXON_MEMFD : PRIVATE_ANON; }

/* A window in the middle of a malloc'd block: the bytes around it, on the
 * same pages, belong to someone else. */
static void middle_of_heap_block(void)
{
    const size_t before = 112, slots = 64, after = 300; /* 16-aligned: MPICH 4 rounds other bases down */
    unsigned char *block = malloc(before + slots * sizeof(long) + after);
    memset(block, 0xA5, before);
    long *mem = (long *)(block + before);
    memset(mem, 0, slots * sizeof(long));
    memset(block + before + slots * sizeof(long), 0x5A, after);
    MPI_Win win;
    MPI_Win_create(mem, slots * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    expect_backing(mem, shared_expected(), "heap block");
    block[0] = 1; /* neighbours stay writable and ours */
    block[0] = 0xA5;
    exercise(win, mem, "heap block");
    MPI_Win_free(&win);
    expect_backing(mem, PRIVATE_ANON, "heap block after free");
    for (int r = 0; r < np; r++) CHECK(mem[r] == r * 1000 + me, "heap block after free: slot %d = %ld", r, mem[r]);
    for (size_t i = 0; i < before; i++) CHECK(block[i] == 0xA5, "byte %zu before the window changed", i);
    for (size_t i = 0; i < after; i++)
        CHECK(block[before + slots * sizeof(long) + i] == 0x5A, "byte %zu after the window changed", i);
    mem[0] = 7; /* still our memory */
    CHECK(mem[0] == 7, "write after free");
    free(block);
}

/* A large calloc'd window (its own mmap), touched before creation only in part. */
static void large_calloc(void)
{
    const size_t n = 1 << 17; /* 1 MiB of longs */
    long *mem = calloc(n, sizeof(long));
    mem[n - 1] = 42;
    MPI_Win win;
    MPI_Win_create(mem, n * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    expect_backing(mem, shared_expected(), "calloc");
    exercise(win, mem, "calloc");
    /* a Put near the end of every target, read back by the target */
    long v = 100 + me;
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < np; t++) MPI_Put(&v, 1, MPI_LONG, t, n - 2 - me, 1, MPI_LONG, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < np; r++) CHECK(mem[n - 2 - r] == 100 + r, "calloc: end slot %d = %ld", r, mem[n - 2 - r]);
    CHECK(mem[n - 1] == 42, "calloc: last element %ld", mem[n - 1]);
    CHECK(mem[n / 2] == 0, "calloc: middle element %ld", mem[n / 2]);
    MPI_Win_free(&win);
    expect_backing(mem, PRIVATE_ANON, "calloc after free");
    CHECK(mem[n - 1] == 42 && mem[0] == me, "calloc after free: %ld %ld", mem[n - 1], mem[0]);
    free(mem);
}

/* The stack is never moved. */
static void stack_buffer(void)
{
    long mem[64];
    memset(mem, 0, sizeof mem);
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (axon) CHECK(backing(mem) == OTHER, "stack window: kind %d", backing(mem));
    exercise(win, mem, "stack");
    MPI_Win_free(&win);
}

/* Two windows over the same memory: the second finds it shared already and
 * reaches it with CMA; data written through one is read through the other;
 * the first freed, the second still works. */
static void two_windows(void)
{
    long *mem = calloc(64, sizeof(long));
    MPI_Win a, b;
    MPI_Win_create(mem, 64 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &a);
    MPI_Win_create(mem, 64 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &b);
    expect_backing(mem, shared_expected(), "two windows");
    long v = 500 + me, back = -1;
    int t = (me + 1) % np;
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, a);
    MPI_Put(&v, 1, MPI_LONG, t, 40 + me, 1, MPI_LONG, a);
    MPI_Win_unlock(t, a);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, b);
    MPI_Get(&back, 1, MPI_LONG, t, 40 + me, 1, MPI_LONG, b);
    MPI_Win_unlock(t, b);
    CHECK(back == v, "two windows: read %ld through the second, wrote %ld through the first", back, v);
    MPI_Win_free(&a);
    expect_backing(mem, PRIVATE_ANON, "two windows, first freed");
    exercise(b, mem, "second window");
    CHECK(mem[40 + (me + np - 1) % np] == 500 + (me + np - 1) % np, "two windows: slot %ld",
          mem[40 + (me + np - 1) % np]);
    MPI_Win_free(&b);
    free(mem);
}

static volatile int stop_thread;
static void *spin(void *arg)
{
    (void)arg;
    while (!stop_thread) usleep(1000);
    return NULL;
}

/* Another thread runs: the memory is not moved (its pages could be written
 * while they are copied), and everything works through CMA. */
static void with_a_thread(void)
{
    pthread_t th;
    pthread_create(&th, NULL, spin, NULL);
    long *mem = calloc(64, sizeof(long));
    MPI_Win win;
    MPI_Win_create(mem, 64 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    expect_backing(mem, PRIVATE_ANON, "with a thread");
    exercise(win, mem, "with a thread");
    MPI_Win_free(&win);
    stop_thread = 1;
    pthread_join(th, NULL);
    free(mem);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    axon = strstr(version, "Axon") != NULL;
#if defined(__SANITIZE_ADDRESS__)
    axon = 0; /* sanitizer builds of Axon do not move window memory (src/osc/shared.cpp) */
#endif
    const char *env = getenv("AXON_OSC_SHARE_CREATE");
    /* Off by default (AXON_OSC_SHARE_CREATE=1 turns it on). */
    share_enabled = env && (!strcmp(env, "1") || !strcmp(env, "true") || !strcmp(env, "yes"));
    /* The node check: the test assumes every rank on one node. */
    MPI_Comm node;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (node_size != np) axon = 0; /* where the pages live is only defined on one node */

    middle_of_heap_block();
    large_calloc();
    stack_buffer();
    two_windows();
    with_a_thread();

    MPI_Finalize();
    return report("rma_share");
}
