#!/bin/bash
# Runs an RMA test program with every other rank of a window reached by
# active messages (AXON_OSC_PATH=am), the path used for ranks on other nodes:
#   am.sh NP PROGRAM [ARGS...]      (PROGRAM in test/rma of the build tree)
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
np=$1 prog=$2
shift 2
AXON_OSC_PATH=am exec "$MPIRUN" -np "$np" "$AXON_BUILDDIR/test/rma/$prog" "$@"
