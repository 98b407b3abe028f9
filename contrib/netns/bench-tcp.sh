#!/bin/bash
# bench-tcp.sh -- TCP latency and bandwidth between two namespace nodes (one
# rank each, a veth pair through a bridge): Axon's tcp transport against
# Debian's Open MPI (btl tcp), the same contrib/bench programs for both, runs
# interleaved. (MPICH is left out: its Hydra proxies cannot reach mpiexec from
# the namespaces without a default route, and with one both ranks ran at
# shared-memory latency, 0.6 µs: not a TCP measurement.)
#   contrib/netns/bench-tcp.sh AXON_PREFIX [RUNS]
# Prints one table per benchmark: size, the median over RUNS (3) of each MPI,
# and Axon/Open MPI (latency: <1 is faster; bandwidth: >1 is faster).
# The namespace "nodes" share this machine's cores, so nothing is bound
# (bound per node, both ranks would land on the same core).
# Needs root, iproute2 and openmpi.
set -eu
prefix=${1:?usage: bench-tcp.sh AXON_PREFIX [RUNS]}
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
nodes="axt$$"; nodes=${nodes:0:8}
subnet="10.$((200 + RANDOM % 50)).$((RANDOM % 250))"
trap '"$here/nodes.sh" down "$nodes" 2 >/dev/null 2>&1; rm -rf "$work"' EXIT
"$here/nodes.sh" up "$nodes" 2 "$subnet" >/dev/null
mpis="axon openmpi"
for mpi in $mpis; do
    case $mpi in
        axon) cc="$prefix/bin/mpicc" ;;
        openmpi) cc=mpicc.openmpi ;;
    esac
    make -s -C "$src/contrib/bench" MPICC="$cc" OUT="$work/$mpi" \
        "$work/$mpi/pt2pt_latency" "$work/$mpi/pt2pt_bw" >/dev/null
done

run() {  # run MPI PROGRAM ARGS...
    local mpi=$1 prog=$2
    shift 2
    case $mpi in
        axon) timeout 300 "$prefix/bin/mpirun" -H "${nodes}1:1,${nodes}2:1" --launch-agent "$here/agent.sh {}" \
                  --head-addr "$subnet.254" --bind-to none -x AXON_BTL=self,tcp "$work/axon/$prog" "$@" ;;
        openmpi) timeout 300 mpirun.openmpi --allow-run-as-root -H "${nodes}1,${nodes}2" -np 2 \
                  --mca plm_rsh_agent "$here/rsh.sh" --mca rtc ^hwloc --mca btl self,tcp \
                  --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24" \
                  "$work/openmpi/$prog" "$@" ;;
    esac
}

for prog in pt2pt_latency pt2pt_bw; do
    for r in $(seq 1 "$runs"); do
        for mpi in $mpis; do
            # "size value" lines; comments and failures leave nothing
            run "$mpi" "$prog" -m 1:4M 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {print $1, $2}' \
                > "$work/$prog.$mpi.$r" || true
        done
    done
    echo "# $prog between two namespace nodes over TCP, median of $runs runs"
    echo "size axon openmpi axon/openmpi"
    for size in $(awk '{print $1}' "$work/$prog.axon.1"); do
        line="$size"
        for mpi in $mpis; do
            line="$line $(cat "$work/$prog.$mpi."* | awk -v s="$size" '$1 == s {print $2}' | sort -g |
                          awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "-"}')"
        done
        echo "$line" | awk '{ printf "%s %s %s %s\n", $1, $2, $3, ($2 != "-" && $3 != "-" && $3 > 0) ? sprintf("%.2f", $2 / $3) : "-" }'
    done
done
