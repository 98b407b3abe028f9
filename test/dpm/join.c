/* MPI_Comm_join: ranks 0 and 1 open a TCP connection between themselves
 * (rank 0 listens on loopback and sends its port to rank 1 over
 * MPI_COMM_WORLD), join over it, and check the intercommunicator: sizes,
 * exact data both ways, Intercomm_merge, disconnect. Other ranks only watch. */
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../mpi/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        /* join needs a partner; an invalid descriptor must be refused */
        MPI_Comm inter;
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int rc = MPI_Comm_join(-1, &inter);
        CHECK(error_class_of(rc) != MPI_SUCCESS, "join(-1) succeeded");
        MPI_Finalize();
        return report("dpm_join");
    }
    int fd = -1;
    if (rank == 0) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0, "bind");
        CHECK(listen(l, 1) == 0, "listen");
        socklen_t sl = sizeof sa;
        getsockname(l, (struct sockaddr *)&sa, &sl);
        int port = ntohs(sa.sin_port);
        MPI_Send(&port, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        fd = accept(l, NULL, NULL);
        close(l);
    } else if (rank == 1) {
        int port;
        MPI_Recv(&port, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = htons((unsigned short)port);
        CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect");
    }
    if (rank <= 1) {
        CHECK(fd >= 0, "no socket");
        MPI_Comm inter;
        CHECK_MPI(MPI_Comm_join(fd, &inter));
        int flag = 0, lsize = 0, rsize = 0;
        MPI_Comm_test_inter(inter, &flag);
        MPI_Comm_size(inter, &lsize);
        MPI_Comm_remote_size(inter, &rsize);
        CHECK(flag && lsize == 1 && rsize == 1, "inter %d sizes %d/%d", flag, lsize, rsize);
        enum { N = 100000 };
        unsigned char *out = xmalloc(N), *in = xmalloc(N);
        fill_pattern(out, N, 50 + rank);
        CHECK_MPI(MPI_Sendrecv(out, N, MPI_BYTE, 0, 3, in, N, MPI_BYTE, 0, 3, inter, MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, N, 50 + (1 - rank), "joined peer's data");
        MPI_Comm merged;
        CHECK_MPI(MPI_Intercomm_merge(inter, rank, &merged));
        int mrank = -1;
        MPI_Comm_rank(merged, &mrank);
        CHECK(mrank == rank, "merged rank %d", mrank);
        int sum = 0, mine = rank + 10;
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == 21, "merged sum %d", sum);
        MPI_Comm_free(&merged);
        CHECK_MPI(MPI_Comm_disconnect(&inter));
        /* the socket stays the user's: still open */
        CHECK(close(fd) == 0, "join closed the user's socket");
        free(out);
        free(in);
    }
    MPI_Finalize();
    return report("dpm_join");
}
