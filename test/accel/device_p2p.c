/* Point-to-point messages with GPU buffers, 0 B .. 8 MiB, exact data, in a
 * ring (np 1: to oneself). Placements: device->device, device->host,
 * host->device, managed->device; blocking, nonblocking, unexpected
 * (sent before the receive is posted), synchronous; a non-contiguous
 * datatype in device memory; truncation.
 *
 *   device_p2p ipc       expect the IPC path between ranks (fake driver)
 *   device_p2p staging   expect the pipelined staging path (run with AXON_ACCEL_IPC=0)
 *   device_p2p any       no path assertions (a real GPU)
 *   device_p2p host      host buffers only: no driver must mean no error
 */
#include <mpi.h>

#include "../mpi/check.h"
#include "../mpi/counters.h"
#include "device.h"

static const size_t sizes[] = {0, 1, 8, 1000, 8192, 8193, 65536, 262149, 1 << 20, (3 << 20) + 7, 8 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])
enum place { HOST, DEVICE, MANAGED };
static const char *place_name[] = {"host", "device", "managed"};

static void *alloc_in(enum place p, size_t n)
{
    return p == HOST ? xmalloc(n) : p == DEVICE ? dev_malloc(n) : dev_malloc_managed(n);
}
static void free_in(enum place p, void *b) { if (p == HOST) free(b); else dev_free(b); }
/* Host-side view of a buffer: fill or read through copies for device memory. */
static void put_in(enum place p, void *b, const void *h, size_t n) { if (p == HOST) memcpy(b, h, n); else dev_put(b, h, n); }
static void get_from(enum place p, void *h, const void *b, size_t n) { if (p == HOST) memcpy(h, b, n); else dev_get(h, b, n); }

static int rank, size, to, from;
static unsigned char *host_tmp;

/* One message of every size around the ring with the given placements.
 * how: 0 blocking (Irecv posted first), 1 unexpected (Isend, barrier, Recv), 2 Ssend. */
static void ring(enum place sp, enum place rp, int how, size_t max)
{
    for (size_t k = 0; k < NSIZES && sizes[k] <= max; k++) {
        size_t n = sizes[k];
        void *sbuf = alloc_in(sp, n), *rbuf = alloc_in(rp, n);
        fill_pattern(host_tmp, n, (unsigned)(rank * 100 + k));
        put_in(sp, sbuf, host_tmp, n);
        memset(host_tmp, 0, n);
        put_in(rp, rbuf, host_tmp, n);
        MPI_Request rr, sr;
        MPI_Status st;
        if (how == 1) {
            CHECK_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, to, (int)k, MPI_COMM_WORLD, &sr));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, from, (int)k, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, from, (int)k, MPI_COMM_WORLD, &rr));
            if (how == 2)
                CHECK_MPI(MPI_Ssend(sbuf, (int)n, MPI_BYTE, to, (int)k, MPI_COMM_WORLD));
            else
                CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, to, (int)k, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&rr, &st));
        }
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == (int)n, "%s->%s %zu B: count %d", place_name[sp], place_name[rp], n, got);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == (int)k, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        get_from(rp, host_tmp, rbuf, n);
        CHECK_PATTERN(host_tmp, n, (unsigned)(from * 100 + k), "%s->%s %zu B how %d", place_name[sp],
                      place_name[rp], n, how);
        free_in(sp, sbuf);
        free_in(rp, rbuf);
    }
}

/* A vector of ints in device memory on both sides: holes keep their bytes. */
static void vector_type(void)
{
    const int count = 20000, block = 3, stride = 5;
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(count, block, stride, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    size_t span = (size_t)((count - 1) * stride + block) * sizeof(int);
    int *h = (int *)xmalloc(span);
    for (size_t i = 0; i < span / sizeof(int); i++) h[i] = (int)(rank * 1000000 + i);
    void *s = dev_malloc(span), *r = dev_malloc(span);
    dev_put(s, h, span);
    memset(h, 0xEE, span);
    dev_put(r, h, span);
    MPI_Request rr;
    CHECK_MPI(MPI_Irecv(r, 1, vec, from, 99, MPI_COMM_WORLD, &rr));
    CHECK_MPI(MPI_Send(s, 1, vec, to, 99, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    dev_get(h, r, span);
    int bad = 0;
    for (size_t i = 0; i < span / sizeof(int) && !bad; i++) {
        int in_block = (int)(i % stride) < block;
        int want = in_block ? (int)(from * 1000000 + i) : (int)0xEEEEEEEE;
        if (h[i] != want) {
            CHECK(0, "vector element %zu: got %d want %d", i, h[i], want);
            bad = 1;
        }
    }
    dev_free(s);
    dev_free(r);
    free(h);
    MPI_Type_free(&vec);
}

/* A receive buffer too small: MPI_ERR_TRUNCATE, the part that fits arrives. */
static void truncation(void)
{
    size_t n = 100000, cap = 60000;
    void *s = dev_malloc(n), *r = dev_malloc(cap);
    fill_pattern(host_tmp, n, 7u + (unsigned)rank);
    dev_put(s, host_tmp, n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request rr;
    MPI_Status st;
    CHECK_MPI(MPI_Irecv(r, (int)cap, MPI_BYTE, from, 5, MPI_COMM_WORLD, &rr));
    CHECK_MPI(MPI_Send(s, (int)n, MPI_BYTE, to, 5, MPI_COMM_WORLD));
    int rc = MPI_Wait(&rr, &st);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE || error_class_of(st.MPI_ERROR) == MPI_ERR_TRUNCATE,
          "truncated receive: rc %d status error %d", rc, st.MPI_ERROR);
    dev_get(host_tmp, r, cap);
    CHECK_PATTERN(host_tmp, cap, 7u + (unsigned)from, "truncated receive");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    dev_free(s);
    dev_free(r);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int host_only = strcmp(mode, "host") == 0;
    if (!host_only) {
        int rc = dev_open();
        if (rc) return rc;
        if (strcmp(mode, "--probe") == 0) return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    host_tmp = (unsigned char *)xmalloc(8 << 20);

    if (host_only) {
        ring(HOST, HOST, 0, 8 << 20);
        ring(HOST, HOST, 1, 1 << 20);
        MPI_Finalize();
        return report("device_p2p host");
    }

    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    struct fake_cuda_stats before = dev_stats();
    unsigned long long staged_before = axon_counter("axon_pml_device_staged_sends");
    ring(DEVICE, DEVICE, 0, 8 << 20);
    struct fake_cuda_stats after = dev_stats();
    unsigned long long staged = axon_counter("axon_pml_device_staged_sends") - staged_before;
    if (dev.fake_stats && size > 1) {
        /* Each rank both sends and receives large device messages. */
        if (strcmp(mode, "ipc") == 0) {
            CHECK(after.ipc_opens > before.ipc_opens, "IPC path: no IPC handle opened");
            CHECK(staged == 0, "IPC path: %llu staged sends", staged);
            /* AXON_ACCEL_COPY_WAIT=event: each IPC copy is waited for by an event. */
            const char *wait = getenv("AXON_ACCEL_COPY_WAIT");
            if (wait && strcmp(wait, "event") == 0)
                CHECK(after.event_records > before.event_records, "IPC path, event wait: no event recorded");
            CHECK(after.bytes_dtod > before.bytes_dtod, "IPC path: no device-to-device copy");
        } else if (strcmp(mode, "staging") == 0) {
            CHECK(after.ipc_opens == before.ipc_opens, "staging: an IPC handle was opened");
            CHECK(staged > 0, "staging: no staged send");
            CHECK(after.event_records > before.event_records, "staging: no pipelined copy");
            CHECK(after.pinned_allocs > 0, "staging: no pinned buffer");
        }
    } else if (dev.fake_stats) {
        CHECK(after.bytes_dtod > before.bytes_dtod, "to oneself: no direct device copy");
        CHECK(after.ipc_opens == before.ipc_opens, "to oneself: IPC used");
    }
    /* The fake lets a copy from pageable memory return before its data lands,
     * as a GPU does: the test filled its send buffers that way, so Axon had to
     * order its own copies (and other processes' IPC reads) after them. */
    if (dev.fake_stats)
        CHECK(after.deferred_copies > before.deferred_copies, "the fake deferred no pageable copy");
    ring(DEVICE, HOST, 0, 1 << 20);
    ring(HOST, DEVICE, 0, 1 << 20);
    ring(MANAGED, DEVICE, 0, 1 << 20);
    ring(DEVICE, DEVICE, 1, 1 << 20);
    ring(DEVICE, MANAGED, 2, 1 << 20);
    vector_type();
    truncation();
    MPI_T_finalize();
    MPI_Finalize();
    free(host_tmp);
    return report("device_p2p");
}
