/* One-sided latency: rank 0 accesses rank 1's window inside MPI_Win_lock_all,
 * each operation followed by MPI_Win_flush (the osu_put_latency pattern), on
 * Win_allocate, Win_create and dynamic windows (Win_create_dynamic, one
 * attached buffer per rank, addressed by absolute address; only when named,
 * rma_latency dynamic OP). Prints one line per flavor, operation
 * and size: the best of 5 runs, in microseconds per operation. The put_bw and
 * get_bw operations measure bandwidth instead (the osu_put_bw pattern: a
 * window of 64 operations, then one MPI_Win_flush), in MB/s (10^6 bytes).
 *   mpicc -O2 rma_latency.c -o rma_latency && mpirun -np 2 ./rma_latency
 * Works with any MPI (compare Axon, MPICH and Open MPI).
 *   rma_latency FLAVOR OP   (allocate|create|dynamic, put|get|accumulate|fetch_and_op|
 *                           compare_and_swap, put_bw, get_bw): that case only,
 *                           "bytes usec" (or "bytes MB/s") lines, the format
 *                           compare.sh reads.
 *   rma_latency FLAVOR OP ITERS   the same with ITERS operations per timing
 *                           (default 5000, 200 from 32 KiB) and sizes up to
 *                           32 KiB: for slow emulated networks (contrib/rxe-vm). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PUT, GET, ACC, FOP, CAS, PUT_BW, GET_BW, NOPS };
static const char *op_name[] = {"put", "get", "accumulate", "fetch_and_op", "compare_and_swap", "put_bw", "get_bw"};
enum { BW_WINDOW = 64 };
static const char *flavor_name[] = {"allocate", "create", "dynamic"};
static MPI_Aint tdisp; /* the target displacement: 0, or rank 1's buffer address (dynamic) */

static double run(MPI_Win win, int op, int bytes, char *buf, int iters)
{
    long long one = 1, res, cmp = 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        switch (op) {
        case PUT: MPI_Put(buf, bytes, MPI_BYTE, 1, tdisp, bytes, MPI_BYTE, win); break;
        case GET: MPI_Get(buf, bytes, MPI_BYTE, 1, tdisp, bytes, MPI_BYTE, win); break;
        case ACC: MPI_Accumulate(&one, 1, MPI_LONG_LONG, 1, tdisp, 1, MPI_LONG_LONG, MPI_SUM, win); break;
        case FOP: MPI_Fetch_and_op(&one, &res, MPI_LONG_LONG, 1, tdisp, MPI_SUM, win); break;
        case CAS: MPI_Compare_and_swap(&one, &cmp, &res, MPI_LONG_LONG, 1, tdisp, win); break;
        }
        MPI_Win_flush(1, win);
    }
    return (MPI_Wtime() - t0) / iters * 1e6;
}

/* MB/s for `iters` windows of BW_WINDOW puts or gets, one flush each. */
static double run_bw(MPI_Win win, int op, int bytes, char *buf, int iters)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        for (int j = 0; j < BW_WINDOW; j++) {
            if (op == PUT_BW) MPI_Put(buf, bytes, MPI_BYTE, 1, tdisp, bytes, MPI_BYTE, win);
            else MPI_Get(buf, bytes, MPI_BYTE, 1, tdisp, bytes, MPI_BYTE, win);
        }
        MPI_Win_flush(1, win);
    }
    return (double)bytes * BW_WINDOW * iters / (MPI_Wtime() - t0) / 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (me == 0) fprintf(stderr, "rma_latency needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    const int max_bytes = 1 << 18;
    char *buf = malloc(max_bytes);
    memset(buf, 1, max_bytes);
    const char *only_flavor = argc > 2 ? argv[1] : NULL, *only_op = argc > 2 ? argv[2] : NULL;
    const int fixed_iters = argc > 3 ? atoi(argv[3]) : 0;
    if (me == 0) printf(only_op ? "# rma_latency %s %s: bytes %s\n" : "# flavor op bytes usec|MB/s\n",
                        only_flavor, only_op, only_op && strstr(only_op, "_bw") ? "MB/s" : "usec");
    for (int flavor = 0; flavor < 3; flavor++) {
        if (only_flavor ? strcmp(only_flavor, flavor_name[flavor]) != 0 : flavor == 2) continue;
        MPI_Win win;
        void *mem = NULL, *own = NULL;
        tdisp = 0;
        if (flavor == 0) {
            MPI_Win_allocate(max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        } else if (flavor == 1) {
            own = calloc(max_bytes, 1);
            MPI_Win_create(own, max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else {
            own = calloc(max_bytes, 1);
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            MPI_Win_attach(win, own, max_bytes);
            MPI_Aint mine;
            MPI_Get_address(own, &mine);
            MPI_Bcast(me == 1 ? &mine : &tdisp, 1, MPI_AINT, 1, MPI_COMM_WORLD);
            if (me == 1) tdisp = mine;
        }
        MPI_Win_lock_all(0, win);
        for (int op = 0; op < NOPS; op++) {
            if (only_op && strcmp(only_op, op_name[op])) continue;
            for (int bytes = 8; bytes <= (fixed_iters > 0 ? 32768 : max_bytes); bytes *= 8) {
                const int bw = op == PUT_BW || op == GET_BW;
                if ((op == ACC || op == FOP || op == CAS) && bytes > 8) break;
                int iters = fixed_iters > 0 ? fixed_iters : bytes >= 32768 ? 200 : 5000;
                if (bw) iters = fixed_iters > 0 ? (fixed_iters + BW_WINDOW - 1) / BW_WINDOW : bytes >= 32768 ? 10 : 100;
                double best = bw ? 0 : 1e30; /* best: the lowest time, the highest bandwidth */
                for (int rep = 0; rep < 5; rep++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    if (me == 0) {
                        double t = bw ? run_bw(win, op, bytes, buf, iters) : run(win, op, bytes, buf, iters);
                        if (bw ? t > best : t < best) best = t;
                    }
                }
                if (me == 0 && only_op) printf("%d %.3f\n", bytes, best);
                else if (me == 0) printf("%s %s %d %.3f\n", flavor_name[flavor], op_name[op], bytes, best);
            }
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (flavor == 2) MPI_Win_detach(win, own);
        MPI_Win_free(&win);
        free(own);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
