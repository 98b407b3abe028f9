/* Error classes of one-sided calls, raised through the WINDOW's error
 * handler: operations outside an epoch (MPI_ERR_RMA_SYNC), outside the target
 * window (MPI_ERR_RMA_RANGE), calls of the wrong flavor (MPI_ERR_RMA_FLAVOR: attach,
 * detach on a non-dynamic window),
 * mismatched synchronization, bad lock types, ranks, ops and handles; a user
 * window error handler receives the window and the code.
 *
 * Checked against MPICH 4: it agrees on every class here except those it does
 * not check at all (target ranges, the target rank of Put, Rput outside a
 * passive epoch: it returns MPI_SUCCESS) and the lock type (MPI_ERR_ARG where
 * MPI-4.1 names MPI_ERR_LOCKTYPE). */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

static int handler_calls, handler_code;
static MPI_Win handler_win;

static void on_error(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_win = *win;
}

/* A handler that clears the error: the failing call then returns what it left. */
static void clear_error(MPI_Win *win, int *code, ...)
{
    (void)win;
    handler_calls++;
    *code = MPI_SUCCESS;
}

#define EXPECT(call, cls)                                                                   \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CHECK(error_class_of(rc_) == (cls), "%s returned class %d, expected %s (%d)", #call, \
              error_class_of(rc_), #cls, (cls));                                            \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int right = (me + 1) % np;

    int buf[16] = {0}, res = 0, one = 1;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    /* A new window's handler is MPI_ERRORS_ARE_FATAL. */
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window error handler");
    MPI_Errhandler_free(&eh);
    /* ... which, as in MPICH, defers to MPI_COMM_SELF / MPI_COMM_WORLD's
     * handler: both return here, so the error comes back. */
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* Compare_and_swap types: MPI_CHAR is accepted (as MPICH does), MPI_FLOAT is not. */
    {
        char c = 'a', cc = 'a', cr = 0;
        float f = 1, fc = 1, fr = 0;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
        CHECK_MPI(MPI_Compare_and_swap(&c, &cc, &cr, MPI_CHAR, me, 0, win));
        EXPECT(MPI_Compare_and_swap(&f, &fc, &fr, MPI_FLOAT, me, 0, win), MPI_ERR_TYPE);
        CHECK_MPI(MPI_Win_unlock(me, win));
        CHECK(cr == 0, "CAS MPI_CHAR fetched %d", cr);
        buf[0] = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* No epoch. */
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Get(&res, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Fetch_and_op(&one, &res, MPI_INT, right, 0, MPI_SUM, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC);
    /* Wrong flavor. */
    EXPECT(MPI_Win_attach(win, buf, sizeof buf), MPI_ERR_RMA_FLAVOR);
    EXPECT(MPI_Win_detach(win, buf), MPI_ERR_RMA_FLAVOR);
    {
        /* Not for MPI_Win_shared_query: since MPI-4.1 it takes every flavor
         * (test/rma/rma_shared_query.c); another rank's private Win_create
         * memory answers size 0 and NULL. */
        MPI_Aint size = -1;
        int du = 0;
        void *p = &size;
        EXPECT(MPI_Win_shared_query(win, me, &size, &du, &p), MPI_SUCCESS);
        CHECK(size == (MPI_Aint)sizeof buf && du == (int)sizeof(int) && p == buf, "shared_query of our own memory");
    }
    /* Bad arguments. */
    EXPECT(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, np, 0, win), MPI_ERR_RANK);

    /* Inside a fence epoch: range and argument errors. */
    CHECK_MPI(MPI_Win_fence(0, win));
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 16, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(buf, 2, MPI_INT, right, 15, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Get(&res, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_DISP);
    EXPECT(MPI_Put(&one, 1, MPI_INT, np, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    EXPECT(MPI_Put(&one, -1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_COUNT);
    EXPECT(MPI_Put(&one, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    EXPECT(MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_NO_OP, win), MPI_ERR_OP);
    EXPECT(MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP);
    EXPECT(MPI_Fetch_and_op(&one, &res, MPI_INT, right, 16, MPI_SUM, win), MPI_ERR_RMA_RANGE);
    /* Request-based operations need a passive target epoch. */
    MPI_Request req = MPI_REQUEST_NULL;
    EXPECT(MPI_Rput(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req), MPI_ERR_RMA_SYNC);
    /* MPI_PROC_NULL targets do nothing. */
    CHECK_MPI(MPI_Put(&one, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);

    /* Passive target mismatches. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CHECK(win != MPI_WIN_NULL, "a failed MPI_Win_free keeps the window");
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 99, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    EXPECT(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
    CHECK_MPI(MPI_Win_unlock_all(win));

    /* A user handler on the window gets the window and the code; the call returns the code. */
    MPI_Errhandler user;
    CHECK_MPI(MPI_Win_create_errhandler(on_error, &user));
    CHECK_MPI(MPI_Win_set_errhandler(win, user));
    CHECK_MPI(MPI_Errhandler_free(&user));
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    CHECK(handler_calls == 1 && error_class_of(handler_code) == MPI_ERR_RMA_SYNC && handler_win == win,
          "user handler: %d calls, code %d", handler_calls, handler_code);
    CHECK_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && error_class_of(handler_code) == MPI_ERR_OTHER, "MPI_Win_call_errhandler: code %d", handler_code);
    CHECK_MPI(MPI_Win_create_errhandler(clear_error, &user));
    CHECK_MPI(MPI_Win_set_errhandler(win, user));
    CHECK_MPI(MPI_Errhandler_free(&user));
    int rc = MPI_Put(&one, 1, MPI_INT, np + 5, 0, 1, MPI_INT, win);
    CHECK(rc == MPI_SUCCESS && handler_calls == 3, "a handler that sets MPI_SUCCESS: call returned %d, %d calls", rc,
          handler_calls);
    CHECK_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 4, "MPI_Win_call_errhandler with the clearing handler: %d calls", handler_calls);
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_free(&win));

    /* Invalid window handles are raised on MPI_COMM_SELF. */
    EXPECT(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN);
    EXPECT(MPI_Win_free(&win), MPI_ERR_WIN);

    /* PSCW mismatches and dynamic windows. */
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Group g;
    CHECK_MPI(MPI_Win_get_group(win, &g));
    CHECK_MPI(MPI_Win_post(g, 0, win));
    EXPECT(MPI_Win_post(g, 0, win), MPI_ERR_RMA_SYNC);
    CHECK_MPI(MPI_Win_start(g, 0, win));
    EXPECT(MPI_Win_start(g, 0, win), MPI_ERR_RMA_SYNC);
    /* Nothing attached at the target: every address is outside the window. */
    MPI_Aint addr;
    MPI_Get_address(buf, &addr);
    EXPECT(MPI_Put(&one, 1, MPI_INT, right, addr, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    EXPECT(MPI_Win_detach(win, buf), MPI_ERR_RMA_RANGE);
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Win_free(&win));

    /* Creation arguments. */
    EXPECT(MPI_Win_create(buf, -1, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE);
    EXPECT(MPI_Win_create(buf, sizeof buf, 4, MPI_INFO_NULL, MPI_COMM_NULL, &win), MPI_ERR_COMM);

    MPI_Finalize();
    return report("rma_errors");
}
