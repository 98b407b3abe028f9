#!/bin/bash
# One-sided communication across 3 nodes x 2 ranks over TCP: the test/rma
# programs with windows whose ranks span nodes (mapped memory / CMA inside a
# node, active messages between nodes, in the same window), with exact
# window contents, fetched values and error classes.
. "$AXON_SRCDIR/test/netns/lib.sh"
rma="$AXON_BUILDDIR/test/rma"
run_rma() {  # run_rma PROGRAM FLAVOR [mpirun options]
    local prog=$1 flavor=$2
    shift 2
    run_nodes -H "$node1:2,$node2:2,$node3:2" "$@" -x AXON_BTL=self,sm,tcp "$rma/$prog" "$flavor" marker=$marker
    expect_rc 0 "$prog $flavor $*"
    expect_count "$work/out" "^($prog|$flavor): ok$" 6 "$prog $flavor $*"
}
# map-by node: each rank's right neighbour is on another node.
for flavor in create allocate dynamic; do run_rma rma_ops $flavor --map-by node; done
run_rma rma_atomic create
run_rma rma_sync dynamic --map-by node
run_rma rma_big create --map-by node
run_rma rma_pairs allocate --map-by node
for flavor in allocate dynamic; do run_rma rma_passive $flavor; done
run_rma rma_errors none --map-by node
run_rma rma_threads allocate --map-by node
expect_clean "rma"
echo "rma OK"
