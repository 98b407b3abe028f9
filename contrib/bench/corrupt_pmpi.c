/* A deliberately wrong "MPI" for testing the benchmarks' correctness guard:
 * linked into a benchmark (make selftest), these PMPI wrappers damage one byte
 * of every received message larger than CORRUPT_ABOVE bytes, the way a
 * broken fast path might. The benchmark must refuse to report a figure.
 * Never linked into the real benchmark binaries. */
#include <stddef.h>
#include <mpi.h>

enum { CORRUPT_ABOVE = 1000 };

/* The last nonblocking receive's buffer: the benchmarks post a window into one
 * buffer, so damaging it after the Waitall is enough to be noticed. */
static unsigned char *last_irecv_buf;
static int last_irecv_count;

static void damage(void *buf, int count)
{
    if (buf && count > CORRUPT_ABOVE)
        ((unsigned char *)buf)[count / 2] ^= 0x40;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    damage(buf, count);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    last_irecv_buf = buf;
    last_irecv_count = count;
    return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    int rc = PMPI_Waitall(count, requests, statuses);
    damage(last_irecv_buf, last_irecv_count);
    return rc;
}
