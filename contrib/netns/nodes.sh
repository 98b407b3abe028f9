#!/bin/sh
# nodes.sh -- network-namespace "nodes" on one machine, for multi-node tests.
#
#   nodes.sh up PREFIX N SUBNET    create namespaces PREFIX1..PREFIXN, each with
#                                  an eth0 on bridge PREFIXbr, address SUBNET.i/24,
#                                  loopback up; the bridge gets SUBNET.254
#   nodes.sh down PREFIX N         remove them (idempotent)
#
# SUBNET is the first three octets, e.g. 10.201.7. PREFIX must be short (the
# bridge name PREFIXbr and the veth names PREFIXvN must fit in 15 characters).
# Needs root (CAP_NET_ADMIN) and iproute2. Every node shares this machine's
# hostname and file systems; contrib/netns/agent.sh gives each its own
# /dev/shm and TMPDIR, so shared memory is really per node.
set -eu
usage() { echo "usage: $0 up PREFIX N SUBNET | down PREFIX N" >&2; exit 2; }
[ $# -ge 3 ] || usage
action=$1 prefix=$2 count=$3
bridge="${prefix}br"
case "$action" in
up)
  [ $# -eq 4 ] || usage
  subnet=$4
  ip link add "$bridge" type bridge
  ip addr add "$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  i=1
  while [ "$i" -le "$count" ]; do
    ns="$prefix$i"
    ip netns add "$ns"
    ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${prefix}v$i" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    # PMIx's rendezvous and same-node TCP need a working loopback.
    ip -n "$ns" link set lo up
    i=$((i + 1))
  done
  ;;
down)
  i=1
  while [ "$i" -le "$count" ]; do
    ns="$prefix$i"
    # Anything still running in a node is killed before the namespace goes.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    ip link del "${prefix}v$i" 2>/dev/null || true
    i=$((i + 1))
  done
  ip link del "$bridge" 2>/dev/null || true
  ;;
*) usage ;;
esac
