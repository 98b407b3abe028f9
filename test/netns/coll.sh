#!/bin/bash
# Collectives across 3 nodes x 2 ranks with exact results.
. "$AXON_SRCDIR/test/netns/lib.sh"
run_nodes -H "$node1:2,$node2:2,$node3:2" -x AXON_BTL=self,sm,tcp "$mpi_nodes" coll marker=$marker
expect_rc 0 "collectives"
expect_count "$work/out" "^rank [0-5] coll ok$" 6 "collectives"
expect_clean "collectives"
echo "coll OK"
