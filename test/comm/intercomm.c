/* Intercommunicators: Intercomm_create from two halves of WORLD (odd sizes
 * too), remote size / group, point-to-point across, test_inter, compare,
 * Comm_dup / Comm_idup (nonblocking: leaders call it only after receiving
 * from remote ranks that called it first) / Comm_split / Comm_create of an
 * intercommunicator, and
 * Intercomm_merge with the high / low ordering. Needs 2 ranks or more. */
#include "../mpi/check.h"

static int world_of(MPI_Group g, int r)
{
    MPI_Group wg;
    int w = -1;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, 1, &r, wg, &w);
    MPI_Group_free(&wg);
    return w;
}

/* Each local rank i sends to remote rank i % rsize and receives from every
 * remote rank j with j % lsize == i: data is the sender's world rank, source
 * is the remote rank. */
static void exchange(MPI_Comm inter, int tag, const char *what)
{
    int lrank, lsize, rsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Group rg;
    MPI_Comm_remote_group(inter, &rg);
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Request sreq;
    MPI_Isend(&wrank, 1, MPI_INT, lrank % rsize, tag, inter, &sreq);
    for (int j = lrank; j < rsize; j += lsize) {
        int got = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, tag, inter, &st));
        int src = st.MPI_SOURCE;
        CHECK(src >= 0 && src < rsize && src % lsize == lrank, "%s: source %d", what, src);
        CHECK(got == world_of(rg, src), "%s: from remote %d got %d, expected world %d", what, src, got,
              world_of(rg, src));
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    MPI_Group_free(&rg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, flag, result, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (size < 2) {
        MPI_Finalize();
        printf("intercomm: needs 2 ranks\n");
        return 77;
    }

    /* Lower half (color 0) has size/2 ranks, upper half the rest. The
     * leaders are world ranks 0 and size/2. */
    int half = size / 2, color = rank >= half;
    MPI_Comm local, inter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local));
    int lsize_expect = color ? size - half : half, rsize_expect = color ? half : size - half;
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color ? 0 : half, 17, &inter));

    CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "test_inter says intracommunicator");
    CHECK_MPI(MPI_Comm_size(inter, &n));
    CHECK(n == lsize_expect, "local size %d, expected %d", n, lsize_expect);
    CHECK_MPI(MPI_Comm_remote_size(inter, &n));
    CHECK(n == rsize_expect, "remote size %d, expected %d", n, rsize_expect);
    CHECK_MPI(MPI_Comm_rank(inter, &n));
    CHECK(n == (color ? rank - half : rank), "rank in intercomm %d", n);
    MPI_Group rg, lg;
    CHECK_MPI(MPI_Comm_remote_group(inter, &rg));
    CHECK_MPI(MPI_Comm_group(inter, &lg));
    for (int i = 0; i < rsize_expect; i++)
        CHECK(world_of(rg, i) == (color ? i : half + i), "remote group member %d is world %d", i, world_of(rg, i));
    for (int i = 0; i < lsize_expect; i++)
        CHECK(world_of(lg, i) == (color ? half + i : i), "local group member %d is world %d", i, world_of(lg, i));
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);
    exchange(inter, 1, "intercomm");

    /* MPI_PROC_NULL across works; a rank beyond the remote size does not. */
    {
        int x = 0;
        CHECK_MPI(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, inter));
        CHECK(error_class_of(MPI_Send(&x, 1, MPI_INT, rsize_expect, 0, inter)) == MPI_ERR_RANK,
              "send to remote rank == remote size");
    }

    /* --- compare -------------------------------------------------------- */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(inter, &dup));
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag, "dup of intercomm is not inter");
    CHECK_MPI(MPI_Comm_compare(inter, dup, &result));
    CHECK(result == MPI_CONGRUENT, "compare(inter, dup) = %d", result);
    CHECK_MPI(MPI_Comm_compare(inter, inter, &result));
    CHECK(result == MPI_IDENT, "compare(inter, inter) = %d", result);
    CHECK_MPI(MPI_Comm_compare(inter, local, &result));
    CHECK(result == MPI_UNEQUAL, "compare(inter, local) = %d", result);
    exchange(dup, 2, "dup of intercomm");
    /* Traffic on inter and dup stays apart. */
    {
        int lrank;
        MPI_Comm_rank(inter, &lrank);
        int a = 1000 + rank, b = 2000 + rank, ra = -1, rb = -1;
        MPI_Request q[4];
        int peer = lrank % rsize_expect;
        int expect_from = lrank < rsize_expect;  /* remote rank lrank sends to me */
        if (expect_from) {
            MPI_Irecv(&rb, 1, MPI_INT, lrank, 5, dup, &q[0]);
            MPI_Irecv(&ra, 1, MPI_INT, lrank, 5, inter, &q[1]);
        } else {
            q[0] = q[1] = MPI_REQUEST_NULL;
        }
        if (lrank < rsize_expect) {
            MPI_Isend(&a, 1, MPI_INT, peer, 5, inter, &q[2]);
            MPI_Isend(&b, 1, MPI_INT, peer, 5, dup, &q[3]);
        } else {
            q[2] = q[3] = MPI_REQUEST_NULL;
        }
        CHECK_MPI(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        if (expect_from) {
            int w = color ? lrank : half + lrank;
            CHECK(ra == 1000 + w && rb == 2000 + w, "inter got %d dup got %d", ra, rb);
        }
    }

    /* --- idup of an intercommunicator: nonblocking ---------------------
     * Every non-leader of each group posts its idups, then sends (Ssend) to
     * the remote leader; each leader receives all those messages BEFORE it
     * calls idup itself. An idup that blocked until both groups had joined
     * would deadlock here. Two idups of inter and one of local are in flight
     * at once. */
    {
        int lrank;
        MPI_Comm_rank(inter, &lrank);
        MPI_Comm idup[3];
        MPI_Request req[3];
        if (lrank == 0) {
            for (int j = 1; j < rsize_expect; j++) {
                int got = -1;
                CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, j, 7, inter, MPI_STATUS_IGNORE));
                CHECK(got == (color ? j : half + j), "before idup: from remote %d got %d", j, got);
            }
        }
        CHECK_MPI(MPI_Comm_idup(inter, &idup[0], &req[0]));
        CHECK_MPI(MPI_Comm_idup(local, &idup[1], &req[1]));
        CHECK_MPI(MPI_Comm_idup_with_info(inter, MPI_INFO_NULL, &idup[2], &req[2]));
        if (lrank != 0) CHECK_MPI(MPI_Ssend(&rank, 1, MPI_INT, 0, 7, inter));
        CHECK_MPI(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 3; k += 2) {
            CHECK_MPI(MPI_Comm_test_inter(idup[k], &flag));
            CHECK(flag, "idup %d of intercomm is not inter", k);
            CHECK_MPI(MPI_Comm_compare(inter, idup[k], &result));
            CHECK(result == MPI_CONGRUENT, "compare(inter, idup %d) = %d", k, result);
            exchange(idup[k], 8 + k, "idup of intercomm");
            /* Allreduce on an intercommunicator: each side gets the sum over
             * the remote group (world ranks). */
            int sum = -1, expect = 0;
            for (int i = 0; i < rsize_expect; i++) expect += color ? i : half + i;
            CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, idup[k]));
            CHECK(sum == expect, "allreduce on idup %d: %d, expected %d", k, sum, expect);
        }
        CHECK_MPI(MPI_Comm_compare(local, idup[1], &result));
        CHECK(result == MPI_CONGRUENT, "compare(local, idup) = %d", result);
        for (int k = 0; k < 3; k++) CHECK_MPI(MPI_Comm_free(&idup[k]));
    }

    /* --- merge: high = 0 on the lower half, 1 on the upper --------------- */
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, color, &merged));
    CHECK_MPI(MPI_Comm_rank(merged, &n));
    CHECK(n == rank, "merge (low first) rank %d", n);
    CHECK_MPI(MPI_Comm_compare(merged, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "merged vs world %d", result);
    CHECK_MPI(MPI_Comm_test_inter(merged, &flag));
    CHECK(!flag, "merged is inter");
    {
        int s = rank, r = -1;
        MPI_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, merged);
        CHECK(r == size * (size - 1) / 2, "allreduce on merged: %d", r);
    }
    MPI_Comm_free(&merged);
    /* Inverted: the upper half first. */
    CHECK_MPI(MPI_Intercomm_merge(inter, !color, &merged));
    CHECK_MPI(MPI_Comm_rank(merged, &n));
    CHECK(n == (color ? rank - half : (size - half) + rank), "merge (upper first) rank %d", n);
    CHECK_MPI(MPI_Comm_compare(merged, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_SIMILAR, "upper-first merged vs world %d", result);
    {
        /* a ring on the merged communicator */
        int ms;
        MPI_Comm_size(merged, &ms);
        int to = (n + 1) % ms, from = (n + ms - 1) % ms, out = n, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, to, 0, &in, 1, MPI_INT, from, 0, merged, MPI_STATUS_IGNORE);
        CHECK(in == from, "ring on merged got %d", in);
    }
    MPI_Comm_free(&merged);
    /* Same high value on both sides: the order is the implementation's, but
     * both sides must agree and each group stays contiguous in order. */
    CHECK_MPI(MPI_Intercomm_merge(inter, 1, &merged));
    {
        int ms, mr;
        MPI_Comm_size(merged, &ms);
        MPI_Comm_rank(merged, &mr);
        CHECK(ms == size, "merge(1,1) size %d", ms);
        int mine[64] = {0}, all[64];
        mine[mr] = rank;  /* an allgather through a sum */
        MPI_Allreduce(mine, all, 64, MPI_INT, MPI_SUM, merged);
        CHECK(all[mr] == rank, "merge(1,1): allgather slot %d holds %d", mr, all[mr]);
        /* one of the halves comes first, each in world order */
        int lower_first = all[0] == 0;
        for (int i = 0; i < size; i++) {
            int expect = lower_first ? i : (i < size - half ? half + i : i - (size - half));
            CHECK(all[i] == expect, "merge(1,1) member %d is %d, expected %d", i, all[i], expect);
        }
    }
    MPI_Comm_free(&merged);

    /* --- split of the intercommunicator: color by local rank parity ------ */
    {
        int lrank;
        MPI_Comm_rank(inter, &lrank);
        MPI_Comm sub;
        CHECK_MPI(MPI_Comm_split(inter, lrank % 2, -lrank, &sub));
        /* color c exists on a side when that side has a rank with parity c */
        int lcount = (lsize_expect - lrank % 2 + 1) / 2, rcount = (rsize_expect - lrank % 2 + 1) / 2;
        if (rcount == 0) {
            CHECK(sub == MPI_COMM_NULL, "split of inter: color without remote members gave a comm");
        } else {
            CHECK(sub != MPI_COMM_NULL, "split of inter gave MPI_COMM_NULL");
            if (sub != MPI_COMM_NULL) {
                int ss, rs, sr;
                MPI_Comm_size(sub, &ss);
                MPI_Comm_remote_size(sub, &rs);
                MPI_Comm_rank(sub, &sr);
                CHECK(ss == lcount && rs == rcount, "split of inter: sizes %d/%d, expected %d/%d", ss, rs, lcount,
                      rcount);
                /* key -lrank: highest local rank first */
                CHECK(sr == (lsize_expect - 1 - lrank) / 2, "split of inter: rank %d", sr);
                exchange(sub, 3, "split of intercomm");
                MPI_Comm_free(&sub);
            }
        }
        CHECK_MPI(MPI_Comm_split(inter, MPI_UNDEFINED, 0, &sub));
        CHECK(sub == MPI_COMM_NULL, "MPI_UNDEFINED split of inter gave a comm");
        /* create with the local group minus local rank 0 when it has > 1 */
        MPI_Group lgroup, sg;
        MPI_Comm_group(inter, &lgroup);
        int zero = 0;
        if (lsize_expect > 1) MPI_Group_excl(lgroup, 1, &zero, &sg);
        else MPI_Group_incl(lgroup, 1, &zero, &sg);
        CHECK_MPI(MPI_Comm_create(inter, sg, &sub));
        int in_sg;
        MPI_Group_rank(sg, &in_sg);
        if (in_sg == MPI_UNDEFINED) {
            CHECK(sub == MPI_COMM_NULL, "create of inter: non-member got a comm");
        } else {
            CHECK(sub != MPI_COMM_NULL, "create of inter: member got MPI_COMM_NULL");
            if (sub != MPI_COMM_NULL) {
                exchange(sub, 4, "create of intercomm");
                MPI_Comm_free(&sub);
            }
        }
        MPI_Group_free(&sg);
        MPI_Group_free(&lgroup);
    }

    /* --- errors (MPICH and Open MPI crash on these instead of reporting) -- */
#if !defined(MPICH) && !defined(OPEN_MPI)
    {
        MPI_Comm bad;
        CHECK(error_class_of(MPI_Intercomm_merge(local, 0, &bad)) == MPI_ERR_COMM, "merge of an intracomm");
        CHECK(error_class_of(MPI_Intercomm_create(inter, 0, MPI_COMM_WORLD, 0, 1, &bad)) == MPI_ERR_COMM,
              "intercomm_create with an intercomm as local comm");
        CHECK(error_class_of(MPI_Intercomm_create(local, lsize_expect, MPI_COMM_WORLD, 0, 1, &bad)) == MPI_ERR_RANK,
              "intercomm_create with local_leader == size");
    }
    /* (MPI_Comm_split_type of an intercomm splits the local group, as in
     * MPICH: test/comm/split_type_inter.c.) */
#endif

    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);

    /* --- a second intercommunicator with uneven groups: rank 0 alone
     * against the rest, created over a dup of WORLD as peer comm --------- */
    {
        MPI_Comm peer, l2, i2;
        MPI_Comm_dup(MPI_COMM_WORLD, &peer);
        int c2 = rank == 0 ? 0 : 1;
        MPI_Comm_split(MPI_COMM_WORLD, c2, rank, &l2);
        /* leader of the upper group: its last member */
        int lleader = c2 ? size - 2 : 0, rleader = c2 ? 0 : size - 1;
        CHECK_MPI(MPI_Intercomm_create(l2, lleader, peer, rleader, 99, &i2));
        int rs;
        MPI_Comm_remote_size(i2, &rs);
        CHECK(rs == (c2 ? 1 : size - 1), "uneven intercomm remote size %d", rs);
        exchange(i2, 6, "uneven intercomm");
        MPI_Comm m;
        CHECK_MPI(MPI_Intercomm_merge(i2, c2 ? 0 : 1, &m));
        MPI_Comm_rank(m, &n);
        CHECK(n == (c2 ? rank - 1 : size - 1), "uneven merge rank %d", n);
        MPI_Comm_free(&m);
        MPI_Comm_free(&i2);
        MPI_Comm_free(&l2);
        MPI_Comm_free(&peer);
    }

    MPI_Comm_free(&local);
    MPI_Finalize();
    return report("intercomm");
}
