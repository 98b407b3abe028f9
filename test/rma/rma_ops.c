/* Every RMA operation under every synchronization mode on one window flavor
 * (argv[1]: create, allocate, shared or dynamic). Each rank accesses its right
 * neighbour's window; after the epoch every rank checks the exact contents of
 * its own window (written by its left neighbour) and the fetched values.
 *
 * Target layout (64 int64 elements, element i starts as 100*owner + i):
 *   0-7 Put / Rput            8-15 Get / Rget source      16-19 Accumulate SUM
 *   20-21 Accumulate MAX       22-23 REPLACE               24 Get_accumulate NO_OP
 *   25-26 Get_accumulate SUM   27 Fetch_and_op SUM         28 Fetch_and_op NO_OP
 *   29 CAS (matches)           30 CAS (does not match)     31 Fetch_and_op on MPI_INT
 *   32-39 Put, target vector   40-43 Put, origin vector    48-55 Get, target vector
 *   56-63 Accumulate SUM, target vector (odd elements stay) 63 also: byte-wise SUM */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../mpi/check.h"

#define N 64
typedef long long i64;

static int me, np, left, right;
static int flavor_dynamic;
static MPI_Aint bases[64]; /* dynamic: each rank's attached address */

static MPI_Aint D(int target, int index)
{
    return flavor_dynamic ? bases[target] + (MPI_Aint)index * 8 : index;
}

enum { FENCE, PSCW, LOCK_EXCL, LOCK_SHARED, LOCK_ALL, MODES };
static const char *mode_name[] = {"fence", "pscw", "lock_exclusive", "lock_shared", "lock_all"};

static i64 init_value(int owner, int i) { return 100LL * owner + i; }

static void begin(int mode, MPI_Win win, MPI_Group lg, MPI_Group rg)
{
    switch (mode) {
    case FENCE: CHECK_MPI(MPI_Win_fence(0, win)); break;
    case PSCW:
        CHECK_MPI(MPI_Win_post(lg, 0, win));
        CHECK_MPI(MPI_Win_start(rg, 0, win));
        break;
    case LOCK_EXCL: CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win)); break;
    case LOCK_SHARED: CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win)); break;
    case LOCK_ALL: CHECK_MPI(MPI_Win_lock_all(0, win)); break;
    }
}

static void end(int mode, MPI_Win win)
{
    switch (mode) {
    case FENCE: CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win)); break;
    case PSCW:
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_MPI(MPI_Win_wait(win));
        break;
    case LOCK_EXCL:
    case LOCK_SHARED:
        CHECK_MPI(MPI_Win_flush(right, win));
        CHECK_MPI(MPI_Win_unlock(right, win));
        break;
    case LOCK_ALL:
        CHECK_MPI(MPI_Win_flush_all(win));
        CHECK_MPI(MPI_Win_flush_local_all(win));
        CHECK_MPI(MPI_Win_unlock_all(win));
        break;
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the target checks after every origin is done */
}

/* Either the plain call or the request-based one, completed with MPI_Wait. */
static void wait_req(MPI_Request *r) { CHECK_MPI(MPI_Wait(r, MPI_STATUS_IGNORE)); }

static void run(int mode, MPI_Win win, volatile i64 *mem, MPI_Group lg, MPI_Group rg)
{
    MPI_Datatype vec2, vec_get;
    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_LONG_LONG, &vec2));
    CHECK_MPI(MPI_Type_commit(&vec2));
    vec_get = vec2;
    const int req = mode == LOCK_ALL;

    for (int i = 0; i < N; i++) mem[i] = init_value(me, i);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    i64 put_buf[8], get_buf[8] = {0}, one[4], max_in[2], rep[2], gacc_res[2] = {0}, fop_res = 0, noop_res = 0;
    i64 cas_res = 0, cas_fail_res = 0, vput[4], ovec[8], vget[4] = {0}, acc_vec[4];
    int int_res = 0, int_one = 1;
    signed char bytes[8];
    for (int i = 0; i < 8; i++) put_buf[i] = me * 1000LL + i;
    for (int i = 0; i < 4; i++) one[i] = me + 1;
    max_in[0] = 3;
    max_in[1] = 100000 + me;
    rep[0] = rep[1] = 555 + me;
    for (int k = 0; k < 4; k++) vput[k] = me * 10LL + k, acc_vec[k] = 1;
    for (int k = 0; k < 8; k++) ovec[k] = (k % 2) ? -1 : me * 7LL + k / 2;
    memset(bytes, 1, sizeof bytes);
    i64 fop_in = 5, swap = 999, compare = init_value(right, 29), bad_compare = -1, gacc_in[2] = {1, 1};

    begin(mode, win, lg, rg);
    MPI_Request r;
    if (req) {
        CHECK_MPI(MPI_Rput(put_buf, 8, MPI_LONG_LONG, right, D(right, 0), 8, MPI_LONG_LONG, win, &r));
        wait_req(&r);
        CHECK_MPI(MPI_Rget(get_buf, 8, MPI_LONG_LONG, right, D(right, 8), 8, MPI_LONG_LONG, win, &r));
        wait_req(&r);
        CHECK_MPI(MPI_Raccumulate(one, 4, MPI_LONG_LONG, right, D(right, 16), 4, MPI_LONG_LONG, MPI_SUM, win, &r));
        wait_req(&r);
        CHECK_MPI(MPI_Rget_accumulate(gacc_in, 2, MPI_LONG_LONG, gacc_res, 2, MPI_LONG_LONG, right, D(right, 25), 2,
                                      MPI_LONG_LONG, MPI_SUM, win, &r));
        wait_req(&r);
    } else {
        CHECK_MPI(MPI_Put(put_buf, 8, MPI_LONG_LONG, right, D(right, 0), 8, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Get(get_buf, 8, MPI_LONG_LONG, right, D(right, 8), 8, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Accumulate(one, 4, MPI_LONG_LONG, right, D(right, 16), 4, MPI_LONG_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Get_accumulate(gacc_in, 2, MPI_LONG_LONG, gacc_res, 2, MPI_LONG_LONG, right, D(right, 25), 2,
                                     MPI_LONG_LONG, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Accumulate(max_in, 2, MPI_LONG_LONG, right, D(right, 20), 2, MPI_LONG_LONG, MPI_MAX, win));
    CHECK_MPI(MPI_Accumulate(rep, 2, MPI_LONG_LONG, right, D(right, 22), 2, MPI_LONG_LONG, MPI_REPLACE, win));
    i64 noop_res2 = 0;
    CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, &noop_res2, 1, MPI_LONG_LONG, right, D(right, 24), 1,
                                 MPI_LONG_LONG, MPI_NO_OP, win));
    CHECK_MPI(MPI_Fetch_and_op(&fop_in, &fop_res, MPI_LONG_LONG, right, D(right, 27), MPI_SUM, win));
    CHECK_MPI(MPI_Fetch_and_op(NULL, &noop_res, MPI_LONG_LONG, right, D(right, 28), MPI_NO_OP, win));
    CHECK_MPI(MPI_Compare_and_swap(&swap, &compare, &cas_res, MPI_LONG_LONG, right, D(right, 29), win));
    CHECK_MPI(MPI_Compare_and_swap(&swap, &bad_compare, &cas_fail_res, MPI_LONG_LONG, right, D(right, 30), win));
    /* MPI_INT at element 31: its low four bytes (little endian); the window's disp unit is 8. */
    CHECK_MPI(MPI_Fetch_and_op(&int_one, &int_res, MPI_INT, right, D(right, 31), MPI_SUM, win));
    CHECK_MPI(MPI_Put(vput, 4, MPI_LONG_LONG, right, D(right, 32), 1, vec2, win));
    CHECK_MPI(MPI_Put(ovec, 1, vec2, right, D(right, 40), 4, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Get(vget, 4, MPI_LONG_LONG, right, D(right, 48), 1, vec_get, win));
    CHECK_MPI(MPI_Accumulate(acc_vec, 4, MPI_LONG_LONG, right, D(right, 56), 1, vec2, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(bytes, 8, MPI_SIGNED_CHAR, right, D(right, 63), 8, MPI_SIGNED_CHAR, MPI_SUM, win));
    end(mode, win);

    const char *m = mode_name[mode];
    /* Fetched values (origin side). */
    for (int i = 0; i < 8; i++)
        CHECK(get_buf[i] == init_value(right, 8 + i), "%s: get[%d] = %lld", m, i, get_buf[i]);
    for (int i = 0; i < 2; i++)
        CHECK(gacc_res[i] == init_value(right, 25 + i), "%s: get_accumulate result[%d] = %lld", m, i, gacc_res[i]);
    CHECK(fop_res == init_value(right, 27), "%s: fetch_and_op result %lld", m, fop_res);
    CHECK(noop_res == init_value(right, 28), "%s: fetch_and_op NO_OP result %lld", m, noop_res);
    CHECK(noop_res2 == init_value(right, 24), "%s: get_accumulate NO_OP result %lld", m, noop_res2);
    CHECK(cas_res == init_value(right, 29), "%s: cas result %lld", m, cas_res);
    CHECK(cas_fail_res == init_value(right, 30), "%s: failed cas result %lld", m, cas_fail_res);
    CHECK(int_res == (int)init_value(right, 31), "%s: int fetch_and_op result %d", m, int_res);
    for (int k = 0; k < 4; k++)
        CHECK(vget[k] == init_value(right, 48 + 2 * k), "%s: vector get[%d] = %lld", m, k, vget[k]);

    /* The target's memory (written by the left neighbour). */
    i64 expect[N];
    for (int i = 0; i < N; i++) expect[i] = init_value(me, i);
    for (int i = 0; i < 8; i++) expect[i] = left * 1000LL + i;
    for (int i = 16; i < 20; i++) expect[i] += left + 1;
    expect[21] = 100000 + left;
    expect[22] = expect[23] = 555 + left;
    expect[25] += 1, expect[26] += 1;
    expect[27] += 5;
    expect[29] = 999;
    expect[31] += 1;
    for (int k = 0; k < 4; k++) expect[32 + 2 * k] = left * 10LL + k;
    for (int k = 0; k < 4; k++) expect[40 + k] = left * 7LL + k;
    for (int k = 0; k < 4; k++) expect[56 + 2 * k] += 1;
    expect[63] += 0x0101010101010101LL;
    for (int i = 0; i < N; i++)
        CHECK(mem[i] == expect[i], "%s: window[%d] = %lld, expected %lld", m, i, (i64)mem[i], expect[i]);
    CHECK_MPI(MPI_Type_free(&vec2));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    left = (me + np - 1) % np;
    right = (me + 1) % np;
    const char *flavor = argc > 1 ? argv[1] : "allocate";

    MPI_Win win;
    i64 *mem = NULL;
    i64 *own = NULL;
    if (!strcmp(flavor, "create")) {
        own = malloc(N * sizeof(i64));
        mem = own;
        CHECK_MPI(MPI_Win_create(mem, N * sizeof(i64), sizeof(i64), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else if (!strcmp(flavor, "allocate")) {
        CHECK_MPI(MPI_Win_allocate(N * sizeof(i64), sizeof(i64), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else if (!strcmp(flavor, "shared")) {
        CHECK_MPI(MPI_Win_allocate_shared(N * sizeof(i64), sizeof(i64), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        flavor_dynamic = 1;
        own = malloc(N * sizeof(i64));
        mem = own;
        CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        CHECK_MPI(MPI_Win_attach(win, mem, N * sizeof(i64)));
        MPI_Aint mine;
        CHECK_MPI(MPI_Get_address(mem, &mine));
        CHECK_MPI(MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD));
    }

    MPI_Group world_group, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &left, &lg);
    MPI_Group_incl(world_group, 1, &right, &rg);
    for (int mode = 0; mode < MODES; mode++) run(mode, win, mem, lg, rg);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Group_free(&world_group);

    if (flavor_dynamic) CHECK_MPI(MPI_Win_detach(win, mem));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free sets the handle to MPI_WIN_NULL");
    free(own);
    MPI_Finalize();
    return report(flavor);
}
