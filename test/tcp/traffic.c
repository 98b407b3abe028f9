/* Traffic of every kind, meant to run over the TCP transport
 * (AXON_BTL=tcp,self; see traffic.sh), in this order:
 *   1. simultaneous first contact: every rank sends to every rank at once,
 *      before any other communication, so every pair connects both ways at
 *      the same moment;
 *   2. ping-pong with rank 0 at sizes 0 B .. 8 MiB (eager, fragmented);
 *   3. back-pressure: 256 outstanding Isends of 48 KiB to one peer (far more
 *      than a connection's send queue holds), received in order;
 *   4. non-contiguous datatypes (vector), eager and fragmented;
 *   5. collectives: Bcast, Allreduce, Alltoall with exact results.
 * Arguments: "tcp-used" checks through MPI_T that the TCP transport carried
 * messages; "tcp-unused" that it carried none (all ranks on shared memory);
 * "tcp-striped" that it also spread fragments over striping connections.
 * Under another MPI the MPI_T checks are skipped. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

static int rank, size;

static void first_contact(void)
{
    const int n = 1000;  /* ints per message: eager */
    int *out = xmalloc((size_t)size * n * sizeof(int)), *in = xmalloc((size_t)size * n * sizeof(int));
    MPI_Request *reqs = xmalloc(2 * (size_t)size * sizeof(MPI_Request));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++) {
            out[p * n + i] = rank * 1000003 + p * 1009 + i;
            in[p * n + i] = -1;
        }
    for (int p = 0; p < size; p++)
        CHECK_MPI(MPI_Irecv(in + p * n, n, MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[p]));
    for (int p = 0; p < size; p++)
        CHECK_MPI(MPI_Isend(out + p * n, n, MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[size + p]));
    CHECK_MPI(MPI_Waitall(2 * size, reqs, MPI_STATUSES_IGNORE));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            if (in[p * n + i] != p * 1000003 + rank * 1009 + i) {
                CHECK(0, "first contact: from %d item %d is %d", p, i, in[p * n + i]);
                break;
            }
    free(out);
    free(in);
    free(reqs);
}

static void ping_pong(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 100, 4096, 65535, 65536, 65537, 200000, 1 << 20, 8 << 20};
    size_t max = 8 << 20;
    unsigned char *buf = xmalloc(max);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        for (int peer = 1; peer < size; peer++) {
            unsigned seed = (unsigned)(k * 31 + peer);
            MPI_Status st;
            int count = -1;
            if (rank == 0) {
                fill_pattern(buf, len, seed);
                CHECK_MPI(MPI_Send(buf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
                memset(buf, 0, len);
                CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st));
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(count == (int)len, "pong of %zu bytes from %d has %d", len, peer, count);
                CHECK_PATTERN(buf, len, seed + 1000, "pong of %zu bytes from %d", len, peer);
            } else if (rank == peer) {
                memset(buf, 0, len);
                CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(count == (int)len, "ping of %zu bytes has %d", len, count);
                CHECK_PATTERN(buf, len, seed, "ping of %zu bytes", len);
                fill_pattern(buf, len, seed + 1000);
                CHECK_MPI(MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
            }
        }
    }
    free(buf);
}

/* Rank 0 floods rank size-1 with Isends; the receiver posts its receives
 * late, so the data piles up in the sender's queues. */
static void back_pressure(void)
{
    enum { kMessages = 256, kLen = 48 * 1024 };
    int src = 0, dst = size - 1;
    if (rank != src && rank != dst) return;
    unsigned char *buf = xmalloc((size_t)kMessages * kLen);
    MPI_Request *reqs = xmalloc(kMessages * sizeof(MPI_Request));
    if (rank == src) {
        for (int m = 0; m < kMessages; m++) {
            fill_pattern(buf + (size_t)m * kLen, kLen, 5000u + (unsigned)m);
            CHECK_MPI(MPI_Isend(buf + (size_t)m * kLen, kLen, MPI_BYTE, dst, 3, MPI_COMM_WORLD, &reqs[m]));
        }
        CHECK_MPI(MPI_Waitall(kMessages, reqs, MPI_STATUSES_IGNORE));
    } else {
        memset(buf, 0, (size_t)kMessages * kLen);
        /* Same tag for all: the order of arrival must be the order of sending. */
        for (int m = 0; m < kMessages; m++)
            CHECK_MPI(MPI_Irecv(buf + (size_t)m * kLen, kLen, MPI_BYTE, src, 3, MPI_COMM_WORLD, &reqs[m]));
        CHECK_MPI(MPI_Waitall(kMessages, reqs, MPI_STATUSES_IGNORE));
        for (int m = 0; m < kMessages; m++)
            CHECK_PATTERN(buf + (size_t)m * kLen, kLen, 5000u + (unsigned)m, "flooded message %d", m);
    }
    free(buf);
    free(reqs);
}

/* Every other double of a vector; sizes below and above the eager limit. */
static void non_contiguous(void)
{
    static const int counts[] = {3, 1000, 100000};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        int n = counts[k];
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        double *buf = xmalloc(2 * (size_t)n * sizeof(double));
        int partner = rank ^ 1;
        if (partner < size) {
            for (int i = 0; i < 2 * n; i++) buf[i] = rank * 1e6 + i;
            double *in = xmalloc(2 * (size_t)n * sizeof(double));
            for (int i = 0; i < 2 * n; i++) in[i] = -1;
            CHECK_MPI(MPI_Sendrecv(buf, 1, vec, partner, 4, in, 1, vec, partner, 4, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            for (int i = 0; i < 2 * n; i++) {
                double expect = i % 2 == 0 ? partner * 1e6 + i : -1;
                if (in[i] != expect) {
                    CHECK(0, "vector of %d from %d: element %d is %g, expected %g", n, partner, i, in[i], expect);
                    break;
                }
            }
            free(in);
        }
        free(buf);
        MPI_Type_free(&vec);
    }
}

static void collectives(void)
{
    enum { kN = 50000 };
    int *v = xmalloc(kN * sizeof(int)), *r = xmalloc(kN * sizeof(int));
    for (int i = 0; i < kN; i++) v[i] = rank == size - 1 ? i * 3 + 1 : 0;
    CHECK_MPI(MPI_Bcast(v, kN, MPI_INT, size - 1, MPI_COMM_WORLD));
    for (int i = 0; i < kN; i++)
        if (v[i] != i * 3 + 1) {
            CHECK(0, "bcast item %d is %d", i, v[i]);
            break;
        }
    for (int i = 0; i < kN; i++) v[i] = rank + i;
    CHECK_MPI(MPI_Allreduce(v, r, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < kN; i++)
        if (r[i] != size * (size - 1) / 2 + size * i) {
            CHECK(0, "allreduce item %d is %d", i, r[i]);
            break;
        }
    int per = kN / size;
    for (int i = 0; i < per * size; i++) v[i] = rank * 100000 + i;
    CHECK_MPI(MPI_Alltoall(v, per, MPI_INT, r, per, MPI_INT, MPI_COMM_WORLD));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < per; i++)
            if (r[p * per + i] != p * 100000 + rank * per + i) {
                CHECK(0, "alltoall from %d item %d is %d", p, i, r[p * per + i]);
                p = size;
                break;
            }
    free(v);
    free(r);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* MPI_T: the TCP counter, when this MPI has it. */
    int expect = 0; /* 1: tcp must carry messages, 2: and stripe, -1: it must not */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "tcp-used")) expect = 1;
        if (!strcmp(argv[i], "tcp-striped")) expect = 2;
        if (!strcmp(argv[i], "tcp-unused")) expect = -1;
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle sent = MPI_T_PVAR_HANDLE_NULL, striped = MPI_T_PVAR_HANDLE_NULL;
    int index, count;
    if (expect && MPI_T_pvar_get_index("axon_btl_tcp_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS) {
        CHECK_MPI(MPI_T_pvar_session_create(&session));
        CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &sent, &count));
        MPI_T_pvar_start(session, sent);
        if (expect == 2) {
            CHECK_MPI(MPI_T_pvar_get_index("axon_btl_tcp_striped_messages", MPI_T_PVAR_CLASS_COUNTER, &index));
            CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &striped, &count));
            MPI_T_pvar_start(session, striped);
        }
    }

    first_contact();
    ping_pong();
    back_pressure();
    non_contiguous();
    collectives();

    if (sent != MPI_T_PVAR_HANDLE_NULL) {
        unsigned long long n = 0;
        CHECK_MPI(MPI_T_pvar_read(session, sent, &n));
        if (expect > 0 && size > 1) CHECK(n > 0, "the TCP transport sent no message");
        if (expect < 0) CHECK(n == 0, "the TCP transport sent %llu messages", n);
        if (striped != MPI_T_PVAR_HANDLE_NULL) {
            unsigned long long s = 0;
            CHECK_MPI(MPI_T_pvar_read(session, striped, &s));
            /* Every rank sends 8 MiB messages (ping or pong): fragments. */
            if (size > 1) CHECK(s > 0, "no fragment went over a striping connection");
            MPI_T_pvar_handle_free(session, &striped);
        }
        MPI_T_pvar_handle_free(session, &sent);
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return report("tcp_traffic");
}
