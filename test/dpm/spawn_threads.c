/* MPI_Comm_spawn from several threads at once (MPI_THREAD_MULTIPLE): each
 * of NTHREADS threads of every parent rank spawns NCHILD children of this
 * program on its own duplicate of MPI_COMM_WORLD, ROUNDS times. Each child
 * receives its spawner's thread number and round by a Bcast over the
 * parent intercommunicator and answers (thread * 1000 + round) * 10 + its
 * rank to parent rank 0, which checks every answer; both sides then
 * disconnect. The spawns of one round overlap, so the parents' ports, the
 * children's connections and the agreements over the intercommunicators
 * run concurrently (a connection must reach the port of the thread that
 * spawned it).
 * Usage: spawn_threads [NTHREADS] [NCHILD] [ROUNDS] (default 3 1 2) */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

static int nthreads = 3, nchild = 1, rounds = 2;
static const char *self_path;
static MPI_Comm comms[16];

struct job {
    int thread, round;
};

static void *spawner(void *arg)
{
    struct job *j = arg;
    MPI_Comm inter;
    char *child_argv[] = {"child", NULL};
    int errcodes[16];
    CHECK_MPI(MPI_Comm_spawn(self_path, child_argv, nchild, MPI_INFO_NULL, 0, comms[j->thread], &inter,
                             errcodes));
    for (int i = 0; i < nchild; i++) CHECK(errcodes[i] == MPI_SUCCESS, "errcode[%d] = %d", i, errcodes[i]);
    int rank;
    MPI_Comm_rank(comms[j->thread], &rank);
    int who[2] = {j->thread, j->round};
    CHECK_MPI(MPI_Bcast(who, 2, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    if (rank == 0) {
        for (int c = 0; c < nchild; c++) {
            int v = -1;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, c, 7, inter, MPI_STATUS_IGNORE));
            CHECK(v == (j->thread * 1000 + j->round) * 10 + c, "thread %d round %d: child %d answered %d", j->thread,
                  j->round, c, v);
        }
    }
    CHECK_MPI(MPI_Comm_disconnect(&inter));
    return NULL;
}

static int child(void)
{
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "no parent");
    if (parent == MPI_COMM_NULL) return 1;
    int rank, who[2] = {-1, -1};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK_MPI(MPI_Bcast(who, 2, MPI_INT, 0, parent));
    int v = (who[0] * 1000 + who[1]) * 10 + rank;
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 7, parent));
    CHECK_MPI(MPI_Comm_disconnect(&parent));
    MPI_Finalize();
    return report("spawn_threads child");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (argc > 1 && !strcmp(argv[1], "child")) return child();
    self_path = argv[0];
    if (argc > 1) nthreads = atoi(argv[1]);
    if (argc > 2) nchild = atoi(argv[2]);
    if (argc > 3) rounds = atoi(argv[3]);
    if (nthreads < 1 || nthreads > 16 || nchild < 1 || nchild > 16) {
        MPI_Finalize();
        return 2;
    }
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
    for (int t = 0; t < nthreads; t++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    for (int r = 0; r < rounds; r++) {
        pthread_t tids[16];
        struct job jobs[16];
        for (int t = 0; t < nthreads; t++) {
            jobs[t] = (struct job){t, r};
            pthread_create(&tids[t], NULL, spawner, &jobs[t]);
        }
        for (int t = 0; t < nthreads; t++) pthread_join(tids[t], NULL);
    }
    for (int t = 0; t < nthreads; t++) CHECK_MPI(MPI_Comm_free(&comms[t]));
    MPI_Finalize();
    return report("spawn_threads");
}
