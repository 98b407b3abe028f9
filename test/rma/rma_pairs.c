/* Accumulates on pair types with padding (MPI_DOUBLE_INT: 12 bytes of data
 * in a 16-byte struct) (argv[1]: window flavor create or allocate): every
 * rank applies MPI_MAXLOC to 3000 pairs of every rank's window in a fence
 * epoch (many fragments on the active-message path), then fetches them back
 * with MPI_Get_accumulate / MPI_NO_OP. Exact values and indices. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/check.h"

#define N 3000

typedef struct {
    double v;
    int i;
} pair_t;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    pair_t *mem = NULL;
    MPI_Win win;
    if (!strcmp(flavor, "create")) {
        mem = malloc(sizeof(pair_t) * N);
        CHECK_MPI(MPI_Win_create(mem, sizeof(pair_t) * N, sizeof(pair_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(sizeof(pair_t) * N, sizeof(pair_t), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    for (int k = 0; k < N; k++) mem[k].v = -1, mem[k].i = -1;
    static pair_t in[N], back[N];
    for (int k = 0; k < N; k++) in[k].v = me * 10 + k % 7, in[k].i = me;
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < np; t++)
        CHECK_MPI(MPI_Accumulate(in, N, MPI_DOUBLE_INT, t, 0, N, MPI_DOUBLE_INT, MPI_MAXLOC, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int bad = 0;
    for (int k = 0; k < N; k++) bad += mem[k].v != (np - 1) * 10 + k % 7 || mem[k].i != np - 1;
    CHECK(bad == 0, "%d of %d pairs wrong in my window", bad, N);
    const int right = (me + 1) % np;
    CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, back, N, MPI_DOUBLE_INT, right, 0, N, MPI_DOUBLE_INT,
                                 MPI_NO_OP, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    bad = 0;
    for (int k = 0; k < N; k++) bad += back[k].v != (np - 1) * 10 + k % 7 || back[k].i != np - 1;
    CHECK(bad == 0, "%d of %d fetched pairs wrong", bad, N);
    CHECK_MPI(MPI_Win_free(&win));
    if (!strcmp(flavor, "create")) free(mem);
    MPI_Finalize();
    return report("rma_pairs");
}
