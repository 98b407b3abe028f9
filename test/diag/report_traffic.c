/* A known traffic pattern for the communication report (test/diag/report.sh):
 *   rank r sends rank (r+1)%size: 10 messages of 8 bytes (eager) and
 *   2 of 1 MiB (rendezvous) on MPI_COMM_WORLD;
 *   rank 0 sends itself 3 messages of 100 bytes;
 *   MPI_COMM_WORLD: 5 allreduces of 10 ints, 1 barrier;
 *   a duplicate named "halves" split in two: 4 bcasts of 256 bytes each,
 *   freed before MPI_Finalize.
 * Prints "sent" per rank when every message arrived intact. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  char* big_out = malloc(BIG);
  char* big_in = malloc(BIG);
  memset(big_out, rank + 1, BIG);
  int bad = 0;
  for (int i = 0; i < 10; ++i) {
    double out = rank * 100 + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 1, &in, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (in != left * 100 + i) bad = 1;
  }
  for (int i = 0; i < 2; ++i) {
    MPI_Request rq;
    MPI_Irecv(big_in, BIG, MPI_CHAR, left, 2, MPI_COMM_WORLD, &rq);
    MPI_Send(big_out, BIG, MPI_CHAR, right, 2, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (big_in[0] != left + 1 || big_in[BIG - 1] != left + 1) bad = 1;
  }
  if (rank == 0) {
    char self_out[100], self_in[100];
    memset(self_out, 7, sizeof self_out);
    for (int i = 0; i < 3; ++i) {
      MPI_Request rq;
      MPI_Irecv(self_in, 100, MPI_CHAR, 0, 3, MPI_COMM_WORLD, &rq);
      MPI_Send(self_out, 100, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      if (self_in[99] != 7) bad = 1;
    }
  }
  for (int i = 0; i < 5; ++i) {
    int v[10], sum[10];
    for (int k = 0; k < 10; ++k) v[k] = rank + k;
    MPI_Allreduce(v, sum, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum[3] != size * (size - 1) / 2 + 3 * size) bad = 1;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm halves;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halves);
  MPI_Comm_set_name(halves, "halves");
  for (int i = 0; i < 4; ++i) {
    char block[256];
    memset(block, i, sizeof block);
    MPI_Bcast(block, 256, MPI_CHAR, 0, halves);
    if (block[255] != i) bad = 1;
  }
  MPI_Comm_free(&halves);
  free(big_out);
  free(big_in);
  if (bad) printf("rank %d: wrong data\n", rank);
  else printf("rank %d sent\n", rank);
  MPI_Finalize();
  return bad;
}
