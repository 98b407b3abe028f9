/* MPI_Win_shared_query on windows of every flavor (MPI-4.1 12.2.3):
 *   rma_shared_query FLAVOR      FLAVOR = create | allocate | shared | dynamic
 * The call succeeds for every rank of the window. Where this process can
 * load and store the target's memory directly, it returns that memory's size,
 * disp_unit and address here; where it cannot, size 0 and a NULL pointer
 * (with the target's disp_unit). Which memory is directly addressable here:
 *   shared    every rank's (one node);
 *   allocate  every rank's of this node (the window lives in one shared segment);
 *   create    our own, and other ranks' only when their memory was moved to
 *             shared memory (AXON_OSC_SHARE_CREATE=1, test/rma/share.sh);
 *   dynamic   none (a dynamic window has no memory of its own: size 0).
 * Every rank r exposes (r == 0 && np > 1) ? 0 : 8 * (r + 1) ints with
 * disp_unit r + 1 (dynamic: disp_unit 1), holding 1000 * r + i; every pointer
 * returned must show exactly that. MPI_PROC_NULL: the lowest rank with size >
 * 0 among those whose memory is addressable here (for shared windows: the
 * lowest rank with size > 0), or size 0 and NULL when there is none. A rank
 * outside the window is MPI_ERR_RANK. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

static int ints_of(int r, int np) { return (r == 0 && np > 1) ? 0 : 8 * (r + 1); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "create";
    const int dynamic = strcmp(flavor, "dynamic") == 0;
    const int shared = strcmp(flavor, "shared") == 0;
    const int allocate = strcmp(flavor, "allocate") == 0;
    const int create = strcmp(flavor, "create") == 0;
    CHECK(dynamic || shared || allocate || create, "unknown flavor %s", flavor);

    int n = ints_of(me, np);
    int disp_unit = dynamic ? 1 : me + 1;
    MPI_Aint bytes = (MPI_Aint)n * (MPI_Aint)sizeof(int);
    int *mine = NULL, *attached = NULL;
    MPI_Win win;
    if (shared || allocate) {
        int (*make)(MPI_Aint, int, MPI_Info, MPI_Comm, void *, MPI_Win *) =
            shared ? MPI_Win_allocate_shared : MPI_Win_allocate;
        CHECK_MPI(make(bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    } else if (create) {
        mine = malloc(bytes ? (size_t)bytes : 1);
        CHECK_MPI(MPI_Win_create(bytes ? mine : NULL, bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        /* Attached memory does not make a dynamic window's size. */
        attached = malloc(64 * sizeof(int));
        CHECK_MPI(MPI_Win_attach(win, attached, 64 * sizeof(int)));
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < n && mine; i++) mine[i] = 1000 * me + i;
    CHECK_MPI(MPI_Win_fence(0, win));  /* everyone's memory is written before anyone reads it */

    int lowest_addressable = -1;  /* lowest rank with size > 0 whose memory we can address */
    for (int r = 0; r < np; r++) {
        MPI_Aint size = -1;
        int du = -1;
        int *base = (int *)&size; /* anything but NULL */
        int rc = MPI_Win_shared_query(win, r, &size, &du, &base);
        CHECK(error_class_of(rc) == MPI_SUCCESS, "%s: shared_query(rank %d) returned class %d, not MPI_SUCCESS",
              flavor, r, error_class_of(rc));
        if (rc != MPI_SUCCESS) continue;
        int want_n = ints_of(r, np);
        int want_du = dynamic ? 1 : r + 1;
        CHECK(du == want_du, "%s: shared_query(rank %d): disp_unit %d, expected %d", flavor, r, du, want_du);
        int must_be_addressable = !dynamic && (shared || allocate || r == me) && want_n > 0;
        if (dynamic || want_n == 0)
            CHECK(size == 0 && base == NULL, "%s: shared_query(rank %d): size %ld base %p, expected 0 and NULL",
                  flavor, r, (long)size, (void *)base);
        else if (must_be_addressable)
            CHECK(size == (MPI_Aint)(want_n * sizeof(int)) && base != NULL,
                  "%s: shared_query(rank %d): size %ld base %p, expected %ld bytes and its address", flavor, r,
                  (long)size, (void *)base, (long)(want_n * sizeof(int)));
        else
            CHECK((size == 0 && base == NULL) || (size == (MPI_Aint)(want_n * sizeof(int)) && base != NULL),
                  "%s: shared_query(rank %d): size %ld base %p: neither its memory nor 0 and NULL", flavor, r,
                  (long)size, (void *)base);
        if (r == me && !dynamic && want_n > 0)
            CHECK(base == mine, "%s: shared_query(own rank) gave %p, not the window memory %p", flavor,
                  (void *)base, (void *)mine);
        if (size > 0 && base) {
            if (lowest_addressable < 0) lowest_addressable = r;
            for (int i = 0; i < want_n; i++)
                if (base[i] != 1000 * r + i) {
                    CHECK(0, "%s: rank %d's memory through shared_query: [%d] = %d, expected %d", flavor, r, i,
                          base[i], 1000 * r + i);
                    break;
                }
        }
    }
    if (shared) CHECK(lowest_addressable == (np > 1 ? 1 : 0), "shared: rank %d is not the lowest with memory",
                      lowest_addressable);

    /* MPI_PROC_NULL */
    {
        MPI_Aint size = -1;
        int du = -1;
        int *base = (int *)&size;
        CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &du, &base));
        if (lowest_addressable < 0) {
            CHECK(size == 0 && base == NULL, "%s: shared_query(MPI_PROC_NULL): size %ld base %p, expected 0 and NULL",
                  flavor, (long)size, (void *)base);
        } else {
            int r = lowest_addressable;
            MPI_Aint want = (MPI_Aint)(ints_of(r, np) * sizeof(int));
            CHECK(size == want && du == (dynamic ? 1 : r + 1) && base != NULL && base[0] == 1000 * r,
                  "%s: shared_query(MPI_PROC_NULL): size %ld disp_unit %d, expected rank %d's %ld and %d", flavor,
                  (long)size, du, r, (long)want, dynamic ? 1 : r + 1);
        }
    }

    /* Ranks outside the window. */
    {
        MPI_Aint size;
        int du;
        void *base;
        CHECK(error_class_of(MPI_Win_shared_query(win, np, &size, &du, &base)) == MPI_ERR_RANK,
              "%s: shared_query(rank np) is not MPI_ERR_RANK", flavor);
        CHECK(error_class_of(MPI_Win_shared_query(win, -5, &size, &du, &base)) == MPI_ERR_RANK,
              "%s: shared_query(rank -5) is not MPI_ERR_RANK", flavor);
    }

    CHECK_MPI(MPI_Win_fence(0, win));
    if (dynamic) CHECK_MPI(MPI_Win_detach(win, attached));
    CHECK_MPI(MPI_Win_free(&win));
    if (create) free(mine);
    free(attached);
    MPI_Finalize();
    return report("rma_shared_query");
}
