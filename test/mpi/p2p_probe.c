/* p2p_probe: MPI_Probe/Iprobe report the envelope and size of the next
 * matching message without receiving it (eager and rendezvous sizes, tag and
 * source wildcards); MPI_Mprobe/Improbe remove the message from matching so
 * that MPI_Mrecv/Imrecv get exactly it while other receives cannot;
 * MPI_PROC_NULL probes; MPI_MESSAGE_NO_PROC. Every rank sends to its right
 * neighbour and receives from its left (a single rank talks to itself). */
#include "check.h"

static const int sizes[] = {0, 1, 100, 4096, 70000, 1 << 20};
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int i = 0; i < N_SIZES; i++) {
        int bytes = sizes[i];
        unsigned char *out = xmalloc((size_t)bytes), *in = xmalloc((size_t)bytes);
        fill_pattern(out, (size_t)bytes, (unsigned)(rank * 7 + i));
        MPI_Request sends[2];
        /* Two messages with different tags: probe the second tag first. */
        CHECK_MPI(MPI_Isend(out, bytes, MPI_BYTE, right, 10 + i, MPI_COMM_WORLD, &sends[0]));
        CHECK_MPI(MPI_Isend(out, bytes / 2, MPI_BYTE, right, 50 + i, MPI_COMM_WORLD, &sends[1]));

        MPI_Status status;
        CHECK_MPI(MPI_Probe(left, 50 + i, MPI_COMM_WORLD, &status));
        int count = -1;
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(status.MPI_SOURCE == left && status.MPI_TAG == 50 + i && count == bytes / 2,
              "Probe tag %d: source %d tag %d count %d", 50 + i, status.MPI_SOURCE, status.MPI_TAG,
              count);

        /* Iprobe with wildcards eventually sees one of them; Probe does not consume. */
        int flag = 0;
        while (!flag)
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status));
        CHECK(status.MPI_SOURCE == left, "Iprobe any source: %d, expected %d", status.MPI_SOURCE, left);
        CHECK(status.MPI_TAG == 10 + i || status.MPI_TAG == 50 + i, "Iprobe any tag: %d", status.MPI_TAG);

        /* Matched probe of the first tag; a wildcard receive posted later must
         * get the other message, not the matched one. */
        MPI_Message message = MPI_MESSAGE_NULL;
        CHECK_MPI(MPI_Mprobe(left, 10 + i, MPI_COMM_WORLD, &message, &status));
        CHECK(message != MPI_MESSAGE_NULL, "Mprobe returned MPI_MESSAGE_NULL");
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(count == bytes, "Mprobe count %d, expected %d", count, bytes);

        memset(in, 0, (size_t)bytes);
        CHECK_MPI(MPI_Recv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(status.MPI_TAG == 50 + i && count == bytes / 2,
              "wildcard receive after Mprobe got tag %d count %d", status.MPI_TAG, count);
        CHECK_PATTERN(in, (size_t)(bytes / 2), (unsigned)(left * 7 + i), "tag %d data", 50 + i);

        memset(in, 0, (size_t)bytes);
        if (i % 2) {
            CHECK_MPI(MPI_Mrecv(in, bytes, MPI_BYTE, &message, &status));
        } else {
            MPI_Request request;
            CHECK_MPI(MPI_Imrecv(in, bytes, MPI_BYTE, &message, &request));
            CHECK_MPI(MPI_Wait(&request, &status));
        }
        CHECK(message == MPI_MESSAGE_NULL, "Mrecv/Imrecv did not reset the message handle");
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(status.MPI_SOURCE == left && status.MPI_TAG == 10 + i && count == bytes,
              "Mrecv: source %d tag %d count %d", status.MPI_SOURCE, status.MPI_TAG, count);
        CHECK_PATTERN(in, (size_t)bytes, (unsigned)(left * 7 + i), "matched message of %d bytes", bytes);
        CHECK_MPI(MPI_Waitall(2, sends, MPI_STATUSES_IGNORE));
        free(out);
        free(in);
    }

    /* Improbe with nothing there says so. */
    int flag = 1;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    CHECK_MPI(MPI_Improbe(left, 999, MPI_COMM_WORLD, &flag, &message, &status));
    CHECK(flag == 0, "Improbe found a message that was never sent");

    /* MPI_PROC_NULL: probes return at once with the empty envelope. */
    CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    int count = -1;
    MPI_Get_count(&status, MPI_BYTE, &count);
    CHECK(status.MPI_SOURCE == MPI_PROC_NULL && status.MPI_TAG == MPI_ANY_TAG && count == 0,
          "Probe(MPI_PROC_NULL): source %d tag %d count %d", status.MPI_SOURCE, status.MPI_TAG, count);
    flag = 0;
    CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &flag, &status));
    CHECK(flag == 1, "Iprobe(MPI_PROC_NULL) flag %d", flag);
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &message, &status));
    CHECK(message == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
    int dummy = 42;
    CHECK_MPI(MPI_Mrecv(&dummy, 1, MPI_INT, &message, &status));
    CHECK(message == MPI_MESSAGE_NULL && dummy == 42 && status.MPI_SOURCE == MPI_PROC_NULL,
          "Mrecv(MPI_MESSAGE_NO_PROC) touched the buffer or kept the handle");

    MPI_Finalize();
    return report("p2p_probe");
}
