/* The registration cache under btl/verbs (src/rcache, src/btl/verbs/memory.cpp),
 * np 2, rank 0 sending rendezvous messages to rank 1; every message's bytes
 * are checked.
 *
 *   regcache reuse get|put BYTES CHUNK
 *       The same buffer sent 10 times. The exposing rank (get: the sender,
 *       whose buffer the receiver reads; put: the receiver) registers it
 *       once: axon_rcache_misses 1, hits 9; the moving rank registers each
 *       of its P = ceil(BYTES / CHUNK) pieces once: misses P, hits 9 P; and
 *       axon_btl_verbs_registrations equals the misses (BYTES and the buffer
 *       page-aligned). Then a buffer 100 bytes past a page boundary: the
 *       pml cuts its pieces at page boundaries, so they share no page and
 *       the mover registers one region per piece, in all at most BYTES + 2
 *       pages (each page once, not re-registered with the next piece).
 *   regcache off get|put BYTES CHUNK
 *       The same with AXON_RCACHE=off: no hits, no misses, and a
 *       registration for every use: 10 on the exposing rank, 10 P (then
 *       10 P again) on the mover.
 *   regcache remap BYTES
 *       Memory that was registered goes away and new memory appears at the
 *       same address, on both ranks (sender and receiver buffers): munmap
 *       then mmap again at that address; mmap MAP_FIXED over the live
 *       mapping; madvise(MADV_DONTNEED); free() of a large malloc block and
 *       malloc again (the same address, checked). The message sent from the
 *       new memory must arrive as the new bytes (a stale registration would
 *       move the old pages), and, with the cache on, each rank's
 *       axon_rcache_invalidations must have grown at every step.
 * The state (axon_rcache_state) must be on (0) unless AXON_RCACHE=off. */
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../mpi/check.h"

static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_hits, h_misses, h_inval, h_regs, h_reg_bytes;
static int rank;

static unsigned long long counter(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(session, h, &v));
    return v;
}

static MPI_T_pvar_handle must_counter(const char *name)
{
    MPI_T_pvar_handle h = check_pvar_start(session, name);
    CHECK(h != MPI_T_PVAR_HANDLE_NULL, "no MPI_T counter %s", name);
    return h;
}

/* axon_rcache_state: a level (not started, read as it is). */
static unsigned long long cache_state(void)
{
    int index, count;
    MPI_T_pvar_handle h;
    unsigned long long v = ~0ull;
    if (MPI_T_pvar_get_index("axon_rcache_state", MPI_T_PVAR_CLASS_LEVEL, &index) != MPI_SUCCESS) {
        CHECK(0, "no MPI_T variable axon_rcache_state");
        return v;
    }
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &h, &count));
    CHECK_MPI(MPI_T_pvar_read(session, h, &v));
    MPI_T_pvar_handle_free(session, &h);
    return v;
}

/* One message of n bytes from rank 0 to rank 1 in `buf` (each rank's own):
 * the sender fills it with `seed`, the receiver clears it and checks it. */
static void transfer(unsigned char *buf, size_t n, unsigned seed, const char *what)
{
    if (rank == 0) {
        fill_pattern(buf, n, seed);
        CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
    } else {
        memset(buf, 0, n);
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st));
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == (int)n, "%s: count %d, expected %zu", what, count, n);
        CHECK_PATTERN(buf, n, seed, "%s (%zu bytes)", what, n);
    }
}

struct snapshot {
    unsigned long long hits, misses, inval, regs, reg_bytes;
};

static struct snapshot snap(void)
{
    struct snapshot s = {counter(h_hits), counter(h_misses), counter(h_inval), counter(h_regs), counter(h_reg_bytes)};
    return s;
}

static void reuse(int cached, int put, size_t bytes, size_t chunk)
{
    const int mover = put ? 0 : 1;  /* the rank whose get()/put() pieces register locally */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *mem[2] = {NULL, NULL};
    for (int phase = 0; phase < 2; phase++) {
        /* phase 0: page-aligned; phase 1: 100 bytes past a page boundary, in
         * memory of its own (nothing registered there yet) */
        CHECK(posix_memalign((void **)&mem[phase], page, bytes + page) == 0, "posix_memalign");
        unsigned char *buf = mem[phase] + (phase ? 100 : 0);
        size_t n = phase ? bytes - page : bytes;
        unsigned long long p = (n + chunk - 1) / chunk;
        struct snapshot before = snap();
        for (unsigned i = 0; i < 10; i++) transfer(buf, n, 100 * (unsigned)phase + i, phase ? "unaligned" : "aligned");
        struct snapshot after = snap();
        unsigned long long hits = after.hits - before.hits, misses = after.misses - before.misses;
        unsigned long long regs = after.regs - before.regs, reg_bytes = after.reg_bytes - before.reg_bytes;
        int moving = rank == mover;
        printf("[rank %d] %s %s: %llu hits, %llu misses, %llu registrations of %llu bytes (%s, %llu pieces)\n",
               rank, cached ? "cache" : "no cache", phase ? "unaligned" : "aligned", hits, misses, regs, reg_bytes,
               moving ? "moving" : "exposing", p);
        if (!cached) {
            CHECK(hits == 0 && misses == 0, "AXON_RCACHE=off: %llu hits, %llu misses", hits, misses);
            unsigned long long want = moving ? 10 * p : 10;
            CHECK(regs == want, "AXON_RCACHE=off: %llu registrations, expected %llu", regs, want);
            continue;
        }
        CHECK(regs == misses, "%llu registrations for %llu misses", regs, misses);
        if (phase == 0) {
            unsigned long long want_misses = moving ? p : 1, want_hits = moving ? 9 * p : 9;
            CHECK(misses == want_misses && hits == want_hits, "%s rank: %llu misses, %llu hits; expected %llu, %llu",
                  moving ? "moving" : "exposing", misses, hits, want_misses, want_hits);
            CHECK(reg_bytes == (n + page - 1) / page * page, "%llu bytes registered for a %zu-byte buffer", reg_bytes,
                  n);
        } else {
            /* The pml cuts pieces at page boundaries (Caps::rdma_align): the
             * first ends at the first boundary a chunk from the start reaches,
             * so the pieces count as if the buffer began at its page. */
            unsigned long long want_misses = moving ? (n + 100 + chunk - 1) / chunk : 1;
            CHECK(misses == want_misses, "%s rank, unaligned: %llu misses, expected %llu",
                  moving ? "moving" : "exposing", misses, want_misses);
            CHECK(reg_bytes <= n + 2 * page, "unaligned: %llu bytes registered for a %zu-byte buffer (each page once)",
                  reg_bytes, n);
            CHECK(hits >= 9 * (moving ? p : 1), "unaligned: only %llu hits", hits);
        }
    }
    free(mem[0]);
    free(mem[1]);
}

/* Both ranks replace their buffer's memory by `how`; returns the new buffer,
 * which must be at the old address. */
static unsigned char *replace(unsigned char *buf, size_t n, const char *how)
{
    unsigned char *fresh = buf;
    if (!strcmp(how, "munmap+mmap")) {
        CHECK(munmap(buf, n) == 0, "munmap");
        fresh = mmap(buf, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    } else if (!strcmp(how, "mmap MAP_FIXED")) {
        fresh = mmap(buf, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    } else if (!strcmp(how, "madvise")) {
        CHECK(madvise(buf, n, MADV_DONTNEED) == 0, "madvise");
    } else {  /* free + malloc */
        free(buf);
        fresh = malloc(n);
    }
    CHECK(fresh != MAP_FAILED && fresh != NULL, "%s: no memory", how);
    CHECK(fresh == buf, "%s: new memory at %p, not at the old address %p", how, (void *)fresh, (void *)buf);
    return fresh;
}

static void remap(int cached, size_t bytes)
{
    const char *ways[] = {"munmap+mmap", "mmap MAP_FIXED", "madvise", "free+malloc"};
    /* malloc serves this size by mmap, and free() unmaps it (a fixed
     * threshold: glibc's sliding one would move the second block to the heap). */
    CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1, "mallopt");
    for (unsigned w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        int with_malloc = w == 3;
        unsigned char *buf =
            with_malloc ? malloc(bytes) : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(buf != NULL && buf != MAP_FAILED, "no memory");
        if (buf == NULL || buf == MAP_FAILED) return;
        char what[64];
        snprintf(what, sizeof what, "before %s", ways[w]);
        transfer(buf, bytes, 10 + w, what);
        transfer(buf, bytes, 20 + w, what);  /* registered and cached by now */
        unsigned long long inval = counter(h_inval);
        unsigned char *fresh = replace(buf, bytes, ways[w]);
        if (fresh != buf) {
            if (fresh && fresh != MAP_FAILED) with_malloc ? free(fresh) : (void)munmap(fresh, bytes);
            continue;
        }
        if (cached)
            CHECK(counter(h_inval) > inval, "%s: no cached registration was invalidated", ways[w]);
        snprintf(what, sizeof what, "after %s", ways[w]);
        transfer(buf, bytes, 30 + w, what);
        if (with_malloc)
            free(buf);
        else
            munmap(buf, bytes);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(size == 2, "run with 2 ranks, not %d", size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    h_hits = must_counter("axon_rcache_hits");
    h_misses = must_counter("axon_rcache_misses");
    h_inval = must_counter("axon_rcache_invalidations");
    h_regs = must_counter("axon_btl_verbs_registrations");
    h_reg_bytes = must_counter("axon_btl_verbs_registered_bytes");
    const char *env = getenv("AXON_RCACHE");
    int off = env && (!strcasecmp(env, "off") || !strcmp(env, "0") || !strcasecmp(env, "no") ||
                      !strcasecmp(env, "false"));
    unsigned long long state = cache_state();
    if (off)
        CHECK(state == 1, "AXON_RCACHE=%s: axon_rcache_state %llu, expected 1 (off by parameter)", env, state);
    else
        CHECK(state == 0, "axon_rcache_state %llu: the registration cache is off", state);
    if (size == 2 && (!strcmp(mode, "reuse") || !strcmp(mode, "off")) && argc > 4) {
        CHECK((strcmp(mode, "off") == 0) == off, "mode %s with AXON_RCACHE=%s", mode, env ? env : "(unset)");
        reuse(!off, !strcmp(argv[2], "put"), (size_t)strtoull(argv[3], NULL, 0), (size_t)strtoull(argv[4], NULL, 0));
    } else if (size == 2 && !strcmp(mode, "remap") && argc > 2) {
        remap(!off, (size_t)strtoull(argv[2], NULL, 0));
    } else if (size == 2) {
        CHECK(0, "usage: regcache reuse|off get|put BYTES CHUNK, or regcache remap BYTES");
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return report("verbs_regcache");
}
