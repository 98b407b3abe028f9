/* p2p_nonblocking: MPI_Isend/MPI_Irecv with every completion call (Wait,
 * Test, Waitall/any/some, Testall/any/some), MPI_REQUEST_NULL entries,
 * empty statuses, MPI_Request_free on an active send, 500 unexpected
 * messages, MPI_Request_get_status. Ranks work in pairs (0<->1, 2<->3; a rank
 * without partner talks to itself). */
#include "check.h"

#define ERROR_FIELD_UNTOUCHED 0x5eed

static int rank, size, partner;

static void check_empty_status(const MPI_Status *status, const char *what)
{
    int count = -1;
    MPI_Get_count(status, MPI_BYTE, &count);
    CHECK(status->MPI_SOURCE == MPI_ANY_SOURCE && status->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: status not empty: source %d tag %d count %d", what, status->MPI_SOURCE,
          status->MPI_TAG, count);
    CHECK(status->MPI_ERROR == ERROR_FIELD_UNTOUCHED || status->MPI_ERROR == MPI_SUCCESS,
          "%s: MPI_ERROR %d", what, status->MPI_ERROR);
}

static void wait_and_test(void)
{
    enum { BYTES = 100000 };
    unsigned char *out = xmalloc(BYTES), *in = xmalloc(BYTES);
    for (int round = 0; round < 2; round++) {
        fill_pattern(out, BYTES, (unsigned)(rank + 10 * round));
        memset(in, 0, BYTES);
        MPI_Request recv_request, send_request;
        CHECK_MPI(MPI_Irecv(in, BYTES, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &recv_request));
        CHECK_MPI(MPI_Isend(out, BYTES, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &send_request));
        MPI_Status status;
        if (round == 0) {
            CHECK_MPI(MPI_Wait(&recv_request, &status));
            CHECK_MPI(MPI_Wait(&send_request, MPI_STATUS_IGNORE));
        } else {
            int done = 0;
            while (!done)
                CHECK_MPI(MPI_Test(&recv_request, &done, &status));
            for (done = 0; !done;)
                CHECK_MPI(MPI_Test(&send_request, &done, MPI_STATUS_IGNORE));
        }
        CHECK(recv_request == MPI_REQUEST_NULL && send_request == MPI_REQUEST_NULL,
              "completed requests are not MPI_REQUEST_NULL");
        int count = -1;
        MPI_Get_count(&status, MPI_BYTE, &count);
        CHECK(status.MPI_SOURCE == partner && status.MPI_TAG == 1 && count == BYTES,
              "round %d: source %d tag %d count %d", round, status.MPI_SOURCE, status.MPI_TAG,
              count);
        CHECK_PATTERN(in, BYTES, (unsigned)(partner + 10 * round), "%s round %d",
                      round ? "Test" : "Wait", round);
    }
    free(out);
    free(in);
}

/* N receives with tags 100+i, some slots MPI_REQUEST_NULL; the partner sends
 * one int per active slot, in reverse order so completions come out of order. */
enum { N_SLOTS = 8 };
static int slot_active(int i) { return i % 3 != 1; }

static void post_slots(MPI_Request *requests, int *values, MPI_Request *sends, int *payload)
{
    for (int i = 0; i < N_SLOTS; i++) {
        values[i] = -1;
        requests[i] = MPI_REQUEST_NULL;
        if (slot_active(i))
            CHECK_MPI(MPI_Irecv(&values[i], 1, MPI_INT, partner, 100 + i, MPI_COMM_WORLD,
                                &requests[i]));
    }
    for (int i = N_SLOTS - 1; i >= 0; i--) {
        sends[i] = MPI_REQUEST_NULL;
        payload[i] = rank * 1000 + i;
        if (slot_active(i))
            CHECK_MPI(MPI_Isend(&payload[i], 1, MPI_INT, partner, 100 + i, MPI_COMM_WORLD,
                                &sends[i]));
    }
}

static void check_slot(int index, const MPI_Status *status, const int *values, int *seen,
                       const char *call)
{
    CHECK(index >= 0 && index < N_SLOTS && slot_active(index), "%s: index %d", call, index);
    if (index < 0 || index >= N_SLOTS)
        return;
    CHECK(!seen[index], "%s: index %d completed twice", call, index);
    seen[index] = 1;
    CHECK(status->MPI_TAG == 100 + index && status->MPI_SOURCE == partner,
          "%s: slot %d has tag %d source %d", call, index, status->MPI_TAG, status->MPI_SOURCE);
    CHECK(values[index] == partner * 1000 + index, "%s: slot %d got %d", call, index,
          values[index]);
}

static void check_all_seen(const int *seen, const char *call)
{
    for (int i = 0; i < N_SLOTS; i++)
        CHECK(seen[i] == slot_active(i), "%s: slot %d seen %d times", call, i, seen[i]);
}

/* Waitall/Testall fill status i for request i; a null slot gets an empty one. */
static void check_statuses_by_slot(const MPI_Status *statuses, const int *values, int *seen,
                                   const char *call)
{
    for (int i = 0; i < N_SLOTS; i++)
        if (slot_active(i))
            check_slot(i, &statuses[i], values, seen, call);
        else
            CHECK(statuses[i].MPI_SOURCE == MPI_ANY_SOURCE && statuses[i].MPI_TAG == MPI_ANY_TAG,
                  "%s: null slot %d has source %d tag %d", call, i, statuses[i].MPI_SOURCE,
                  statuses[i].MPI_TAG);
}

static void multiple_completion(void)
{
    const char *calls[] = {"Waitall", "Waitany", "Waitsome", "Testall", "Testany", "Testsome"};
    for (int which = 0; which < 6; which++) {
        const char *call = calls[which];
        MPI_Request requests[N_SLOTS], sends[N_SLOTS];
        int values[N_SLOTS], payload[N_SLOTS], seen[N_SLOTS] = {0};
        MPI_Status statuses[N_SLOTS];
        post_slots(requests, values, sends, payload);
        int index = -1, flag = 0, outcount = -1, indices[N_SLOTS];
        MPI_Status status;
        switch (which) {
        case 0:
            CHECK_MPI(MPI_Waitall(N_SLOTS, requests, statuses));
            check_statuses_by_slot(statuses, values, seen, call);
            break;
        case 1:
            for (;;) {
                CHECK_MPI(MPI_Waitany(N_SLOTS, requests, &index, &status));
                if (index == MPI_UNDEFINED)
                    break;
                check_slot(index, &status, values, seen, call);
                CHECK(requests[index] == MPI_REQUEST_NULL, "Waitany left slot %d active", index);
            }
            break;
        case 2:
            for (;;) {
                CHECK_MPI(MPI_Waitsome(N_SLOTS, requests, &outcount, indices, statuses));
                if (outcount == MPI_UNDEFINED)
                    break;
                CHECK(outcount >= 1 && outcount <= N_SLOTS, "Waitsome outcount %d", outcount);
                for (int k = 0; k < outcount && k < N_SLOTS; k++)
                    check_slot(indices[k], &statuses[k], values, seen, call);
            }
            break;
        case 3:
            while (!flag)
                CHECK_MPI(MPI_Testall(N_SLOTS, requests, &flag, statuses));
            check_statuses_by_slot(statuses, values, seen, call);
            break;
        case 4:
            for (;;) {
                CHECK_MPI(MPI_Testany(N_SLOTS, requests, &index, &flag, &status));
                if (flag && index == MPI_UNDEFINED)
                    break;
                if (flag)
                    check_slot(index, &status, values, seen, call);
                else
                    CHECK(index == MPI_UNDEFINED, "Testany: flag false but index %d", index);
            }
            break;
        case 5:
            for (;;) {
                CHECK_MPI(MPI_Testsome(N_SLOTS, requests, &outcount, indices, statuses));
                if (outcount == MPI_UNDEFINED)
                    break;
                CHECK(outcount >= 0 && outcount <= N_SLOTS, "Testsome outcount %d", outcount);
                for (int k = 0; k < outcount && k < N_SLOTS; k++)
                    check_slot(indices[k], &statuses[k], values, seen, call);
            }
            break;
        }
        check_all_seen(seen, call);
        for (int i = 0; i < N_SLOTS; i++)
            CHECK(requests[i] == MPI_REQUEST_NULL, "%s left slot %d active", call, i);
        CHECK_MPI(MPI_Waitall(N_SLOTS, sends, MPI_STATUSES_IGNORE));
    }

    /* With no active request at all the answers are fixed by the standard. */
    MPI_Request none[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int index = 0, flag = 0, outcount = 0, indices[3];
    MPI_Status statuses[3], status;
    CHECK_MPI(MPI_Waitany(3, none, &index, &status));
    CHECK(index == MPI_UNDEFINED, "Waitany on nulls: index %d", index);
    CHECK_MPI(MPI_Testany(3, none, &index, &flag, &status));
    CHECK(index == MPI_UNDEFINED && flag, "Testany on nulls: index %d flag %d", index, flag);
    CHECK_MPI(MPI_Waitsome(3, none, &outcount, indices, statuses));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome on nulls: outcount %d", outcount);
    CHECK_MPI(MPI_Testsome(3, none, &outcount, indices, statuses));
    CHECK(outcount == MPI_UNDEFINED, "Testsome on nulls: outcount %d", outcount);
    flag = 0;
    CHECK_MPI(MPI_Testall(3, none, &flag, statuses));
    CHECK(flag, "Testall on nulls: flag %d", flag);
    CHECK_MPI(MPI_Waitall(0, none, statuses));
}

static void null_request(void)
{
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Status status;
    status.MPI_ERROR = ERROR_FIELD_UNTOUCHED;
    CHECK_MPI(MPI_Wait(&request, &status));
    check_empty_status(&status, "Wait(MPI_REQUEST_NULL)");
    int flag = 0;
    status.MPI_ERROR = ERROR_FIELD_UNTOUCHED;
    CHECK_MPI(MPI_Test(&request, &flag, &status));
    CHECK(flag, "Test(MPI_REQUEST_NULL) flag %d", flag);
    check_empty_status(&status, "Test(MPI_REQUEST_NULL)");
}

/* A freed send still delivers its data. The buffer stays untouched until the
 * partner confirmed receipt. */
static void free_active_send(void)
{
    enum { BYTES = 200000 };
    unsigned char *out = xmalloc(BYTES), *in = xmalloc(BYTES);
    fill_pattern(out, BYTES, (unsigned)rank + 77);
    MPI_Request recv_request, send_request;
    CHECK_MPI(MPI_Irecv(in, BYTES, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &recv_request));
    CHECK_MPI(MPI_Isend(out, BYTES, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &send_request));
    CHECK_MPI(MPI_Request_free(&send_request));
    CHECK(send_request == MPI_REQUEST_NULL, "Request_free did not null the handle");
    CHECK_MPI(MPI_Wait(&recv_request, MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, BYTES, (unsigned)partner + 77, "freed send");
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 3, NULL, 0, MPI_BYTE, partner, 3,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    free(out);
    free(in);
}

/* 500 messages wait unexpected at the receiver before any receive is posted:
 * the partner's DONE message (sent after them) is received first, then the
 * receives are posted in reverse tag order. Every 100th message is large. */
static void many_unexpected(void)
{
    enum { N = 500, DONE_TAG = 9999, LARGE = 150000 };
    static int small_out[N], small_in[N];
    unsigned char *large_out = xmalloc(LARGE * 5), *large_in = xmalloc(LARGE * 5);
    MPI_Request sends[N + 1], recvs[N];
    for (int i = 0; i < N; i++) {
        small_out[i] = rank * 100000 + i;
        small_in[i] = -1;
    }
    fill_pattern(large_out, LARGE * 5, (unsigned)rank + 500);
    memset(large_in, 0, LARGE * 5);
    for (int i = 0; i < N; i++) {
        if (i % 100 == 50)
            CHECK_MPI(MPI_Isend(large_out + (i / 100) * LARGE, LARGE, MPI_BYTE, partner, i,
                                MPI_COMM_WORLD, &sends[i]));
        else
            CHECK_MPI(MPI_Isend(&small_out[i], 1, MPI_INT, partner, i, MPI_COMM_WORLD,
                                &sends[i]));
    }
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_BYTE, partner, DONE_TAG, MPI_COMM_WORLD, &sends[N]));
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, DONE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = N - 1; i >= 0; i--) {
        if (i % 100 == 50)
            CHECK_MPI(MPI_Irecv(large_in + (i / 100) * LARGE, LARGE, MPI_BYTE, partner, i,
                                MPI_COMM_WORLD, &recvs[i]));
        else
            CHECK_MPI(MPI_Irecv(&small_in[i], 1, MPI_INT, partner, i, MPI_COMM_WORLD, &recvs[i]));
    }
    CHECK_MPI(MPI_Waitall(N, recvs, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Waitall(N + 1, sends, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++)
        if (i % 100 != 50 && small_in[i] != partner * 100000 + i) {
            CHECK(0, "unexpected message %d holds %d", i, small_in[i]);
            break;
        }
    CHECK_PATTERN(large_in, LARGE * 5, (unsigned)partner + 500, "large unexpected messages");
    free(large_out);
    free(large_in);
}

/* MPI_Request_get_status reports completion without freeing the request. The
 * partner sends only after our GO, so the first query must say "not yet". */
static void get_status(void)
{
    enum { GO_TAG = 20, DATA_TAG = 21 };
    int in = -1, out = rank + 4242;
    MPI_Request request, go_request, send_request;
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, partner, DATA_TAG, MPI_COMM_WORLD, &request));
    int flag = -1;
    MPI_Status status;
    CHECK_MPI(MPI_Request_get_status(request, &flag, &status));
    CHECK(flag == 0, "get_status says complete before anything was sent");
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_BYTE, partner, GO_TAG, MPI_COMM_WORLD, &go_request));
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, GO_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, partner, DATA_TAG, MPI_COMM_WORLD, &send_request));
    for (flag = 0; !flag;)
        CHECK_MPI(MPI_Request_get_status(request, &flag, &status));
    CHECK(request != MPI_REQUEST_NULL, "get_status freed the request");
    CHECK(status.MPI_SOURCE == partner && status.MPI_TAG == DATA_TAG,
          "get_status: source %d tag %d", status.MPI_SOURCE, status.MPI_TAG);
    CHECK_MPI(MPI_Wait(&request, &status));
    CHECK(in == partner + 4242, "get_status data %d", in);
    CHECK_MPI(MPI_Wait(&go_request, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&send_request, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    partner = pair_partner(rank, size);
    wait_and_test();
    multiple_completion();
    null_request();
    free_active_send();
    many_unexpected();
    get_status();
    MPI_Finalize();
    return report("p2p_nonblocking");
}
