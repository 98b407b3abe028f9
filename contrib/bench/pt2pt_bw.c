/* pt2pt_bw: rank 0 streams windows of MPI_Isend to rank 1, which answers each
 * window with a short ack once its MPI_Irecvs completed. See bandwidth.c. */
#include "bandwidth.h"

int main(int argc, char **argv)
{
    return bandwidth_main(argc, argv, "pt2pt_bw", 0);
}
