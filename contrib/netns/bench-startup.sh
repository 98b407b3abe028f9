#!/bin/bash
# bench-startup.sh -- start-up time of a 6-rank job on 3 namespace nodes:
# Axon's mpirun (agent.sh) against Debian's Open MPI (rsh.sh as plm_rsh_agent).
#   contrib/netns/bench-startup.sh AXON_PREFIX [RUNS]
# AXON_PREFIX is an installed Axon (bin/mpirun, bin/mpicc). Each run is the
# wall time of `mpirun ... hello` (examples/hello.c: init, a ring exchange,
# finalize) from start to exit; prints the median and the range of RUNS (5).
# Needs root, iproute2 and openmpi-bin/libopenmpi-dev.
set -eu
prefix=${1:?usage: bench-startup.sh AXON_PREFIX [RUNS]}
runs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
nodes="axb$$"; nodes=${nodes:0:8}
subnet="10.$((200 + RANDOM % 50)).$((RANDOM % 250))"
trap '"$here/nodes.sh" down "$nodes" 3 >/dev/null 2>&1; rm -rf "$work"' EXIT
"$here/nodes.sh" up "$nodes" 3 "$subnet"
"$prefix/bin/mpicc" "$src/examples/hello.c" -o "$work/hello-axon"
mpicc.openmpi "$src/examples/hello.c" -o "$work/hello-ompi"
hosts="${nodes}1:2,${nodes}2:2,${nodes}3:2"

measure() {  # measure NAME CMD...: prints "NAME median min max" in ms
    local name=$1 times=() start end
    shift
    "$@" >/dev/null 2>&1 || { echo "$name: the job failed: $*" >&2; "$@" 2>&1 | tail -n 5 >&2; return 1; }  # warm-up
    for _ in $(seq 1 "$runs"); do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        end=$(date +%s%N)
        times+=($(((end - start) / 1000000)))
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    echo "$name ${sorted[$((runs / 2))]} ${sorted[0]} ${sorted[$((runs - 1))]}"
}

echo "# 6 ranks on 3 namespace nodes, $runs runs, wall ms: launcher median min max"
measure axon "$prefix/bin/mpirun" -H "$hosts" --launch-agent "$here/agent.sh {}" --head-addr "$subnet.254" \
    -x AXON_BTL=self,sm,tcp "$work/hello-axon"
measure openmpi mpirun.openmpi --allow-run-as-root -H "$hosts" -np 6 --mca plm_rsh_agent "$here/rsh.sh" \
    --mca rtc ^hwloc --mca btl self,vader,tcp --mca btl_tcp_if_include "$subnet.0/24" \
    --mca oob_tcp_if_include "$subnet.0/24" "$work/hello-ompi"
