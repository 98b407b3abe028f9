#!/bin/bash
# Path explain: AXON_EXPLAIN=1 prints one line per peer class, size class
# and memory kind, with the protocol that ran (checked against the pml's
# counters through the report) and the words axon_info --explain prints for
# the same case; parameters move both; collectives explain once per
# communicator, call and algorithm; nothing without AXON_EXPLAIN.
. "$AXON_SRCDIR/test/launcher/lib.sh"
program="$AXON_BUILDDIR/test/diag/report_traffic"
info="$AXON_BUILDDIR/src/tools/axon_info"

# protocol_of FILE PEER-CLASS SIZES-PREFIX: the "protocol: why" text of axon_info --explain's row
protocol_of() {
    grep -E "^  $2 +[a-z]+ +host +$3" "$1" | sed -E 's/^  .{22} [a-z]+ +host +(up to|above) [0-9]+ [KMi]*B +//'
}

AXON_EXPLAIN=1 AXON_REPORT=comm run_mpirun -np 2 "$program"
expect_rc 0 "explained run"
err="$work/err"
lines=$(grep -c '^axon explain: rank 0 to rank 1 ' "$err")
[[ $lines -eq 2 ]] || { show_output; fail "rank 0 to rank 1: $lines lines, expected 2 (eager once, large once)"; }
expect_line "$err" '^axon explain: rank 0 to rank 1 \(a rank on this node, sm\), 8 B of host memory: eager: within sm.s eager limit of 32 KiB \(AXON_BTL_SM_EAGER_LIMIT\)' "eager line"
expect_line "$err" '^axon explain: rank 0 to rank 0 \(itself, self\), 100 B of host memory: eager' "self line"
large=$(grep '^axon explain: rank 0 to rank 1 (a rank on this node, sm), 1 MiB of host memory: ' "$err")
[[ -n $large ]] || { show_output; fail "no line for the 1 MiB messages"; }
# The large line's protocol is the one that ran: two rendezvous sends in the report.
expect_line "$err" '^ +0 +1 +sm +10 +80 +2 +2097152$' "the report counts 2 rendezvous sends"
[[ $large == *": rendezvous"* ]] || fail "1 MiB not explained as a rendezvous: $large"
# The same words as axon_info --explain for a rank on this node above the eager limit.
"$info" --explain 2 >"$work/table" || fail "axon_info --explain failed"
want=$(protocol_of "$work/table" "a rank on this node" "above")
[[ -n $want ]] || { cat "$work/table"; fail "axon_info --explain has no row above the sm eager limit"; }
[[ $large == *": $want" ]] || fail "job and axon_info differ: job '$large', axon_info '$want'"
want_eager=$(protocol_of "$work/table" "a rank on this node" "up to")
grep -qF "of host memory: $want_eager" "$err" || fail "eager words differ from axon_info's: $want_eager"
# Collectives: once per communicator, call and algorithm.
n=$(grep -c '^axon coll: allreduce on 2 ranks' "$err")
[[ $n -eq 1 ]] || { show_output; fail "allreduce explained $n times, expected once"; }

# A parameter moves the job's line and axon_info's row alike.
AXON_EXPLAIN=1 AXON_BTL_SM_EAGER_LIMIT=4096 run_mpirun -np 2 "$program"
expect_rc 0 "explained run, 4 KiB eager limit"
expect_line "$work/err" 'rank 0 to rank 1 \(a rank on this node, sm\), 8 B of host memory: eager: within sm.s eager limit of 4 KiB' "4 KiB limit in the job"
AXON_BTL_SM_EAGER_LIMIT=4096 "$info" --explain 2 >"$work/table4"
grep -qE '^  a rank on this node +sm +host +up to 4 KiB ' "$work/table4" || { cat "$work/table4"; fail "axon_info ignores AXON_BTL_SM_EAGER_LIMIT"; }
# sm's default shrinks with ranks per node (btl/sm's default_eager_limit).
"$info" --explain 32 | grep -qE '^  a rank on this node +sm +host +up to 8 KiB ' || fail "32 ranks per node: not 8 KiB"

# Over tcp: fragments, as axon_info says for a peer on another node.
AXON_EXPLAIN=1 AXON_BTL=self,tcp run_mpirun -np 2 "$program"
expect_rc 0 "explained run over tcp"
tcp_large=$(grep '^axon explain: rank 0 to rank 1 (a rank on this node, tcp), 1 MiB of host memory: ' "$work/err")
want=$(protocol_of "$work/table" "a rank on another node" "above")
[[ -n $tcp_large && $tcp_large == *": rendezvous in fragments: "* ]] || { show_output; fail "tcp large line: $tcp_large"; }
[[ $want == "rendezvous in fragments: "* ]] || fail "axon_info's tcp row: $want"

# Off by default.
run_mpirun -np 2 "$program"
expect_rc 0 "plain run"
grep -q '^axon explain\|^axon coll' "$work/err" && fail "explain lines without AXON_EXPLAIN"
echo "explain: ok"
