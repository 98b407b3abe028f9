/* Intercommunicator collectives: the world split into groups A (low ranks)
 * and B; every rooted collective is run with a root in each group (MPI_ROOT
 * at the root, MPI_PROC_NULL at its group peers, the root's rank in the
 * other group), the all-* ones once; results follow the remote-group rules. */
#include "../mpi/check.h"

int main(int argc, char **argv)
{
    int wrank, wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        MPI_Finalize();
        return report("coll_inter");
    }
    int nA = wsize / 2, inA = wrank < nA;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, inA, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? nA : 0, 7, &inter);
    int rank, lsize, rsize;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int group = inA ? 0 : 1;
    /* contribution of (group g, local rank r), item i */
#define V(g, r, i) ((g) * 10000 + (r) * 100 + (i))
    enum { N = 300 };
    int buf[N], out[N * 8], in[N * 8];
    MPI_Request rq0;

    CHECK_MPI(MPI_Barrier(inter));

    for (int rg = 0; rg < 2; ++rg) {        /* the group that holds the root */
        int rroot = rg == 0 ? 0 : rsize - 1; /* root's local rank within its group */
        int lroot = rg == 0 ? 0 : lsize - 1;
        int root_of_mine = rg == group ? (rank == lroot ? MPI_ROOT : MPI_PROC_NULL) : rroot;
        int is_root = root_of_mine == MPI_ROOT, sender_group = rg != group;
        /* bcast */
        for (int i = 0; i < N; ++i) buf[i] = is_root ? V(group, rank, i) : -1;
        CHECK_MPI(MPI_Bcast(buf, N, MPI_INT, root_of_mine, inter));
        if (sender_group)
            for (int i = 0; i < N; ++i)
                if (buf[i] != V(rg, rroot, i)) { CHECK(0, "bcast item %d = %d", i, buf[i]); break; }
        /* reduce: the root gets the sum over the other group */
        for (int i = 0; i < N; ++i) buf[i] = V(group, rank, i), out[i] = -1;
        CHECK_MPI(MPI_Reduce(buf, out, N, MPI_INT, MPI_SUM, root_of_mine, inter));
        if (is_root)
            for (int i = 0; i < N; ++i) {
                int e = 0;
                for (int r = 0; r < rsize; ++r) e += V(1 - group, r, i);
                if (out[i] != e) { CHECK(0, "reduce item %d = %d want %d", i, out[i], e); break; }
            }
        /* gather / scatter: 2 items per process */
        int two[2] = {V(group, rank, 0), V(group, rank, 1)};
        CHECK_MPI(MPI_Gather(two, 2, MPI_INT, out, 2, MPI_INT, root_of_mine, inter));
        if (is_root)
            for (int r = 0; r < rsize; ++r)
                CHECK(out[2 * r] == V(1 - group, r, 0) && out[2 * r + 1] == V(1 - group, r, 1), "gather from %d", r);
        for (int r = 0; r < rsize; ++r) in[2 * r] = V(group, r, 5), in[2 * r + 1] = V(group, r, 6);
        int got[2] = {-1, -1};
        CHECK_MPI(MPI_Scatter(in, 2, MPI_INT, got, 2, MPI_INT, root_of_mine, inter));
        if (sender_group)
            CHECK(got[0] == V(rg, rank, 5) && got[1] == V(rg, rank, 6), "scatter got %d %d", got[0], got[1]);
    }
    /* allreduce: each group gets the other's sum */
    for (int i = 0; i < N; ++i) buf[i] = V(group, rank, i);
    CHECK_MPI(MPI_Allreduce(buf, out, N, MPI_INT, MPI_SUM, inter));
    for (int i = 0; i < N; ++i) {
        int e = 0;
        for (int r = 0; r < rsize; ++r) e += V(1 - group, r, i);
        if (out[i] != e) { CHECK(0, "allreduce item %d = %d want %d", i, out[i], e); break; }
    }
    /* allgather: the other group's contributions in rank order */
    int mine[3] = {V(group, rank, 0), V(group, rank, 1), V(group, rank, 2)};
    CHECK_MPI(MPI_Allgather(mine, 3, MPI_INT, out, 3, MPI_INT, inter));
    for (int r = 0; r < rsize; ++r)
        for (int i = 0; i < 3; ++i) CHECK(out[3 * r + i] == V(1 - group, r, i), "allgather from %d item %d", r, i);
    /* alltoall: block for remote r */
    for (int r = 0; r < rsize; ++r) in[r] = V(group, rank, r);
    CHECK_MPI(MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, inter));
    for (int r = 0; r < rsize; ++r) CHECK(out[r] == V(1 - group, r, rank), "alltoall from %d: %d", r, out[r]);
    /* allgatherv: remote rank r contributes r+1 items */
    {
        int rc[16], dp[16], at = 0, cnt = rank + 1, vals[16];
        for (int r = 0; r < rsize; ++r) rc[r] = r + 1, dp[r] = at, at += r + 1;
        for (int i = 0; i < cnt; ++i) vals[i] = V(group, rank, i);
        CHECK_MPI(MPI_Allgatherv(vals, cnt, MPI_INT, out, rc, dp, MPI_INT, inter));
        for (int r = 0; r < rsize; ++r)
            for (int i = 0; i <= r; ++i) CHECK(out[dp[r] + i] == V(1 - group, r, i), "allgatherv from %d item %d", r, i);
    }
    /* reduce_scatter_block: vectors of recvcount * (own group size) items,
     * equal in both groups with recvcount = 2 * remote size; each process
     * gets its recvcount items of the other group's sum */
    {
        int k = 2 * rsize, v[128], got[16];
        for (int i = 0; i < k * lsize; ++i) v[i] = V(group, rank, i);
        CHECK_MPI(MPI_Reduce_scatter_block(v, got, k, MPI_INT, MPI_SUM, inter));
        for (int i = 0; i < k; ++i) {
            int e = 0;
            for (int r = 0; r < rsize; ++r) e += V(1 - group, r, k * rank + i);
            CHECK(got[i] == e, "reduce_scatter_block item %d = %d want %d", i, got[i], e);
        }
    }
    /* reduce_scatter: vectors of T = 12 items in both groups (the sum of
     * each group's recvcounts, MPICH's reading); local rank i gets counts[i]
     * items (one of them 0 with 2+ ranks) of the other group's sum */
    for (int form = 0; form < 2; ++form) {
        enum { T = 12 };
        int counts[16], v[T], got[T], at = 0;
        for (int i = 0; i < lsize; ++i) counts[i] = i < lsize - 1 ? i : T - at, at += counts[i];
        int first = 0;
        for (int i = 0; i < rank; ++i) first += counts[i];
        for (int i = 0; i < T; ++i) v[i] = V(group, rank, i), got[i] = -1;
        if (form == 0) {
            CHECK_MPI(MPI_Reduce_scatter(v, got, counts, MPI_INT, MPI_SUM, inter));
        } else {
            CHECK_MPI(MPI_Ireduce_scatter(v, got, counts, MPI_INT, MPI_SUM, inter, &rq0));
            CHECK_MPI(MPI_Wait(&rq0, MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < counts[rank]; ++i) {
            int e = 0;
            for (int r = 0; r < rsize; ++r) e += V(1 - group, r, first + i);
            CHECK(got[i] == e, "reduce_scatter form %d item %d = %d want %d", form, i, got[i], e);
        }
        CHECK(counts[rank] == T || got[counts[rank]] == -1, "reduce_scatter wrote past its count");
    }
    /* nonblocking form */
    MPI_Request rq;
    CHECK_MPI(MPI_Iallreduce(buf, out, N, MPI_INT, MPI_MAX, inter, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(out[0] == V(1 - group, rsize - 1, 0), "iallreduce max %d", out[0]);
    CHECK_MPI(MPI_Ibarrier(inter, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return report("coll_inter");
}
