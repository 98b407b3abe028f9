/* Every MPI_Group_* call: size/rank, incl/excl, range_incl/excl (negative
 * strides), union/intersection/difference (order rules), translate_ranks
 * (MPI_PROC_NULL, MPI_UNDEFINED), compare, MPI_GROUP_EMPTY, and the error
 * classes of bad input. Groups are local objects, so this runs the same on
 * every rank; the world size only changes the sizes. */
#include "../mpi/check.h"

static int size_of(MPI_Group g)
{
    int s = -1;
    MPI_Group_size(g, &s);
    return s;
}

/* The world ranks of group g's members, in group order. */
static void world_of(MPI_Group g, MPI_Group wg, int *out)
{
    int n = size_of(g);
    int in[128];
    for (int i = 0; i < n; i++) in[i] = i;
    MPI_Group_translate_ranks(g, n, in, wg, out);
}

static void check_members(MPI_Group g, MPI_Group wg, int n, const int *expect, const char *what)
{
    int got[128];
    CHECK(size_of(g) == n, "%s: size %d, expected %d", what, size_of(g), n);
    if (size_of(g) != n) return;
    world_of(g, wg, got);
    for (int i = 0; i < n; i++)
        CHECK(got[i] == expect[i], "%s: member %d is %d, expected %d", what, i, got[i], expect[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, result, r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    MPI_Group wg, sg, g, h, k;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_SELF, &sg));
    CHECK(size_of(wg) == size, "world group size %d", size_of(wg));
    CHECK_MPI(MPI_Group_rank(wg, &r));
    CHECK(r == rank, "world group rank %d", r);
    CHECK_MPI(MPI_Group_rank(sg, &r));
    CHECK(r == 0 && size_of(sg) == 1, "self group rank %d size %d", r, size_of(sg));

    /* --- MPI_GROUP_EMPTY ---------------------------------------------------- */
    CHECK(size_of(MPI_GROUP_EMPTY) == 0, "empty group size");
    CHECK_MPI(MPI_Group_rank(MPI_GROUP_EMPTY, &r));
    CHECK(r == MPI_UNDEFINED, "rank in empty group %d", r);
    CHECK_MPI(MPI_Group_compare(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &result));
    CHECK(result == MPI_IDENT, "empty vs empty %d", result);
    CHECK_MPI(MPI_Group_compare(MPI_GROUP_EMPTY, wg, &result));
    CHECK(result == MPI_UNEQUAL, "empty vs world %d", result);
    CHECK_MPI(MPI_Group_incl(wg, 0, NULL, &g));
    CHECK(size_of(g) == 0, "incl of nothing has size %d", size_of(g));
    CHECK_MPI(MPI_Group_compare(g, MPI_GROUP_EMPTY, &result));
    CHECK(result == MPI_IDENT, "incl of nothing vs empty %d", result);
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Group_union(MPI_GROUP_EMPTY, wg, &g));
    CHECK_MPI(MPI_Group_compare(g, wg, &result));
    CHECK(result == MPI_IDENT, "empty union world %d", result);
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Group_intersection(MPI_GROUP_EMPTY, wg, &g));
    CHECK(size_of(g) == 0, "empty intersection world");
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Group_difference(wg, wg, &g));
    CHECK(size_of(g) == 0, "world minus world");
    CHECK_MPI(MPI_Group_rank(g, &r));
    CHECK(r == MPI_UNDEFINED, "rank in world minus world %d", r);
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Group_excl(wg, size, (int[]){0, 1, 2, 3, 4, 5, 6, 7}, &g));
    CHECK(size_of(g) == 0, "excl all size %d", size_of(g));
    MPI_Group_free(&g);

    /* --- incl / excl: order as given, excl keeps group order -------------- */
    int rev[128];
    for (int i = 0; i < size; i++) rev[i] = size - 1 - i;
    CHECK_MPI(MPI_Group_incl(wg, size, rev, &g));
    check_members(g, wg, size, rev, "reversed incl");
    CHECK_MPI(MPI_Group_rank(g, &r));
    CHECK(r == size - 1 - rank, "rank in reversed group %d", r);
    CHECK_MPI(MPI_Group_compare(g, wg, &result));
    CHECK(result == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "reversed vs world %d", result);
    MPI_Group_free(&g);
    if (size >= 3) {
        CHECK_MPI(MPI_Group_incl(wg, 2, (int[]){2, 0}, &g));
        check_members(g, wg, 2, (int[]){2, 0}, "incl {2,0}");
        CHECK_MPI(MPI_Group_excl(wg, 1, (int[]){1}, &h));
        int ex[128], m = 0;
        for (int i = 0; i < size; i++)
            if (i != 1) ex[m++] = i;
        check_members(h, wg, m, ex, "excl {1}");
        /* union: g's order, then h's members not in g */
        CHECK_MPI(MPI_Group_union(g, h, &k));
        int u[128], un = 0;
        u[un++] = 2; u[un++] = 0;
        for (int i = 0; i < m; i++)
            if (ex[i] != 2 && ex[i] != 0) u[un++] = ex[i];
        check_members(k, wg, un, u, "union");
        MPI_Group_free(&k);
        /* intersection: in g's order */
        CHECK_MPI(MPI_Group_intersection(g, h, &k));
        check_members(k, wg, 2, (int[]){2, 0}, "intersection");
        MPI_Group_free(&k);
        CHECK_MPI(MPI_Group_intersection(h, g, &k));
        check_members(k, wg, 2, (int[]){0, 2}, "intersection reversed");
        CHECK_MPI(MPI_Group_compare(k, g, &result));
        CHECK(result == MPI_SIMILAR, "{0,2} vs {2,0} %d", result);
        MPI_Group_free(&k);
        /* difference: in the first group's order */
        CHECK_MPI(MPI_Group_difference(wg, g, &k));
        int d[128], dn = 0;
        for (int i = 0; i < size; i++)
            if (i != 0 && i != 2) d[dn++] = i;
        check_members(k, wg, dn, d, "difference");
        CHECK_MPI(MPI_Group_rank(k, &r));
        CHECK(r == (rank == 0 || rank == 2 ? MPI_UNDEFINED : rank == 1 ? 0 : rank - 2),
              "rank in difference %d", r);
        MPI_Group_free(&k);
        MPI_Group_free(&h);
        MPI_Group_free(&g);
    }

    /* --- range_incl / range_excl ------------------------------------------ */
    {
        /* {size-1 .. 0 step -1} is the reversed group */
        int ranges[2][3] = {{size - 1, 0, -1}};
        CHECK_MPI(MPI_Group_range_incl(wg, 1, ranges, &g));
        check_members(g, wg, size, rev, "range_incl reversed");
        MPI_Group_free(&g);
        /* strides that overshoot the last rank stop before it */
        int r2[2][3] = {{0, size - 1, 2}};
        CHECK_MPI(MPI_Group_range_incl(wg, 1, r2, &g));
        int ev[128], en = 0;
        for (int i = 0; i < size; i += 2) ev[en++] = i;
        check_members(g, wg, en, ev, "range_incl evens");
        MPI_Group_free(&g);
        CHECK_MPI(MPI_Group_range_excl(wg, 1, r2, &g));
        int od[128], on = 0;
        for (int i = 1; i < size; i += 2) od[on++] = i;
        check_members(g, wg, on, od, "range_excl evens");
        MPI_Group_free(&g);
        /* two ranges, the second with a negative stride */
        if (size >= 4) {
            int r3[2][3] = {{3, 3, 1}, {2, 0, -2}};
            CHECK_MPI(MPI_Group_range_incl(wg, 2, r3, &g));
            check_members(g, wg, 3, (int[]){3, 2, 0}, "range_incl two ranges");
            MPI_Group_free(&g);
            CHECK_MPI(MPI_Group_range_excl(wg, 2, r3, &g));
            int rest[128], rn = 0;
            for (int i = 0; i < size; i++)
                if (i != 0 && i != 2 && i != 3) rest[rn++] = i;
            check_members(g, wg, rn, rest, "range_excl two ranges");
            MPI_Group_free(&g);
        }
        /* n = 0 */
        CHECK_MPI(MPI_Group_range_incl(wg, 0, ranges, &g));
        CHECK(size_of(g) == 0, "range_incl of no range");
        MPI_Group_free(&g);
        CHECK_MPI(MPI_Group_range_excl(wg, 0, ranges, &g));
        CHECK_MPI(MPI_Group_compare(g, wg, &result));
        CHECK(result == MPI_IDENT, "range_excl of no range %d", result);
        MPI_Group_free(&g);
    }

    /* --- translate_ranks ---------------------------------------------------- */
    {
        int in[4] = {MPI_PROC_NULL, 0, size - 1, MPI_PROC_NULL}, out[4] = {-7, -7, -7, -7};
        CHECK_MPI(MPI_Group_incl(wg, size, rev, &g));
        CHECK_MPI(MPI_Group_translate_ranks(wg, 4, in, g, out));
        CHECK(out[0] == MPI_PROC_NULL && out[3] == MPI_PROC_NULL, "PROC_NULL translated to %d/%d", out[0], out[3]);
        CHECK(out[1] == size - 1 && out[2] == 0, "translated to %d %d", out[1], out[2]);
        int me = rank, inself = -7;
        CHECK_MPI(MPI_Group_translate_ranks(wg, 1, &me, sg, &inself));
        CHECK(inself == 0, "world rank in self group: %d", inself);
        if (size > 1) {
            int other = (rank + 1) % size, o = -7;
            CHECK_MPI(MPI_Group_translate_ranks(wg, 1, &other, sg, &o));
            CHECK(o == MPI_UNDEFINED, "other rank in self group: %d", o);
        }
        CHECK_MPI(MPI_Group_translate_ranks(wg, 0, in, g, out));
        CHECK_MPI(MPI_Group_translate_ranks(MPI_GROUP_EMPTY, 0, NULL, wg, NULL));
        int bad = size;
        CHECK(error_class_of(MPI_Group_translate_ranks(wg, 1, &bad, g, out)) == MPI_ERR_RANK,
              "translate of rank == size");
        bad = -5;
        CHECK(error_class_of(MPI_Group_translate_ranks(wg, 1, &bad, g, out)) == MPI_ERR_RANK,
              "translate of rank -5");
        CHECK(error_class_of(MPI_Group_translate_ranks(wg, -1, in, g, out)) == MPI_ERR_ARG,
              "translate with n = -1");
        MPI_Group_free(&g);
    }

    /* --- bad input ------------------------------------------------------------- */
    /* Invalid or repeated ranks are MPI_ERR_RANK (as Open MPI says; MPICH
     * does not detect repeats and says MPI_ERR_ARG for bad ranges, the
     * standard names no class). A bad stride or direction is MPI_ERR_ARG. */
    int bad1 = size, badneg = -1, dup2[2] = {0, 0};
    CHECK(error_class_of(MPI_Group_incl(wg, 1, &bad1, &g)) == MPI_ERR_RANK, "incl rank == size");
    CHECK(error_class_of(MPI_Group_incl(wg, 1, &badneg, &g)) == MPI_ERR_RANK, "incl rank -1");
#ifndef MPICH
    if (size >= 2)
        CHECK(error_class_of(MPI_Group_incl(wg, 2, dup2, &g)) == MPI_ERR_RANK, "incl with a repeated rank");
#endif
    CHECK(error_class_of(MPI_Group_excl(wg, 1, &bad1, &g)) == MPI_ERR_RANK, "excl rank == size");
#ifndef MPICH
    if (size >= 2)
        CHECK(error_class_of(MPI_Group_excl(wg, 2, dup2, &g)) == MPI_ERR_RANK, "excl with a repeated rank");
#endif
    (void)dup2;
    CHECK(error_class_of(MPI_Group_incl(wg, -1, &bad1, &g)) == MPI_ERR_ARG, "incl n = -1");
    {
#ifdef MPICH
        const int rank_class = MPI_ERR_ARG;
#else
        const int rank_class = MPI_ERR_RANK;
#endif
        int out_of_range[1][3] = {{0, size, 1}};
        CHECK(error_class_of(MPI_Group_range_incl(wg, 1, out_of_range, &g)) == rank_class,
              "range_incl last == size");
        int neg_first[1][3] = {{-1, 0, 1}};
        CHECK(error_class_of(MPI_Group_range_excl(wg, 1, neg_first, &g)) == rank_class,
              "range_excl first = -1");
        int zero_stride[1][3] = {{0, 0, 0}};
        CHECK(error_class_of(MPI_Group_range_incl(wg, 1, zero_stride, &g)) == MPI_ERR_ARG,
              "range_incl stride 0");
        if (size >= 2) {
            int wrong_dir[1][3] = {{1, 0, 1}};
            CHECK(error_class_of(MPI_Group_range_incl(wg, 1, wrong_dir, &g)) == MPI_ERR_ARG,
                  "range_incl first > last with a positive stride");
            int overlap[2][3] = {{0, 1, 1}, {1, 1, 1}};
            CHECK(error_class_of(MPI_Group_range_incl(wg, 2, overlap, &g)) == rank_class,
                  "range_incl with a rank twice");
        }
    }
    CHECK(error_class_of(MPI_Group_size(MPI_GROUP_NULL, &r)) == MPI_ERR_GROUP, "size of GROUP_NULL");
    CHECK(error_class_of(MPI_Group_rank(MPI_GROUP_NULL, &r)) == MPI_ERR_GROUP, "rank of GROUP_NULL");
    CHECK(error_class_of(MPI_Group_union(wg, MPI_GROUP_NULL, &g)) == MPI_ERR_GROUP, "union with GROUP_NULL");
    CHECK(error_class_of(MPI_Group_compare(MPI_GROUP_NULL, wg, &result)) == MPI_ERR_GROUP,
          "compare with GROUP_NULL");
    MPI_Group null_group = MPI_GROUP_NULL;
    CHECK(error_class_of(MPI_Group_free(&null_group)) == MPI_ERR_GROUP, "free of GROUP_NULL");
    /* Freeing MPI_GROUP_EMPTY is accepted and sets the handle to
     * MPI_GROUP_NULL (MPICH does the same); the empty group stays usable. */
    MPI_Group empty = MPI_GROUP_EMPTY;
    CHECK_MPI(MPI_Group_free(&empty));
    CHECK(empty == MPI_GROUP_NULL, "free of GROUP_EMPTY did not set GROUP_NULL");
    CHECK(size_of(MPI_GROUP_EMPTY) == 0, "empty group after a free");
    /* Freed group handles are invalid. */
    CHECK_MPI(MPI_Group_incl(wg, 1, &rank, &g));
    MPI_Group stale = g;
    CHECK_MPI(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");
#ifndef MPICH  /* not detected there */
    CHECK(error_class_of(MPI_Group_size(stale, &r)) == MPI_ERR_GROUP, "size of a freed group");
#endif
    (void)stale;
    /* A group outlives the communicator it came from. */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_group(c, &g);
    MPI_Comm_free(&c);
    CHECK_MPI(MPI_Group_compare(g, wg, &result));
    CHECK(result == MPI_IDENT, "group of a freed comm vs world %d", result);
    MPI_Group_free(&g);

    MPI_Group_free(&sg);
    MPI_Group_free(&wg);
    MPI_Finalize();
    return report("group_ops");
}
