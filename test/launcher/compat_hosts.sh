#!/bin/bash
# Hosts and placement as both families spell them: hostfiles in Hydra's
# "host:n" and Open MPI's "host slots=n" syntax (-f, --hostfile,
# -machinefile), -hosts, -H, -ppn (Hydra: blocks of N, wrapping around),
# --npernode / -N / -pernode (Open MPI: N per host, no more), --map-by node,
# --rank-by slot|node. Other hosts get daemons through a local launch agent;
# --display-map says which ranks each node got.
. "$AXON_SRCDIR/test/launcher/lib.sh"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
me=$(hostname)

ranks_of() {  # ranks_of NODE: the rank list --display-map gives NODE ("-" when none)
    local list
    list=$(sed -n "s/^mpirun:   node $1\( (mpirun's node)\)\?: [0-9]* ranks\? (\(.*\))\$/\2/p" "$work/out")
    echo "${list:--}"
}
expect_layout() {  # expect_layout WHAT LAYOUT, LAYOUT "me=0,1 h2=2 h3=-"
    local item got=""
    for item in $2; do
        local node=${item%%=*}
        [[ $node == me ]] && node=$me || node=axon-$node
        got+="${item%%=*}=$(ranks_of "$node") "
    done
    [[ "$got" == "$2 " ]] || { show_output; fail "$1: layout '$got', expected '$2'"; }
}
place() {  # place ARGS...: mpirun with the agent and --display-map
    run_mpirun --launch-agent "$agent" --display-map "$@" "$probe" wireup marker=$marker
    expect_rc 0 "mpirun $*"
}

# Hydra's syntax, Open MPI's, and both mixed; comments and blank lines.
printf '%s\n' "# Hydra" "localhost:2" "" "axon-h2:1   # a comment" >"$work/hydra"
printf '%s\n' "localhost slots=2 max_slots=4" "axon-h2 slots = 1" >"$work/ompi"
printf '%s\n' "localhost:1" "axon-h2 slots=2" "  # indented comment" "axon-h3" >"$work/mixed"
for option in -f --hostfile -hostfile -machinefile --machinefile; do
    place $option "$work/hydra"
    expect_layout "$option (Hydra syntax)" "me=0,1 h2=2"
done
place --hostfile "$work/ompi"
expect_layout "Open MPI syntax" "me=0,1 h2=2"
place -f "$work/mixed"
expect_layout "mixed syntax" "me=0 h2=1,2 h3=3"
place -f "$work/mixed" -np 6
expect_layout "oversubscribed: round-robin" "me=0,4 h2=1,2,5 h3=3"
place -hosts localhost:1,axon-h2:2
expect_layout "-hosts" "me=0 h2=1,2"
place -hosts localhost,axon-h2 -np 3
expect_layout "-hosts, one slot each" "me=0,2 h2=1"

# Hydra's -ppn N: blocks of N per host, wrapping around when there are more.
place -hosts localhost,axon-h2 -ppn 2 -np 6
expect_layout "-ppn 2 -np 6" "me=0,1,4,5 h2=2,3"
place -hosts localhost,axon-h2,axon-h3 -ppn 1
expect_layout "-ppn 1, no -np" "me=0 h2=1 h3=2"
# Open MPI's --npernode / -N / -pernode: N per host; more is an error.
for option in "--npernode 2" "-npernode 2" "-N 2"; do
    place -hosts localhost,axon-h2 $option
    expect_layout "$option" "me=0,1 h2=2,3"
done
place -hosts localhost,axon-h2 -pernode
expect_layout "-pernode" "me=0 h2=1"
run_mpirun -hosts localhost,axon-h2 --npernode 1 -np 3 "$probe"
expect_rc 1 "--npernode 1 -np 3 on 2 hosts"
[[ "$(cat "$work/err")" == "mpirun: 3 ranks do not fit --map-by ppr:1:node on 2 nodes" ]] || { show_output; fail "--npernode message"; }

# --map-by node, and --rank-by over the places the mapping chose.
place -hosts localhost:2,axon-h2:2 --map-by node -np 4
expect_layout "--map-by node" "me=0,2 h2=1,3"
place -hosts localhost:2,axon-h2:2 --bynode -np 4
expect_layout "--bynode" "me=0,2 h2=1,3"
place -hosts localhost:2,axon-h2:2 --map-by node --rank-by slot -np 4
expect_layout "--map-by node --rank-by slot" "me=0,1 h2=2,3"
place -hosts localhost:2,axon-h2:2 --rank-by node -np 4
expect_layout "--map-by slot --rank-by node" "me=0,2 h2=1,3"
place -hosts localhost:3,axon-h2:1 --rank-by node -np 4
expect_layout "--rank-by node, uneven" "me=0,2,3 h2=1"

# -H per program restricts a program to its hosts; the hostfile is the pool.
place -f "$work/mixed" -np 2 -H axon-h3 "$probe" wireup : -np 1
expect_layout "-H inside a hostfile's hosts" "me=2 h2=- h3=0,1"
# How daemons start: Open MPI's plm_rsh_agent (the host goes after the
# agent's first word), and --prefix (the daemon is PREFIX/bin/mpirun).
run_mpirun --mca plm_rsh_agent "${agent% \{\}}" -H localhost,axon-h2 -np 2 "$probe" wireup
expect_rc 0 "--mca plm_rsh_agent"
expect_line "$work/out" "^rank 1 wireup 2/2$" "--mca plm_rsh_agent: the daemon's rank"
mkdir -p "$work/prefix/bin"
ln -s "$MPIRUN" "$work/prefix/bin/mpirun"
run_mpirun --launch-agent "$agent" --prefix "$work/prefix" -H localhost,axon-h2 -np 2 "$probe" wireup
expect_rc 0 "--prefix"
run_mpirun --launch-agent "$agent" --prefix /nonexistent -H localhost,axon-h2 -np 2 "$probe"
expect_rc 1 "--prefix without mpirun"
expect_line "$work/err" "^mpirun: cannot start the daemon on host axon-h2: the launch agent exited with status 127 before the daemon connected \(command: .* /nonexistent/bin/mpirun --daemon " \
    "--prefix: the daemon's path"
expect_no_orphans
echo "hosts and placement OK"
