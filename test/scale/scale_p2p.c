/* Point-to-point at many ranks on one node (64 in the suite, on 2 cores:
 * every rank shares a core with about 31 others, so every message waits for
 * its receiver to be scheduled). Exact data only, no timing.
 *
 *   scale_p2p ring RANKS       each rank sends to its right neighbour and
 *                              receives from its left (Isend/Irecv, then
 *                              Sendrecv the other way), sizes on both sides
 *                              of the eager limit (8 KiB above 16 local
 *                              ranks) up to 256 KiB; then a token goes
 *                              round the ring three times, each rank adding
 *                              its rank, so 64 hand-offs happen one by one
 *   scale_p2p alltoall RANKS   every rank sends a distinct message to every
 *                              other rank at once (named sources, then
 *                              MPI_ANY_SOURCE: each source seen exactly once,
 *                              the content matching the source it names)
 *
 * RANKS is the job size the case expects, so a launcher that started fewer
 * ranks fails the case instead of passing it at a smaller scale. */
#include "../mpi/check.h"

static int rank, size;

static unsigned seed_of(int from, int to, size_t bytes, int round)
{
    return (unsigned)from * 7919u + (unsigned)to * 104729u + (unsigned)bytes * 31u + (unsigned)round;
}

static void ring(void)
{
    static const size_t sizes[] = {0, 1, 8, 1024, 8192, 8193, 65536, 262144};
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = xmalloc(262144), *in = xmalloc(262144);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t bytes = sizes[k];
        for (int round = 0; round < 3; round++) {
            /* Rightwards, nonblocking. */
            fill_pattern(out, bytes, seed_of(rank, right, bytes, round));
            memset(in, 0xee, bytes);
            MPI_Request rq[2];
            MPI_Status st[2];
            CHECK_MPI(MPI_Irecv(in, (int)bytes, MPI_BYTE, left, round, MPI_COMM_WORLD, &rq[0]));
            CHECK_MPI(MPI_Isend(out, (int)bytes, MPI_BYTE, right, round, MPI_COMM_WORLD, &rq[1]));
            CHECK_MPI(MPI_Waitall(2, rq, st));
            int count = -1;
            MPI_Get_count(&st[0], MPI_BYTE, &count);
            CHECK(count == (int)bytes && st[0].MPI_SOURCE == left && st[0].MPI_TAG == round,
                  "rightwards %zu B round %d: count %d source %d tag %d", bytes, round, count,
                  st[0].MPI_SOURCE, st[0].MPI_TAG);
            CHECK_PATTERN(in, bytes, seed_of(left, rank, bytes, round), "rightwards %zu B round %d from %d",
                          bytes, round, left);
            /* Leftwards, blocking. */
            fill_pattern(out, bytes, seed_of(rank, left, bytes, round) ^ 0x5a5au);
            memset(in, 0xee, bytes);
            MPI_Status status;
            CHECK_MPI(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, left, 100 + round, in, (int)bytes, MPI_BYTE,
                                   right, 100 + round, MPI_COMM_WORLD, &status));
            MPI_Get_count(&status, MPI_BYTE, &count);
            CHECK(count == (int)bytes && status.MPI_SOURCE == right,
                  "leftwards %zu B round %d: count %d source %d", bytes, round, count, status.MPI_SOURCE);
            CHECK_PATTERN(in, bytes, seed_of(right, rank, bytes, round) ^ 0x5a5au,
                          "leftwards %zu B round %d from %d", bytes, round, right);
        }
    }
    /* The token: one rank runs at a time, the rest wait in MPI_Recv. */
    for (int lap = 0; lap < 3; lap++) {
        long token = 0;
        if (rank == 0) {
            token = lap;
            CHECK_MPI(MPI_Send(&token, 1, MPI_LONG, right, 200, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(&token, 1, MPI_LONG, left, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            long expected = lap + (long)size * (size - 1) / 2;
            CHECK(token == expected, "token lap %d: %ld, expected %ld", lap, token, expected);
        } else {
            CHECK_MPI(MPI_Recv(&token, 1, MPI_LONG, left, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            token += rank;
            CHECK_MPI(MPI_Send(&token, 1, MPI_LONG, right, 200, MPI_COMM_WORLD));
        }
    }
    free(out);
    free(in);
}

static void all_pairs(void)
{
    static const size_t sizes[] = {8, 2048, 16385};
    const int peers = size - 1;
    MPI_Request *rq = xmalloc(2 * (size_t)peers * sizeof *rq);
    MPI_Status *st = xmalloc(2 * (size_t)peers * sizeof *st);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t bytes = sizes[k];
        unsigned char *out = xmalloc(bytes * (size_t)size), *in = xmalloc(bytes * (size_t)size);
        for (int any = 0; any < 2; any++) {
            /* A tag per size and round: a rank that is done may already send
             * the next round's messages, which must not match this round's
             * MPI_ANY_SOURCE receives. */
            const int tag = 10 + 2 * (int)k + any;
            memset(in, 0xee, bytes * (size_t)size);
            /* Receive slot j: the named source rank+j+1 (any == 0), or the
             * j-th arrival (any == 1). */
            for (int j = 0; j < peers; j++) {
                int from = (rank + 1 + j) % size;
                CHECK_MPI(MPI_Irecv(in + (size_t)j * bytes, (int)bytes, MPI_BYTE, any ? MPI_ANY_SOURCE : from,
                                    tag, MPI_COMM_WORLD, &rq[j]));
            }
            /* Sends start at the left neighbour and go down, so that not
             * every rank sends to rank 0 first. */
            for (int j = 0; j < peers; j++) {
                int to = (rank + size - 1 - j) % size;
                fill_pattern(out + (size_t)to * bytes, bytes, seed_of(rank, to, bytes, any));
                CHECK_MPI(MPI_Isend(out + (size_t)to * bytes, (int)bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD,
                                    &rq[peers + j]));
            }
            CHECK_MPI(MPI_Waitall(2 * peers, rq, st));
            int *seen = calloc((size_t)size, sizeof *seen);
            for (int j = 0; j < peers; j++) {
                int from = any ? st[j].MPI_SOURCE : (rank + 1 + j) % size, count = -1;
                MPI_Get_count(&st[j], MPI_BYTE, &count);
                CHECK(count == (int)bytes, "%zu B slot %d: count %d", bytes, j, count);
                CHECK(from >= 0 && from < size && from != rank && st[j].MPI_SOURCE == from,
                      "%zu B slot %d: source %d (expected %d)", bytes, j, st[j].MPI_SOURCE, from);
                if (from < 0 || from >= size)
                    continue;
                seen[from]++;
                CHECK_PATTERN(in + (size_t)j * bytes, bytes, seed_of(from, rank, bytes, any),
                              "%zu B from %d (%s)", bytes, from, any ? "MPI_ANY_SOURCE" : "named source");
            }
            for (int r = 0; r < size; r++)
                CHECK(seen[r] == (r != rank), "%zu B (%s): %d message(s) from rank %d", bytes,
                      any ? "MPI_ANY_SOURCE" : "named source", seen[r], r);
            free(seen);
        }
        free(out);
        free(in);
    }
    free(rq);
    free(st);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    const int expected = argc > 2 ? atoi(argv[2]) : 0;
    CHECK(size == expected, "the job has %d ranks, the case expects %d", size, expected);
    if (!strcmp(mode, "ring"))
        ring();
    else if (!strcmp(mode, "alltoall"))
        all_pairs();
    else
        CHECK(0, "usage: scale_p2p ring|alltoall RANKS (got '%s')", mode);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("scale_p2p");
}
