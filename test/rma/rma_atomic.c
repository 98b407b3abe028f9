/* Concurrent atomics from every rank on one location (argv[1]: create,
 * allocate, shared or dynamic): Fetch_and_op counters (64-bit, 32-bit and
 * double), Accumulate SUM and Compare_and_swap loops, under lock_all and
 * under per-operation shared locks. Totals must be exact, and every fetched
 * ticket must be distinct. */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../mpi/check.h"

#define K 500

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";

    /* Window: [0] int64 counter, [1] int64 accumulate target, [2] int32 counter
     * (low half), [3] double sum, [4] int64 CAS counter. */
    long long *mem = NULL, *own = NULL;
    MPI_Win win;
    int dynamic = !strcmp(flavor, "dynamic");
    if (!strcmp(flavor, "create") || dynamic) {
        own = calloc(8, sizeof(long long));
        mem = own;
        if (dynamic) {
            CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            CHECK_MPI(MPI_Win_attach(win, mem, 8 * sizeof(long long)));
        } else {
            CHECK_MPI(MPI_Win_create(mem, 8 * sizeof(long long), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        }
    } else if (!strcmp(flavor, "shared")) {
        CHECK_MPI(MPI_Win_allocate_shared(me == 0 ? 64 : 0, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    if (me == 0) memset(mem, 0, 64);
    MPI_Aint base = 0;
    if (dynamic) MPI_Get_address(mem, &base);
    MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
#define AT(i) (dynamic ? base + (MPI_Aint)(i) * 8 : (MPI_Aint)(i))
    MPI_Barrier(MPI_COMM_WORLD);

    long long tickets[K];
    long long one = 1, got;
    int ione = 1, igot;
    double half = 0.5, dgot;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < K; i++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &tickets[i], MPI_LONG_LONG, 0, AT(0), MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG_LONG, 0, AT(1), 1, MPI_LONG_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&ione, &igot, MPI_INT, 0, AT(2), MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&half, &dgot, MPI_DOUBLE, 0, AT(3), MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    /* Atomic swaps (Get_accumulate with MPI_REPLACE) of distinct values into element 6. */
    long long swapped[K];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < K; i++) {
        long long v = (long long)me * K + i + 1;
        CHECK_MPI(MPI_Get_accumulate(&v, 1, MPI_LONG_LONG, &swapped[i], 1, MPI_LONG_LONG, 0, AT(6), 1,
                                     MPI_LONG_LONG, MPI_REPLACE, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    /* Compare-and-swap increments under per-operation shared locks. */
    for (int i = 0; i < K / 5; i++) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        long long old = 0, now;
        CHECK_MPI(MPI_Fetch_and_op(NULL, &old, MPI_LONG_LONG, 0, AT(4), MPI_NO_OP, win));
        CHECK_MPI(MPI_Win_flush(0, win)); /* results are defined once the operation completes */
        for (;;) {
            long long next = old + 1;
            CHECK_MPI(MPI_Compare_and_swap(&next, &old, &now, MPI_LONG_LONG, 0, AT(4), win));
            CHECK_MPI(MPI_Win_flush(0, win));
            if (now == old) break;
            old = now;
        }
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    /* Exclusive locks around a plain read-modify-write (Get then Put). */
    for (int i = 0; i < K / 5; i++) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Get(&got, 1, MPI_LONG_LONG, 0, AT(5), 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        got += 1;
        CHECK_MPI(MPI_Put(&got, 1, MPI_LONG_LONG, 0, AT(5), 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 1; i < K; i++) CHECK(tickets[i] > tickets[i - 1], "tickets increase: %lld then %lld", tickets[i - 1], tickets[i]);
    /* Every ticket 0 .. np*K-1 was handed out exactly once. */
    long long *all = me == 0 ? malloc(sizeof(long long) * K * np) : NULL;
    MPI_Gather(tickets, K, MPI_LONG_LONG, all, K, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    long long *all_swapped = me == 0 ? malloc(sizeof(long long) * K * np) : NULL;
    MPI_Gather(swapped, K, MPI_LONG_LONG, all_swapped, K, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) {
        char *seen = calloc((size_t)K * np, 1);
        for (int i = 0; i < K * np; i++) {
            CHECK(all[i] >= 0 && all[i] < (long long)K * np, "ticket %lld out of range", all[i]);
            if (all[i] >= 0 && all[i] < (long long)K * np) {
                CHECK(!seen[all[i]], "ticket %lld handed out twice", all[i]);
                seen[all[i]] = 1;
            }
        }
        free(seen);
        free(all);
        /* Swaps lose nothing: the fetched values and the final one are 0 .. np*K, each once. */
        seen = calloc((size_t)K * np + 1, 1);
        for (int i = 0; i <= K * np; i++) {
            long long v = i < K * np ? all_swapped[i] : mem[6];
            CHECK(v >= 0 && v <= (long long)K * np && !seen[v], "swap value %lld lost or duplicated", v);
            if (v >= 0 && v <= (long long)K * np) seen[v] = 1;
        }
        free(seen);
        free(all_swapped);
        int i32;
        double d;
        memcpy(&i32, &mem[2], 4);
        memcpy(&d, &mem[3], 8);
        CHECK(mem[0] == (long long)K * np, "fetch_and_op counter %lld, expected %lld", mem[0], (long long)K * np);
        CHECK(mem[1] == (long long)K * np, "accumulate counter %lld", mem[1]);
        CHECK(i32 == K * np, "int counter %d", i32);
        CHECK(d == 0.5 * K * np, "double sum %f", d);
        CHECK(mem[4] == (long long)(K / 5) * np, "cas counter %lld", mem[4]);
        CHECK(mem[5] == (long long)(K / 5) * np, "exclusive-lock counter %lld", mem[5]);
    }
    (void)igot;
    (void)dgot;
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) CHECK_MPI(MPI_Win_detach(win, mem));
    CHECK_MPI(MPI_Win_free(&win));
    free(own);
    MPI_Finalize();
    return report(flavor);
}
