/* A large RDMA transfer in flight does not hold up small messages from
 * another peer (btl/verbs get/put are asynchronous: the read is posted and
 * completed from progress, not waited for inside the handler that starts it).
 *
 *   overlap [BYTES [PINGS]]   np 3: rank 1 sends rank 0 one message of BYTES
 *                             (default 16 MiB: rendezvous, the receiver RDMA
 *                             READs it); meanwhile rank 2 ping-pongs 8-byte
 *                             messages with rank 0, which posted the large
 *                             receive first and serves the pings with
 *                             MPI_Test on it in between.
 *
 * Asserts: rank 0 answered at least PINGS (default 10) pings while the large
 * receive was incomplete *and* part of it had already been read
 * (axon_btl_verbs_read_bytes, MPI_T, grows per completed piece): with a
 * get() that blocked until the whole read completed, the pings would have
 * waited for it, and none could be answered in between. The large message
 * and every pong are exact. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

enum { kTagLarge = 1, kTagPing = 2, kTagPong = 3, kWarmup = 20 };

static unsigned long long read_counter(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)16 << 20;
    long want = argc > 2 ? atol(argv[2]) : 10;
    CHECK(size == 3, "run with 3 ranks, not %d", size);
    if (size != 3) {
        MPI_Finalize();
        return report("verbs_overlap");
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session session;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle h_read = check_pvar_start(session, "axon_btl_verbs_read_bytes");
    CHECK(h_read != MPI_T_PVAR_HANDLE_NULL, "no MPI_T counter axon_btl_verbs_read_bytes");

    /* Every connection up before the clock starts (rank 2's first ping must
     * not wait for connection set-up while the transfer runs). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    unsigned char *big = rank < 2 ? xmalloc(bytes) : NULL;
    long answered = 0, answered_during = 0;
    if (rank == 0) {
        memset(big, 0, bytes);
        MPI_Request large, ping;
        uint64_t value = 0;
        /* Warm-up: pings answered before the transfer (their rate, for the log). */
        double t0 = MPI_Wtime();
        for (int i = 0; i < kWarmup; i++) {
            uint64_t pong[2] = {0, 0};
            CHECK_MPI(MPI_Recv(&pong[0], 1, MPI_UINT64_T, 2, kTagPing, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(pong, 2, MPI_UINT64_T, 2, kTagPong, MPI_COMM_WORLD));
        }
        double warm = (MPI_Wtime() - t0) / kWarmup;
        CHECK_MPI(MPI_Irecv(big, (int)bytes, MPI_BYTE, 1, kTagLarge, MPI_COMM_WORLD, &large));
        CHECK_MPI(MPI_Irecv(&value, 1, MPI_UINT64_T, 2, kTagPing, MPI_COMM_WORLD, &ping));
        /* Tell rank 1 to send: the receive is posted (the RTS matches at once). */
        t0 = MPI_Wtime();
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, kTagLarge, MPI_COMM_WORLD));
        unsigned long long read_before = read_counter(session, h_read);
        int large_done = 0;
        MPI_Status st;
        while (!large_done) {
            int got = 0;
            CHECK_MPI(MPI_Test(&ping, &got, MPI_STATUS_IGNORE));
            /* The state of the large receive when this ping is answered: it
             * counts when part of the message was read and not all of it. */
            CHECK_MPI(MPI_Test(&large, &large_done, &st));
            if (!got) continue;
            if (!large_done && read_counter(session, h_read) > read_before) answered_during++;
            answered++;
            uint64_t pong[2] = {value, 0};
            CHECK_MPI(MPI_Send(pong, 2, MPI_UINT64_T, 2, kTagPong, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Irecv(&value, 1, MPI_UINT64_T, 2, kTagPing, MPI_COMM_WORLD, &ping));
        }
        double took = MPI_Wtime() - t0;
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == (int)bytes, "large receive: count %d, expected %zu", count, bytes);
        CHECK_PATTERN(big, bytes, 77, "large message of %zu bytes", bytes);
        /* The next ping gets the answer "stop". */
        CHECK_MPI(MPI_Wait(&ping, MPI_STATUS_IGNORE));
        uint64_t stop[2] = {value, 1};
        CHECK_MPI(MPI_Send(stop, 2, MPI_UINT64_T, 2, kTagPong, MPI_COMM_WORLD));
        printf("overlap: %zu bytes in %.3f s; %ld of %ld pings answered during the read (want >= %ld); "
               "a ping took %.1f us before\n", bytes, took, answered_during, answered, want, warm * 1e6);
        CHECK(answered_during >= want, "only %ld pings answered while the %zu-byte read was in flight, want %ld",
              answered_during, bytes, want);
    } else if (rank == 1) {
        fill_pattern(big, bytes, 77);
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, kTagLarge, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(big, (int)bytes, MPI_BYTE, 0, kTagLarge, MPI_COMM_WORLD));
    } else {
        for (uint64_t seq = 1;; seq++) {
            uint64_t pong[2] = {0, 0};
            CHECK_MPI(MPI_Send(&seq, 1, MPI_UINT64_T, 0, kTagPing, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(pong, 2, MPI_UINT64_T, 0, kTagPong, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(pong[0] == seq, "pong %llu answers ping %llu", (unsigned long long)pong[0],
                  (unsigned long long)seq);
            if (pong[1] || pong[0] != seq) break;
        }
    }
    free(big);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return report("verbs_overlap");
}
