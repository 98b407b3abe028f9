/* Rendezvous of large messages over a single-copy transport (btl/verbs: RDMA
 * READ "get" or RDMA WRITE "put", pipelined in chunks), exact data:
 *  - rank 0 and every other rank exchange messages of sizes that are not
 *    multiples of the pipeline chunk (and one smaller than a chunk), the
 *    receive posted first (expected) and after the message came (unexpected);
 *  - a synchronous send, a non-contiguous receive (vector type) and a
 *    non-contiguous send, a truncated receive (MPI_ERR_TRUNCATE, nothing
 *    written beyond the receive buffer).
 * Then, through MPI_T, the job's byte counters must show that exactly the
 * rendezvous bytes moved by the expected operation:
 *   rndv MODE [CHUNK]   MODE get: axon_btl_verbs_read_bytes == total, no
 *                       writes; put: the reverse; any: no counter check.
 *                       CHUNK: the pipeline chunk in use; the number of
 *                       chunks (axon_btl_verbs_rdma_chunks) is the chunk
 *                       count, plus at most one per transfer (pieces cut
 *                       at page boundaries).
 *   rndv MODE CHUNK rails   two rails: both carried rendezvous bytes
 *                       (axon_btl_verbs_rail0_bytes, _rail1_bytes), which
 *                       add up to the total; "onerail": rail 1 carried none.
 *   rndv MODE CHUNK seg=BYTES   buffers larger than two segments of BYTES
 *                       (AXON_BTL_VERBS_EXPOSE_SEGMENT, a multiple of CHUNK;
 *                       get: send buffers, put: receive buffers) are exposed
 *                       segment by segment: axon_pml_rndv_segments must count
 *                       exactly ceil(size / BYTES) for each.
 * Under another MPI the counter checks are skipped. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

static unsigned long long moved, chunks, chunk_size, segments, segment_size, transfers;

static void account(size_t n)
{
    moved += n;
    if (chunk_size) chunks += (n + chunk_size - 1) / chunk_size;
    unsigned long long segs = segment_size && n > 2 * segment_size ? (n + segment_size - 1) / segment_size : 0;
    segments += segs;
    transfers += segs ? segs : 1; /* each moved by one get/put transfer */
}

static unsigned char pattern(size_t i, unsigned seed)
{
    uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u;
    return (unsigned char)(x >> 13);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = pattern(i, seed);
}

static size_t mismatch(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(i, seed)) return i;
    return (size_t)-1;
}

/* One message of n bytes from `from` to `to`, the receive posted before
 * (expected) or after (unexpected) the message arrived. */
static void one(unsigned char *buf, size_t n, int from, int to, int rank, int expected, unsigned seed)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == to && expected) {
        memset(buf, 0, n);
        CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, from, 11, MPI_COMM_WORLD, &req));
    }
    if (rank == from) {
        fill(buf, n, seed);
        CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, to, 11, MPI_COMM_WORLD, &req));
    }
    /* Unexpected: the RTS is in the receiver's queue before it posts. */
    if (rank == from || rank == to) CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_BYTE, rank == from ? to : from, 12, NULL, 0,
                                                           MPI_BYTE, rank == from ? to : from, 12, MPI_COMM_WORLD,
                                                           MPI_STATUS_IGNORE));
    if (rank == to && !expected) {
        memset(buf, 0, n);
        CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, from, 11, MPI_COMM_WORLD, &req));
    }
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&req, &st));
    if (rank == to) {
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == (int)n, "%zu bytes from %d: count %d", n, from, count);
        size_t bad = mismatch(buf, n, seed);
        CHECK(bad == (size_t)-1, "%zu bytes from %d (%s): byte %zu differs", n, from,
              expected ? "expected" : "unexpected", bad);
    }
    account(n);
}

static unsigned long long counter(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    if (h != MPI_T_PVAR_HANDLE_NULL) CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *mode = argc > 1 ? argv[1] : "any";
    chunk_size = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session session;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle h_read = check_pvar_start(session, "axon_btl_verbs_read_bytes");
    MPI_T_pvar_handle h_write = check_pvar_start(session, "axon_btl_verbs_write_bytes");
    MPI_T_pvar_handle h_chunks = check_pvar_start(session, "axon_btl_verbs_rdma_chunks");
    MPI_T_pvar_handle h_rail0 = check_pvar_start(session, "axon_btl_verbs_rail0_bytes");
    MPI_T_pvar_handle h_rail1 = check_pvar_start(session, "axon_btl_verbs_rail1_bytes");
    const char *rails = argc > 3 ? argv[3] : "";
    MPI_T_pvar_handle h_segs = check_pvar_start(session, "axon_pml_rndv_segments");
    if (!strncmp(rails, "seg=", 4)) segment_size = strtoull(rails + 4, NULL, 0);

    const size_t sizes[] = {65536, 65537, 100003, 3 * 65536 + 7, (1 << 20) + 123, 5000001};
    const size_t nsizes = sizeof sizes / sizeof sizes[0], max = 5000001;
    unsigned char *buf = malloc(max + 64);
    CHECK(buf != NULL, "malloc");

    for (int peer = 1; peer < size; peer++) {
        for (size_t i = 0; i < nsizes; i++) {
            unsigned seed = (unsigned)(i * 7 + (size_t)peer);
            one(buf, sizes[i], 0, peer, rank, (int)(i & 1), seed);
            one(buf, sizes[i], peer, 0, rank, (int)!(i & 1), seed + 100);
        }
    }
    /* Only ranks 0 and 1 from here on; the counters are summed over all. */
    if (size > 1 && rank < 2) {
        int other = 1 - rank;
        /* Synchronous send of an odd size. */
        size_t n = 777777;
        if (rank == 0) {
            fill(buf, n, 31);
            CHECK_MPI(MPI_Ssend(buf, (int)n, MPI_BYTE, other, 13, MPI_COMM_WORLD));
        } else {
            memset(buf, 0, n);
            CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, other, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            size_t bad = mismatch(buf, n, 31);
            CHECK(bad == (size_t)-1, "Ssend of %zu bytes: byte %zu differs", n, bad);
        }
        account(n);

        /* Contiguous doubles into every second double (vector), and back. */
        enum { kItems = 20011 };
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(kItems, 1, 2, MPI_DOUBLE, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        double *strided = malloc(2 * kItems * sizeof(double)), *dense = malloc(kItems * sizeof(double));
        CHECK(strided && dense, "malloc");
        if (rank == 0) {
            for (int i = 0; i < kItems; i++) dense[i] = i * 0.5 + 1;
            CHECK_MPI(MPI_Send(dense, kItems, MPI_DOUBLE, other, 14, MPI_COMM_WORLD));
            for (int i = 0; i < 2 * kItems; i++) strided[i] = i % 2 ? -1.0 : i * 3.0;
            CHECK_MPI(MPI_Send(strided, 1, vec, other, 15, MPI_COMM_WORLD));
        } else {
            for (int i = 0; i < 2 * kItems; i++) strided[i] = -2.0;
            CHECK_MPI(MPI_Recv(strided, 1, vec, other, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            int bad = -1;
            for (int i = 0; i < 2 * kItems && bad < 0; i++)
                if (strided[i] != (i % 2 ? -2.0 : (i / 2) * 0.5 + 1)) bad = i;
            CHECK(bad < 0, "vector receive: double %d is %g", bad, bad < 0 ? 0.0 : strided[bad]);
            memset(dense, 0, kItems * sizeof(double));
            CHECK_MPI(MPI_Recv(dense, kItems, MPI_DOUBLE, other, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            bad = -1;
            for (int i = 0; i < kItems && bad < 0; i++)
                if (dense[i] != i * 6.0) bad = i;
            CHECK(bad < 0, "vector send: double %d is %g", bad, bad < 0 ? 0.0 : dense[bad]);
        }
        account(kItems * sizeof(double));
        account(kItems * sizeof(double));
        MPI_Type_free(&vec);
        free(strided);
        free(dense);

        /* Truncation: 300001 bytes into a 200003-byte receive. */
        size_t sent = 300001, room = 200003;
        if (rank == 0) {
            fill(buf, sent, 41);
            CHECK_MPI(MPI_Send(buf, (int)sent, MPI_BYTE, other, 16, MPI_COMM_WORLD));
        } else {
            memset(buf, 0xAB, sent);
            MPI_Status st;
            int rc = MPI_Recv(buf, (int)room, MPI_BYTE, other, 16, MPI_COMM_WORLD, &st);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: error class %d, expected MPI_ERR_TRUNCATE", cls);
            /* What lands in the buffer is not specified (MPICH and Open MPI
             * write nothing for large messages); beyond it, nothing may. */
            size_t touched = (size_t)-1;
            for (size_t i = room; i < sent && touched == (size_t)-1; i++)
                if (buf[i] != 0xAB) touched = i;
            CHECK(touched == (size_t)-1, "truncated receive wrote byte %zu beyond the buffer", touched);
        }
        account(room);
    }
    free(buf);

    unsigned long long mine[6] = {counter(session, h_read), counter(session, h_write), counter(session, h_chunks),
                                  counter(session, h_rail0), counter(session, h_rail1), counter(session, h_segs)};
    unsigned long long all[6] = {0, 0, 0, 0, 0, 0};
    CHECK_MPI(MPI_Allreduce(mine, all, 6, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0 && h_read != MPI_T_PVAR_HANDLE_NULL && size > 1) {
        if (!strcmp(mode, "get")) {
            CHECK(all[0] == moved && all[1] == 0, "get: read %llu, wrote %llu bytes, expected to read %llu",
                  all[0], all[1], moved);
        } else if (!strcmp(mode, "put")) {
            CHECK(all[1] == moved && all[0] == 0, "put: wrote %llu, read %llu bytes, expected to write %llu",
                  all[1], all[0], moved);
        }
        /* The pml cuts pieces at page boundaries of the mover's buffer
         * (Caps::rdma_align): a transfer whose buffer does not start on a
         * page takes at most one piece more than a chunk count. */
        if (chunk_size && strcmp(mode, "any"))
            CHECK(all[2] >= chunks && all[2] <= chunks + transfers,
                  "pipeline: %llu chunks of at most %llu bytes, expected %llu to %llu", all[2], chunk_size, chunks,
                  chunks + transfers);
        if (!strcmp(rails, "rails")) {
            CHECK(all[3] > 0 && all[4] > 0, "rails: rail 0 moved %llu bytes, rail 1 %llu: both should", all[3], all[4]);
            CHECK(all[3] + all[4] == moved, "rails: %llu + %llu bytes, expected %llu in all", all[3], all[4], moved);
        } else if (!strcmp(rails, "onerail")) {
            CHECK(all[4] == 0 && all[3] == moved, "one rail: rail 0 moved %llu, rail 1 %llu bytes (expected %llu, 0)",
                  all[3], all[4], moved);
        }
        if (segment_size)
            CHECK(all[5] == segments && segments > 0, "segments: %llu exposed, expected %llu of %llu bytes",
                  all[5], segments, segment_size);
        printf("rndv %s: %llu bytes read, %llu written, %llu chunks, rails %llu + %llu (expected %llu bytes%s)\n",
               mode, all[0], all[1], all[2], all[3], all[4], moved, chunk_size ? ", chunks checked" : "");
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return report("verbs_rndv");
}
