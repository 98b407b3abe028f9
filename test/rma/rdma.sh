#!/bin/bash
# Runs an RMA test program with AXON_OSC_PATH=rdma: every other rank that the
# route's transport reaches with RDMA (verbs) is reached by RDMA WRITE / READ.
# On one host without verbs nothing changes (mapped / CMA paths), which the
# programs' own path checks (e.g. rma_dynamic local) then assert:
#   rdma.sh NP PROGRAM [ARGS...]      (PROGRAM in test/rma of the build tree)
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
np=$1 prog=$2
shift 2
AXON_OSC_PATH=rdma exec "$MPIRUN" -np "$np" "$AXON_BUILDDIR/test/rma/$prog" "$@"
