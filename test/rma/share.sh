#!/bin/bash
# Runs an RMA test program with Win_create memory moved into shared memory
# (AXON_OSC_SHARE_CREATE=1, off by default), so that the node's other ranks map it
# instead of reaching it with process_vm_readv / writev:
#   share.sh NP PROGRAM [ARGS...]      (PROGRAM in test/rma of the build tree)
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
np=$1 prog=$2
shift 2
AXON_OSC_SHARE_CREATE=1 exec "$MPIRUN" -np "$np" "$AXON_BUILDDIR/test/rma/$prog" "$@"
