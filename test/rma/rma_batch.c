/* Many small Put / Get per synchronization (argv[1]: create or dynamic, the
 * flavors whose memory on this node is reached with process_vm_writev /
 * readv, where Axon queues small operations and issues them together at the
 * flush). Every rank targets every rank (itself included) so that several
 * targets have operations pending at once. Checked, with exact values:
 * - 3000 8-byte Puts per target (more than one system call takes) then
 *   MPI_Win_flush_all: every element arrived;
 * - 3000 8-byte Gets per target into distinct slots, then MPI_Win_flush:
 *   every slot holds the target's value;
 * - Puts whose target type is a vector (queued with its pieces: holes
 *   untouched) and a vector of 200 pieces (issued at once), small Puts
 *   around a 128 KiB Put (too large to queue) on other elements;
 * - Put, flush, Accumulate MPI_SUM on the same element, flush, Get: the sum;
 * - MPI_Rput: after MPI_Wait the origin buffer is overwritten, the target
 *   must hold the old contents; MPI_Rget: the data is there after MPI_Wait;
 * - fence, PSCW and lock / unlock epochs: the Puts are visible at the target
 *   after the closing call (and the barrier that follows it). */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

#define N 3000    /* small operations per target */
#define BIG 16384 /* elements of the large Put (128 KiB) */
#define W (2 * N + 2 * 400 + BIG + 64)
#define VEC_AT (2 * N)          /* vector area: 400 elements */
#define BIG_AT (2 * N + 800)    /* large Put area */
#define ACC_AT (2 * N + 800 + BIG) /* accumulate word, then Rput / Rget words */

static long long val(int origin, long i) { return origin * 100000000LL + i + 1; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "create";
    int dynamic = !strcmp(flavor, "dynamic");
    /* One window per rank pair would need np*W; instead each origin o writes
     * the block [o*N/np ...) of the small area, so all origins fit. */
    const long per = N / np;
    const MPI_Aint bytes = (MPI_Aint)W * 8;
    long long *mem = malloc(bytes);
    MPI_Win win;
    if (dynamic) {
        CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        CHECK_MPI(MPI_Win_attach(win, mem, bytes));
    } else {
        CHECK_MPI(MPI_Win_create(mem, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    MPI_Aint *bases = malloc(sizeof(MPI_Aint) * np), mine;
    MPI_Get_address(mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
#define AT(t, i) (dynamic ? bases[t] + (MPI_Aint)(i) * 8 : (MPI_Aint)(i))
    for (long i = 0; i < W; i++) mem[i] = -i;
    long long *src = malloc(sizeof(long long) * (N + BIG));
    long long *got = malloc(sizeof(long long) * (size_t)np * N);
    for (long i = 0; i < N + BIG; i++) src[i] = val(me, i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. Many small Puts to every target, one flush_all. Origin o writes
     * elements o*per .. o*per+per-1, each with its own Put (per >= 1000 at
     * np <= 3, so more than 1024 operations may wait for one target). */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (long i = 0; i < per; i++)
        for (int t = 0; t < np; t++)
            CHECK_MPI(MPI_Put(&src[i], 1, MPI_LONG_LONG, t, AT(t, me * per + i), 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int o = 0; o < np; o++)
        for (long i = 0; i < per; i++)
            CHECK(mem[o * per + i] == val(o, i), "put from %d element %ld: %lld", o, i, mem[o * per + i]);

    /* 2. Many small Gets of the whole small area of every target, one flush
     * per target; then each slot holds what its origin put there. */
    memset(got, 0, sizeof(long long) * (size_t)np * N);
    for (int t = 0; t < np; t++) {
        for (long i = 0; i < per * np; i++)
            CHECK_MPI(MPI_Get(&got[t * N + i], 1, MPI_LONG_LONG, t, AT(t, i), 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_flush(t, win));
        for (long i = 0; i < per * np; i++)
            CHECK(got[t * N + i] == val((int)(i / per), i % per), "get from %d element %ld: %lld", t, i,
                  got[t * N + i]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Vector target types and a large Put, under lock_all. Only rank 0
     * writes them (to every target), so the areas do not overlap. */
    MPI_Datatype vec5, vec200;
    MPI_Type_vector(5, 1, 2, MPI_LONG_LONG, &vec5);
    MPI_Type_vector(200, 1, 2, MPI_LONG_LONG, &vec200);
    MPI_Type_commit(&vec5);
    MPI_Type_commit(&vec200);
    if (me == 0) {
        CHECK_MPI(MPI_Win_lock_all(0, win));
        for (int t = 0; t < np; t++) {
            CHECK_MPI(MPI_Put(&src[0], 5, MPI_LONG_LONG, t, AT(t, VEC_AT), 1, vec5, win));
            CHECK_MPI(MPI_Put(&src[5], 200, MPI_LONG_LONG, t, AT(t, VEC_AT + 10), 1, vec200, win));
            CHECK_MPI(MPI_Put(&src[205], 1, MPI_LONG_LONG, t, AT(t, VEC_AT + 10 + 400 - 1), 1, MPI_LONG_LONG,
                              win));
            CHECK_MPI(MPI_Put(&src[N], BIG, MPI_LONG_LONG, t, AT(t, BIG_AT), BIG, MPI_LONG_LONG, win));
            CHECK_MPI(MPI_Put(&src[206], 1, MPI_LONG_LONG, t, AT(t, ACC_AT + 1), 1, MPI_LONG_LONG, win));
        }
        CHECK_MPI(MPI_Win_unlock_all(win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (long k = 0; k < 5; k++) {
        CHECK(mem[VEC_AT + 2 * k] == val(0, k), "vec5 element %ld: %lld", k, mem[VEC_AT + 2 * k]);
        CHECK(mem[VEC_AT + 2 * k + 1] == -(VEC_AT + 2 * k + 1), "vec5 hole %ld written", k);
    }
    for (long k = 0; k < 200; k++) {
        CHECK(mem[VEC_AT + 10 + 2 * k] == val(0, 5 + k), "vec200 element %ld: %lld", k, mem[VEC_AT + 10 + 2 * k]);
        if (k < 199) CHECK(mem[VEC_AT + 11 + 2 * k] == -(VEC_AT + 11 + 2 * k), "vec200 hole %ld written", k);
    }
    CHECK(mem[VEC_AT + 409] == val(0, 205), "put after vec200: %lld", mem[VEC_AT + 409]);
    for (long i = 0; i < BIG; i++)
        if (mem[BIG_AT + i] != val(0, N + i)) {
            CHECK(0, "large put element %ld: %lld", i, mem[BIG_AT + i]);
            break;
        }
    CHECK(mem[ACC_AT + 1] == val(0, 206), "put after the large put: %lld", mem[ACC_AT + 1]);

    /* 4. Rank 0 Puts 0 into word ACC_AT of every rank and flushes, then
     * every rank adds me+1 there: the sum is exact. */
    int right = (me + 1) % np;
    long long zero = 0, add = me + 1, sum = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        CHECK_MPI(MPI_Win_lock_all(0, win));
        for (int t = 0; t < np; t++) {
            CHECK_MPI(MPI_Put(&zero, 1, MPI_LONG_LONG, t, AT(t, ACC_AT), 1, MPI_LONG_LONG, win));
            CHECK_MPI(MPI_Win_flush(t, win));
        }
        CHECK_MPI(MPI_Win_unlock_all(win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < np; t++)
        CHECK_MPI(MPI_Accumulate(&add, 1, MPI_LONG_LONG, t, AT(t, ACC_AT), 1, MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Get(&sum, 1, MPI_LONG_LONG, right, AT(right, ACC_AT), 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK(sum == (long long)np * (np + 1) / 2, "sum %lld, expected %d", sum, np * (np + 1) / 2);

    /* 5. Rput: origin buffer reused after MPI_Wait; Rget: data there after
     * MPI_Wait. Word ACC_AT+2+me of the next rank. */
    long long rbuf = val(me, 77), rgot = 0;
    MPI_Request rq;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Rput(&rbuf, 1, MPI_LONG_LONG, right, AT(right, ACC_AT + 2 + me), 1, MPI_LONG_LONG, win, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    rbuf = -5;
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Rget(&rgot, 1, MPI_LONG_LONG, right, AT(right, ACC_AT + 2 + me), 1, MPI_LONG_LONG, win, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rgot == val(me, 77), "rget after rput: %lld", rgot);
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (me + np - 1) % np;
    CHECK(mem[ACC_AT + 2 + left] == val(left, 77), "rput from %d: %lld", left, mem[ACC_AT + 2 + left]);

    /* 6. Epochs: fence, PSCW, exclusive lock; the small area is rewritten
     * by every origin each time with a different tag. */
    for (int round = 0; round < 3; round++) {
        long long tag = 1000000LL * (round + 1);
        for (long i = 0; i < per; i++) src[i] = val(me, i) + tag;
        if (round == 0) {
            CHECK_MPI(MPI_Win_fence(0, win));
        } else if (round == 1) {
            MPI_Group world;
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            CHECK_MPI(MPI_Win_post(world, 0, win));
            CHECK_MPI(MPI_Win_start(world, 0, win));
            MPI_Group_free(&world);
        }
        for (int t = 0; t < np; t++) {
            if (round == 2) CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            for (long i = 0; i < per; i++)
                CHECK_MPI(MPI_Put(&src[i], 1, MPI_LONG_LONG, t, AT(t, me * per + i), 1, MPI_LONG_LONG, win));
            if (round == 2) CHECK_MPI(MPI_Win_unlock(t, win));
        }
        if (round == 0) {
            CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        } else if (round == 1) {
            CHECK_MPI(MPI_Win_complete(win));
            CHECK_MPI(MPI_Win_wait(win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int o = 0; o < np; o++)
            for (long i = 0; i < per; i++)
                CHECK(mem[o * per + i] == val(o, i) + tag, "round %d: put from %d element %ld: %lld", round, o, i,
                      mem[o * per + i]);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    MPI_Type_free(&vec5);
    MPI_Type_free(&vec200);
    if (dynamic) CHECK_MPI(MPI_Win_detach(win, mem));
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);
    free(src);
    free(got);
    free(bases);
    MPI_Finalize();
    return report("rma_batch");
}
