/* mpi_nodes -- MPI checks run across namespace "nodes" by test/netns.
 *
 *   mpi_nodes hello LAYOUT   LAYOUT lists each node's ranks, "0,1;2,3;4,5":
 *                            checks size, and that MPI_COMM_TYPE_SHARED holds
 *                            exactly the ranks of this rank's node
 *   mpi_nodes ring           ring exchange of 0 B .. 4 MiB+3 with exact data
 *   mpi_nodes coll           Allreduce, Bcast (every root), Alltoall, Allgather
 *                            with exact results, incl. a 1 MiB Bcast
 *   mpi_nodes segv R         rank R dies of SIGSEGV after a barrier; the
 *                            others wait in a barrier
 * Prints one "rank R ... ok" line per rank and returns 0, or names the first
 * wrong value and returns 1. */
#include <mpi.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "rank %d: FAIL: ", rank);       \
            fprintf(stderr, __VA_ARGS__);                   \
            fprintf(stderr, "\n");                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                   \
        }                                                   \
    } while (0)

static unsigned char pattern(int sender, size_t index) {
    return (unsigned char)(sender * 131 + index * 7 + (index >> 13));
}

static int hello(const char *layout) {
    /* Find this rank's node in the layout and the members expected there. */
    int expected[64], count = 0, nodes = 0, total = 0, mine = 0;
    const char *p = layout;
    while (*p) {
        int members[64], n = 0, here = 0;
        while (*p && *p != ';') {
            int r = (int)strtol(p, (char **)&p, 10);
            members[n++] = r;
            if (r == rank) here = 1;
            if (*p == ',') p++;
        }
        if (*p == ';') p++;
        nodes++;
        total += n;
        if (here) {
            memcpy(expected, members, sizeof(int) * (size_t)n);
            count = n;
            mine = 1;
        }
    }
    CHECK(total == size, "layout names %d ranks, size is %d", total, size);
    CHECK(mine, "rank missing from layout %s", layout);
    MPI_Comm shared;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    int shared_size;
    MPI_Comm_size(shared, &shared_size);
    CHECK(shared_size == count, "MPI_COMM_TYPE_SHARED has %d ranks, the node has %d", shared_size, count);
    MPI_Group world_group, shared_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(shared, &shared_group);
    int local[64], world[64];
    for (int i = 0; i < shared_size; i++) local[i] = i;
    MPI_Group_translate_ranks(shared_group, shared_size, local, world_group, world);
    for (int i = 0; i < shared_size; i++) {
        CHECK(world[i] == expected[i], "local rank %d is world rank %d, expected %d", i, world[i], expected[i]);
    }
    /* Everyone agrees on the node count: sum over node leaders. */
    int leader = world[0] == rank, leaders = 0;
    MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(leaders == nodes, "%d node leaders, expected %d nodes", leaders, nodes);
    printf("rank %d size %d node ranks %d leaders %d ok\n", rank, size, shared_size, leaders);
    MPI_Group_free(&world_group);
    MPI_Group_free(&shared_group);
    MPI_Comm_free(&shared);
    return 0;
}

static int ring(void) {
    const size_t sizes[] = {0, 1, 1000, 65536, 1 << 20, (4u << 20) + 3};
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        unsigned char *out = malloc(n + 1), *in = malloc(n + 1);
        for (size_t i = 0; i < n; i++) out[i] = pattern(rank, i);
        memset(in, 0xEE, n + 1);
        MPI_Status status;
        MPI_Sendrecv(out, (int)n, MPI_BYTE, next, (int)s, in, (int)n + 1, MPI_BYTE, prev, (int)s, MPI_COMM_WORLD,
                     &status);
        int got;
        MPI_Get_count(&status, MPI_BYTE, &got);
        CHECK((size_t)got == n, "ring %zu B: received %d bytes", n, got);
        CHECK(status.MPI_SOURCE == prev && status.MPI_TAG == (int)s, "ring %zu B: source %d tag %d", n,
              status.MPI_SOURCE, status.MPI_TAG);
        for (size_t i = 0; i < n; i++) CHECK(in[i] == pattern(prev, i), "ring %zu B: byte %zu wrong", n, i);
        CHECK(in[n] == 0xEE, "ring %zu B: wrote past the message", n);
        free(out);
        free(in);
    }
    /* Nonblocking: every rank sends 256 KiB to every other at once. */
    size_t n = 256 * 1024;
    unsigned char *out = malloc(n * (size_t)size), *in = malloc(n * (size_t)size);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
    int count = 0;
    for (int peer = 0; peer < size; peer++) {
        for (size_t i = 0; i < n; i++) out[(size_t)peer * n + i] = pattern(rank * 16 + peer, i);
        MPI_Irecv(in + (size_t)peer * n, (int)n, MPI_BYTE, peer, 99, MPI_COMM_WORLD, &requests[count++]);
        MPI_Isend(out + (size_t)peer * n, (int)n, MPI_BYTE, peer, 99, MPI_COMM_WORLD, &requests[count++]);
    }
    MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
    for (int peer = 0; peer < size; peer++) {
        for (size_t i = 0; i < n; i++) {
            CHECK(in[(size_t)peer * n + i] == pattern(peer * 16 + rank, i), "all-pairs from %d: byte %zu", peer, i);
        }
    }
    free(out);
    free(in);
    free(requests);
    printf("rank %d ring ok\n", rank);
    return 0;
}

static int coll(void) {
    long sum = 0, value = rank + 1;
    MPI_Allreduce(&value, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == (long)size * (size + 1) / 2, "Allreduce sum %ld", sum);
    enum { N = 100000 };
    double *vec = malloc(sizeof(double) * N), *res = malloc(sizeof(double) * N);
    for (int i = 0; i < N; i++) vec[i] = rank * 0.5 + i;
    MPI_Allreduce(vec, res, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(res[i] == (size - 1) * 0.5 + i, "Allreduce max [%d] = %g", i, res[i]);
    free(vec);
    free(res);

    size_t n = 1 << 20;
    unsigned char *buffer = malloc(n);
    for (int root = 0; root < size; root++) {
        if (rank == root) {
            for (size_t i = 0; i < n; i++) buffer[i] = pattern(root, i);
        } else {
            memset(buffer, 0, n);
        }
        MPI_Bcast(buffer, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) CHECK(buffer[i] == pattern(root, i), "Bcast root %d byte %zu", root, i);
    }
    free(buffer);

    int *send = malloc(sizeof(int) * (size_t)size * 1000), *recv = malloc(sizeof(int) * (size_t)size * 1000);
    for (int peer = 0; peer < size; peer++) {
        for (int i = 0; i < 1000; i++) send[peer * 1000 + i] = rank * 1000000 + peer * 1000 + i;
    }
    MPI_Alltoall(send, 1000, MPI_INT, recv, 1000, MPI_INT, MPI_COMM_WORLD);
    for (int peer = 0; peer < size; peer++) {
        for (int i = 0; i < 1000; i++) {
            CHECK(recv[peer * 1000 + i] == peer * 1000000 + rank * 1000 + i, "Alltoall from %d [%d]", peer, i);
        }
    }
    int mine = rank * 3 + 1;
    MPI_Allgather(&mine, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
    for (int peer = 0; peer < size; peer++) CHECK(recv[peer] == peer * 3 + 1, "Allgather [%d]", peer);
    free(send);
    free(recv);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d coll ok\n", rank);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int result = 2;
    if (argc >= 3 && strcmp(argv[1], "hello") == 0) {
        result = hello(argv[2]);
    } else if (argc >= 2 && strcmp(argv[1], "ring") == 0) {
        result = ring();
    } else if (argc >= 2 && strcmp(argv[1], "coll") == 0) {
        result = coll();
    } else if (argc >= 3 && strcmp(argv[1], "segv") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == atoi(argv[2])) raise(SIGSEGV);
        MPI_Barrier(MPI_COMM_WORLD);
        result = 0;
    } else {
        fprintf(stderr, "usage: mpi_nodes hello LAYOUT | ring | coll | segv R\n");
    }
    MPI_Finalize();
    return result;
}
