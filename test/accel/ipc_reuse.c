/* CUDA IPC mappings of freed allocations (accel::ipc_open). Rank 0 sends
 * from a device buffer, frees it, allocates again at the same address (the
 * fake's FAKE_CUDA_REUSE_FREED=1: a new allocation, new buffer id) and
 * sends again: rank 1 gets the new data each time, opens one mapping per
 * allocation and closes the old one when the address comes back
 * (cuIpcCloseMemHandle, counted by the fake), so one mapping stays open
 * however many rounds. Then the cap: with AXON_ACCEL_IPC_MAPPINGS=3, sends
 * from 5 live allocations leave 3 mappings open (the 2 least recently
 * used closed), a send from a cached one opens nothing, and one from an
 * evicted one maps it again.
 *   ipc_reuse   (2 ranks, the fake driver; skips, exit 77, without it) */
#include <mpi.h>

#include "../mpi/check.h"
#include "device.h"

enum { kBytes = 1 << 20, kRounds = 5, kLive = 5, kCap = 3 };

static int rank;

static void fill(unsigned char *h, int tag)
{
    for (size_t i = 0; i < kBytes; i++) h[i] = (unsigned char)(i * 31 + (size_t)tag * 7 + 1);
}

/* Rank 0 sends `kBytes` from device buffer d holding pattern `tag`; rank 1
 * receives into host memory and checks it. */
static void transfer(void *d, int tag, const char *what)
{
    unsigned char *h = (unsigned char *)xmalloc(kBytes);
    if (rank == 0) {
        fill(h, tag);
        dev_put(d, h, kBytes);
        CHECK_MPI(MPI_Send(d, kBytes, MPI_BYTE, 1, tag, MPI_COMM_WORLD));
    } else {
        unsigned char *want = (unsigned char *)xmalloc(kBytes);
        fill(want, tag);
        CHECK_MPI(MPI_Recv(h, kBytes, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(memcmp(h, want, kBytes) == 0, "%s (pattern %d): received data is not what was sent", what, tag);
        free(want);
    }
    free(h);
}

/* Rank 1's IPC opens and closes since `base`, checked on rank 1. */
static void expect_ipc(const struct fake_cuda_stats *base, unsigned long opens, unsigned long closes, const char *what)
{
    if (rank != 1) return;
    struct fake_cuda_stats now = dev_stats();
    CHECK(now.ipc_opens - base->ipc_opens == opens && now.ipc_closes - base->ipc_closes == closes,
          "%s: %lu IPC opens, %lu closes (expected %lu, %lu)", what, now.ipc_opens - base->ipc_opens,
          now.ipc_closes - base->ipc_closes, opens, closes);
}

int main(int argc, char **argv)
{
    setenv("FAKE_CUDA_REUSE_FREED", "1", 1);
    setenv("AXON_ACCEL_IPC_MAPPINGS", "3", 1);
    int rc = dev_open();
    if (rc) return rc;
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
    if (!dev.fake_stats) {
        printf("skip: needs the fake CUDA driver (address reuse on demand)\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) printf("ipc_reuse needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }

    /* Free and allocate again at the same address, kRounds times. */
    struct fake_cuda_stats base = dev_stats();
    void *first = NULL;
    for (int round = 0; round < kRounds; round++) {
        void *d = rank == 0 ? dev_malloc(kBytes) : NULL;
        if (rank == 0 && round == 0) first = d;
        if (rank == 0) CHECK(d == first, "round %d: the fake did not reuse the freed address (%p, first %p)", round, d, first);
        transfer(d, round, "reused address");
        /* The same allocation again: the cached mapping serves it. */
        transfer(d, 100 + round, "same allocation");
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0) dev_free(d);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        char what[64];
        snprintf(what, sizeof what, "after round %d", round);
        /* One open per allocation; every allocation but the first closed the previous one's mapping. */
        expect_ipc(&base, (unsigned long)round + 1, (unsigned long)round, what);
    }
    if (rank == 1) {
        struct fake_cuda_stats now = dev_stats();
        /* ipc opens minus closes: the mappings open now. */
        CHECK(now.ipc_opens - now.ipc_closes == 1, "%lu IPC mappings open after %d reused allocations",
              now.ipc_opens - now.ipc_closes, kRounds);
    }

    /* The cap: kLive live allocations, AXON_ACCEL_IPC_MAPPINGS=3. */
    base = dev_stats();
    void *live[kLive] = {NULL};
    for (int i = 0; i < kLive; i++) {
        /* Distinct sizes: the fake hands no freed address out for them. */
        if (rank == 0) live[i] = dev_malloc(kBytes + 4096 * (size_t)(i + 1));
        transfer(live[i], 200 + i, "live allocation");
    }
    /* The reused-address mapping of above and allocations 0, 1 were evicted. */
    expect_ipc(&base, kLive, kLive - kCap + 1, "5 live allocations, cap 3");
    transfer(live[kLive - 1], 300, "cached mapping");
    expect_ipc(&base, kLive, kLive - kCap + 1, "a send from a cached allocation");
    transfer(live[0], 301, "evicted mapping");
    expect_ipc(&base, kLive + 1, kLive - kCap + 2, "a send from an evicted allocation");
    if (rank == 1) {
        struct fake_cuda_stats now = dev_stats();
        CHECK(now.ipc_opens - now.ipc_closes == kCap, "%lu IPC mappings open, cap %d", now.ipc_opens - now.ipc_closes,
              kCap);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < kLive; i++) dev_free(live[i]);
    MPI_Finalize();
    return report("ipc_reuse");
}
