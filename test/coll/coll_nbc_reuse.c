/* Nonblocking collectives called again and again with the same arguments
 * (Axon reuses the schedule of an earlier call with equal arguments, see
 * docs/collectives.md "Nonblocking and persistent calls"): every call must
 * still see the data, datatypes, ops and algorithm of its own moment.
 *
 *   - the same buffers with new contents at every call (Iallreduce, Ibcast
 *     from changing roots, Iallgather, Ialltoall, Ireduce, Iscan);
 *   - several calls with equal arguments in flight at once (Ibarrier,
 *     Iallreduce on distinct buffers with otherwise equal arguments);
 *   - a derived datatype freed and another one created between two calls on
 *     the same buffers (the new one may get the old one's address): the new
 *     layout must be used;
 *   - a user op freed and another one created between two calls;
 *   - the algorithm forced through AXON_COLL_ALLREDUCE_ALGORITHM (its MPI_T
 *     control variable) changed between calls with the same arguments
 *     (Axon only);
 *   - a communicator freed after such calls, and one freed while a call is
 *     still in flight. */
#include "../mpi/check.h"
#include "../tools/cvar.h"

static int rank, size;

static void fresh_contents(long call)
{
    enum { N = 37 };
    int in[N], out[N], all[N * 8], mine[8], got[8];
    for (int i = 0; i < N; ++i) in[i] = (rank + 1) * 100 + i + (int)call;
    MPI_Request rq;
    CHECK_MPI(MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; ++i) {
        int want = 0;
        for (int r = 0; r < size; ++r) want += (r + 1) * 100 + i + (int)call;
        if (out[i] != want) {
            CHECK(0, "call %ld: iallreduce item %d = %d, want %d", call, i, out[i], want);
            break;
        }
    }
    int root = (int)(call % size);
    for (int i = 0; i < N; ++i) out[i] = rank == root ? (int)call * 7 + i : -1;
    CHECK_MPI(MPI_Ibcast(out, N, MPI_INT, root, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; ++i)
        if (out[i] != (int)call * 7 + i) {
            CHECK(0, "call %ld: ibcast item %d = %d", call, i, out[i]);
            break;
        }
    if (size <= 8) {
        for (int r = 0; r < size; ++r) mine[r] = rank * 1000 + r * 10 + (int)call;
        CHECK_MPI(MPI_Ialltoall(mine, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int r = 0; r < size; ++r)
            CHECK(got[r] == r * 1000 + rank * 10 + (int)call, "call %ld: ialltoall from %d = %d", call, r, got[r]);
        CHECK_MPI(MPI_Iallgather(&in[0], 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int r = 0; r < size; ++r)
            CHECK(all[r] == (r + 1) * 100 + (int)call, "call %ld: iallgather from %d = %d", call, r, all[r]);
    }
    int x = rank + (int)call, red = -1, scan = -1;
    CHECK_MPI(MPI_Ireduce(&x, &red, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (rank == 0) CHECK(red == size - 1 + (int)call, "call %ld: ireduce = %d", call, red);
    CHECK_MPI(MPI_Iscan(&x, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(scan == rank * (rank + 1) / 2 + (rank + 1) * (int)call, "call %ld: iscan = %d", call, scan);
}

static void equal_calls_in_flight(void)
{
    for (int round = 0; round < 50; ++round) {
        MPI_Request rq[6];
        int in[3], out[3];
        for (int k = 0; k < 3; ++k) CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &rq[k]));
        for (int k = 0; k < 3; ++k) {
            in[k] = rank + k * 10 + round;
            /* The same count, type, op and communicator; distinct buffers. */
            CHECK_MPI(MPI_Iallreduce(&in[k], &out[k], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[3 + k]));
        }
        CHECK_MPI(MPI_Waitall(6, rq, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 3; ++k) {
            int want = size * (size - 1) / 2 + size * (k * 10 + round);
            CHECK(out[k] == want, "round %d: iallreduce %d = %d, want %d", round, k, out[k], want);
        }
    }
}

static void new_type_same_buffers(void)
{
    enum { N = 16 };
    int buf[2 * N];
    for (int round = 0; round < 20; ++round) {
        /* Even rounds: every other int; odd rounds: the first N ints. */
        MPI_Datatype t;
        if (round % 2 == 0) MPI_Type_vector(N, 1, 2, MPI_INT, &t);
        else MPI_Type_contiguous(N, MPI_INT, &t);
        MPI_Type_commit(&t);
        for (int i = 0; i < 2 * N; ++i) buf[i] = rank == 0 ? i + round * 100 : -1;
        MPI_Request rq;
        CHECK_MPI(MPI_Ibcast(buf, 1, t, 0, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        MPI_Type_free(&t);
        if (rank == 0) continue;
        for (int i = 0; i < 2 * N; ++i) {
            int covered = round % 2 == 0 ? i % 2 == 0 : i < N;
            int want = covered ? i + round * 100 : -1;
            if (buf[i] != want) {
                CHECK(0, "round %d: int %d = %d, want %d", round, i, buf[i], want);
                break;
            }
        }
    }
}

static void op_max_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; ++i)
        if (((int *)in)[i] > ((int *)inout)[i]) ((int *)inout)[i] = ((int *)in)[i];
}
static void op_min_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; ++i)
        if (((int *)in)[i] < ((int *)inout)[i]) ((int *)inout)[i] = ((int *)in)[i];
}

static void new_op_same_buffers(void)
{
    int x, y;
    for (int round = 0; round < 20; ++round) {
        MPI_Op op;
        MPI_Op_create(round % 2 ? op_min_fn : op_max_fn, 1, &op);
        x = rank * 3 + round;
        MPI_Request rq;
        CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, op, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        MPI_Op_free(&op);
        int want = round % 2 ? round : (size - 1) * 3 + round;
        CHECK(y == want, "round %d: user op result %d, want %d", round, y, want);
    }
}

static void forced_algorithm_changes(void)
{
    static const char *algs[] = {"recursive_doubling", "ring", "rabenseifner", "auto"};
    enum { N = 50 };
    int in[N], out[N];
    for (int round = 0; round < 8; ++round) {
        force_algorithm("allreduce", algs[round % 4]);
        for (int i = 0; i < N; ++i) in[i] = rank + i * round;
        MPI_Request rq;
        CHECK_MPI(MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int i = 0; i < N; ++i)
            if (out[i] != size * (size - 1) / 2 + size * i * round) {
                CHECK(0, "round %d (%s): item %d = %d", round, algs[round % 4], i, out[i]);
                break;
            }
    }
    force_algorithm("allreduce", "auto");
}

static void freed_communicators(void)
{
    for (int round = 0; round < 10; ++round) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int x = rank, y = -1;
        MPI_Request rq;
        for (int k = 0; k < 3; ++k) {
            CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &rq));
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            CHECK(y == size * (size - 1) / 2, "dup %d: %d", round, y);
        }
        /* The last one is still in flight when the communicator is freed. */
        CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &rq));
        CHECK_MPI(MPI_Comm_free(&c));
        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        CHECK(y == size * (size - 1) / 2, "dup %d after free: %d", round, y);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (long call = 0; call < 300; ++call) fresh_contents(call);
    equal_calls_in_flight();
    new_type_same_buffers();
    new_op_same_buffers();
    forced_algorithm_changes();
    freed_communicators();
    MPI_Finalize();
    return report("coll_nbc_reuse");
}
