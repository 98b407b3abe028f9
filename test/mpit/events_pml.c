/* MPI_T events raised by the pml and the collectives, 2 ranks (default
 * transports: sm between them):
 * - axon_protocol_switch: 8 B, 1 MiB, 8 B from rank 0 to 1: the 1 MiB send
 *   gives one event (a one-copy or fragmented protocol, bytes 1048576), the
 *   8 B after it one event (eager, bytes 8).
 * - axon_unexpected_growth with AXON_T_UNEXPECTED_THRESHOLD=4: 5 messages
 *   rank 1 has not posted give one event at rank 1: length 5, source 0, tag
 *   of the fifth.
 * - axon_coll_algorithm with AXON_COLL_BCAST_ALGORITHM=knomial: a bcast
 *   gives an event naming "bcast" and "knomial" with comm_size 2. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = -1, failures = 0;
#define EXPECT(cond)                                                            \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "rank %d line %d: expected %s\n", rank, __LINE__, #cond); \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

#define MAX_SEEN 64
struct seen {
  int count;
  unsigned char data[MAX_SEEN][96];
};
static struct seen protocol, unexpected, coll;

static void record(MPI_T_event_instance i, MPI_T_event_registration r, MPI_T_cb_safety s, void *u) {
  (void)r, (void)s;
  struct seen *into = u;
  if (into->count < MAX_SEEN) MPI_T_event_copy(i, into->data[into->count]);
  ++into->count;
}

static MPI_T_event_registration subscribe(const char *name, struct seen *into) {
  int index = -1;
  MPI_T_event_registration reg;
  if (MPI_T_event_get_index(name, &index) != MPI_SUCCESS) {
    fprintf(stderr, "no event %s\n", name);
    exit(1);
  }
  MPI_T_event_handle_alloc(index, NULL, MPI_INFO_NULL, &reg);
  MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, into, record);
  return reg;
}

struct protocol_data {
  int peer, pad;
  unsigned long long bytes;
  int transport, protocol;
};
struct unexpected_data {
  unsigned long long length;
  int source, tag;
};
struct coll_data {
  unsigned context_id;
  int comm_size;
  unsigned long long bytes;
  char collective[32], algorithm[32];
};

int main(int argc, char **argv) {
  setenv("AXON_T_UNEXPECTED_THRESHOLD", "4", 1);
  setenv("AXON_COLL_BCAST_ALGORITHM", "knomial", 1);
  int provided;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_T_event_registration regs[3] = {subscribe("axon_protocol_switch", &protocol),
                                      subscribe("axon_unexpected_growth", &unexpected),
                                      subscribe("axon_coll_algorithm", &coll)};
  static char big[1 << 20];
  char small[8] = "abcdefg";
  MPI_Barrier(MPI_COMM_WORLD);

  /* Protocol switches. */
  if (rank == 0) {
    MPI_Send(small, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    int first = protocol.count;
    EXPECT(first <= 1);
    if (first == 1) {
      /* The first eager send to rank 1: this one, or an earlier internal one
       * (the barrier's, when it goes through point-to-point). */
      struct protocol_data *d = (void *)protocol.data[0];
      EXPECT(d->protocol == 0 && d->peer == 1 && d->transport == 1);
    }
    MPI_Send(big, sizeof big, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    EXPECT(protocol.count == first + 1);
    struct protocol_data *d = (void *)protocol.data[first];
    EXPECT(d->peer == 1 && d->bytes == sizeof big);
    EXPECT(d->protocol == 2 || d->protocol == 3 || d->protocol == 4);
    MPI_Send(small, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
    EXPECT(protocol.count == first + 2);
    d = (void *)protocol.data[first + 1];
    EXPECT(d->peer == 1 && d->bytes == 8 && d->protocol == 0);
  } else {
    MPI_Recv(small, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(big, sizeof big, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(small, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* Unexpected growth: rank 1 posts nothing until rank 0's messages are queued. */
  int before = unexpected.count;
  if (rank == 0)
    for (int k = 0; k < 5; ++k) MPI_Send(&k, 1, MPI_INT, 1, 100 + k, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    int flag = 0;
    MPI_Iprobe(0, 104, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    while (!flag) MPI_Iprobe(0, 104, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    EXPECT(unexpected.count == before + 1);
    struct unexpected_data *d = (void *)unexpected.data[before];
    EXPECT(d->length == 5 && d->source == 0 && d->tag == 104);
    for (int k = 0; k < 5; ++k) {
      int v = -1;
      MPI_Recv(&v, 1, MPI_INT, 0, 100 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(v == k);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* Collective algorithm. */
  int payload[4] = {rank, rank, rank, rank}, was = coll.count, found = 0;
  MPI_Bcast(payload, 4, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT(payload[3] == 0);
  for (int k = was; k < coll.count && k < MAX_SEEN; ++k) {
    struct coll_data *d = (void *)coll.data[k];
    if (strcmp(d->collective, "bcast") == 0) {
      ++found;
      EXPECT(strcmp(d->algorithm, "knomial") == 0);
      EXPECT(d->comm_size == 2);
    }
  }
  EXPECT(found == 1);

  for (int k = 0; k < 3; ++k) MPI_T_event_handle_free(regs[k], NULL, NULL);
  MPI_Finalize();
  MPI_T_finalize();
  if (failures) {
    fprintf(stderr, "events_pml rank %d: %d failures\n", rank, failures);
    return 1;
  }
  if (rank == 0) printf("events_pml: ok\n");
  return 0;
}
