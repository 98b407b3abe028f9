/* Windowed streaming bandwidth between ranks 0 and 1, shared by pt2pt_bw
 * (one direction) and pt2pt_bibw (both directions at once). */
#ifndef AXON_BENCH_BANDWIDTH_H
#define AXON_BENCH_BANDWIDTH_H

int bandwidth_main(int argc, char **argv, const char *program, int bidirectional);

#endif
