#!/bin/bash
# Point-to-point across 3 nodes x 2 ranks: a ring of 0 B .. 4 MiB+3 and an
# all-pairs nonblocking exchange, exact data (shared memory inside a node,
# TCP between nodes).
. "$AXON_SRCDIR/test/netns/lib.sh"
run_nodes -H "$node1:2,$node2:2,$node3:2" -x AXON_BTL=self,sm,tcp "$mpi_nodes" ring marker=$marker
expect_rc 0 "ring"
expect_count "$work/out" "^rank [0-5] ring ok$" 6 "ring"
# The same with map-by node: every neighbour in the ring is on another node.
run_nodes -H "$node1:2,$node2:2,$node3:2" --map-by node -x AXON_BTL=self,sm,tcp "$mpi_nodes" ring marker=$marker
expect_rc 0 "ring, map-by node"
expect_count "$work/out" "^rank [0-5] ring ok$" 6 "ring, map-by node"
expect_clean "ring"
echo "pt2pt OK"
