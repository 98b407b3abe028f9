/* p2p_ordering: MPI's non-overtaking rule. Messages from one sender on one
 * communicator with matching tags arrive in send order even when small
 * (eager) and huge (rendezvous) messages alternate; tag matching picks the
 * right messages when the receiver asks for tags in a different order.
 * Ranks work in pairs: even rank -> odd rank (a rank without partner sends to
 * itself). */
#include "check.h"

enum { N_MESSAGES = 200, SMALL = 8, HUGE_BYTES = 256 * 1024 };

static size_t size_of_message(int seq) { return seq % 2 ? HUGE_BYTES : SMALL; }

/* The first int of each message carries its sequence number, the rest is the
 * pattern for that sequence number. */
static void check_message(const unsigned char *buffer, const MPI_Status *status, int expected_seq,
                          const char *phase)
{
    int seq = -1, count = -1;
    memcpy(&seq, buffer, sizeof seq);
    CHECK(seq == expected_seq, "%s: message %d arrived in place of %d", phase, seq, expected_seq);
    MPI_Get_count(status, MPI_BYTE, &count);
    CHECK(count == (int)size_of_message(expected_seq), "%s: message %d has %d bytes", phase,
          expected_seq, count);
    if (seq == expected_seq && count > (int)sizeof seq)
        CHECK_PATTERN(buffer + sizeof seq, (size_t)count - sizeof seq, (unsigned)seq,
                      "%s: message %d", phase, seq);
}

static void make_messages(unsigned char **messages)
{
    for (int seq = 0; seq < N_MESSAGES; seq++) {
        size_t bytes = size_of_message(seq);
        messages[seq] = xmalloc(bytes);
        fill_pattern(messages[seq] + sizeof(int), bytes - sizeof(int), (unsigned)seq);
        memcpy(messages[seq], &seq, sizeof seq);
    }
}

/* Phase 1: all sends are started at once, the receiver takes them one by one
 * (mostly from the unexpected queue). Phase 2: the receiver pre-posts every
 * receive with wildcards and only then lets the sender go. */
static void same_tag_in_order(int rank, int sender, int receiver, unsigned char **messages)
{
    enum { TAG = 5, GO_TAG = 6 };
    MPI_Request requests[N_MESSAGES];
    unsigned char *landing = xmalloc(HUGE_BYTES);
    for (int phase = 1; phase <= 2; phase++) {
        const char *name = phase == 1 ? "unexpected, in order" : "pre-posted wildcards";
        unsigned char **slots = NULL;
        MPI_Request posted[N_MESSAGES];
        if (rank == receiver && phase == 2) {
            slots = xmalloc(N_MESSAGES * sizeof *slots);
            for (int seq = 0; seq < N_MESSAGES; seq++) {
                slots[seq] = xmalloc(HUGE_BYTES);
                CHECK_MPI(MPI_Irecv(slots[seq], HUGE_BYTES, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                    MPI_COMM_WORLD, &posted[seq]));
            }
            /* A rank talking to itself has posted everything already (and
             * its wildcard receives would swallow a GO message). */
            if (sender != receiver)
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, sender, GO_TAG, MPI_COMM_WORLD));
        }
        if (rank == sender) {
            if (phase == 2 && sender != receiver)
                CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, receiver, GO_TAG, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            for (int seq = 0; seq < N_MESSAGES; seq++)
                CHECK_MPI(MPI_Isend(messages[seq], (int)size_of_message(seq), MPI_BYTE, receiver,
                                    TAG, MPI_COMM_WORLD, &requests[seq]));
        }
        if (rank == receiver) {
            for (int seq = 0; seq < N_MESSAGES; seq++) {
                MPI_Status status;
                if (phase == 1) {
                    CHECK_MPI(MPI_Recv(landing, HUGE_BYTES, MPI_BYTE, sender, TAG, MPI_COMM_WORLD,
                                       &status));
                    check_message(landing, &status, seq, name);
                } else {
                    CHECK_MPI(MPI_Wait(&posted[seq], &status));
                    CHECK(status.MPI_SOURCE == sender && status.MPI_TAG == TAG,
                          "%s: source %d tag %d", name, status.MPI_SOURCE, status.MPI_TAG);
                    check_message(slots[seq], &status, seq, name);
                    free(slots[seq]);
                }
            }
        }
        if (rank == sender)
            CHECK_MPI(MPI_Waitall(N_MESSAGES, requests, MPI_STATUSES_IGNORE));
        free(slots);
    }
    free(landing);
}

/* Tags 1,2,3 interleaved (with a huge message now and then); the receiver
 * drains tag 3 first, then 2, then 1: within a tag the order must hold. */
static void interleaved_tags(int rank, int sender, int receiver, unsigned char **messages)
{
    enum { PER_TAG = 20, N_TAGS = 3 };
    MPI_Request requests[PER_TAG * N_TAGS];
    if (rank == sender)
        for (int i = 0; i < PER_TAG * N_TAGS; i++) {
            int tag = 1 + i % N_TAGS, seq = i; /* message i has seq i, size by seq */
            CHECK_MPI(MPI_Isend(messages[seq], (int)size_of_message(seq), MPI_BYTE, receiver, tag,
                                MPI_COMM_WORLD, &requests[i]));
        }
    if (rank == receiver) {
        unsigned char *landing = xmalloc(HUGE_BYTES);
        for (int tag = N_TAGS; tag >= 1; tag--)
            for (int k = 0; k < PER_TAG; k++) {
                MPI_Status status;
                CHECK_MPI(MPI_Recv(landing, HUGE_BYTES, MPI_BYTE, sender, tag, MPI_COMM_WORLD,
                                   &status));
                CHECK(status.MPI_TAG == tag, "asked tag %d, got %d", tag, status.MPI_TAG);
                check_message(landing, &status, k * N_TAGS + (tag - 1), "interleaved tags");
            }
        free(landing);
    }
    if (rank == sender)
        CHECK_MPI(MPI_Waitall(PER_TAG * N_TAGS, requests, MPI_STATUSES_IGNORE));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int partner = pair_partner(rank, size);
    int sender = rank < partner ? rank : partner;
    int receiver = rank < partner ? partner : rank;

    unsigned char *messages[N_MESSAGES];
    make_messages(messages);
    same_tag_in_order(rank, sender, receiver, messages);
    interleaved_tags(rank, sender, receiver, messages);
    for (int seq = 0; seq < N_MESSAGES; seq++)
        free(messages[seq]);

    MPI_Finalize();
    return report("p2p_ordering");
}
