/* pt2pt_bibw: ranks 0 and 1 each send and receive a window at the same time;
 * the figure counts the bytes of both directions. See bandwidth.c. */
#include "bandwidth.h"

int main(int argc, char **argv)
{
    return bandwidth_main(argc, argv, "pt2pt_bibw", 1);
}
