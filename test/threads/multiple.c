/* MPI_THREAD_MULTIPLE: 4 threads per rank talk to the partner rank at once,
 * each on its own tag, with blocking and nonblocking calls, probes and a
 * mix of eager and rendezvous sizes. Every message is checked byte for byte.
 * Then 4 threads idup their own communicators with nonblocking collectives
 * in flight, and a session reports the thread level it really has. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

enum { THREADS = 4, ROUNDS = 60 };

static int rank, size, partner;

static size_t message_size(int thread, int round) {
    static const size_t sizes[] = {0, 8, 1000, 8192, 20000, 300000};
    return sizes[(thread + round) % 6];
}

static unsigned char thread_byte(int from, int thread, int round, size_t i) {
    return (unsigned char)(from * 131 + thread * 31 + round * 7 + i * 13);
}

static void *worker(void *arg) {
    int thread = (int)(intptr_t)arg;
    unsigned char *out = malloc(300000), *in = malloc(300000);
    for (int round = 0; round < ROUNDS; round++) {
        size_t n = message_size(thread, round);
        for (size_t i = 0; i < n; i++) out[i] = thread_byte(rank, thread, round, i);
        MPI_Request req;
        MPI_Status status;
        MPI_Isend(out, (int)n, MPI_BYTE, partner, thread, MPI_COMM_WORLD, &req);
        if (round % 3 == 0) {
            /* probe first, then receive exactly what the probe announced */
            MPI_Probe(partner, thread, MPI_COMM_WORLD, &status);
            int count = -1;
            MPI_Get_count(&status, MPI_BYTE, &count);
            CHECK(count == (int)n, "thread %d round %d: probe says %d bytes, want %zu", thread, round, count, n);
            MPI_Recv(in, count, MPI_BYTE, partner, thread, MPI_COMM_WORLD, &status);
        } else if (round % 3 == 1) {
            MPI_Request rreq;
            MPI_Irecv(in, 300000, MPI_BYTE, partner, thread, MPI_COMM_WORLD, &rreq);
            MPI_Wait(&rreq, &status);
        } else {
            MPI_Recv(in, 300000, MPI_BYTE, MPI_ANY_SOURCE, thread, MPI_COMM_WORLD, &status);
        }
        int count = -1;
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(status.MPI_TAG == thread && status.MPI_SOURCE == partner && count == (int)n,
              "thread %d round %d: tag %d source %d count %d", thread, round, status.MPI_TAG,
              status.MPI_SOURCE, count);
        for (size_t i = 0; i < n; i++) {
            if (in[i] != thread_byte(partner, thread, round, i)) {
                CHECK(0, "thread %d round %d: byte %zu is %u", thread, round, i, in[i]);
                break;
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    free(out);
    free(in);
    return NULL;
}

/* Second phase: each thread owns a duplicate of MPI_COMM_WORLD and, many
 * times over, idups it while an Iallreduce and an Ibcast on it are in flight,
 * then uses and frees the new communicators. Requests are allocated and
 * released by every thread at once (the pool they come from must be
 * shared safely: MPICH's threads/comm/idup_nb once crashed here). */
enum { IDUP_ROUNDS = 25 };
static MPI_Comm thread_comm[THREADS];

static void *idup_worker(void *arg) {
    int thread = (int)(intptr_t)arg;
    MPI_Comm parent = thread_comm[thread];
    for (int round = 0; round < IDUP_ROUNDS; round++) {
        MPI_Comm dup[2];
        MPI_Request req[4];
        int sum = -1, root_value = rank == 0 ? 1000 * thread + round : -1;
        CHECK_MPI(MPI_Comm_idup(parent, &dup[0], &req[0]));
        CHECK_MPI(MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, parent, &req[1]));
        CHECK_MPI(MPI_Comm_idup(parent, &dup[1], &req[2]));
        CHECK_MPI(MPI_Ibcast(&root_value, 1, MPI_INT, 0, parent, &req[3]));
        CHECK_MPI(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
        CHECK(sum == size * (size - 1) / 2, "thread %d round %d: allreduce %d", thread, round, sum);
        CHECK(root_value == 1000 * thread + round, "thread %d round %d: bcast %d", thread, round, root_value);
        for (int k = 0; k < 2; k++) {
            int got = -1;
            CHECK_MPI(MPI_Allreduce(&rank, &got, 1, MPI_INT, MPI_MAX, dup[k]));
            CHECK(got == size - 1, "thread %d round %d: allreduce on idup %d gave %d", thread, round, k, got);
            CHECK_MPI(MPI_Comm_free(&dup[k]));
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* pairs 0-1, 2-3, ...; an odd last rank talks to itself */
    partner = rank ^ 1;
    if (partner >= size) partner = rank;
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int t = 0; t < THREADS; t++) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &thread_comm[t]));
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, idup_worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    for (int t = 0; t < THREADS; t++) CHECK_MPI(MPI_Comm_free(&thread_comm[t]));

    /* A session started without a thread_level hint next to this
     * MPI_THREAD_MULTIPLE World model is thread-safe too, and says so. */
    MPI_Session session;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_Info used;
    CHECK_MPI(MPI_Session_get_info(session, &used));
    char level[64] = "";
    int len = sizeof level, flag = 0;
    CHECK_MPI(MPI_Info_get_string(used, "thread_level", &len, level, &flag));
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0, "session thread_level '%s'", level);
    MPI_Info_free(&used);
    CHECK_MPI(MPI_Session_finalize(&session));
    MPI_Finalize();
    return report("threads_multiple");
}
