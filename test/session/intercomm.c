/* MPI_Intercomm_create_from_groups in the Sessions model: even and odd
 * ranks of mpi://WORLD as the two groups, traffic across, merge. */
#include "../mpi/check.h"

int main(void)
{
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_Group world;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &world));
    int rank, size;
    MPI_Group_rank(world, &rank);
    MPI_Group_size(world, &size);

    /* Overlapping groups are rejected through the handler given. */
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Intercomm_create_from_groups(world, 0, world, 0, "org.axon.test.overlap", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &inter);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_GROUP, "overlapping groups: class %d", cls);

    if (size >= 2) {
        int neven = (size + 1) / 2, nodd = size / 2;
        int even_ranks[64], odd_ranks[64];
        for (int i = 0; i < neven; i++) even_ranks[i] = 2 * i;
        for (int i = 0; i < nodd; i++) odd_ranks[i] = 2 * i + 1;
        MPI_Group even, odd;
        MPI_Group_incl(world, neven, even_ranks, &even);
        MPI_Group_incl(world, nodd, odd_ranks, &odd);
        int mine_even = rank % 2 == 0;
        /* Leaders: the last member of each group, to not lean on rank 0. */
        CHECK_MPI(MPI_Intercomm_create_from_groups(mine_even ? even : odd, mine_even ? neven - 1 : nodd - 1,
                                                   mine_even ? odd : even, mine_even ? nodd - 1 : neven - 1,
                                                   "org.axon.test.inter", MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter));
        int flag = 0, lsize = 0, rsize = 0, lrank = -1;
        MPI_Comm_test_inter(inter, &flag);
        MPI_Comm_size(inter, &lsize);
        MPI_Comm_remote_size(inter, &rsize);
        MPI_Comm_rank(inter, &lrank);
        CHECK(flag, "not an intercommunicator");
        CHECK(lsize == (mine_even ? neven : nodd) && rsize == (mine_even ? nodd : neven), "sizes %d/%d", lsize, rsize);
        CHECK(lrank == rank / 2, "local rank %d", lrank);

        /* Each even rank 2i talks to odd rank 2i+1 (remote rank i). */
        int partner = lrank;
        if (partner < rsize) {
            int out[100], in[100];
            for (int i = 0; i < 100; i++) out[i] = rank * 1000 + i;
            CHECK_MPI(MPI_Sendrecv(out, 100, MPI_INT, partner, 3, in, 100, MPI_INT, partner, 3, inter,
                                   MPI_STATUS_IGNORE));
            int peer_world = mine_even ? 2 * partner + 1 : 2 * partner;
            for (int i = 0; i < 100; i++) CHECK(in[i] == peer_world * 1000 + i, "in[%d] = %d", i, in[i]);
        }
        /* Merge: the even group first; the sum proves every process is in. */
        MPI_Comm merged;
        CHECK_MPI(MPI_Intercomm_merge(inter, !mine_even, &merged));
        int msize = 0, mrank = -1;
        MPI_Comm_size(merged, &msize);
        MPI_Comm_rank(merged, &mrank);
        CHECK(msize == size, "merged size %d", msize);
        CHECK(mrank == (mine_even ? rank / 2 : neven + rank / 2), "merged rank %d", mrank);
        int sum = 0;
        CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
        MPI_Group_free(&even);
        MPI_Group_free(&odd);
    }
    MPI_Group_free(&world);
    CHECK_MPI(MPI_Session_finalize(&session));
    return report("session_intercomm");
}
