#!/bin/sh
# rsh.sh -- an ssh-like launch agent for namespace nodes: rsh.sh NODE WORDS...
# joins WORDS into one command line and runs it through sh inside NODE (with a
# private /dev/shm, as agent.sh), the way ssh runs a remote command. For
# launchers that expect ssh semantics, e.g. Open MPI's
#   mpirun --mca plm_rsh_agent "$PWD/contrib/netns/rsh.sh" -H axn1,axn2 ...
[ $# -ge 2 ] || { echo "usage: $0 NODE COMMAND..." >&2; exit 2; }
node=$1
shift
exec ip netns exec "$node" unshare --mount --propagation private sh -c '
  mount -t tmpfs -o mode=1777 axon-node-shm /dev/shm || exit 126
  exec sh -c "$1"' rsh.sh "$*"
