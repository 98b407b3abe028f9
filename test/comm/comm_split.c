/* Comm_split (colors, MPI_UNDEFINED, key order, ties by old rank),
 * Comm_split_type (SHARED, HW_GUIDED, HW_UNGUIDED), Comm_create,
 * Comm_create_group (only members call it), compare results, and
 * point-to-point on the results with ranks of the new communicator. */
#include "../mpi/check.h"

static void ring_check(MPI_Comm comm, int tag, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int out = 1000 * tag + rank, in = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, to, tag, &in, 1, MPI_INT, from, tag, comm, &st));
    CHECK(in == 1000 * tag + from && st.MPI_SOURCE == from, "%s: got %d from source %d (expected %d)", what,
          in, st.MPI_SOURCE, from);
}

/* World rank of rank r of comm. */
static int world_rank_of(MPI_Comm comm, int r)
{
    MPI_Group g, wg;
    int w = -1;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, 1, &r, wg, &w);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    return w;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, result, nrank, nsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* --- split by parity, reversed key ----------------------------------- */
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &c));
    MPI_Comm_rank(c, &nrank);
    MPI_Comm_size(c, &nsize);
    int expect_size = (size + 1 - rank % 2) / 2;
    CHECK(nsize == expect_size, "parity split size %d, expected %d", nsize, expect_size);
    /* Larger world rank -> smaller key -> lower new rank. */
    int members_above = 0;
    for (int r = rank + 1; r < size; r++)
        if (r % 2 == rank % 2) members_above++;
    CHECK(nrank == members_above, "parity split rank %d, expected %d", nrank, members_above);
    for (int r = 0; r < nsize; r++) {
        int w = world_rank_of(c, r);
        /* new rank r holds the r-th largest world rank of my parity */
        int expect = -1, seen = 0;
        for (int x = size - 1; x >= 0; x--)
            if (x % 2 == rank % 2 && seen++ == r) { expect = x; break; }
        CHECK(w == expect, "parity split: new rank %d is world %d, expected %d", r, w, expect);
    }
    ring_check(c, 1, "parity split");
    CHECK_MPI(MPI_Comm_compare(c, MPI_COMM_WORLD, &result));
    CHECK(result == (size == 1 ? MPI_CONGRUENT : size == 2 ? MPI_UNEQUAL : MPI_UNEQUAL),
          "compare(split, world) = %d", result);
    MPI_Comm_free(&c);

    /* --- equal keys: ties broken by old rank; same color everywhere with
     * a reversed key gives a SIMILAR communicator ------------------------- */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 5, 0, &c));
    MPI_Comm_rank(c, &nrank);
    CHECK(nrank == rank, "tie split rank %d", nrank);
    CHECK_MPI(MPI_Comm_compare(c, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "compare(tie split, world) = %d", result);
    MPI_Comm_free(&c);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &c));
    MPI_Comm_rank(c, &nrank);
    CHECK(nrank == size - 1 - rank, "reversed split rank %d", nrank);
    CHECK_MPI(MPI_Comm_compare(c, MPI_COMM_WORLD, &result));
    CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(reversed, world) = %d", result);
    ring_check(c, 2, "reversed split");
    MPI_Comm_free(&c);
    /* Keys 1 for the lower half, 0 for the upper half, ties in old order. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, rank < size / 2 ? 1 : 0, &c));
    MPI_Comm_rank(c, &nrank);
    int expect = rank < size / 2 ? (size - size / 2) + rank : rank - size / 2;
    CHECK(nrank == expect, "half-key split rank %d, expected %d", nrank, expect);
    MPI_Comm_free(&c);

    /* --- MPI_UNDEFINED gives MPI_COMM_NULL; the others still get theirs --- */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &c));
    if (rank == 0) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED color gave a communicator");
    } else {
        MPI_Comm_size(c, &nsize);
        MPI_Comm_rank(c, &nrank);
        CHECK(nsize == size - 1 && nrank == rank - 1, "split without rank 0: %d of %d", nrank, nsize);
        ring_check(c, 3, "split without rank 0");
        MPI_Comm_free(&c);
    }
    /* All undefined. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &c));
    CHECK(c == MPI_COMM_NULL, "all-undefined split gave a communicator");
    /* One color per rank. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &c));
    MPI_Comm_size(c, &nsize);
    CHECK(nsize == 1, "singleton split size %d", nsize);
    CHECK_MPI(MPI_Comm_compare(c, MPI_COMM_SELF, &result));
    CHECK(result == MPI_CONGRUENT, "compare(singleton split, self) = %d", result);
    MPI_Comm_free(&c);

    /* --- split of a split ------------------------------------------------- */
    MPI_Comm c1, c2;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &c1));
    CHECK_MPI(MPI_Comm_split(c1, 0, -rank, &c2));
    MPI_Comm_size(c2, &nsize);
    MPI_Comm_rank(c2, &nrank);
    CHECK(nsize == ((rank / 2) * 2 + 1 < size ? 2 : 1), "split of split size %d", nsize);
    CHECK(nrank == (nsize == 2 ? 1 - rank % 2 : 0), "split of split rank %d", nrank);
    ring_check(c2, 4, "split of split");
    MPI_Comm_free(&c2);
    MPI_Comm_free(&c1);

    /* --- bad arguments ---------------------------------------------------- */
    CHECK(error_class_of(MPI_Comm_split(MPI_COMM_NULL, 0, 0, &c)) == MPI_ERR_COMM, "split(COMM_NULL)");
#ifndef MPICH /* MPICH accepts negative colors */
    CHECK(error_class_of(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &c)) == MPI_ERR_ARG, "split with color -5");
#endif
    CHECK(error_class_of(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c)) == MPI_ERR_ARG,
          "split_type with an unknown type");
    CHECK(error_class_of(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, -1, &c)) == MPI_ERR_TAG,
          "create_group with tag -1");

    /* --- split_type SHARED: every rank of this test is on one node -------- */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &c));
    MPI_Comm_size(c, &nsize);
    MPI_Comm_rank(c, &nrank);
    CHECK(nsize == size && nrank == size - 1 - rank, "shared split: %d of %d", nrank, nsize);
    ring_check(c, 5, "shared split");
    MPI_Comm_free(&c);
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &c));
    CHECK(c == MPI_COMM_NULL, "split_type(MPI_UNDEFINED) gave a communicator");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                                  MPI_INFO_NULL, &c));
    if (rank == 0) {
        CHECK(c == MPI_COMM_NULL, "split_type with MPI_UNDEFINED at rank 0");
    } else {
        MPI_Comm_size(c, &nsize);
        CHECK(nsize == size - 1, "shared split without rank 0 has size %d", nsize);
        MPI_Comm_free(&c);
    }

    /* --- HW_GUIDED: "mpi_shared_memory" is the node; a hardware level that
     * holds every PU of this machine (one package here, unbound or bound)
     * covers all ranks at most; an unknown name gives MPI_COMM_NULL. ----- */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c));
    CHECK(c != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &nsize);
        CHECK(nsize == size, "HW_GUIDED mpi_shared_memory size %d", nsize);
        MPI_Comm_free(&c);
    }
    const char *levels[] = {"Machine", "Package", "NUMANode", "L3Cache", "Core", "PU"};
    for (int l = 0; l < 6; l++) {
        MPI_Info_set(info, "mpi_hw_resource_type", levels[l]);
        CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c));
        /* every process is inside the machine: the level "Machine" is the
         * node (MPICH gives MPI_COMM_NULL for levels that span the machine
         * and for unbound processes) */
#ifndef MPICH
        if (l == 0) CHECK(c != MPI_COMM_NULL, "HW_GUIDED Machine gave MPI_COMM_NULL");
#endif
        if (c != MPI_COMM_NULL) {
            MPI_Comm_size(c, &nsize);
            MPI_Comm_rank(c, &nrank);
            CHECK(nsize >= 1 && nsize <= size && nrank <= rank, "HW_GUIDED %s: %d of %d", levels[l], nrank, nsize);
            if (l == 0) CHECK(nsize == size && nrank == rank, "HW_GUIDED Machine: %d of %d", nrank, nsize);
            ring_check(c, 6, levels[l]);
            MPI_Comm_free(&c);
        }
    }
    MPI_Info_set(info, "mpi_hw_resource_type", "no-such-level");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c));
    CHECK(c == MPI_COMM_NULL, "HW_GUIDED with an unknown level gave a communicator");
    MPI_Info_free(&info);
    /* HW_UNGUIDED: a strict subset of the parent or MPI_COMM_NULL. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, MPI_INFO_NULL, &c));
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &nsize);
        CHECK(nsize < size, "HW_UNGUIDED result is not a strict subset: %d of %d", nsize, size);
        ring_check(c, 7, "HW_UNGUIDED");
        MPI_Comm_free(&c);
    }
    /* With an info object, the level it split at comes back in it under
       "mpi_hw_resource_type", and HW_GUIDED with that value splits the same
       way (same size, same members); nothing is added without a result. */
    MPI_Info hint;
    MPI_Info_create(&hint);
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, hint, &c));
    {
        char level[MPI_MAX_INFO_VAL + 1] = "";
        int flag = 0;
        MPI_Info_get(hint, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, level, &flag);
        if (c == MPI_COMM_NULL) {
            CHECK(!flag, "HW_UNGUIDED gave MPI_COMM_NULL but set mpi_hw_resource_type to '%s'", level);
        } else {
            CHECK(flag && level[0] != 0, "HW_UNGUIDED did not return mpi_hw_resource_type");
            MPI_Info again;
            MPI_Info_create(&again);
            MPI_Info_set(again, "mpi_hw_resource_type", level);
            MPI_Comm g2;
            CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, again, &g2));
            CHECK(g2 != MPI_COMM_NULL, "HW_GUIDED with the returned level '%s' gave MPI_COMM_NULL", level);
            if (g2 != MPI_COMM_NULL) {
                int result;
                MPI_Comm_compare(c, g2, &result);
                CHECK(result == MPI_CONGRUENT, "HW_GUIDED '%s' differs from HW_UNGUIDED (compare %d)", level, result);
                MPI_Comm_free(&g2);
            }
            MPI_Info_free(&again);
            MPI_Comm_free(&c);
        }
    }
    MPI_Info_free(&hint);

    /* --- create: group of the even ranks, in reverse order --------------- */
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ranks[64], n = 0;
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == 0) ranks[n++] = r;
    MPI_Group_incl(wg, n, ranks, &g);
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "odd rank got a communicator from create");
    } else {
        MPI_Comm_rank(c, &nrank);
        MPI_Comm_size(c, &nsize);
        CHECK(nsize == n && nrank == n - 1 - rank / 2, "create: %d of %d", nrank, nsize);
        ring_check(c, 8, "create");
        MPI_Group cg;
        MPI_Comm_group(c, &cg);
        MPI_Group_compare(cg, g, &result);
        CHECK(result == MPI_IDENT, "created comm's group compares %d", result);
        MPI_Group_free(&cg);
        MPI_Comm_free(&c);
    }
    /* create with the empty group: everyone gets MPI_COMM_NULL. */
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c));
    CHECK(c == MPI_COMM_NULL, "create(GROUP_EMPTY) gave a communicator");
    /* create from a derived communicator with a group of world ranks. */
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    CHECK_MPI(MPI_Comm_create(c1, wg, &c2));
    CHECK_MPI(MPI_Comm_compare(c2, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "create(dup, world group) compares %d", result);
    ring_check(c2, 9, "create whole");
    MPI_Comm_free(&c2);
    MPI_Comm_free(&c1);

    /* --- create_group: only the members of g call it ---------------------- */
    if (rank % 2 == 0) {
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, 42, &c));
        MPI_Comm_rank(c, &nrank);
        CHECK(nrank == n - 1 - rank / 2, "create_group rank %d", nrank);
        ring_check(c, 10, "create_group");
        MPI_Comm_free(&c);
    } else {
        /* The others make their own group meanwhile, with a different tag. */
        MPI_Group og;
        int on = 0;
        for (int r = 1; r < size; r += 2) ranks[on++] = r;
        MPI_Group_incl(wg, on, ranks, &og);
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, og, 43, &c));
        MPI_Comm_rank(c, &nrank);
        CHECK(nrank == rank / 2, "odd create_group rank %d", nrank);
        ring_check(c, 11, "odd create_group");
        MPI_Comm_free(&c);
        MPI_Group_free(&og);
    }
    /* A group that does not contain the caller: MPI_COMM_NULL. */
    CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 0, &c));
    CHECK(c == MPI_COMM_NULL, "create_group(GROUP_EMPTY) gave a communicator");
    CHECK(error_class_of(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c)) == MPI_ERR_GROUP,
          "create(GROUP_NULL)");
    CHECK(error_class_of(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_NULL, 0, &c)) == MPI_ERR_GROUP,
          "create_group(GROUP_NULL)");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);

    /* --- a derived communicator's group maps to the right world ranks ----- */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % size, &c));
    MPI_Comm_rank(c, &nrank);
    CHECK(world_rank_of(c, nrank) == rank, "my world rank through the group");
    /* new rank r is world (r - 1 + size) % size: key (w+1)%size == r */
    for (int r = 0; r < size; r++)
        CHECK(world_rank_of(c, r) == (r + size - 1) % size, "rotated split: rank %d -> world %d", r,
              world_rank_of(c, r));
    /* An any-source receive reports the new rank. */
    if (size > 1) {
        int x = rank, y = -1;
        MPI_Status st;
        int to = (nrank + 1) % size;
        MPI_Request rq;
        MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq);
        MPI_Send(&x, 1, MPI_INT, to, nrank, c);
        MPI_Wait(&rq, &st);
        int from = (nrank + size - 1) % size;
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == from && y == world_rank_of(c, from),
              "any-source on rotated split: source %d tag %d data %d", st.MPI_SOURCE, st.MPI_TAG, y);
    }
    MPI_Comm_free(&c);

    MPI_Finalize();
    return report("comm_split");
}
