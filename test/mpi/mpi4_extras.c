/* mpi4_extras: MPI-4 / MPI-4.1 / MPI-5.0 calls around point-to-point:
 * MPI_Isendrecv and MPI_Isendrecv_replace around a ring (eager and
 * rendezvous sizes); generalized requests (query/free/cancel callbacks, Test
 * before completion, Request_free before completion); Request_get_status_any/
 * all/some leave requests alive; status getters and setters, including
 * Status_set_elements on a derived type; handle <-> integer conversion of the
 * 5.0 ABI; Alloc_mem/Free_mem; Pcontrol; Abi_get_info; MPI_Buffer_iflush and
 * MPI_Buffer_flush wait for buffered messages to leave the buffer;
 * communicator buffers (MPI_Comm_attach_buffer and friends). */
#include <stdint.h>
#include "check.h"

struct gstate {
    int queries, frees, cancels, last_complete_flag;
};

static int g_query(void *extra, MPI_Status *status)
{
    struct gstate *g = extra;
    g->queries++;
    MPI_Status_set_source(status, 42);
    MPI_Status_set_tag(status, 7);
    MPI_Status_set_cancelled(status, 0);
    MPI_Status_set_elements(status, MPI_DOUBLE, 3);
    return MPI_SUCCESS;
}
static int g_free(void *extra)
{
    ((struct gstate *)extra)->frees++;
    return MPI_SUCCESS;
}
static int g_cancel(void *extra, int complete)
{
    struct gstate *g = extra;
    g->cancels++;
    g->last_complete_flag = complete;
    return MPI_SUCCESS;
}

static void ring_exchange(int rank, int size, int count)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *out = xmalloc((size_t)count * sizeof(int)), *in = xmalloc((size_t)count * sizeof(int));
    for (int i = 0; i < count; i++)
        out[i] = rank * 100000 + i;
    memset(in, 0xff, (size_t)count * sizeof(int));
    MPI_Request request;
    MPI_Status status;
    CHECK_MPI(MPI_Isendrecv(out, count, MPI_INT, right, 5, in, count, MPI_INT, left, 5, MPI_COMM_WORLD,
                            &request));
    CHECK_MPI(MPI_Wait(&request, &status));
    int got = -1, bad = -1;
    MPI_Get_count(&status, MPI_INT, &got);
    for (int i = 0; i < count && bad < 0; i++)
        if (in[i] != left * 100000 + i)
            bad = i;
    CHECK(bad < 0 && got == count && status.MPI_SOURCE == left && status.MPI_TAG == 5,
          "Isendrecv %d ints: bad element %d, count %d, source %d", count, bad, got, status.MPI_SOURCE);
    /* replace: the buffer goes right and comes back from the left */
    CHECK_MPI(MPI_Isendrecv_replace(out, count, MPI_INT, right, 6, left, 6, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Wait(&request, &status));
    bad = -1;
    for (int i = 0; i < count && bad < 0; i++)
        if (out[i] != left * 100000 + i)
            bad = i;
    CHECK(bad < 0 && status.MPI_SOURCE == left, "Isendrecv_replace %d ints: bad element %d", count, bad);
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    ring_exchange(rank, size, 0);
    ring_exchange(rank, size, 10);
    ring_exchange(rank, size, 300000); /* rendezvous */
    /* to and from MPI_PROC_NULL: completes with the null status */
    {
        int x = 1, y = 9;
        MPI_Request request;
        MPI_Status status;
        CHECK_MPI(MPI_Isendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, &y, 1, MPI_INT, MPI_PROC_NULL, 0,
                                MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Wait(&request, &status));
        CHECK(y == 9 && status.MPI_SOURCE == MPI_PROC_NULL, "Isendrecv with MPI_PROC_NULL: y %d source %d",
              y, status.MPI_SOURCE);
    }

    /* Generalized requests. */
    struct gstate g = {0, 0, 0, -1};
    MPI_Request greq;
    CHECK_MPI(MPI_Grequest_start(g_query, g_free, g_cancel, &g, &greq));
    int flag = 1;
    MPI_Status status;
    CHECK_MPI(MPI_Test(&greq, &flag, &status));
    CHECK(flag == 0 && greq != MPI_REQUEST_NULL, "Test of an incomplete generalized request: flag %d", flag);
    CHECK_MPI(MPI_Cancel(&greq));
    CHECK(g.cancels == 1 && g.last_complete_flag == 0, "cancel_fn: %d calls, complete %d", g.cancels,
          g.last_complete_flag);
    CHECK_MPI(MPI_Grequest_complete(greq));
    CHECK_MPI(MPI_Request_get_status(greq, &flag, &status));
    CHECK(flag == 1 && g.queries == 1 && g.frees == 0, "Request_get_status: flag %d queries %d frees %d", flag,
          g.queries, g.frees);
    CHECK_MPI(MPI_Wait(&greq, &status));
    int elements = -1, count = -1, cancelled = -1;
    MPI_Get_elements(&status, MPI_DOUBLE, &elements);
    MPI_Get_count(&status, MPI_DOUBLE, &count);
    MPI_Test_cancelled(&status, &cancelled);
    CHECK(greq == MPI_REQUEST_NULL && g.queries == 2 && g.frees == 1, "Wait: handle %p queries %d frees %d",
          (void *)greq, g.queries, g.frees);
    CHECK(status.MPI_SOURCE == 42 && status.MPI_TAG == 7 && elements == 3 && count == 3 && cancelled == 0,
          "generalized status: source %d tag %d elements %d count %d", status.MPI_SOURCE, status.MPI_TAG,
          elements, count);
    /* freed before completion: free_fn runs at Grequest_complete */
    struct gstate h = {0, 0, 0, -1};
    CHECK_MPI(MPI_Grequest_start(g_query, g_free, g_cancel, &h, &greq));
    MPI_Request keep = greq;
    CHECK_MPI(MPI_Request_free(&greq));
    CHECK(greq == MPI_REQUEST_NULL && h.frees == 0, "Request_free of an incomplete generalized request");
    CHECK_MPI(MPI_Grequest_complete(keep));
    CHECK(h.frees == 1 && h.queries == 0, "after completion: frees %d queries %d", h.frees, h.queries);

    /* Request_get_status_{any,all,some}: the requests stay alive. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size, out = rank, in[2] = {-1, -1};
        MPI_Request requests[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        CHECK_MPI(MPI_Irecv(&in[0], 1, MPI_INT, left, 11, MPI_COMM_WORLD, &requests[0]));
        CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &requests[1]));
        int all = 0;
        while (!all)
            CHECK_MPI(MPI_Request_get_status_all(3, requests, &all, MPI_STATUSES_IGNORE));
        CHECK(requests[0] != MPI_REQUEST_NULL && requests[1] != MPI_REQUEST_NULL,
              "Request_get_status_all freed requests");
        int index = -1, any = 0;
        CHECK_MPI(MPI_Request_get_status_any(3, requests, &index, &any, &status));
        CHECK(any == 1 && (index == 0 || index == 1) && requests[index] != MPI_REQUEST_NULL,
              "Request_get_status_any: flag %d index %d", any, index);
        int outcount = -1, indices[3];
        MPI_Status statuses[3];
        CHECK_MPI(MPI_Request_get_status_some(3, requests, &outcount, indices, statuses));
        CHECK(outcount == 2 && indices[0] == 0 && indices[1] == 1 && statuses[0].MPI_SOURCE == left,
              "Request_get_status_some: outcount %d", outcount);
        CHECK_MPI(MPI_Waitall(3, requests, MPI_STATUSES_IGNORE));
        CHECK(in[0] == left, "message through get_status calls: %d", in[0]);
        MPI_Request none[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        CHECK_MPI(MPI_Request_get_status_any(2, none, &index, &any, &status));
        CHECK(any == 1 && index == MPI_UNDEFINED, "get_status_any on nulls: flag %d index %d", any, index);
        CHECK_MPI(MPI_Request_get_status_some(2, none, &outcount, indices, statuses));
        CHECK(outcount == MPI_UNDEFINED, "get_status_some on nulls: %d", outcount);
    }

    /* Status accessors and set_elements on a struct type {int; double}. */
    {
        MPI_Status s;
        memset(&s, 0, sizeof s);
        CHECK_MPI(MPI_Status_set_source(&s, 3));
        CHECK_MPI(MPI_Status_set_tag(&s, 99));
        CHECK_MPI(MPI_Status_set_error(&s, MPI_ERR_TAG));
        int v1 = 0, v2 = 0, v3 = 0;
        MPI_Status_get_source(&s, &v1);
        MPI_Status_get_tag(&s, &v2);
        MPI_Status_get_error(&s, &v3);
        CHECK(v1 == 3 && v2 == 99 && v3 == MPI_ERR_TAG, "status getters %d %d %d", v1, v2, v3);
        int lengths[2] = {1, 1};
        MPI_Aint displs[2] = {0, 8};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, pair;
        CHECK_MPI(MPI_Type_create_struct(2, lengths, displs, types, &pair));
        CHECK_MPI(MPI_Type_commit(&pair));
        CHECK_MPI(MPI_Status_set_elements(&s, pair, 5)); /* 2 whole items + one int */
        int n_elements = -1, n_items = -1;
        MPI_Get_elements(&s, pair, &n_elements);
        MPI_Get_count(&s, pair, &n_items);
        CHECK(n_elements == 5 && n_items == MPI_UNDEFINED, "set_elements(pair, 5): elements %d count %d",
              n_elements, n_items);
        MPI_Count big = -1;
        CHECK_MPI(MPI_Status_set_elements_x(&s, MPI_INT, (MPI_Count)1 << 33));
        MPI_Get_elements_x(&s, MPI_INT, &big);
        CHECK(big == (MPI_Count)1 << 33, "set_elements_x beyond 32 bits: %lld", (long long)big);
        MPI_Type_free(&pair);
    }

    /* Handles <-> integers (MPI 5.0 ABI). */
    {
        CHECK(MPI_Comm_toint(MPI_COMM_WORLD) == (int)(intptr_t)MPI_COMM_WORLD, "toint(MPI_COMM_WORLD)");
        CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_SELF)) == MPI_COMM_SELF, "fromint(toint(SELF))");
        CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE, "Type round trip");
        CHECK(MPI_Op_fromint(MPI_Op_toint(MPI_SUM)) == MPI_SUM, "Op round trip");
        MPI_Comm dup;
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        int as_int = MPI_Comm_toint(dup);
        CHECK(as_int != MPI_Comm_toint(MPI_COMM_WORLD) && MPI_Comm_toint(dup) == as_int,
              "toint of a user communicator is stable and distinct");
        CHECK(MPI_Comm_fromint(as_int) == dup, "fromint(toint(dup)) gives dup back");
        MPI_Info info;
        CHECK_MPI(MPI_Info_create(&info));
        CHECK(MPI_Info_fromint(MPI_Info_toint(info)) == info, "Info round trip");
        MPI_Info_free(&info);
        CHECK(MPI_Comm_fromint(123456789) == MPI_COMM_NULL, "fromint of an unknown integer gives the null handle");
        CHECK_MPI(MPI_Comm_free(&dup));
    }

    /* Buffer flushing: a rendezvous-sized buffered message stays in the
     * buffer until its receiver, which posts only after the barrier, takes it. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        enum { BIG = 1 << 20 };
        int bytes = BIG + MPI_BSEND_OVERHEAD;
        char *attached = xmalloc((size_t)bytes), *out = xmalloc(BIG), *in = xmalloc(BIG);
        memset(out, rank + 1, BIG);
        CHECK_MPI(MPI_Buffer_attach(attached, bytes));
        CHECK_MPI(MPI_Bsend(out, BIG, MPI_CHAR, right, 31, MPI_COMM_WORLD));
        MPI_Request flush;
        CHECK_MPI(MPI_Buffer_iflush(&flush));
        int done = 1;
        CHECK_MPI(MPI_Test(&flush, &done, MPI_STATUS_IGNORE));
        CHECK(done == 0, "Buffer_iflush completed while a message was still buffered");
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(in, BIG, MPI_CHAR, left, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in[0] == left + 1 && in[BIG - 1] == left + 1, "buffered message content");
        CHECK_MPI(MPI_Wait(&flush, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Buffer_flush());
        void *back;
        int back_size;
        CHECK_MPI(MPI_Buffer_detach(&back, &back_size));
        CHECK(back == attached && back_size == bytes, "detach after flush");
        free(attached);
        free(out);
        free(in);
    }

    /* A communicator's own buffer (MPI-4.1): Bsend on the duplicate uses
     * it, not the (absent) process buffer; flushing and detaching it. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Comm dup;
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        enum { N = 3, LEN = 100 };
        int bytes = N * (LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *space = xmalloc((size_t)bytes);
        int out[LEN], in[LEN];
        CHECK_MPI(MPI_Comm_attach_buffer(dup, space, bytes));
        CHECK_MPI(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
        CHECK(error_class_of(MPI_Comm_attach_buffer(dup, space, bytes)) == MPI_ERR_BUFFER,
              "second Comm_attach_buffer");
        for (int m = 0; m < N; m++) {
            for (int i = 0; i < LEN; i++)
                out[i] = rank * 1000 + m * 100 + i;
            CHECK_MPI(MPI_Bsend(out, LEN, MPI_INT, right, 40 + m, dup));
        }
        MPI_Request flush;
        CHECK_MPI(MPI_Comm_iflush_buffer(dup, &flush));
        for (int m = 0; m < N; m++) {
            CHECK_MPI(MPI_Recv(in, LEN, MPI_INT, left, 40 + m, dup, MPI_STATUS_IGNORE));
            CHECK(in[0] == left * 1000 + m * 100 && in[LEN - 1] == left * 1000 + m * 100 + LEN - 1,
                  "message %d through the communicator's buffer", m);
        }
        CHECK_MPI(MPI_Wait(&flush, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Comm_flush_buffer(dup));
        void *back = NULL;
        int back_size = 0;
        CHECK_MPI(MPI_Comm_detach_buffer(dup, &back, &back_size));
        CHECK(back == space && back_size == bytes, "Comm_detach_buffer returned %p/%d", back, back_size);
        CHECK(error_class_of(MPI_Comm_detach_buffer(dup, &back, &back_size)) == MPI_ERR_BUFFER,
              "detaching twice");
        /* No buffer anywhere now: Bsend fails with MPI_ERR_BUFFER. */
        CHECK(error_class_of(MPI_Bsend(out, LEN, MPI_INT, right, 49, dup)) == MPI_ERR_BUFFER,
              "Bsend without any buffer");
        CHECK_MPI(MPI_Comm_free(&dup));
        free(space);
    }

    /* Alloc_mem / Free_mem, Pcontrol, Abi_get_info. */
    {
        double *memory = NULL;
        CHECK_MPI(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &memory));
        CHECK(memory != NULL && ((uintptr_t)memory % 64) == 0, "Alloc_mem: %p", (void *)memory);
        if (memory) {
            memory[0] = 1.0;
            memory[(1 << 17) - 1] = 2.0;
        }
        CHECK_MPI(MPI_Free_mem(memory));
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        void *never = NULL;
        CHECK(error_class_of(MPI_Alloc_mem(-1, MPI_INFO_NULL, &never)) == MPI_ERR_ARG, "negative Alloc_mem size");
        CHECK(MPI_Pcontrol(1) == MPI_SUCCESS && MPI_Pcontrol(0, "x") == MPI_SUCCESS, "Pcontrol");
        MPI_Info abi;
        CHECK_MPI(MPI_Abi_get_info(&abi));
        char value[MPI_MAX_INFO_VAL];
        int found = 0, length = MPI_MAX_INFO_VAL;
        CHECK_MPI(MPI_Info_get_string(abi, "mpi_aint_size", &length, value, &found));
        CHECK(found && atoi(value) == (int)sizeof(MPI_Aint), "mpi_aint_size '%s'", found ? value : "");
        length = MPI_MAX_INFO_VAL;
        CHECK_MPI(MPI_Info_get_string(abi, "mpi_count_size", &length, value, &found));
        CHECK(found && atoi(value) == 8, "mpi_count_size '%s'", found ? value : "");
        MPI_Info_free(&abi);
    }

    MPI_Finalize();
    return report("mpi4_extras");
}
