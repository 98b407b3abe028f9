#!/bin/bash
# Placement over 3 nodes: --hostfile, -H with --map-by slot|node|ppr:N:node,
# mpirun's own node mixed with others, --display-map, --bind-to on the remote
# nodes, --tag-output and -x for remote ranks.
. "$AXON_SRCDIR/test/netns/lib.sh"

expect_map() {  # expect_map RANK NODE-NAME WHAT: --display-map line and the PMIx view agree
    expect_line "$work/out" "^mpirun:   rank $1 on $2: " "$3: display-map of rank $1"
    expect_line "$work/out" "^rank=$1 .* host=$2 " "$3: PMIx host of rank $1"
}

# Hostfile with comments, blank lines and slots: fills node by node.
printf '# three nodes\n%s slots=1\n\n%s slots=3   # the big one\n%s:2\n' "$node1" "$node2" "$node3" >"$work/hosts"
run_nodes --hostfile "$work/hosts" --display-map "$probe" info marker=$marker
expect_rc 0 "--hostfile"
expect_line "$work/out" "^mpirun: job axon\.[0-9]+\.[0-9a-f]+: 6 ranks on 3 nodes" "--hostfile header"
expect_map 0 "$node1" "--hostfile"
for r in 1 2 3; do expect_map $r "$node2" "--hostfile"; done
for r in 4 5; do expect_map $r "$node3" "--hostfile"; done
expect_line "$work/out" "^rank=2 .*local_rank=1 .*local_size=3 nodeid=1 .*peers=1,2,3 " "--hostfile local view of rank 2"

# -H with --map-by node: round-robin.
run_nodes -H "$node1:2,$node2:2,$node3:2" -np 6 --map-by node --display-map "$probe" info marker=$marker
expect_rc 0 "--map-by node"
for r in 0 1 2 3 4 5; do expect_map $r "${prefix}$((r % 3 + 1))" "--map-by node"; done
expect_line "$work/out" "^rank=4 .*peers=1,4 " "--map-by node peers of rank 4"

# --map-by ppr:1:node: one per node, the count from the policy.
run_nodes -H "$node1:4,$node2:4,$node3:4" --map-by ppr:1:node --display-map "$probe" info marker=$marker
expect_rc 0 "--map-by ppr:1:node"
expect_count "$work/out" "^rank=" 3 "--map-by ppr:1:node rank count"
for r in 0 1 2; do expect_map $r "${prefix}$((r + 1))" "ppr"; done

# mpirun's own node with another: ranks here are served by mpirun itself.
run_nodes -H "localhost:1,$node2:2" --display-map "$probe" info wireup dmodex marker=$marker
expect_rc 0 "localhost plus a node"
expect_line "$work/out" "^mpirun:   node [^ ]+ \(mpirun's node\): 1 rank \(0\)$" "mpirun's node in the map"
expect_map 1 "$node2" "localhost plus a node"
expect_count "$work/out" "wireup 3/3$" 3 "wireup across mpirun's node and a daemon's"
# A fence that collects nothing: remote data comes through direct modex, routed by mpirun.
expect_count "$work/out" "dmodex 3/3$" 3 "direct modex across mpirun's node and a daemon's"

# Binding is decided per node from that node's cores.
run_nodes -H "$node1:1,$node2:1" --bind-to core --display-map "$probe" cpus marker=$marker
expect_rc 0 "--bind-to core"
expect_line "$work/out" "^mpirun:   rank 1 on $node2: core 0 \(cpus [0-9]+\)$" "remote binding in the map"
cpus=$(sed -n 's/^mpirun:   rank 1 on .*: core 0 (cpus \([0-9]*\))$/\1/p' "$work/out")
expect_line "$work/out" "^rank 1 cpus $cpus$" "remote rank bound where the map says"
run_nodes -H "$node1:1,$node2:1" --bind-to none --display-map "$probe" marker=$marker
expect_rc 0 "--bind-to none"
expect_line "$work/out" "^mpirun:   rank 1 on $node2: not bound" "--bind-to none on a remote node"

# --tag-output and -x for remote ranks.
run_nodes -H "$node2:1,$node3:2" --tag-output -x AXON_TEST_VALUE=v42 "$probe" env=AXON_TEST_VALUE \
    env=MPI_LOCALRANKID env=MPIRUN_DAEMON_SECRET err=oops marker=$marker
expect_rc 0 "--tag-output"
expect_line "$work/out" "^\[1,1\]<stdout>: rank 1 AXON_TEST_VALUE=v42$" "-x reaches a remote rank"
expect_line "$work/out" "^\[1,2\]<stdout>: rank 2 MPI_LOCALRANKID=1$" "local rank variable of a remote rank"
# The daemons' secret never reaches a rank.
expect_count "$work/out" "MPIRUN_DAEMON_SECRET=\(unset\)$" 3 "secret hidden from the ranks"
expect_line "$work/err" "^\[1,0\]<stderr>: oops$" "tagged stderr of a remote rank"
expect_clean "mapping"
echo "mapping OK"
