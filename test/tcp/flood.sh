#!/bin/bash
# TCP wire-up under a connection flood (docs/security.md, "Other hosts"):
#  1. the job alone (fixed ports on loopback), for the times to compare with;
#  2. the same job while a stranger (flooder) keeps hundreds of connections
#     open to every rank's port -- idle ones, stalled handshakes, wrong
#     secrets, garbage -- from before the first rank connects to another
#     until 8 s later: every connection of the job is set up under the
#     flood. The job must finish with exact data, log a few dozen lines at
#     most, and be as fast as before once the flood is over;
#  3. a rank that stops (SIGSTOP) before its peers connect to it: its
#     kernel accepts their connections but nobody answers; they try again
#     and end the job within AXON_BTL_TCP_CONNECT_TIMEOUT with a message
#     naming the rank.
. "$AXON_SRCDIR/test/launcher/lib.sh"
np=4
range=16
port=$((21000 + ($$ % 600) * 16))  # below the ephemeral range; differs between concurrent runs
export AXON_BTL=tcp,self AXON_BTL_TCP_IF_INCLUDE=lo AXON_BTL_TCP_PORT_MIN=$port AXON_BTL_TCP_PORT_RANGE=$range
wireup="$AXON_BUILDDIR/test/tcp/wireup"
seconds() { sed -n "s/^wireup: $1.* rounds in \([0-9.]*\) s$/\1/p" "$work/out"; }
stopped=""
trap '[[ -n "$stopped" ]] && kill -CONT $stopped 2>/dev/null; rm -rf "$work"' EXIT

# 1. No flood.
mkdir "$work/quiet" && touch "$work/quiet/go"
run_mpirun -np $np "$wireup" "$work/quiet" 10 marker=$marker
expect_rc 0 "the job without a flood"
quiet=$(seconds "$np ranks")
echo "without a flood: 10 rounds in $quiet s"

# 2. Flood.
mkdir "$work/flood"
"$MPIRUN" -np $np "$wireup" "$work/flood" 10 after marker=$marker >"$work/out" 2>"$work/err" </dev/null &
job=$!
for _ in $(seq 200); do [[ -s "$work/flood/ready" ]] && break; sleep 0.05; done
[[ -s "$work/flood/ready" ]] || { touch "$work/flood/go" "$work/flood/calm"; wait $job; show_output; fail "the job did not start"; }
"$AXON_BUILDDIR/test/tcp/flooder" $port $range 8 300 "$work/flood/go" "$(cat "$work/flood/ready")" >"$work/flooder" 2>&1
flooder_rc=$?
touch "$work/flood/go" "$work/flood/calm"
wait $job
rc=$?
cat "$work/flooder"
expect_rc 0 "the job under a flood"
[[ $flooder_rc -eq 0 ]] || fail "the flooder could not connect"
[[ $(grep -c "tcp_wireup: ok" "$work/out") -eq $np ]] || { show_output; fail "not every rank said ok"; }
made=$(sed -n 's/.* \([0-9]*\) connections made.*/\1/p' "$work/flooder")
[[ ${made:-0} -ge 1000 ]] || fail "the flood was too weak to mean anything ($made connections)"
flooded=$(seconds "$np ranks")
after=$(seconds "after the flood:")
lines=$(wc -l <"$work/err")
echo "under the flood: 10 rounds in $flooded s; after it: $after s; $lines lines of log from $np ranks"
grep -q "connection to rank\|error" "$work/err" && { show_output; fail "a connection of the job suffered"; }
expect_line "$work/err" "tcp: rejected a connection from 127\.0\.0\.1:[0-9]+: " "refusals logged"
expect_line "$work/err" "tcp: refused [0-9]+ more connection\(s\) not shown" "refusals counted"
[[ $lines -le $((10 * np)) ]] || { show_output; fail "$lines lines of log: the warnings are not rate-limited"; }
awk -v q="$quiet" -v a="$after" 'BEGIN { exit !(a <= 3 * q + 1.0) }' ||
    fail "the job stayed slow after the flood: $after s against $quiet s without one"
awk -v f="$flooded" 'BEGIN { exit !(f <= 60) }' || fail "the flood slowed the job down to $flooded s"

# 3. A rank that never answers.
mkdir "$work/stall"
start=$(now_ms)
AXON_BTL_TCP_HANDSHAKE_TIMEOUT=1 AXON_BTL_TCP_CONNECT_TIMEOUT=3 \
    "$MPIRUN" -np 3 "$wireup" "$work/stall" 1 marker=$marker >"$work/out" 2>"$work/err" </dev/null &
job=$!
for _ in $(seq 200); do [[ -s "$work/stall/pid.2" ]] && break; sleep 0.05; done
stopped=$(cat "$work/stall/pid.2" 2>/dev/null)
[[ -n "$stopped" ]] && kill -STOP "$stopped"
touch "$work/stall/go"
wait $job
rc=$?
took=$(($(now_ms) - start))
kill -CONT "$stopped" 2>/dev/null
[[ $rc -ne 0 ]] || { show_output; fail "the job with a stopped rank succeeded"; }
expect_line "$work/err" "tcp: cannot connect to rank 2 \(127\.0\.0\.1:[0-9]+: no answer within 1 s, tried for [0-9]+ s, [0-9]+ attempts\)" \
    "the job names the rank it cannot reach"
[[ $took -le 20000 ]] || fail "the job with a stopped rank took $took ms to end"
echo "a stopped rank: the job ended after $took ms (exit $rc)"
expect_no_orphans
echo "ok"
