/* Atomics and ordering on one window from every rank, including the target
 * itself (argv[1]: create or allocate). Written for the RDMA path (run with
 * AXON_OSC_PATH=rdma over verbs: 8-byte MPI_SUM and compare-and-swap by NIC
 * atomics, the target's own ones through a neighbour) but valid on every path:
 *  - Fetch_and_op MPI_SUM on one int64 counter: every ticket distinct, exact total;
 *  - Compare_and_swap increment loops on another counter: exact total;
 *  - Accumulate MPI_SUM of int64 through a vector target type: exact sums, holes untouched;
 *  - Get_accumulate MPI_SUM on unsigned 64-bit words (wrap-around);
 *  - Put, flush, Accumulate on the same word: the sum sees the put;
 *  - Put then flush then Get: the data read back. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

#define K 200
#define WORDS 64

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    long long *mem = NULL;
    MPI_Win win;
    if (!strcmp(flavor, "create")) {
        mem = calloc(WORDS, sizeof(long long));
        CHECK_MPI(MPI_Win_create(mem, WORDS * sizeof(long long), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(WORDS * sizeof(long long), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    memset(mem, 0, WORDS * sizeof(long long));
    for (int i = 33; i < 40; i += 2) mem[i] = -1; /* holes of the vector below */
    CHECK_MPI(MPI_Win_unlock(me, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. tickets from one counter on rank 0: [0] */
    long long one = 1, tickets[K];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < K; i++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &tickets[i], MPI_LONG_LONG, 0, 0, MPI_SUM, win));
        if (i % 8 == 7) CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_flush_all(win));
    /* 2. compare-and-swap increments on [1] of the last rank */
    const int t2 = np - 1;
    for (int i = 0; i < K / 4; i++) {
        long long old = 0, now;
        CHECK_MPI(MPI_Fetch_and_op(NULL, &old, MPI_LONG_LONG, t2, 1, MPI_NO_OP, win));
        CHECK_MPI(MPI_Win_flush(t2, win));
        for (;;) {
            long long next = old + 1;
            CHECK_MPI(MPI_Compare_and_swap(&next, &old, &now, MPI_LONG_LONG, t2, 1, win));
            CHECK_MPI(MPI_Win_flush(t2, win));
            if (now == old) break;
            old = now;
        }
    }
    /* 3. Accumulate SUM through a vector type: words 32, 34, 36, 38 of rank 0 */
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT64_T, &vec);
    MPI_Type_commit(&vec);
    int64_t add[4] = {1, 10, 100, 1000};
    for (int i = 0; i < K / 4; i++) CHECK_MPI(MPI_Accumulate(add, 4, MPI_INT64_T, 0, 32, 1, vec, MPI_SUM, win));
    /* 4. Get_accumulate SUM on uint64 word [2] of rank 0: wraps around */
    uint64_t big = UINT64_MAX, prev;
    CHECK_MPI(MPI_Get_accumulate(&big, 1, MPI_UINT64_T, &prev, 1, MPI_UINT64_T, 0, 2, 1, MPI_UINT64_T, MPI_SUM, win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. Put, flush, Accumulate on our own word [8+me] of rank (me+1)%np;
     * then Put, flush, Get back a block [16+me] */
    const int t5 = (me + 1) % np;
    long long v = 1000 + me, inc = 5, back = 0;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t5, 0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG_LONG, t5, 8 + me, 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(t5, win));
    CHECK_MPI(MPI_Accumulate(&inc, 1, MPI_LONG_LONG, t5, 8 + me, 1, MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush(t5, win));
    CHECK_MPI(MPI_Get(&back, 1, MPI_LONG_LONG, t5, 8 + me, 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(t5, win));
    CHECK(back == 1005 + me, "put+accumulate read back %lld, want %d", back, 1005 + me);
    long long w = 77 * (me + 1);
    CHECK_MPI(MPI_Put(&w, 1, MPI_LONG_LONG, t5, 16 + me, 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(t5, win));
    back = 0;
    CHECK_MPI(MPI_Get(&back, 1, MPI_LONG_LONG, t5, 16 + me, 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_unlock(t5, win));
    CHECK(back == 77 * (me + 1), "put+get read back %lld", back);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Checks: tickets distinct and complete (gathered at rank 0). */
    long long *all = me == 0 ? malloc(sizeof(long long) * K * np) : NULL;
    MPI_Gather(tickets, K, MPI_LONG_LONG, all, K, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
    if (me == 0) {
        qsort(all, (size_t)K * np, sizeof(long long), cmp_ll);
        for (int i = 0; i < K * np; i++)
            if (all[i] != i) {
                CHECK(0, "ticket %d is %lld", i, all[i]);
                break;
            }
        CHECK(mem[0] == (long long)K * np, "counter %lld, want %lld", mem[0], (long long)K * np);
        for (int j = 0; j < 4; j++)
            CHECK(mem[32 + 2 * j] == (long long)add[j] * (K / 4) * np, "vector word %d: %lld", j, mem[32 + 2 * j]);
        for (int j = 0; j < 4; j++) CHECK(mem[33 + 2 * j] == -1, "hole %d written: %lld", j, mem[33 + 2 * j]);
        CHECK((uint64_t)mem[2] == (uint64_t)0 - (uint64_t)np, "wrapped word %llu", (unsigned long long)mem[2]);
        free(all);
    }
    if (me == t2) CHECK(mem[1] == (long long)(K / 4) * np, "CAS counter %lld, want %d", mem[1], (K / 4) * np);
    const int from = (me + np - 1) % np;
    CHECK(mem[8 + from] == 1005 + from, "word %d: %lld", 8 + from, mem[8 + from]);
    CHECK(mem[16 + from] == 77 * (from + 1), "word %d: %lld", 16 + from, mem[16 + from]);
    CHECK_MPI(MPI_Win_unlock(me, win));
    MPI_Type_free(&vec);
    CHECK_MPI(MPI_Win_free(&win));
    if (!strcmp(flavor, "create")) free(mem);
    MPI_Finalize();
    return report("rma_rdma");
}
