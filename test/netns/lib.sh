# lib.sh -- three network-namespace "nodes" for a multi-node test (sourced).
#
# Creates namespaces $node1 $node2 $node3 on a private bridge with addresses
# chosen here (10.2xx.yy.1-3, the bridge .254 = $head_addr), and tears them
# down on exit whatever happens. Each node gets a private /dev/shm and TMPDIR
# through contrib/netns/agent.sh ($agent). Skips (exit 77) when namespaces
# cannot be created (not root, no iproute2, no unshare).
# Needs MPIRUN, AXON_SRCDIR and AXON_BUILDDIR (set by test/run-tests.sh).
set -u
: "${MPIRUN:?}" "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v ip >/dev/null 2>&1 || skip "iproute2 (ip) is not installed"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
[[ $(id -u) -eq 0 ]] || skip "network namespaces need root"

nodes_script="$AXON_SRCDIR/contrib/netns/nodes.sh"
agent="$AXON_SRCDIR/contrib/netns/agent.sh"
probe="$AXON_BUILDDIR/test/launcher/pmix_probe"
mpi_nodes="$AXON_BUILDDIR/test/netns/mpi_nodes"
prefix="ax$(printf '%04x' $((RANDOM % 65536)))"
node1="${prefix}1" node2="${prefix}2" node3="${prefix}3"
# A /24 no interface of this machine uses yet.
for _ in 1 2 3 4 5 6 7 8; do
    subnet="10.$((200 + RANDOM % 50)).$((RANDOM % 250))"
    ip -4 addr show | grep -q "inet $subnet\." || break
done
head_addr="$subnet.254"
marker="netns-test.$$.$RANDOM"
work=$(mktemp -d)

teardown() {
    "$nodes_script" down "$prefix" 3 >/dev/null 2>&1
    rm -rf "$work"
}
trap teardown EXIT
trap 'exit 1' INT TERM

if ! ip netns add "${prefix}probe" 2>"$work/netns-err"; then
    skip "cannot create network namespaces: $(cat "$work/netns-err")"
fi
ip netns del "${prefix}probe"
unshare --mount true 2>/dev/null || skip "cannot create mount namespaces (unshare --mount)"
"$nodes_script" up "$prefix" 3 "$subnet" >"$work/nodes-log" 2>&1 || { cat "$work/nodes-log"; fail "nodes.sh up failed"; }

# mpirun with the namespace agent and the bridge address; stdin from /dev/null;
# sets $rc, stdout in $work/out, stderr in $work/err, and $elapsed_ms.
run_nodes() {
    local start=$(($(date +%s%N) / 1000000))
    "$MPIRUN" --launch-agent "$agent {}" --head-addr "$head_addr" "$@" >"$work/out" 2>"$work/err" </dev/null
    rc=$?
    elapsed_ms=$(($(date +%s%N) / 1000000 - start))
    echo "$rc" >"$work/rc"  # for runs in the background
    echo "$elapsed_ms" >"$work/elapsed"
}

show_output() {
    echo "--- stdout"; cat "$work/out"; echo "--- stderr"; cat "$work/err"; echo "---"
}

expect_rc() {  # expect_rc EXPECTED WHAT
    [[ $rc -eq $1 ]] || { show_output; fail "$2: exit status $rc, expected $1"; }
}

expect_line() {  # expect_line FILE REGEX WHAT
    grep -Eq -- "$2" "$1" || { show_output; fail "$3: no line matching /$2/ in $(basename "$1")"; }
}

expect_count() {  # expect_count FILE REGEX N WHAT
    local n
    n=$(grep -Ec -- "$2" "$1")
    [[ $n -eq $3 ]] || { show_output; fail "$4: $n lines match /$2/, expected $3"; }
}

# Nothing of the job is left: no process in any node, none with our marker
# here, no file reported left behind by the agent, no /dev/shm/axon.* here.
expect_clean() {  # expect_clean WHAT [NODE-ALLOWED-TO-KEEP-FILES]
    local n left
    for n in "$node1" "$node2" "$node3"; do
        for _ in $(seq 1 30); do  # the last daemon may still be leaving
            left=$(ip netns pids "$n" 2>/dev/null)
            [[ -z "$left" ]] && break
            sleep 0.1
        done
        [[ -z "$left" ]] || { ps -o pid,args -p "$(echo $left | tr ' ' ',')"; fail "$1: processes left in $n"; }
    done
    left=$(pgrep -f "marker=$marker" || true)
    [[ -z "$left" ]] || { ps -o pid,args -p "$(echo $left | tr ' ' ',')"; fail "$1: processes left: $left"; }
    if grep "left files" "$work/err" | grep -qv "agent: ${2:-none} left"; then show_output; fail "$1: a node kept files"; fi
    return 0
}
