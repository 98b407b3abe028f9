/* MPI_T event axon_connection_setup over tcp (AXON_BTL=self,tcp, 2 ranks):
 * one event per peer, with the peer's rank and transport tcp. Also the
 * delivery rule of src/diag/events.cpp: a MPI_T_CB_REQUIRE_MPI_RESTRICTED
 * callback runs inside the MPI call that connects; one registered only as
 * MPI_T_CB_REQUIRE_NONE gets its instance at the next MPI_T call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond)                                                                \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "rank %d line %d: expected %s\n", rank, __LINE__, #cond);     \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

static int rank = -1;
static int restricted_count = 0, none_count = 0, restricted_peer = -1, restricted_transport = -1;
static int none_peer = -1, in_mpi_call = 0, none_in_mpi_call = 0;
static MPI_Count stamp = 0;

static void on_restricted(MPI_T_event_instance i, MPI_T_event_registration r, MPI_T_cb_safety s, void *u) {
  (void)r;
  EXPECT(s == MPI_T_CB_REQUIRE_MPI_RESTRICTED);
  EXPECT(u == &restricted_count);
  ++restricted_count;
  EXPECT(MPI_T_event_read(i, 0, &restricted_peer) == MPI_SUCCESS);
  EXPECT(MPI_T_event_read(i, 1, &restricted_transport) == MPI_SUCCESS);
  int whole[2] = {-1, -1}, src = -1, dummy;
  EXPECT(MPI_T_event_copy(i, whole) == MPI_SUCCESS);
  EXPECT(whole[0] == restricted_peer && whole[1] == restricted_transport);
  EXPECT(MPI_T_event_read(i, 2, &dummy) == MPI_T_ERR_INVALID_INDEX);
  EXPECT(MPI_T_event_get_source(i, &src) == MPI_SUCCESS && src == 0);
  EXPECT(MPI_T_event_get_timestamp(i, &stamp) == MPI_SUCCESS && stamp > 0);
}

static void on_none(MPI_T_event_instance i, MPI_T_event_registration r, MPI_T_cb_safety s, void *u) {
  (void)r, (void)u;
  EXPECT(s == MPI_T_CB_REQUIRE_NONE);
  ++none_count;
  none_in_mpi_call = in_mpi_call;
  MPI_T_event_read(i, 0, &none_peer);
}

int main(int argc, char **argv) {
  setenv("AXON_BTL", "self,tcp", 1);
  int provided, index = -1;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  if (MPI_T_event_get_index("axon_connection_setup", &index) != MPI_SUCCESS) return 1;
  MPI_T_event_registration now_reg, later_reg;
  MPI_T_event_handle_alloc(index, NULL, MPI_INFO_NULL, &now_reg);
  MPI_T_event_register_callback(now_reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, &restricted_count,
                                on_restricted);
  MPI_T_event_handle_alloc(index, NULL, MPI_INFO_NULL, &later_reg);
  MPI_T_event_register_callback(later_reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, on_none);

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    fprintf(stderr, "events_tcp: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int peer = 1 - rank, out = rank, in = -1;
  in_mpi_call = 1;
  for (int round = 0; round < 3; ++round)
    MPI_Sendrecv(&out, 1, MPI_INT, peer, 5, &in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  in_mpi_call = 0;
  EXPECT(in == peer);
  EXPECT(restricted_count == 1);
  EXPECT(restricted_peer == peer);
  EXPECT(restricted_transport == 2); /* axon_transport item 2: tcp */
  EXPECT(none_count == 0);           /* not yet: no MPI_T call since */

  MPI_Count before = 0;
  MPI_T_source_get_timestamp(0, &before); /* an MPI_T call: delivers the deferred instance */
  EXPECT(none_count == 1);
  EXPECT(none_peer == peer);
  EXPECT(none_in_mpi_call == 0);
  EXPECT(stamp > 0 && stamp <= before);

  int marker = 0;
  MPI_T_event_handle_free(now_reg, NULL, NULL);
  MPI_T_event_handle_free(later_reg, &marker, NULL);
  MPI_T_finalize();
  MPI_Finalize();
  if (failures) {
    fprintf(stderr, "events_tcp rank %d: %d failures\n", rank, failures);
    return 1;
  }
  if (rank == 0) printf("events_tcp: ok\n");
  return 0;
}
