/* partitioned: MPI-4 partitioned communication. Every rank sends to its
 * right neighbour and receives from its left with persistent partitioned
 * requests restarted several times. Four threads fill and mark the send
 * partitions ready out of order (MPI_Pready from several threads), other
 * rounds use Pready_range and Pready_list; the receiver polls Parrived until
 * every partition is there and checks every element. Partitioned operations
 * do not match ordinary ones with the same tag. Bad calls give the right
 * error classes. */
#include <pthread.h>
#include "../mpi/check.h"

enum { PARTITIONS = 8, COUNT = 1000, ROUNDS = 6, THREADS = 4 };

struct worker {
    int *buffer, rank, round, thread;
    MPI_Request request;
};

static int value(int rank, int round, int i) { return rank * 1000000 + round * 10000 + i; }

/* Thread t fills and readies partitions t, t+THREADS, ... from the last down. */
static void *fill_and_ready(void *arg)
{
    struct worker *w = arg;
    for (int part = PARTITIONS - THREADS + w->thread; part >= 0; part -= THREADS) {
        for (int i = part * COUNT; i < (part + 1) * COUNT; i++)
            w->buffer[i] = value(w->rank, w->round, i);
        CHECK_MPI(MPI_Pready(part, w->request));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 77;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *out = xmalloc(PARTITIONS * COUNT * sizeof(int)), *in = xmalloc(PARTITIONS * COUNT * sizeof(int));

    /* An ordinary message with the same tag, sent first: partitioned receives
     * must not take it. */
    int plain = 4242, plain_in = 0;
    MPI_Request plain_request;
    CHECK_MPI(MPI_Isend(&plain, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &plain_request));

    MPI_Request send, recv;
    CHECK_MPI(MPI_Psend_init(out, PARTITIONS, COUNT, MPI_INT, right, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &send));
    CHECK_MPI(MPI_Precv_init(in, PARTITIONS, COUNT, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &recv));
    int flag = 0;
    CHECK_MPI(MPI_Parrived(recv, 0, &flag));
    CHECK(flag == 1, "Parrived on an inactive request: %d", flag);

    for (int round = 0; round < ROUNDS; round++) {
        memset(in, 0xff, PARTITIONS * COUNT * sizeof(int));
        CHECK_MPI(MPI_Start(&recv));
        CHECK_MPI(MPI_Start(&send));
        if (round % 3 == 0) {
            pthread_t threads[THREADS];
            struct worker workers[THREADS];
            for (int t = 0; t < THREADS; t++) {
                workers[t] = (struct worker){out, rank, round, t, send};
                pthread_create(&threads[t], NULL, fill_and_ready, &workers[t]);
            }
            for (int t = 0; t < THREADS; t++)
                pthread_join(threads[t], NULL);
        } else {
            for (int i = 0; i < PARTITIONS * COUNT; i++)
                out[i] = value(rank, round, i);
            if (round % 3 == 1) {
                CHECK_MPI(MPI_Pready_range(PARTITIONS / 2, PARTITIONS - 1, send));
                CHECK_MPI(MPI_Pready_range(0, PARTITIONS / 2 - 1, send));
            } else {
                int odd[PARTITIONS / 2], even[PARTITIONS / 2];
                for (int k = 0; k < PARTITIONS / 2; k++) {
                    odd[k] = 2 * k + 1;
                    even[k] = PARTITIONS - 2 - 2 * k;
                }
                CHECK_MPI(MPI_Pready_list(PARTITIONS / 2, odd, send));
                CHECK_MPI(MPI_Pready_list(PARTITIONS / 2, even, send));
            }
        }
        /* Poll every partition until all have arrived. */
        int arrived = 0;
        while (arrived < PARTITIONS) {
            arrived = 0;
            for (int part = 0; part < PARTITIONS; part++) {
                CHECK_MPI(MPI_Parrived(recv, part, &flag));
                arrived += flag;
            }
            if (check_failures)
                break;
        }
        MPI_Status status;
        CHECK_MPI(MPI_Wait(&recv, &status));
        CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));
        int bad = -1;
        for (int i = 0; i < PARTITIONS * COUNT && bad < 0; i++)
            if (in[i] != value(left, round, i))
                bad = i;
        CHECK(bad < 0, "round %d: element %d is %d, expected %d", round, bad, bad < 0 ? 0 : in[bad],
              bad < 0 ? 0 : value(left, round, bad));
        CHECK(status.MPI_SOURCE == left && status.MPI_TAG == 5, "round %d: status source %d tag %d", round,
              status.MPI_SOURCE, status.MPI_TAG);
        CHECK(recv != MPI_REQUEST_NULL && send != MPI_REQUEST_NULL, "Wait freed a partitioned request");
    }

    /* The ordinary message is still there for an ordinary receive. */
    CHECK_MPI(MPI_Recv(&plain_in, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(plain_in == 4242, "ordinary message with the partitioned tag: %d", plain_in);
    CHECK_MPI(MPI_Wait(&plain_request, MPI_STATUS_IGNORE));

    /* Bad calls. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK(error_class_of(MPI_Pready(0, send)) == MPI_ERR_REQUEST, "Pready before MPI_Start");
    CHECK_MPI(MPI_Start(&recv));
    CHECK(error_class_of(MPI_Pready(0, recv)) == MPI_ERR_REQUEST, "Pready on a receive");
    CHECK_MPI(MPI_Start(&send));
    CHECK(error_class_of(MPI_Pready(PARTITIONS, send)) == MPI_ERR_ARG, "Pready out of range");
    CHECK(error_class_of(MPI_Parrived(send, 0, &flag)) == MPI_ERR_REQUEST, "Parrived on a send");
    CHECK(error_class_of(MPI_Parrived(recv, -1, &flag)) == MPI_ERR_ARG, "Parrived out of range");
    CHECK_MPI(MPI_Pready_range(0, PARTITIONS - 1, send));
    CHECK_MPI(MPI_Wait(&recv, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));
    MPI_Request bad_request;
    CHECK(error_class_of(MPI_Precv_init(in, 2, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_INFO_NULL,
                                        &bad_request)) == MPI_ERR_RANK, "Precv_init from MPI_ANY_SOURCE");
    CHECK(error_class_of(MPI_Psend_init(out, 0, 1, MPI_INT, right, 5, MPI_COMM_WORLD, MPI_INFO_NULL,
                                        &bad_request)) == MPI_ERR_ARG, "Psend_init with 0 partitions");
    CHECK_MPI(MPI_Request_free(&send));
    CHECK_MPI(MPI_Request_free(&recv));
    CHECK(send == MPI_REQUEST_NULL && recv == MPI_REQUEST_NULL, "Request_free of partitioned requests");
    free(out);
    free(in);
    MPI_Finalize();
    return report("partitioned");
}
