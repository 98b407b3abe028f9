/* The window object: predefined attributes of every flavor (MPI_WIN_BASE,
 * _SIZE, _DISP_UNIT, _CREATE_FLAVOR, _MODEL), user attributes and their
 * delete callback at MPI_Win_free, name, group, info; Win_allocate_shared
 * memory reached with direct loads and stores through MPI_Win_shared_query
 * (contiguous by default, per-rank parts with alloc_shared_noncontig). */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

static int deleted;
static int delete_fn(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    deleted += *(int *)value;
    return MPI_SUCCESS;
}

static void check_attrs(MPI_Win win, void *base, MPI_Aint size, int disp_unit, int flavor, const char *what)
{
    void *v;
    int flag;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &v, &flag));
    CHECK(flag && v == base, "%s: MPI_WIN_BASE %p, expected %p", what, v, base);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &v, &flag));
    CHECK(flag && *(MPI_Aint *)v == size, "%s: MPI_WIN_SIZE %ld", what, flag ? (long)*(MPI_Aint *)v : -1L);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &v, &flag));
    CHECK(flag && *(int *)v == disp_unit, "%s: MPI_WIN_DISP_UNIT", what);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &v, &flag));
    CHECK(flag && *(int *)v == flavor, "%s: MPI_WIN_CREATE_FLAVOR %d", what, flag ? *(int *)v : -1);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &v, &flag));
    CHECK(flag && *(int *)v == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    /* Win_create: attributes, user attribute, name, group, info. */
    double buf[10];
    MPI_Win win;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "false");
    CHECK_MPI(MPI_Win_create(buf, sizeof buf, sizeof(double), info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    check_attrs(win, buf, sizeof buf, sizeof(double), MPI_WIN_FLAVOR_CREATE, "create");

    int keyval, value = 5;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &keyval, NULL));
    CHECK_MPI(MPI_Win_set_attr(win, keyval, &value));
    void *got;
    int flag;
    CHECK_MPI(MPI_Win_get_attr(win, keyval, &got, &flag));
    CHECK(flag && got == &value, "user attribute");

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "a new window has an empty name");
    CHECK_MPI(MPI_Win_set_name(win, "halo window"));
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(len == 11 && !strcmp(name, "halo window"), "name '%s'", name);

    MPI_Group wg, cg;
    int cmp;
    CHECK_MPI(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(MPI_COMM_WORLD, &cg);
    MPI_Group_compare(wg, cg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group is the communicator's");
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);

    MPI_Info used;
    char val[MPI_MAX_INFO_VAL];
    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK_MPI(MPI_Info_get_string(used, "no_locks", &(int){sizeof val}, val, &flag));
    CHECK(flag && !strcmp(val, "false"), "info no_locks");
    MPI_Info_free(&used);
    /* A hint the implementation does not know is ignored: Win_get_info
     * returns the hints in effect only (MPI-4.1 12.2.7); a known one set with
     * Win_set_info is returned with its new value. */
    MPI_Info_create(&info);
    MPI_Info_set(info, "rma_win_test_unknown_hint", "true");
    MPI_Info_set(info, "no_locks", "true");
    CHECK_MPI(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK_MPI(MPI_Info_get_string(used, "rma_win_test_unknown_hint", &(int){sizeof val}, val, &flag));
    CHECK(!flag, "an unknown hint is not returned by MPI_Win_get_info");
    CHECK_MPI(MPI_Info_get_string(used, "no_locks", &(int){sizeof val}, val, &flag));
    CHECK(flag && !strcmp(val, "true"), "info no_locks after Win_set_info: %s", flag ? val : "(none)");
    CHECK_MPI(MPI_Info_get_string(used, "accumulate_ordering", &(int){sizeof val}, val, &flag));
    CHECK(flag && !strcmp(val, "rar,raw,war,waw"), "default accumulate_ordering");
    MPI_Info_free(&used);

    CHECK_MPI(MPI_Win_free(&win));
    CHECK(deleted == 5, "delete callback ran once at MPI_Win_free (%d)", deleted);
    CHECK_MPI(MPI_Win_free_keyval(&keyval));

    /* Win_allocate. */
    int *abase = NULL;
    CHECK_MPI(MPI_Win_allocate(40, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &abase, &win));
    CHECK(abase != NULL, "Win_allocate gives memory");
    check_attrs(win, abase, 40, 4, MPI_WIN_FLAVOR_ALLOCATE, "allocate");
    for (int i = 0; i < 10; i++) abase[i] = i;  /* all of it is usable */
    CHECK_MPI(MPI_Win_free(&win));

    /* Win_create_dynamic. */
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC, "dynamic");
    CHECK_MPI(MPI_Win_free(&win));

    /* Win_allocate_shared, contiguous: rank r has r+1 ints at rank 0's base + sum of the sizes before. */
    int *mine = NULL;
    MPI_Aint sz = (me + 1) * sizeof(int);
    CHECK_MPI(MPI_Win_allocate_shared(sz, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    check_attrs(win, mine, sz, sizeof(int), MPI_WIN_FLAVOR_SHARED, "shared");
    for (int i = 0; i <= me; i++) mine[i] = 1000 * me + i;
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    int *base0 = NULL;
    MPI_Aint s0;
    int du;
    CHECK_MPI(MPI_Win_shared_query(win, 0, &s0, &du, &base0));
    CHECK(s0 == sizeof(int) && du == sizeof(int), "rank 0's size %ld disp unit %d", (long)s0, du);
    int *p = base0;
    for (int r = 0; r < np; r++) {
        int *q;
        MPI_Aint s;
        CHECK_MPI(MPI_Win_shared_query(win, r, &s, &du, &q));
        CHECK(q == p, "rank %d's memory follows rank %d's", r, r - 1);
        CHECK(s == (MPI_Aint)((r + 1) * sizeof(int)), "rank %d's size %ld", r, (long)s);
        for (int i = 0; i <= r; i++) CHECK(q[i] == 1000 * r + i, "load of rank %d's element %d: %d", r, i, q[i]);
        p = q + r + 1;
    }
    /* MPI_PROC_NULL: the first rank with memory. */
    int *qn;
    MPI_Aint sn;
    CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &sn, &du, &qn));
    CHECK(qn == base0 && sn == sizeof(int), "shared_query(MPI_PROC_NULL)");
    /* Direct stores into the right neighbour's memory, seen by its owner. */
    int right = (me + 1) % np, *rq;
    MPI_Aint rs;
    CHECK_MPI(MPI_Win_shared_query(win, right, &rs, &du, &rq));
    MPI_Barrier(MPI_COMM_WORLD);
    rq[0] = -me - 1;
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    CHECK(mine[0] == -((me + np - 1) % np) - 1, "store from the left neighbour: %d", mine[0]);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));

    /* alloc_shared_noncontig: each part usable and distinct. */
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    CHECK_MPI(MPI_Win_allocate_shared(100, 1, info, MPI_COMM_WORLD, &mine, &win));
    MPI_Info_free(&info);
    memset(mine, me + 1, 100);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < np; r++) {
        unsigned char *q;
        MPI_Aint s;
        CHECK_MPI(MPI_Win_shared_query(win, r, &s, &du, &q));
        CHECK(s == 100 && q[0] == r + 1 && q[99] == r + 1, "noncontig part of rank %d", r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));

    /* Odd ranks allocate nothing: their size is 0 and their base NULL
     * (MPICH's win_shared_noncontig_put asserts both); PROC_NULL gives rank 0. */
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    CHECK_MPI(MPI_Win_allocate_shared(me % 2 ? 0 : 64, 1, info, MPI_COMM_WORLD, &mine, &win));
    MPI_Info_free(&info);
    for (int r = 0; r < np; r++) {
        unsigned char *q = (unsigned char *)&q;
        MPI_Aint s = -1;
        CHECK_MPI(MPI_Win_shared_query(win, r, &s, &du, &q));
        if (r % 2) CHECK(s == 0 && q == NULL, "rank %d allocated nothing: size %ld base %p", r, (long)s, (void *)q);
        else CHECK(s == 64 && q != NULL, "rank %d: size %ld base %p", r, (long)s, (void *)q);
    }
    CHECK_MPI(MPI_Win_free(&win));

    /* A window over a sub-communicator: odd and even ranks. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    long long *hb;
    CHECK_MPI(MPI_Win_allocate(8, 8, MPI_INFO_NULL, half, &hb, &win));
    *hb = 0;
    MPI_Comm_free(&half);  /* the window keeps working without the user's communicator */
    CHECK_MPI(MPI_Win_fence(0, win));
    long long one = 1;
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int hsize = (np - me % 2 + 1) / 2;
    if (me < 2) CHECK(*hb == hsize, "sub-communicator window sum %lld, expected %d", *hb, hsize);
    CHECK_MPI(MPI_Win_free(&win));

    MPI_Finalize();
    return report("rma_win");
}
