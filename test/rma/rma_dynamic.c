/* Dynamic windows whose regions come and go, on every path (same node: CMA /
 * self; AXON_OSC_PATH=am: active messages; in the soft-RoCE VM with
 * AXON_OSC_PATH=rdma: RDMA WRITE / READ with region keys fetched on first
 * use and dropped at MPI_Win_detach, src/osc/rdma.cpp).
 *
 *   rma_dynamic MODE     MODE: which path the Axon counters (MPI_T) must show
 *                        for Put / Get to other ranks: rdma, am, local (mapped,
 *                        CMA or self: neither), any (no check; other MPIs)
 *
 * Every rank maps 4 pages and attaches them as 4 regions: R0 (kept), R1
 * (replaced), R2a and R2b (adjacent halves, attached separately). Phases,
 * every rank the origin towards every rank (itself included):
 *  1. lock_all + flush: Get R0 and R1 (generation 0 contents), Put into a
 *     slot per origin of R0 and R1; checked by the targets.
 *  2. every rank detaches R1, maps NEW pages at the SAME address
 *     (MAP_FIXED), fills them with generation 1 contents and attaches them
 *     again. Fence epoch: Get R1 must return generation 1 (a key cached for
 *     the old pages must never be used), Put into R1 slots.
 *  3. PSCW epoch: Put into R0 slots, Get R1.
 * 3b. inside one lock_all epoch, synchronized by messages only: Get the
 *     right neighbour's R1, which it then replaces by new memory at the
 *     same address, Get again: the new contents.
 *  4. exclusive lock, one origin at a time: Put / Get of 16 words across
 *     the R2a / R2b boundary (an access spanning two regions: active
 *     messages on the RDMA path), and a Put within R2a.
 *  5. (Axon only: MPICH does not check) every rank detaches R1 again: a Put
 *     there fails with MPI_ERR_RMA_RANGE.
 * Exact values everywhere. With MODE rdma the counters must show: every
 * Put / Get to another rank by RDMA except the spanning ones (exactly
 * 2 (np-1) by active messages), and exactly 2 (np-1) + 1 cached keys
 * dropped. */
#include <mpi.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../mpi/check.h"

#define PAGE 4096
#define W (PAGE / 8) /* int64 words per region */
#define HALF (W / 2) /* Gets read words [0, HALF), Puts write slots from HALF */
#define SLOT 8       /* words per origin slot */

static int me, np;

static int64_t gen_val(int rank, int reg, int gen, int i)
{
    return ((int64_t)rank << 40) | ((int64_t)reg << 32) | ((int64_t)gen << 24) | i;
}

static int64_t put_val(int origin, int target, int reg, int phase, int i)
{
    return -(((int64_t)phase << 48) | ((int64_t)origin << 36) | ((int64_t)target << 24) |
             ((int64_t)reg << 16) | (i + 1));
}

static void fill(int64_t *r, int reg, int gen)
{
    for (int i = 0; i < W; i++) r[i] = gen_val(me, reg, gen, i);
}

/* Checks the first HALF words of a region of `t` as fetched by a Get. */
static void check_got(const int64_t *got, int t, int reg, int gen, const char *what)
{
    int bad = -1;
    for (int i = 0; i < HALF && bad < 0; i++)
        if (got[i] != gen_val(t, reg, gen, i)) bad = i;
    CHECK(bad < 0, "%s: Get of region %d of rank %d: word %d is %llx, expected %llx (generation %d)", what, reg,
          t, bad, bad < 0 ? 0ull : (unsigned long long)got[bad],
          bad < 0 ? 0ull : (unsigned long long)gen_val(t, reg, gen, bad), gen);
}

/* Checks the slots every origin wrote into our region. */
static void check_slots(const int64_t *r, int reg, int phase, const char *what)
{
    for (int o = 0; o < np; o++)
        for (int i = 0; i < SLOT; i++) {
            int64_t want = put_val(o, me, reg, phase, i), have = r[HALF + o * SLOT + i];
            CHECK(have == want, "%s: region %d slot of origin %d word %d is %llx, expected %llx", what, reg, o, i,
                  (unsigned long long)have, (unsigned long long)want);
        }
}

static long long pvar_read(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    if (h == MPI_T_PVAR_HANDLE_NULL) return -1;
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    return (long long)v;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np * SLOT > W - HALF) {
        if (me == 0) fprintf(stderr, "at most %d ranks\n", (W - HALF) / SLOT);
        MPI_Finalize();
        return 77;
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen;
    MPI_Get_library_version(version, &vlen);
    const int axon = strncmp(version, "Axon", 4) == 0;
    /* Open MPI rejects an access spanning regions attached separately
     * (MPI_ERR_RMA_RANGE); Axon and MPICH accept it (rma_attach too). */
    const int spanning = strncmp(version, "Open MPI", 8) != 0;

    MPI_T_pvar_session session;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle h_rdma = check_pvar_start(session, "axon_osc_dynamic_rdma_ops");
    MPI_T_pvar_handle h_am = check_pvar_start(session, "axon_osc_dynamic_am_ops");
    MPI_T_pvar_handle h_drops = check_pvar_start(session, "axon_osc_dynamic_key_drops");
    MPI_T_pvar_handle h_fetches = check_pvar_start(session, "axon_osc_dynamic_key_fetches");

    unsigned char *mem = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED, "mmap");
    int64_t *r0 = (int64_t *)mem, *r1 = (int64_t *)(mem + PAGE), *r2 = (int64_t *)(mem + 2 * PAGE);
    fill(r0, 0, 0);
    fill(r1, 1, 0);
    fill(r2, 2, 0);
    fill(r2 + W, 3, 0);

    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK_MPI(MPI_Win_attach(win, r0, PAGE));
    CHECK_MPI(MPI_Win_attach(win, r1, PAGE));
    CHECK_MPI(MPI_Win_attach(win, r2, PAGE));
    CHECK_MPI(MPI_Win_attach(win, r2 + W, PAGE));
    MPI_Aint mine, *base = malloc(sizeof(MPI_Aint) * np), *again = malloc(sizeof(MPI_Aint) * np);
    MPI_Get_address(mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, base, 1, MPI_AINT, MPI_COMM_WORLD);
#define REG(t, k) (base[t] + (MPI_Aint)(k) * PAGE)

    int64_t *got = malloc(sizeof(int64_t) * HALF * np * 2);
    int64_t *out = malloc(sizeof(int64_t) * SLOT * np * 2);

    /* 1. lock_all: Get generation 0, Put into slots. */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < np; t++) {
        CHECK_MPI(MPI_Get(got + (2 * t) * HALF, HALF, MPI_INT64_T, t, REG(t, 0), HALF, MPI_INT64_T, win));
        CHECK_MPI(MPI_Get(got + (2 * t + 1) * HALF, HALF, MPI_INT64_T, t, REG(t, 1), HALF, MPI_INT64_T, win));
    }
    CHECK_MPI(MPI_Win_flush_all(win));
    for (int t = 0; t < np; t++) {
        check_got(got + (2 * t) * HALF, t, 0, 0, "lock_all");
        check_got(got + (2 * t + 1) * HALF, t, 1, 0, "lock_all");
    }
    for (int t = 0; t < np; t++)
        for (int k = 0; k < 2; k++) {
            int64_t *o = out + (2 * t + k) * SLOT;
            for (int i = 0; i < SLOT; i++) o[i] = put_val(me, t, k, 1, i);
            CHECK_MPI(MPI_Put(o, SLOT, MPI_INT64_T, t, REG(t, k) + (HALF + me * SLOT) * 8, SLOT, MPI_INT64_T,
                              win));
        }
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    check_slots(r0, 0, 1, "lock_all");
    check_slots(r1, 1, 1, "lock_all");

    /* 2. New memory at the same address. */
    CHECK_MPI(MPI_Win_detach(win, r1));
    void *same = mmap(r1, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(same == (void *)r1, "MAP_FIXED gave %p, not %p", same, (void *)r1);
    fill(r1, 1, 1);
    CHECK_MPI(MPI_Win_attach(win, r1, PAGE));
    MPI_Allgather(&mine, 1, MPI_AINT, again, 1, MPI_AINT, MPI_COMM_WORLD);
    for (int t = 0; t < np; t++) CHECK(again[t] == base[t], "rank %d moved its memory", t);
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < np; t++) {
        CHECK_MPI(MPI_Get(got + t * HALF, HALF, MPI_INT64_T, t, REG(t, 1), HALF, MPI_INT64_T, win));
        int64_t *o = out + t * SLOT;
        for (int i = 0; i < SLOT; i++) o[i] = put_val(me, t, 1, 2, i);
        CHECK_MPI(MPI_Put(o, SLOT, MPI_INT64_T, t, REG(t, 1) + (HALF + me * SLOT) * 8, SLOT, MPI_INT64_T, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < np; t++) check_got(got + t * HALF, t, 1, 1, "fence after re-attach");
    check_slots(r1, 1, 2, "fence after re-attach");
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    /* 3. PSCW: every rank posts to and starts on every rank. */
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK_MPI(MPI_Win_post(world, 0, win));
    CHECK_MPI(MPI_Win_start(world, 0, win));
    for (int t = 0; t < np; t++) {
        CHECK_MPI(MPI_Get(got + t * HALF, HALF, MPI_INT64_T, t, REG(t, 1), HALF, MPI_INT64_T, win));
        int64_t *o = out + t * SLOT;
        for (int i = 0; i < SLOT; i++) o[i] = put_val(me, t, 0, 3, i);
        CHECK_MPI(MPI_Put(o, SLOT, MPI_INT64_T, t, REG(t, 0) + (HALF + me * SLOT) * 8, SLOT, MPI_INT64_T, win));
    }
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    for (int t = 0; t < np; t++) check_got(got + t * HALF, t, 1, 1, "PSCW");
    check_slots(r0, 0, 3, "PSCW");
    MPI_Group_free(&world);

    /* 3b. Inside one lock_all epoch: each rank reads its right neighbour's
     * R1, tells it so by a message, the neighbour replaces R1 by new memory
     * at the same address and says so by a message, and the origin reads it
     * again with no synchronization call of the window in between: it must
     * see the new contents (the origin's cached key was dropped in the
     * neighbour's MPI_Win_detach). */
    {
        const int right = (me + 1) % np, left = (me + np - 1) % np;
        int token = 0;
        CHECK_MPI(MPI_Win_lock_all(0, win));
        CHECK_MPI(MPI_Get(got, HALF, MPI_INT64_T, right, REG(right, 1), HALF, MPI_INT64_T, win));
        CHECK_MPI(MPI_Win_flush(right, win));
        check_got(got, right, 1, 1, "lock_all before the neighbour's re-attach");
        MPI_Sendrecv(&token, 1, MPI_INT, right, 5, &token, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* Our left neighbour is done with our R1. */
        CHECK_MPI(MPI_Win_detach(win, r1));
        same = mmap(r1, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        CHECK(same == (void *)r1, "MAP_FIXED gave %p, not %p", same, (void *)r1);
        fill(r1, 1, 2);
        CHECK_MPI(MPI_Win_attach(win, r1, PAGE));
        MPI_Sendrecv(&token, 1, MPI_INT, left, 6, &token, 1, MPI_INT, right, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_MPI(MPI_Get(got, HALF, MPI_INT64_T, right, REG(right, 1), HALF, MPI_INT64_T, win));
        CHECK_MPI(MPI_Win_flush(right, win));
        check_got(got, right, 1, 2, "lock_all after the neighbour's re-attach");
        CHECK_MPI(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 4. Across the R2a / R2b boundary, one origin at a time. */
    for (int o = 0; o < np; o++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (o != me) continue;
        for (int t = 0; t < np; t++) {
            int64_t span[16], back[16], inner[4];
            for (int i = 0; i < 16; i++) span[i] = put_val(me, t, 2, 4, i);
            for (int i = 0; i < 4; i++) inner[i] = put_val(me, t, 2, 5, i);
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            if (spanning)
                CHECK_MPI(MPI_Put(span, 16, MPI_INT64_T, t, REG(t, 2) + (W - 8) * 8, 16, MPI_INT64_T, win));
            CHECK_MPI(MPI_Put(inner, 4, MPI_INT64_T, t, REG(t, 2) + 8 * 8, 4, MPI_INT64_T, win));
            CHECK_MPI(MPI_Win_flush(t, win));
            for (int i = 0; i < 16; i++) back[i] = spanning ? 0 : span[i];
            if (spanning)
                CHECK_MPI(MPI_Get(back, 16, MPI_INT64_T, t, REG(t, 2) + (W - 8) * 8, 16, MPI_INT64_T, win));
            CHECK_MPI(MPI_Win_unlock(t, win));
            for (int i = 0; i < 16; i++)
                CHECK(back[i] == span[i], "spanning Get from rank %d word %d: %llx, expected %llx", t, i,
                      (unsigned long long)back[i], (unsigned long long)span[i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 16 && spanning; i++) {
        int64_t have = i < 8 ? r2[W - 8 + i] : r2[W + i - 8];
        CHECK(have == put_val(np - 1, me, 2, 4, i), "spanning Put: word %d is %llx", i, (unsigned long long)have);
    }
    for (int i = 0; i < 4; i++) CHECK(r2[8 + i] == put_val(np - 1, me, 2, 5, i), "Put into R2a: word %d", i);
    CHECK(r2[7] == gen_val(me, 2, 0, 7) && r2[12] == gen_val(me, 2, 0, 12), "R2a around the Put changed");

    /* 5. A detached region is out of the window (MPICH does not check). */
    CHECK_MPI(MPI_Win_detach(win, r1));
    MPI_Barrier(MPI_COMM_WORLD);
    if (axon) {
        int right = (me + 1) % np;
        int64_t v = 7;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        int cls = error_class_of(MPI_Put(&v, 1, MPI_INT64_T, right, REG(right, 1), 1, MPI_INT64_T, win));
        CHECK(cls == MPI_ERR_RMA_RANGE, "Put into a detached region of rank %d: class %d", right, cls);
        cls = error_class_of(MPI_Get(&v, 1, MPI_INT64_T, right, REG(right, 1), 1, MPI_INT64_T, win));
        CHECK(cls == MPI_ERR_RMA_RANGE, "Get from a detached region of rank %d: class %d", right, cls);
        CHECK_MPI(MPI_Win_unlock(right, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    long long n_rdma = pvar_read(session, h_rdma), n_am = pvar_read(session, h_am);
    long long n_drops = pvar_read(session, h_drops), n_fetches = pvar_read(session, h_fetches);
    if (strcmp(mode, "any") != 0) {
        CHECK(n_rdma >= 0 && n_am >= 0 && n_drops >= 0 && n_fetches >= 0, "Axon's osc counters are missing");
        const long long others = np - 1;
        if (strcmp(mode, "rdma") == 0) {
            /* Per other rank: Gets 2 + 1 + 1, Puts 2 + 1 + 1, inner Put 1 by RDMA, plus 2 Gets to the right
             * neighbour (3b); the spanning Put and Get by active messages. Keys dropped: R1 of every other
             * rank at phases 2 and 3b, the right neighbour's at phase 5. */
            CHECK(n_rdma == 9 * others + 2, "RDMA Put/Get: %lld, expected %lld", n_rdma, 9 * others + 2);
            CHECK(n_am == 2 * others, "active-message Put/Get: %lld, expected %lld", n_am, 2 * others);
            CHECK(n_drops == 2 * others + 1, "dropped keys: %lld, expected %lld", n_drops, 2 * others + 1);
            /* Per other rank R0, R1 twice, R2a and the spanning pair (not cached), the right neighbour's
             * third R1; Put and Get to its detached R1 when it is on another node (on one node the origin
             * checks the range itself); a retry when a drop crossed a fetch. */
            CHECK(n_fetches >= 6 * others + 1 && n_fetches <= 7 * others + 3, "key fetches: %lld", n_fetches);
        } else if (strcmp(mode, "am") == 0) {
            CHECK(n_rdma == 0, "RDMA Put/Get: %lld, expected 0", n_rdma);
            CHECK(n_am >= 11 * others + 2, "active-message Put/Get: %lld, expected >= %lld", n_am, 11 * others + 2);
        } else {
            CHECK(n_rdma == 0 && n_am == 0, "counters %lld / %lld, expected 0 (local paths)", n_rdma, n_am);
        }
    }
    if (me == 0 && getenv("RMA_DYNAMIC_VERBOSE"))
        printf("rdma %lld am %lld drops %lld fetches %lld\n", n_rdma, n_am, n_drops, n_fetches);
    /* Every rank read its counters before anyone detaches the rest (which drops more keys). */
    MPI_Barrier(MPI_COMM_WORLD);

    CHECK_MPI(MPI_Win_detach(win, r0));
    CHECK_MPI(MPI_Win_detach(win, r2));
    CHECK_MPI(MPI_Win_detach(win, r2 + W));
    CHECK_MPI(MPI_Win_free(&win));
    munmap(mem, 4 * PAGE);
    free(got);
    free(out);
    free(base);
    free(again);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return report("rma_dynamic");
}
