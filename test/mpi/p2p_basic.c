/* p2p_basic: blocking MPI_Send/MPI_Recv between every ordered pair of ranks
 * (self included) across the eager/rendezvous sizes, with exact data and
 * status checks; wildcards; MPI_PROC_NULL; a receive buffer larger than the
 * message. */
#include "check.h"

/* A value MPI never writes into status.MPI_ERROR, to see whether a
 * single-completion call touched the field (it may leave it or set SUCCESS). */
#define ERROR_FIELD_UNTOUCHED 0x5eed

static const size_t message_bytes[] = {0,     1,     7,     8,       64,         1000,           4096,
                                       8192,  16384, 65536, 65537,   1u << 20,   8u << 20};
#define N_SIZES (sizeof message_bytes / sizeof message_bytes[0])

struct typed {
    MPI_Datatype type;
    size_t extent;
    const char *name;
    size_t max_bytes; /* keeps the whole test short: big sizes on two types */
};

static void check_status(const MPI_Status *status, MPI_Datatype type, int source, int tag,
                         int count, const char *what)
{
    CHECK(status->MPI_SOURCE == source, "%s: MPI_SOURCE %d, expected %d", what, status->MPI_SOURCE,
          source);
    CHECK(status->MPI_TAG == tag, "%s: MPI_TAG %d, expected %d", what, status->MPI_TAG, tag);
    CHECK(status->MPI_ERROR == ERROR_FIELD_UNTOUCHED || status->MPI_ERROR == MPI_SUCCESS,
          "%s: MPI_ERROR %d", what, status->MPI_ERROR);
    int received = -1, elements = -1;
    CHECK_MPI(MPI_Get_count(status, type, &received));
    CHECK(received == count, "%s: MPI_Get_count %d, expected %d", what, received, count);
    CHECK_MPI(MPI_Get_elements(status, type, &elements));
    CHECK(elements == count, "%s: MPI_Get_elements %d, expected %d", what, elements, count);
}

/* One message from `source` to `dest`; every rank walks the same list of
 * pairs in the same order, so the blocking calls cannot deadlock. */
static void transfer(int rank, int source, int dest, const struct typed *t, size_t bytes)
{
    int count = (int)(bytes / t->extent);
    if (bytes > 0 && count == 0)
        count = 1;
    size_t payload = (size_t)count * t->extent;
    unsigned seed = (unsigned)(source * 131 + dest * 17 + bytes);
    int tag = (int)(bytes % 30000) + 1;
    char what[128];
    snprintf(what, sizeof what, "%d->%d %s count %d", source, dest, t->name, count);

    void *send_buffer = NULL, *recv_buffer = NULL;
    MPI_Request send_request = MPI_REQUEST_NULL;
    if (rank == source) {
        send_buffer = xmalloc(payload);
        fill_pattern(send_buffer, payload, seed);
        if (source == dest) /* a blocking send to oneself may wait forever */
            CHECK_MPI(MPI_Isend(send_buffer, count, t->type, dest, tag, MPI_COMM_WORLD,
                                &send_request));
        else
            CHECK_MPI(MPI_Send(send_buffer, count, t->type, dest, tag, MPI_COMM_WORLD));
    }
    if (rank == dest) {
        recv_buffer = xmalloc(payload);
        memset(recv_buffer, 0, payload);
        MPI_Status status;
        status.MPI_ERROR = ERROR_FIELD_UNTOUCHED;
        CHECK_MPI(MPI_Recv(recv_buffer, count, t->type, source, tag, MPI_COMM_WORLD, &status));
        check_status(&status, t->type, source, tag, count, what);
        CHECK_PATTERN(recv_buffer, payload, seed, "%s", what);
    }
    if (send_request != MPI_REQUEST_NULL)
        CHECK_MPI(MPI_Wait(&send_request, MPI_STATUS_IGNORE));
    free(send_buffer);
    free(recv_buffer);
}

static void all_pairs(int rank, int size)
{
    const struct typed types[] = {{MPI_BYTE, 1, "MPI_BYTE", 8u << 20},
                                  {MPI_CHAR, 1, "MPI_CHAR", 65537},
                                  {MPI_INT, sizeof(int), "MPI_INT", 65537},
                                  {MPI_DOUBLE, sizeof(double), "MPI_DOUBLE", 8u << 20}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t s = 0; s < N_SIZES && message_bytes[s] <= types[t].max_bytes; s++)
            for (int source = 0; source < size; source++)
                for (int dest = 0; dest < size; dest++)
                    transfer(rank, source, dest, &types[t], message_bytes[s]);
}

/* Every rank (rank 0 included) sends one message to rank 0, which receives
 * them with MPI_ANY_SOURCE/MPI_ANY_TAG and must see each source exactly once
 * with the tag and the data that source sent. */
static void wildcards(int rank, int size)
{
    enum { COUNT = 300 };
    int mine[COUNT];
    for (int i = 0; i < COUNT; i++)
        mine[i] = rank * 100000 + i;
    MPI_Request request;
    CHECK_MPI(MPI_Isend(mine, COUNT, MPI_INT, 0, 40 + rank, MPI_COMM_WORLD, &request));
    if (rank == 0) {
        int seen[64] = {0};
        for (int n = 0; n < size; n++) {
            int got[COUNT];
            MPI_Status status;
            CHECK_MPI(MPI_Recv(got, COUNT, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                               &status));
            int source = status.MPI_SOURCE;
            CHECK(source >= 0 && source < size, "wildcard MPI_SOURCE %d", source);
            if (source < 0 || source >= size || source >= 64)
                continue;
            CHECK(!seen[source], "source %d received twice", source);
            seen[source] = 1;
            CHECK(status.MPI_TAG == 40 + source, "wildcard tag %d from %d", status.MPI_TAG, source);
            for (int i = 0; i < COUNT; i++)
                if (got[i] != source * 100000 + i) {
                    CHECK(0, "wildcard data from %d: element %d is %d", source, i, got[i]);
                    break;
                }
        }
    }
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    /* Keep the next phase's messages away from rank 0's wildcard receives. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void proc_null(void)
{
    int data[4] = {1, 2, 3, 4};
    CHECK_MPI(MPI_Send(data, 4, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD));
    MPI_Status status;
    status.MPI_ERROR = ERROR_FIELD_UNTOUCHED;
    CHECK_MPI(MPI_Recv(data, 4, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &status));
    CHECK(status.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL recv: source %d", status.MPI_SOURCE);
    CHECK(status.MPI_TAG == MPI_ANY_TAG, "PROC_NULL recv: tag %d", status.MPI_TAG);
    int count = -1;
    CHECK_MPI(MPI_Get_count(&status, MPI_INT, &count));
    CHECK(count == 0, "PROC_NULL recv: count %d", count);
    CHECK(data[0] == 1 && data[3] == 4, "PROC_NULL recv wrote into the buffer");
}

/* 100 ints into a 1000-int buffer: the count says 100, the rest is untouched. */
static void larger_receive_buffer(int rank, int size)
{
    int partner = pair_partner(rank, size);
    int sent[100], got[1000];
    for (int i = 0; i < 100; i++)
        sent[i] = rank * 1000 + i;
    for (int i = 0; i < 1000; i++)
        got[i] = -7;
    MPI_Request request;
    CHECK_MPI(MPI_Isend(sent, 100, MPI_INT, partner, 9, MPI_COMM_WORLD, &request));
    MPI_Status status;
    CHECK_MPI(MPI_Recv(got, 1000, MPI_INT, partner, 9, MPI_COMM_WORLD, &status));
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    int count = -1;
    CHECK_MPI(MPI_Get_count(&status, MPI_INT, &count));
    CHECK(count == 100, "short message into large buffer: count %d", count);
    for (int i = 0; i < 100; i++)
        if (got[i] != partner * 1000 + i) {
            CHECK(0, "element %d is %d", i, got[i]);
            break;
        }
    for (int i = 100; i < 1000; i++)
        if (got[i] != -7) {
            CHECK(0, "element %d past the message was overwritten", i);
            break;
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    all_pairs(rank, size);
    wildcards(rank, size);
    proc_null();
    larger_receive_buffer(rank, size);
    MPI_Finalize();
    return report("p2p_basic");
}
