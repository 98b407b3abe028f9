#!/bin/sh
# agent.sh -- mpirun launch agent for namespace nodes (contrib/netns/nodes.sh):
#   mpirun --launch-agent '/path/agent.sh {}' ...
# Runs the command inside network namespace NODE with a private /dev/shm and
# a private TMPDIR (a fresh tmpfs, gone with the node's last process), like a
# separate machine. When the command ends, whatever it left in /dev/shm or
# TMPDIR is reported on stderr as "netns agent: NODE left files: ...".
# Usage: agent.sh NODE COMMAND [ARGS...]
[ $# -ge 2 ] || { echo "usage: $0 NODE COMMAND [ARGS...]" >&2; exit 2; }
node=$1
shift
exec ip netns exec "$node" unshare --mount --propagation private sh -c '
  node=$1; shift
  mount -t tmpfs -o mode=1777 axon-node-shm /dev/shm || exit 126
  mkdir -m 1777 /dev/shm/.tmp && export TMPDIR=/dev/shm/.tmp
  "$@"
  rc=$?
  left=$(cd /dev/shm && ls -A | grep -vx .tmp; ls -A /dev/shm/.tmp)
  [ -z "$left" ] || echo "netns agent: $node left files:" $left >&2
  exit $rc' agent.sh "$node" "$@"
