#!/bin/bash
# Node-level collectives across 3 nodes x 2 ranks: the hierarchical barrier,
# bcast, reduce and allreduce (node segment + leaders over TCP) chosen by
# default, with exact results (test/coll/coll_driver), and blocking
# node-level calls mixed with nonblocking ones (test/coll/coll_shm).
. "$AXON_SRCDIR/test/netns/lib.sh"
driver="$AXON_BUILDDIR/test/coll/coll_driver"
shm="$AXON_BUILDDIR/test/coll/coll_shm"
for c in barrier bcast reduce allreduce; do
    # "0": real topology (no pretend node size); the driver then runs the
    # default choice only (hierarchical for the blocking forms).
    run_nodes -H "$node1:2,$node2:2,$node3:2" -x AXON_BTL=self,sm,tcp -x AXON_COLL_EXPLAIN=1 \
        "$driver" "$c" 0 marker=$marker
    expect_rc 0 "$c"; echo "$c: ${elapsed_ms} ms"
    expect_count "$work/out" "^$c: ok$" 6 "$c"
    expect_line "$work/err" "^axon coll: $c on 6 ranks, 3 nodes, [0-9]+ bytes: hierarchical .*: several nodes$" "$c by default"
done
run_nodes -H "$node1:2,$node2:2,$node3:2" -x AXON_BTL=self,sm,tcp "$shm" 0 marker=$marker
expect_rc 0 "coll_shm"; echo "coll_shm: ${elapsed_ms} ms"
expect_count "$work/out" "^coll_shm: ok$" 6 "coll_shm"
expect_clean "hierarchical collectives"
echo "coll_hier OK"
