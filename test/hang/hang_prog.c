/* hang_prog MODE [marker=...]: MPI programs that hang in known ways, for
 * the hang doctor's tests (the scripts of test/hang). Two ranks (cycle: any
 * number).
 *   cycle       every rank MPI_Recv from the next first (tag 0, 1 MPI_INT):
 *               with two, both ranks from each other
 *   mismatch    rank 0 in MPI_Barrier, rank 1 in MPI_Scatter (root 0) on
 *               MPI_COMM_WORLD: both wait to receive (against a Bcast from
 *               root 0 the Barrier is no hang in Axon: the Bcast receives the
 *               Barrier's empty message and fails)
 *   repeat      both ranks MPI_Allreduce 1 MPI_INT twice on MPI_COMM_WORLD
 *               (the second takes the small-call shortcut), then rank 0 a
 *               third time while rank 1 waits in MPI_Recv tag 5 from it
 *   exit        rank 1 exits (status 0, no MPI_Finalize); rank 0 MPI_Recv from it
 *   unexpected  rank 1 sends 3 messages tag 7 that rank 0 never receives, then
 *               waits in MPI_Recv tag 5; rank 0 waits in MPI_Recv tag 9
 *   wait        rank 0 waits (MPI_Wait) for an MPI_Isend of 1 MiB with tag 4
 *               to rank 1, which waits in MPI_Recv for tag 5 from rank 0
 *   isend       rank 0 leaves an MPI_Isend of 1 MiB with tag 4 pending and
 *               waits in MPI_Recv tag 6 from rank 1, which waits in MPI_Recv
 *               tag 5 from rank 0
 *   finalize    rank 0 goes on to MPI_Finalize while rank 1 waits in MPI_Recv
 *               from it
 *   stall       rank 0 computes (sleeps) 4 s before it sends; rank 1 waits
 *               in MPI_Recv, then both finish ("received 42")
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sleeps until `seconds` have passed: a signal (the doctor's) ends a
 * sleep early. */
static void sleep_fully(double seconds) {
  struct timespec now, nap = {0, 50 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &now);
  double end = now.tv_sec + now.tv_nsec * 1e-9 + seconds;
  do {
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec + now.tv_nsec * 1e-9 < end);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, value = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "cycle";
  if (size != 2 && !(strcmp(mode, "cycle") == 0 && size > 2)) {
    fprintf(stderr, "hang_prog: needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (strcmp(mode, "cycle") == 0) {
    MPI_Recv(&value, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "mismatch") == 0) {
    int all[2];
    if (rank == 0) MPI_Barrier(MPI_COMM_WORLD);
    else MPI_Scatter(all, 1, MPI_INT, &value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  } else if (strcmp(mode, "repeat") == 0) {
    int sum = 0;
    for (int i = 0; i < 2; ++i) MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Recv(&value, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "exit") == 0) {
    if (rank == 1) {
      fflush(stdout);
      _exit(0);
    }
    MPI_Recv(&value, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "unexpected") == 0) {
    if (rank == 1) {
      for (int i = 0; i < 3; ++i) MPI_Send(&i, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
      MPI_Recv(&value, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&value, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else if (strcmp(mode, "wait") == 0) {
    static int big[1 << 18];
    if (rank == 0) {
      MPI_Request request;
      MPI_Isend(big, 1 << 18, MPI_INT, 1, 4, MPI_COMM_WORLD, &request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&value, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else if (strcmp(mode, "isend") == 0) {
    static int big[1 << 18];
    if (rank == 0) {
      MPI_Request request;
      MPI_Isend(big, 1 << 18, MPI_INT, 1, 4, MPI_COMM_WORLD, &request);
      MPI_Recv(&value, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&value, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else if (strcmp(mode, "finalize") == 0) {
    if (rank == 1) MPI_Recv(&value, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "stall") == 0) {
    if (rank == 0) {
      sleep_fully(4);
      value = 42;
      MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
      MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("received %d\n", value);
    }
  } else {
    fprintf(stderr, "hang_prog: unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return 0;
}
