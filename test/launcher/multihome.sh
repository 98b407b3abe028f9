#!/bin/bash
# A head node with several addresses: each daemon gets mpirun's addresses,
# best first, and tries them in turn until mpirun answers its HELLO; one
# that reaches none says which it tried and why each failed. An address
# the daemon cannot use is simulated by one where mpirun does not listen
# (IPv6 loopback: mpirun listens on IPv4), one with no route, and a name
# that does not resolve. Daemons run here through a local launch agent.
. "$AXON_SRCDIR/test/launcher/lib.sh"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
job=(--launch-agent "$agent" -H localhost:1,axon-home2:1 -np 2)

# The first address fails, the second works.
run_mpirun "${job[@]}" --head-addr ::1,127.0.0.1 "$probe" wireup marker=$marker
expect_rc 0 "first address unusable"
expect_line "$work/out" "^rank 1 wireup 2/2$" "rank on the other node wired up"
[[ ! -s "$work/err" ]] || { show_output; fail "a working second address printed something"; }
run_mpirun "${job[@]}" --head-addr 255.255.255.255,axon-no-such-host.invalid,127.0.0.1 "$probe" wireup
expect_rc 0 "third address"
expect_line "$work/out" "^rank 1 wireup 2/2$" "third address: wired up"

# None works: the daemon lists what it tried, mpirun names the host; exit 1.
start=$(now_ms)
run_mpirun "${job[@]}" --head-addr ::1,255.255.255.255,axon-no-such-host.invalid "$probe" wireup marker=$marker
elapsed=$(($(now_ms) - start))
expect_rc 1 "no address works"
port='[0-9]+'
expect_line "$work/err" "^mpirun daemon on $(hostname): cannot reach mpirun at any of its addresses: \[::1\]:$port \([^)]+\), 255\.255\.255\.255:$port \(Network is unreachable\), axon-no-such-host\.invalid:$port \([^)]+\)$" \
    "the daemon's list of what it tried"
expect_line "$work/err" "^mpirun: cannot start the daemon on host axon-home2: the launch agent exited with status 1 before the daemon connected \(command: .* --daemon ::1,255\.255\.255\.255,axon-no-such-host\.invalid $port 1\)$" \
    "mpirun's message"
[[ $elapsed -lt 10000 ]] || fail "failing addresses took $elapsed ms"

# By default every daemon gets this machine's addresses (the route's source
# to its host first), and finds mpirun through one of them.
run_mpirun "${job[@]}" --display-map "$probe" wireup
expect_rc 0 "default addresses"
expect_line "$work/out" "^rank 1 wireup 2/2$" "default addresses: wired up"
# -iface: the addresses of these interfaces (the loopback one here).
run_mpirun "${job[@]}" -iface lo "$probe" wireup
expect_rc 0 "-iface lo"
run_mpirun "${job[@]}" -iface axon-no-such-if0 "$probe" wireup
expect_rc 1 "-iface of no interface"
[[ "$(cat "$work/err")" == "mpirun: -iface: no interface that is up matches 'axon-no-such-if0' (interface names, patterns or a.b.c.d/n)" ]] ||
    { show_output; fail "-iface message"; }
expect_no_orphans
echo "multi-homed head OK"
