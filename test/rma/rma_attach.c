/* Many regions attached to one dynamic window (MPICH's suite attaches 1000):
 * every rank attaches R small regions, detaches every other one, then the
 * ranks Put into and Get from the remaining ones of their right neighbour
 * (first, middle and last) and Put into a detached one, which must fail with
 * MPI_ERR_RMA_RANGE (MPI_ERRORS_RETURN on the window; MPICH does not check
 * this and writes the memory: those two checks fail there). Finally
 * everything is detached and freed. Also: one array attached as two
 * regions (two MPI_Win_attach calls), and a Put / Get spanning both (MPICH
 * accepts it: win_dynamic_rma_flush_get). Exact values. */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

#define R 1000 /* regions per rank */
#define E 16   /* ints per region */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int right = (me + 1) % np, left = (me + np - 1) % np;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int **reg = malloc(sizeof(int *) * R);
    MPI_Aint *mine = malloc(sizeof(MPI_Aint) * R), *theirs = malloc(sizeof(MPI_Aint) * R);
    for (int i = 0; i < R; i++) {
        reg[i] = malloc(sizeof(int) * E);
        for (int k = 0; k < E; k++) reg[i][k] = -1;
        CHECK_MPI(MPI_Win_attach(win, reg[i], sizeof(int) * E));
        MPI_Get_address(reg[i], &mine[i]);
    }
    /* Detach the odd regions: the slots they used are reused or skipped. */
    for (int i = 1; i < R; i += 2) CHECK_MPI(MPI_Win_detach(win, reg[i]));
    int *pair = malloc(sizeof(int) * 2 * E);
    for (int k = 0; k < 2 * E; k++) pair[k] = -1;
    CHECK_MPI(MPI_Win_attach(win, pair, sizeof(int) * E));
    CHECK_MPI(MPI_Win_attach(win, pair + E, sizeof(int) * E));
    MPI_Aint pair_mine, pair_theirs;
    MPI_Get_address(pair, &pair_mine);
    MPI_Sendrecv(mine, R, MPI_AINT, left, 0, theirs, R, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&pair_mine, 1, MPI_AINT, left, 1, &pair_theirs, 1, MPI_AINT, right, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);

    const int pick[3] = {0, R / 2, R - 2}; /* attached (even) regions */
    int val[4][E], back[E]; /* one origin buffer per Put: each stays untouched until the flush */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    for (int j = 0; j < 3; j++) {
        for (int k = 0; k < E; k++) val[j][k] = me * 100000 + pick[j] * 100 + k;
        CHECK_MPI(MPI_Put(val[j], E, MPI_INT, right, theirs[pick[j]], E, MPI_INT, win));
    }
    /* A detached region (odd index) is not in the window any more. */
    for (int k = 0; k < E; k++) val[3][k] = 7;
    int rc = MPI_Put(val[3], E, MPI_INT, right, theirs[R - 1], E, MPI_INT, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "put into a detached region: class %d", cls);
    /* Across the boundary of the two halves: elements E/2 .. E/2+E-1. */
    int span[E], span_back[E];
    for (int k = 0; k < E; k++) span[k] = me * 1000 + k;
    CHECK_MPI(MPI_Put(span, E, MPI_INT, right, pair_theirs + (MPI_Aint)sizeof(int) * (E / 2), E, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Get(span_back, E, MPI_INT, right, pair_theirs + (MPI_Aint)sizeof(int) * (E / 2), E, MPI_INT,
                      win));
    CHECK_MPI(MPI_Win_flush(right, win));
    for (int k = 0; k < E; k++) CHECK(span_back[k] == me * 1000 + k, "spanning get [%d] = %d", k, span_back[k]);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_Get(back, E, MPI_INT, right, theirs[R / 2], E, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    for (int k = 0; k < E; k++)
        CHECK(back[k] == me * 100000 + (R / 2) * 100 + k, "get back [%d] = %d", k, back[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < E; k++)
            CHECK(reg[pick[j]][k] == left * 100000 + pick[j] * 100 + k, "region %d [%d] = %d", pick[j], k,
                  reg[pick[j]][k]);
    for (int k = 0; k < 2 * E; k++) {
        int want = k < E / 2 || k >= E / 2 + E ? -1 : left * 1000 + (k - E / 2);
        CHECK(pair[k] == want, "pair [%d] = %d, expected %d", k, pair[k], want);
    }
    for (int k = 0; k < E; k++) CHECK(reg[R - 1][k] == -1, "detached region written [%d] = %d", k, reg[R - 1][k]);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < R; i += 2) CHECK_MPI(MPI_Win_detach(win, reg[i]));
    CHECK_MPI(MPI_Win_detach(win, pair));
    CHECK_MPI(MPI_Win_detach(win, pair + E));
    CHECK_MPI(MPI_Win_free(&win));
    for (int i = 0; i < R; i++) free(reg[i]);
    free(reg);
    free(pair);
    free(mine);
    free(theirs);
    MPI_Finalize();
    return report("rma_attach");
}
