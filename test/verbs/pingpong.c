/* Exact-data traffic for a transport test (written for btl/verbs, runs on any).
 *
 * 1. Ping-pong between rank 0 and every other rank, sizes 0 B .. 8 MiB
 *    (powers of two and their neighbours, so eager/rendezvous boundaries and
 *    odd lengths are crossed), every byte checked on both sides.
 * 2. Many outstanding small Isends to one peer before it posts a single
 *    receive: more messages than the receiver has buffers, so the sender must
 *    wait for returned credits; all must arrive intact and in order.
 * 3. Ranks exchange in both directions at once with Isend/Irecv (simultaneous
 *    first contact: both sides connect at the same time).
 * 4. A buffer freed and reallocated between two large sends (the same
 *    address, new contents): the receiver must see the new contents.
 * Usage: pingpong [max_bytes] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static size_t mismatch(const unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        if (p[i] != (unsigned char)(x >> 16))
            return i;
    }
    return (size_t)-1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t max = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)8 << 20;
    unsigned char *buf = malloc(max + 1);
    CHECK(buf != NULL, "malloc");

    /* 3 first: every pair's first contact happens in both directions at once. */
    {
        int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
        int k = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            out[p] = rank * 1000 + p;
            in[p] = -1;
            CHECK_MPI(MPI_Irecv(&in[p], 1, MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[k++]));
            CHECK_MPI(MPI_Isend(&out[p], 1, MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[k++]));
        }
        CHECK_MPI(MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE));
        for (int p = 0; p < size; p++)
            if (p != rank)
                CHECK(in[p] == p * 1000 + rank, "simultaneous exchange from %d: got %d", p, in[p]);
        free(out);
        free(in);
        free(reqs);
    }

    /* 1: ping-pong, exact data. */
    for (int peer = 1; peer < size; peer++) {
        long long last = -1;
        for (size_t base = 1; ; base *= 2) {
            size_t sizes[3] = {base - 1, base, base + 1};
            for (int s = 0; s < 3; s++) {
                size_t n = sizes[s];
                if (n > max || (long long)n <= last)
                    continue;
                last = (long long)n;
                unsigned seed = (unsigned)(n * 31 + (size_t)peer);
                if (rank == 0) {
                    fill(buf, n, seed);
                    CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
                    memset(buf, 0, n);
                    MPI_Status st;
                    CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st));
                    int count = -1;
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    CHECK(count == (int)n, "pong of %zu bytes: count %d", n, count);
                    size_t bad = mismatch(buf, n, seed + 1);
                    CHECK(bad == (size_t)-1, "pong of %zu bytes from %d: byte %zu differs", n, peer, bad);
                } else if (rank == peer) {
                    memset(buf, 0, n);
                    MPI_Status st;
                    CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
                    int count = -1;
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    CHECK(count == (int)n, "ping of %zu bytes: count %d", n, count);
                    size_t bad = mismatch(buf, n, seed);
                    CHECK(bad == (size_t)-1, "ping of %zu bytes: byte %zu differs", n, bad);
                    fill(buf, n, seed + 1);
                    CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
                }
            }
            if (base > max)
                break;
        }
    }

    /* 2: many outstanding Isends (far more than the receiver's buffers). */
    enum { kMany = 1000, kLen = 200 };
    if (size > 1 && rank < 2) {
        unsigned char *msgs = malloc((size_t)kMany * kLen);
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * kMany);
        if (rank == 0) {
            for (int i = 0; i < kMany; i++) {
                fill(msgs + (size_t)i * kLen, kLen, 5000u + (unsigned)i);
                CHECK_MPI(MPI_Isend(msgs + (size_t)i * kLen, kLen, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &reqs[i]));
            }
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Waitall(kMany, reqs, MPI_STATUSES_IGNORE));
        } else {
            /* The receiver first waits for a message that comes after all of
             * them, so they all queue up as unexpected. */
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < kMany; i++) {
                memset(msgs + (size_t)i * kLen, 0, kLen);
                CHECK_MPI(MPI_Recv(msgs + (size_t)i * kLen, kLen, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                size_t bad = mismatch(msgs + (size_t)i * kLen, kLen, 5000u + (unsigned)i);
                CHECK(bad == (size_t)-1, "outstanding message %d: byte %zu differs", i, bad);
            }
        }
        free(msgs);
        free(reqs);
    }

    /* 4: same address, new contents (a registration cache must not serve stale data). */
    if (size > 1 && rank < 2) {
        size_t n = max < ((size_t)1 << 20) ? max : ((size_t)1 << 20);
        for (int round = 0; round < 3; round++) {
            unsigned char *p = malloc(n);
            fill(p, n, 900u + (unsigned)round);
            if (rank == 0) {
                CHECK_MPI(MPI_Send(p, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
            } else {
                memset(p, 0, n);
                CHECK_MPI(MPI_Recv(p, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                size_t bad = mismatch(p, n, 900u + (unsigned)round);
                CHECK(bad == (size_t)-1, "reallocated buffer round %d: byte %zu differs", round, bad);
            }
            free(p);
        }
    }

    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("verbs_pingpong");
}
