/* Collectives at many ranks on one node (64 in the suite, on 2 cores), exact
 * results only, no timing:
 *
 *   scale_coll barrier RANKS    30 rounds: every rank writes the round into
 *                               its flag in a shared-memory window, then
 *                               MPI_Win_sync, MPI_Barrier, MPI_Win_sync, and
 *                               every flag must show this round (or the next,
 *                               from a rank already past the barrier). One
 *                               rank per round sleeps 2 ms before writing, so
 *                               a barrier that lets ranks out before the last
 *                               one arrives is seen.
 *   scale_coll bcast RANKS      roots 0, RANKS/2 and RANKS-1; 1 to 65536 ints
 *   scale_coll allreduce RANKS  MPI_SUM (also MPI_IN_PLACE), MPI_MAX, MPI_MIN
 *                               on ints, MPI_SUM on integral doubles; 1 to
 *                               65536 elements
 *   scale_coll alltoall RANKS   blocks of 1, 64 and 1024 ints, each naming
 *                               its source, destination and position
 *
 * Every case repeats its calls (reused buffers and internal state). RANKS is
 * the job size the case expects. */
#include "../mpi/check.h"

#include <time.h>

static int rank, size;

static void barrier_rounds(void)
{
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int node_size = 0, node_rank = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_rank(node, &node_rank);
    CHECK(node_size == size, "the node has %d of the %d ranks; this case needs one node", node_size, size);
    int *flags = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared((MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, node, &flags, &win));
    volatile int **flag_of = xmalloc((size_t)node_size * sizeof *flag_of);
    for (int r = 0; r < node_size; r++) {
        MPI_Aint bytes;
        int unit;
        int *base = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &bytes, &unit, &base));
        flag_of[r] = base;
    }
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    *flag_of[node_rank] = -1;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    for (int round = 0; round < 30; round++) {
        if (round % node_size == node_rank) {
            struct timespec late = {0, 2 * 1000 * 1000};
            nanosleep(&late, NULL);
        }
        *flag_of[node_rank] = round;
        MPI_Win_sync(win);
        CHECK_MPI(MPI_Barrier(node));
        MPI_Win_sync(win);
        for (int r = 0; r < node_size; r++) {
            int seen = *flag_of[r];
            CHECK(seen == round || seen == round + 1, "round %d: rank %d's flag is %d after the barrier", round,
                  r, seen);
        }
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    free(flag_of);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
}

static int root_value(int root, int i, int call) { return root * 1000003 + i * 7 + call; }

static void bcasts(void)
{
    static const int counts[] = {1, 3, 100, 2048, 2049, 16384, 65536};
    const int roots[] = {0, size / 2, size - 1};
    int *buf = xmalloc(65536 * sizeof *buf);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (int q = 0; q < 3; q++)
            for (int call = 0; call < 3; call++) {
                const int count = counts[k], root = roots[q];
                for (int i = 0; i < count; i++)
                    buf[i] = rank == root ? root_value(root, i, call) : -1;
                CHECK_MPI(MPI_Bcast(buf, count, MPI_INT, root, MPI_COMM_WORLD));
                int bad = -1;
                for (int i = 0; i < count && bad < 0; i++)
                    if (buf[i] != root_value(root, i, call)) bad = i;
                CHECK(bad < 0, "bcast of %d ints from root %d, call %d: element %d is %d, expected %d", count, root,
                      call, bad, bad < 0 ? 0 : buf[bad], bad < 0 ? 0 : root_value(root, bad, call));
            }
    free(buf);
}

static int contribution(int r, int i, int call) { return (r * 31 + i * 17 + call) % 1000 - 500; }

static void allreduces(void)
{
    static const int counts[] = {1, 2, 7, 1024, 4097, 65536};
    int *in = xmalloc(65536 * sizeof *in), *out = xmalloc(65536 * sizeof *out);
    double *din = xmalloc(65536 * sizeof *din), *dout = xmalloc(65536 * sizeof *dout);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (int call = 0; call < 2; call++) {
            const int count = counts[k];
            for (int i = 0; i < count; i++) in[i] = contribution(rank, i, call), din[i] = 0.5 * in[i];
            int bad_sum = -1, bad_max = -1, bad_min = -1, bad_place = -1, bad_double = -1;
            /* Expected results, computed here from every rank's contribution. */
            int *sum = xmalloc((size_t)count * sizeof *sum), *max = xmalloc((size_t)count * sizeof *max),
                *min = xmalloc((size_t)count * sizeof *min);
            for (int i = 0; i < count; i++) {
                sum[i] = 0, max[i] = -1000, min[i] = 1000;
                for (int r = 0; r < size; r++) {
                    int v = contribution(r, i, call);
                    sum[i] += v;
                    if (v > max[i]) max[i] = v;
                    if (v < min[i]) min[i] = v;
                }
            }
            CHECK_MPI(MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < count && bad_sum < 0; i++) if (out[i] != sum[i]) bad_sum = i;
            CHECK_MPI(MPI_Allreduce(in, out, count, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            for (int i = 0; i < count && bad_max < 0; i++) if (out[i] != max[i]) bad_max = i;
            CHECK_MPI(MPI_Allreduce(in, out, count, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
            for (int i = 0; i < count && bad_min < 0; i++) if (out[i] != min[i]) bad_min = i;
            memcpy(out, in, (size_t)count * sizeof *out);
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < count && bad_place < 0; i++) if (out[i] != sum[i]) bad_place = i;
            /* Halves of integers: exact in a double whatever the order of the sum. */
            CHECK_MPI(MPI_Allreduce(din, dout, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < count && bad_double < 0; i++) if (dout[i] != 0.5 * sum[i]) bad_double = i;
            CHECK(bad_sum < 0, "allreduce SUM of %d ints, call %d: element %d wrong", count, call, bad_sum);
            CHECK(bad_max < 0, "allreduce MAX of %d ints, call %d: element %d wrong", count, call, bad_max);
            CHECK(bad_min < 0, "allreduce MIN of %d ints, call %d: element %d wrong", count, call, bad_min);
            CHECK(bad_place < 0, "allreduce SUM in place of %d ints, call %d: element %d wrong", count, call,
                  bad_place);
            CHECK(bad_double < 0, "allreduce SUM of %d doubles, call %d: element %d wrong", count, call,
                  bad_double);
            free(sum);
            free(max);
            free(min);
        }
    free(in);
    free(out);
    free(din);
    free(dout);
}

static int block_value(int from, int to, int i) { return (from * size + to) * 2048 + i; }

static void alltoalls(void)
{
    static const int blocks[] = {1, 64, 1024};
    int *out = xmalloc((size_t)size * 1024 * sizeof *out), *in = xmalloc((size_t)size * 1024 * sizeof *in);
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++)
        for (int call = 0; call < 3; call++) {
            const int b = blocks[k];
            for (int to = 0; to < size; to++)
                for (int i = 0; i < b; i++) out[to * b + i] = block_value(rank, to, i) + call;
            for (int i = 0; i < size * b; i++) in[i] = -1;
            CHECK_MPI(MPI_Alltoall(out, b, MPI_INT, in, b, MPI_INT, MPI_COMM_WORLD));
            int bad = -1;
            for (int i = 0; i < size * b && bad < 0; i++)
                if (in[i] != block_value(i / b, rank, i % b) + call) bad = i;
            CHECK(bad < 0, "alltoall of %d-int blocks, call %d: element %d (block from rank %d) is %d, expected %d",
                  b, call, bad, bad < 0 ? 0 : bad / b, bad < 0 ? 0 : in[bad],
                  bad < 0 ? 0 : block_value(bad / b, rank, bad % b) + call);
        }
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    const int expected = argc > 2 ? atoi(argv[2]) : 0;
    CHECK(size == expected, "the job has %d ranks, the case expects %d", size, expected);
    if (!strcmp(mode, "barrier"))
        barrier_rounds();
    else if (!strcmp(mode, "bcast"))
        bcasts();
    else if (!strcmp(mode, "allreduce"))
        allreduces();
    else if (!strcmp(mode, "alltoall"))
        alltoalls();
    else
        CHECK(0, "usage: scale_coll barrier|bcast|allreduce|alltoall RANKS (got '%s')", mode);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return report("scale_coll");
}
