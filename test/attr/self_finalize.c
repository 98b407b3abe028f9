/* MPI_Finalize first deletes MPI_COMM_SELF's attributes, in the reverse order
 * they were set, while MPI is fully usable (MPI-4.1 11.2.2): the callbacks see
 * MPI_Finalized false and can still communicate. A keyval freed before
 * MPI_Finalize still has its callback run. MPI_COMM_WORLD's attributes are
 * deleted afterwards (Axon; MPI does not require it). Each callback writes a
 * marker line to stdout that the test checks after MPI_Finalize. */
#include <stdint.h>

#include "../mpi/check.h"

#define N 20

static int order[N + 1];
static int calls;
static int world_calls, world_after_self;
static int finalized_in_callback, comm_failed;

static int self_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval, (void)extra;
    int finalized = 1, rank = -1;
    MPI_Finalized(&finalized);
    if (finalized)
        finalized_in_callback++;
    if (comm != MPI_COMM_SELF)
        comm_failed++;
    /* Point-to-point on MPI_COMM_WORLD still works. */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int out = (int)(intptr_t)value, in = -1;
    if (MPI_Sendrecv(&out, 1, MPI_INT, rank, 7, &in, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        in != out)
        comm_failed++;
    if (calls < N + 1)
        order[calls] = (int)(intptr_t)value;
    calls++;
    printf("marker: MPI_COMM_SELF delete callback %d\n", (int)(intptr_t)value);
    fflush(stdout);
    return MPI_SUCCESS;
}

static int world_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval, (void)value, (void)extra;
    world_calls++;
    if (calls == N)
        world_after_self = 1;
    if (comm != MPI_COMM_WORLD)
        comm_failed++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int keys[N], world_key;
    MPI_Init(&argc, &argv);
    for (int i = 0; i < N; i++)
        CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &keys[i], NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, world_delete, &world_key, NULL));
    /* Set in a scrambled key order: the order of setting counts, not the key. */
    for (int i = 0; i < N; i++)
        CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[(i * 7) % N], (void *)(intptr_t)i));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, world_key, NULL));
    /* Freed keyvals: the attributes stay until MPI_Finalize deletes them. */
    CHECK_MPI(MPI_Comm_free_keyval(&keys[3]));
    CHECK_MPI(MPI_Comm_free_keyval(&world_key));
    CHECK(calls == 0, "delete callbacks ran before MPI_Finalize");

    MPI_Finalize();

    CHECK(calls == N, "%d MPI_COMM_SELF delete callbacks ran, expected %d", calls, N);
    for (int i = 0; i < N && i < calls; i++)
        CHECK(order[i] == N - 1 - i, "delete callback #%d was for attribute %d, expected %d (LIFO)", i, order[i],
              N - 1 - i);
    CHECK(finalized_in_callback == 0, "MPI_Finalized was true in %d callbacks", finalized_in_callback);
    CHECK(comm_failed == 0, "%d callbacks got a wrong communicator or could not communicate", comm_failed);
    CHECK(world_calls == 1, "MPI_COMM_WORLD delete callback ran %d times", world_calls);
#ifdef AXON_MPI_H
    CHECK(world_after_self == 1, "MPI_COMM_WORLD's attributes were deleted before MPI_COMM_SELF's");
#endif
    return report("attr_self_finalize");
}
