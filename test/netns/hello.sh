#!/bin/bash
# 3 nodes x 2 ranks: rank, size, and which ranks share a node (MPI_COMM_TYPE_SHARED
# from PMIX_LOCAL_PEERS: same namespace = local, other namespaces not); the
# PMIx view of every rank (node id, peers, host); a tagged output line per rank.
. "$AXON_SRCDIR/test/netns/lib.sh"

run_nodes -H "$node1:2,$node2:2,$node3:2" -x AXON_BTL=self,sm,tcp "$mpi_nodes" hello "0,1;2,3;4,5" marker=$marker
expect_rc 0 "hello over 3 nodes"
expect_count "$work/out" "^rank [0-5] size 6 node ranks 2 leaders 3 ok$" 6 "hello"
expect_clean "hello"

run_nodes -H "$node1:2,$node2:2,$node3:2" --tag-output "$probe" info wireup dmodex marker=$marker
expect_rc 0 "probe over 3 nodes"
for r in 0 1 2 3 4 5; do
    node=$((r / 2))
    peers="$((node * 2)),$((node * 2 + 1))"
    expect_line "$work/out" "^\[1,$r\]<stdout>: rank=$r size=6 univ=6 local_rank=$((r % 2)) node_rank=$((r % 2)) local_size=2 nodeid=$node num_nodes=3 localldr=$((node * 2)) .*peers=$peers .* host=${prefix}$((node + 1)) " "PMIx view of rank $r"
    expect_line "$work/out" "^\[1,$r\]<stdout>: rank $r wireup 6/6$" "wireup of rank $r"
    expect_line "$work/out" "^\[1,$r\]<stdout>: rank $r dmodex 6/6$" "direct modex of rank $r"
done
expect_clean "probe"
echo "hello OK"
