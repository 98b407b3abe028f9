#!/bin/bash
# Runs an RMA test program with Win_create memory left private
# (AXON_OSC_SHARE_CREATE=0), so that the node's other ranks reach it with
# process_vm_readv / writev (CMA, batched) instead of mapping it:
#   cma.sh NP PROGRAM [ARGS...]      (PROGRAM in test/rma of the build tree)
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
np=$1 prog=$2
shift 2
AXON_OSC_SHARE_CREATE=0 exec "$MPIRUN" -np "$np" "$AXON_BUILDDIR/test/rma/$prog" "$@"
