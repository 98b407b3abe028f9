/* AXON_COLL_BARRIER_RELEASE (written through MPI_T): who may leave a node
 * barrier right after a blocking bcast.
 *
 * The bcast's root R (rank 1) enters the barrier and is stopped (SIGSTOP,
 * sent by rank 0 once R has flagged in shared memory that it is about to
 * call MPI_Barrier and 50 ms have passed: its arrival is posted); a thread
 * of rank 0 continues it 1 s later. Rank 0 arrives last and times its
 * barrier:
 *
 *   any    every arrival is there, so rank 0 leaves at once (< 0.5 s);
 *   root   nobody leaves before the root has: rank 0 waits for the
 *          SIGCONT (>= 0.8 s);
 *   root, a second barrier with no bcast in between: the root's turn was
 *          used up, rank 0 leaves at once again.
 *
 * Every bcast's data are checked exactly. With another MPI (no such
 * variable) the test only runs the calls. */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "../mpi/check.h"
#include "../tools/cvar.h"

enum { ROOT = 1, STOPPER = 0, COUNT = 16 };

static pid_t root_pid;

static void *continue_root_later(void *unused)
{
    (void)unused;
    struct timespec one_second = {1, 0};
    nanosleep(&one_second, NULL);
    kill(root_pid, SIGCONT);
    return NULL;
}

static void set_release(const char *mode)
{
    if (!cvar_library_is_axon()) return;
    int value = cvar_item_value("AXON_COLL_BARRIER_RELEASE", mode);
    CHECK(value >= 0, "AXON_COLL_BARRIER_RELEASE has no item %s", mode);
    if (value >= 0) CHECK_MPI(cvar_write_int("AXON_COLL_BARRIER_RELEASE", value));
}

/* A bcast from ROOT with exact data, for round `round`. */
static void bcast_round(int rank, int round)
{
    int data[COUNT];
    for (int i = 0; i < COUNT; i++) data[i] = rank == ROOT ? round * 1000 + i : -1;
    CHECK_MPI(MPI_Bcast(data, COUNT, MPI_INT, ROOT, MPI_COMM_WORLD));
    int bad = 0;
    for (int i = 0; i < COUNT; i++) bad += data[i] != round * 1000 + i;
    CHECK(bad == 0, "round %d: %d ints of the bcast wrong", round, bad);
}

/* One barrier with ROOT stopped inside it; returns rank 0's seconds in it
 * (0 elsewhere). `flag` is shared memory: ROOT's "about to call". */
static double barrier_with_root_stopped(int rank, volatile int *flag, int round)
{
    if (rank == ROOT) {
        *flag = round;
        __sync_synchronize();
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        return 0;
    }
    if (rank != STOPPER) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        return 0;
    }
    while (*flag != round) __sync_synchronize();
    struct timespec settle = {0, 50 * 1000 * 1000};
    nanosleep(&settle, NULL);
    CHECK(kill(root_pid, SIGSTOP) == 0, "SIGSTOP to the root failed");
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, continue_root_later, NULL) == 0, "no thread");
    double t0 = MPI_Wtime();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime() - t0;
    pthread_join(thread, NULL);
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) printf("needs 2 ranks or more\n");
        MPI_Finalize();
        return 77;
    }
    int axon = cvar_library_is_axon();
    force_algorithm("barrier", "shm");
    pid_t pid = getpid();
    pid_t *pids = malloc((size_t)size * sizeof *pids);
    CHECK_MPI(MPI_Allgather(&pid, (int)sizeof pid, MPI_BYTE, pids, (int)sizeof pid, MPI_BYTE, MPI_COMM_WORLD));
    root_pid = pids[ROOT];
    /* One node (the tests run on one host): a shared flag line. */
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int *flag = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(rank == 0 ? 64 : 0, 1, MPI_INFO_NULL, node, &flag, &win));
    MPI_Aint bytes;
    int disp;
    CHECK_MPI(MPI_Win_shared_query(win, 0, &bytes, &disp, &flag));
    if (rank == 0) *flag = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* any: rank 0 leaves as soon as everyone has arrived. */
    set_release("any");
    bcast_round(rank, 1);
    double t = barrier_with_root_stopped(rank, flag, 1);
    if (rank == STOPPER && axon) CHECK(t < 0.5, "release any: %.3f s in the barrier (want < 0.5)", t);

    /* root: nobody leaves before the bcast's root. */
    set_release("root");
    bcast_round(rank, 2);
    t = barrier_with_root_stopped(rank, flag, 2);
    if (rank == STOPPER && axon) CHECK(t >= 0.8, "release root: %.3f s in the barrier (want >= 0.8)", t);
    /* ...only in the first barrier after the bcast. */
    t = barrier_with_root_stopped(rank, flag, 3);
    if (rank == STOPPER && axon)
        CHECK(t < 0.5, "release root, second barrier: %.3f s in the barrier (want < 0.5)", t);

    /* A loop of bcast and barrier in each mode, data exact. */
    static const char *modes[] = {"any", "root", "auto"};
    for (int m = 0; m < 3; m++) {
        set_release(modes[m]);
        for (int i = 0; i < 200; i++) {
            bcast_round(rank, 10 + i);
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    set_release("auto");
    force_algorithm("barrier", "auto");
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
    free(pids);
    MPI_Finalize();
    return report("coll_barrier_release");
}
