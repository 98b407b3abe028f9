/* Large and many-piece transfers (argv[1]: window flavor): a target vector of
 * 3000 one-element blocks (more pieces than one process_vm_writev call takes),
 * a 1 MiB contiguous Put / Get, and Accumulate / Get_accumulate over the
 * vector, under fence. Holes of the target type must stay untouched. */
#include <mpi.h>
#include <string.h>

#include "../mpi/check.h"

#define B 3000              /* vector blocks */
#define W (2 * B + 131072)  /* window elements: vector area, then 1 MiB */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *flavor = argc > 1 ? argv[1] : "allocate";
    int dynamic = !strcmp(flavor, "dynamic");
    int right = (me + 1) % np, left = (me + np - 1) % np;

    long long *mem = NULL, *own = NULL;
    MPI_Win win;
    const MPI_Aint bytes = (MPI_Aint)W * 8;
    if (!strcmp(flavor, "create") || dynamic) {
        own = malloc(bytes);
        mem = own;
        if (dynamic) {
            CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            CHECK_MPI(MPI_Win_attach(win, own, bytes));
        } else {
            CHECK_MPI(MPI_Win_create(own, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        }
    } else if (!strcmp(flavor, "shared")) {
        CHECK_MPI(MPI_Win_allocate_shared(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    MPI_Aint *bases = malloc(sizeof(MPI_Aint) * np), mine;
    MPI_Get_address(mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
#define AT(t, i) (dynamic ? bases[t] + (MPI_Aint)(i) * 8 : (MPI_Aint)(i))
    for (long i = 0; i < W; i++) mem[i] = -i;

    MPI_Datatype vec;
    MPI_Type_vector(B, 1, 2, MPI_LONG_LONG, &vec);
    MPI_Type_commit(&vec);
    long long *src = malloc(sizeof(long long) * 131072), *back = malloc(sizeof(long long) * 131072);
    long long *res = malloc(sizeof(long long) * B);
    for (long i = 0; i < 131072; i++) src[i] = me * 1000000LL + i;
    memset(back, 0, sizeof(long long) * 131072);

    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(src, B, MPI_LONG_LONG, right, AT(right, 0), 1, vec, win));
    CHECK_MPI(MPI_Put(src, 131072, MPI_LONG_LONG, right, AT(right, 2 * B), 131072, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (long k = 0; k < B; k++) {
        CHECK(mem[2 * k] == left * 1000000LL + k, "vector put element %ld", 2 * k);
        CHECK(mem[2 * k + 1] == -(2 * k + 1), "vector hole %ld written", 2 * k + 1);
        if (check_failures > 5) break;
    }
    long bad = -1;
    for (long i = 0; i < 131072 && bad < 0; i++)
        if (mem[2 * B + i] != left * 1000000LL + i) bad = i;
    CHECK(bad < 0, "contiguous put: first bad element %ld", bad);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(back, 131072, MPI_LONG_LONG, right, AT(right, 2 * B), 131072, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Get_accumulate(src, B, MPI_LONG_LONG, res, B, MPI_LONG_LONG, right, AT(right, 0), 1, vec,
                                 MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    bad = -1;
    for (long i = 0; i < 131072 && bad < 0; i++)
        if (back[i] != me * 1000000LL + i) bad = i;
    CHECK(bad < 0, "contiguous get: first bad element %ld", bad);
    for (long k = 0; k < B; k++) {
        CHECK(res[k] == me * 1000000LL + k, "get_accumulate result %ld", k);
        CHECK(mem[2 * k] == 2 * (left * 1000000LL + k), "accumulated element %ld", 2 * k);
        CHECK(mem[2 * k + 1] == -(2 * k + 1), "hole %ld after accumulate", 2 * k + 1);
        if (check_failures > 5) break;
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    MPI_Type_free(&vec);
    if (dynamic) CHECK_MPI(MPI_Win_detach(win, own));
    CHECK_MPI(MPI_Win_free(&win));
    free(own);
    free(src);
    free(back);
    free(res);
    free(bases);
    MPI_Finalize();
    return report(flavor);
}
