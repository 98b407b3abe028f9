#!/bin/bash
# A TCP job under attack: while 3 ranks pass messages round a ring over TCP
# (fixed ports, so we know where they listen), a stranger connects to every
# port and sends (a) garbage, (b) a well-formed handshake for this very job
# with a wrong secret, (c) a handshake header with an oversized length. Each
# connection must be closed by the rank, the job must finish with exact data
# and exit 0, and the log must name each rejected connection and why.
. "$AXON_SRCDIR/test/launcher/lib.sh"
range=16
port=$((20000 + ($$ % 700) * 16))  # below the ephemeral range; differs between concurrent runs
AXON_BTL=tcp,self AXON_BTL_TCP_IF_INCLUDE=lo AXON_BTL_TCP_PORT_MIN=$port AXON_BTL_TCP_PORT_RANGE=$range \
    "$MPIRUN" -np 3 "$AXON_BUILDDIR/test/tcp/victim" "$work" marker=$marker >"$work/out" 2>"$work/err" </dev/null &
job=$!
for _ in $(seq 200); do [[ -s "$work/ready" ]] && break; sleep 0.05; done
[[ -s "$work/ready" ]] || { touch "$work/done"; wait $job; show_output; fail "the job did not start"; }
nspace=$(cat "$work/ready")
for mode in garbage secret oversized; do
    "$AXON_BUILDDIR/test/tcp/intruder" $mode $port $range "$nspace" || { touch "$work/done"; wait $job; fail "intruder $mode"; }
done
touch "$work/done"
wait $job
rc=$?
expect_rc 0 "the attacked job"
expect_line "$work/out" "tcp_victim: ok" "exact data"
expect_line "$work/err" "tcp: rejected a connection from 127\.0\.0\.1:[0-9]+: not an Axon connection" "garbage logged"
expect_line "$work/err" "tcp: rejected a connection from 127\.0\.0\.1:[0-9]+: wrong secret" "wrong secret logged"
expect_line "$work/err" "tcp: rejected a connection from 127\.0\.0\.1:[0-9]+: oversized handshake" "oversized length logged"
n=$(grep -c "tcp: rejected a connection" "$work/err")
[[ $n -eq 9 ]] || { show_output; fail "expected 9 rejected connections (3 ranks x 3 attacks), log has $n"; }
expect_no_orphans
echo "ok: 3 attacks on 3 ranks rejected, job exact"
