/* Sessions started and finalized again and again (the runtime stops after
 * the last one and starts again with the next), and several at once. */
#include "../mpi/check.h"

static void one_round(int round)
{
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_Group group;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    MPI_Comm comm;
    char tag[64];
    snprintf(tag, sizeof tag, "org.axon.test.reinit.%d", round);
    CHECK_MPI(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Large enough to leave the eager path. */
    enum { N = 100000 };
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) out[i] = round * 7 + rank * 100003 + i;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Sendrecv(out, N, MPI_INT, right, round, in, N, MPI_INT, left, round, comm, MPI_STATUS_IGNORE));
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (in[i] != round * 7 + left * 100003 + i) bad = i;
    CHECK(bad < 0, "round %d: in[%d] = %d", round, bad, bad >= 0 ? in[bad] : 0);
    long long sum = 0, mine = rank + round;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm));
    CHECK(sum == (long long)size * (size - 1) / 2 + (long long)size * round, "round %d: sum %lld", round, sum);
    free(out);
    free(in);
    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    CHECK_MPI(MPI_Session_finalize(&session));
}

int main(void)
{
    for (int round = 0; round < 4; round++) one_round(round);

    /* Two sessions overlapping: finalizing the first keeps the runtime up. */
    MPI_Session a, b;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a));
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b));
    CHECK(a != b, "two sessions, two handles");
    CHECK_MPI(MPI_Session_finalize(&a));
    MPI_Group g;
    MPI_Comm c;
    CHECK_MPI(MPI_Group_from_session_pset(b, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, "org.axon.test.reinit.b", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int rank, size, sum = 0;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Session_finalize(&b));

    return report("session_reinit");
}
