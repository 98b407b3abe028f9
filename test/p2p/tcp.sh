#!/bin/bash
# Runs a point-to-point test program with the ranks reaching each other over
# tcp (AXON_BTL=self,tcp) instead of shared memory, so that first messages
# may wait for their connection (the queued-send paths of the protocols):
#   tcp.sh NP PROGRAM [ARGS...]      (PROGRAM in test/p2p of the build tree)
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
np=$1 prog=$2
shift 2
AXON_BTL=self,tcp exec "$MPIRUN" -np "$np" "$AXON_BUILDDIR/test/p2p/$prog" "$@"
