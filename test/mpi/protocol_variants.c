/* Which protocol carried each message, proven by Axon's MPI_T counters, for
 * the shared-memory transport's variants (run by transport_variants.sh with
 * the variant's settings; argv[1] names it):
 *
 *   default    large messages by single-copy read: one rendezvous piece per
 *              message at the receiver, no fragments, every byte copied by
 *              CMA (the two ranks' cma_bytes add up to exactly the bytes sent);
 *   no-cma     AXON_BTL_SM_CMA=0: no piece, no CMA byte, fragments instead;
 *   no-help    AXON_BTL_SM_CMA_SENDER_HELPS=0: the receiver copies every byte,
 *              the sender none;
 *   tiny-ring  AXON_BTL_SM_EAGER_LIMIT=256 AXON_BTL_SM_SLOTS=2: a burst of
 *              small sends finds the ring full, 1 KiB messages go rendezvous.
 *
 *   whole-pack AXON_PML_PACK_SEGMENT=0: large non-contiguous sends are
 *              packed whole before the receiver reads them.
 *
 * In every variant non-contiguous eager messages are packed straight into
 * the ring (axon_pml_eager_packed counts each), and the data is exact. Large
 * non-contiguous sends the receiver reads (all variants with CMA but
 * whole-pack) are packed segment by segment while it reads
 * (axon_pml_pipelined_packs counts each at the sender). */
#include <stdlib.h>
#include <string.h>

#include "counters.h"

enum { LARGE = 4 << 20, NLARGE = 4, NVECTOR = 10, BURST = 64, NSTRIDED = 3, STRIDED_BLOCKS = 100000 };

static unsigned long long total(const char *name)
{
    unsigned long long mine = axon_counter(name), sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    return sum;
}

int main(int argc, char **argv)
{
    const char *variant = argc > 1 ? argv[1] : "default";
    int provided, rank, size;
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run with 2 ranks, not %d", size);

    /* Non-contiguous eager: every other int of 64. */
    MPI_Datatype strided;
    CHECK_MPI(MPI_Type_vector(32, 1, 2, MPI_INT, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    int vec[64];
    unsigned long long packed0 = axon_counter("axon_pml_eager_packed");
    for (int m = 0; m < NVECTOR; m++) {
        if (rank == 0) {
            for (int i = 0; i < 64; i++) vec[i] = m * 1000 + i;
            CHECK_MPI(MPI_Send(vec, 1, strided, 1, m, MPI_COMM_WORLD));
        } else {
            int got[32];
            CHECK_MPI(MPI_Recv(got, 32, MPI_INT, 0, m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < 32; i++) CHECK(got[i] == m * 1000 + 2 * i, "vector %d item %d: %d", m, i, got[i]);
        }
    }
    unsigned long long packed = axon_counter("axon_pml_eager_packed") - packed0;
    if (rank == 0) CHECK(packed == NVECTOR, "%llu of %d strided sends packed into the ring", packed, NVECTOR);

    /* Large contiguous messages, rank 0 to rank 1. */
    unsigned long long pieces0 = axon_counter("axon_pml_rndv_pieces");
    unsigned long long frags0 = axon_counter("axon_pml_fragments_sent");
    unsigned long long cma0 = total("axon_btl_sm_cma_bytes");
    unsigned long long helped0 = axon_counter("axon_btl_sm_cma_helped_bytes");
    unsigned char *big = malloc(LARGE);
    CHECK(big != NULL, "malloc");
    for (int m = 0; m < NLARGE; m++) {
        if (rank == 0) {
            for (size_t i = 0; i < LARGE; i++) big[i] = (unsigned char)(i * 7 + m);
            CHECK_MPI(MPI_Send(big, LARGE, MPI_BYTE, 1, 100 + m, MPI_COMM_WORLD));
        } else {
            memset(big, 0, LARGE);
            CHECK_MPI(MPI_Recv(big, LARGE, MPI_BYTE, 0, 100 + m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (size_t i = 0; i < LARGE; i++)
                if (big[i] != (unsigned char)(i * 7 + m)) CHECK(0, "message %d byte %zu: %u", m, i, big[i]);
        }
    }
    unsigned long long pieces = axon_counter("axon_pml_rndv_pieces") - pieces0;
    unsigned long long frags = axon_counter("axon_pml_fragments_sent") - frags0;
    unsigned long long cma = total("axon_btl_sm_cma_bytes") - cma0;
    unsigned long long helped = axon_counter("axon_btl_sm_cma_helped_bytes") - helped0;
    unsigned long long all = (unsigned long long)NLARGE * LARGE;
    if (strcmp(variant, "default") == 0 || strcmp(variant, "no-help") == 0) {
        if (rank == 1) CHECK(pieces == NLARGE, "%s: %llu rendezvous pieces, expected %d", variant, pieces, NLARGE);
        if (rank == 0) CHECK(frags == 0, "%s: %llu fragments sent", variant, frags);
        CHECK(cma == all, "%s: %llu bytes moved by CMA, expected %llu", variant, cma, all);
        if (strcmp(variant, "no-help") == 0 && rank == 0)
            CHECK(helped == 0, "no-help: the sender copied %llu bytes", helped);
    } else if (strcmp(variant, "no-cma") == 0) {
        CHECK(pieces == 0, "no-cma: %llu rendezvous pieces", pieces);
        CHECK(cma == 0, "no-cma: %llu bytes moved by CMA", cma);
        if (rank == 0) CHECK(frags >= NLARGE, "no-cma: only %llu fragments", frags);
    }

    /* Large non-contiguous: blocks of 3 ints every 4 (1.2 MB of data),
     * received contiguous, then once into the same strided layout. */
    MPI_Datatype blocks;
    CHECK_MPI(MPI_Type_vector(STRIDED_BLOCKS, 3, 4, MPI_INT, &blocks));
    CHECK_MPI(MPI_Type_commit(&blocks));
    int *spread = malloc(sizeof(int) * 4 * STRIDED_BLOCKS), *dense = malloc(sizeof(int) * 3 * STRIDED_BLOCKS);
    CHECK(spread && dense, "malloc");
    unsigned long long pipelined0 = axon_counter("axon_pml_pipelined_packs");
    for (int m = 0; m < NSTRIDED; m++) {
        int into_strided = m == NSTRIDED - 1;
        if (rank == 0) {
            for (int i = 0; i < 4 * STRIDED_BLOCKS; i++) spread[i] = m * 7000000 + i;
            CHECK_MPI(MPI_Send(spread, 1, blocks, 1, 300 + m, MPI_COMM_WORLD));
        } else if (into_strided) {
            for (int i = 0; i < 4 * STRIDED_BLOCKS; i++) spread[i] = -1;
            CHECK_MPI(MPI_Recv(spread, 1, blocks, 0, 300 + m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < 4 * STRIDED_BLOCKS; i++) {
                int want = i % 4 == 3 ? -1 : m * 7000000 + i;
                if (spread[i] != want) {
                    CHECK(0, "strided message %d into strided: int %d is %d, want %d", m, i, spread[i], want);
                    break;
                }
            }
        } else {
            CHECK_MPI(MPI_Recv(dense, 3 * STRIDED_BLOCKS, MPI_INT, 0, 300 + m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < 3 * STRIDED_BLOCKS; i++) {
                int want = m * 7000000 + (i / 3) * 4 + i % 3;
                if (dense[i] != want) {
                    CHECK(0, "strided message %d: int %d is %d, want %d", m, i, dense[i], want);
                    break;
                }
            }
        }
    }
    unsigned long long pipelined = axon_counter("axon_pml_pipelined_packs") - pipelined0;
    int pipelines = strcmp(variant, "no-cma") != 0 && strcmp(variant, "whole-pack") != 0;
    if (rank == 0)
        CHECK(pipelined == (pipelines ? NSTRIDED : 0), "%s: %llu of %d large strided sends packed as they were read",
              variant, pipelined, NSTRIDED);
    free(spread);
    free(dense);
    MPI_Type_free(&blocks);

    if (strcmp(variant, "tiny-ring") == 0) {
        /* A burst to a receiver that posts late fills a 2-slot ring. */
        unsigned long long full0 = axon_counter("axon_btl_sm_ring_full");
        unsigned long long rndv0 = axon_counter("axon_pml_rendezvous_sends");
        int small[BURST], got[BURST];
        char kib[1024], kib_got[1024];
        MPI_Request reqs[BURST];
        if (rank == 0) {
            for (int i = 0; i < BURST; i++) {
                small[i] = i;
                CHECK_MPI(MPI_Isend(&small[i], 1, MPI_INT, 1, 200, MPI_COMM_WORLD, &reqs[i]));
            }
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Waitall(BURST, reqs, MPI_STATUSES_IGNORE));
            memset(kib, 'k', sizeof kib);
            CHECK_MPI(MPI_Send(kib, sizeof kib, MPI_CHAR, 1, 201, MPI_COMM_WORLD));
            unsigned long long full = axon_counter("axon_btl_sm_ring_full") - full0;
            unsigned long long rndv = axon_counter("axon_pml_rendezvous_sends") - rndv0;
            CHECK(full > 0, "tiny-ring: the 2-slot ring never filled in a burst of %d", BURST);
            CHECK(rndv == 1, "tiny-ring: %llu rendezvous sends for one 1 KiB message", rndv);
        } else {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            for (int i = 0; i < BURST; i++) CHECK_MPI(MPI_Recv(&got[i], 1, MPI_INT, 0, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < BURST; i++) CHECK(got[i] == i, "burst message %d: %d (order)", i, got[i]);
            CHECK_MPI(MPI_Recv(kib_got, sizeof kib_got, MPI_CHAR, 0, 201, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (size_t i = 0; i < sizeof kib_got; i++) CHECK(kib_got[i] == 'k', "1 KiB byte %zu", i);
        }
    }
    free(big);
    MPI_Type_free(&strided);
    MPI_T_finalize();
    MPI_Finalize();
    return report(variant);
}
