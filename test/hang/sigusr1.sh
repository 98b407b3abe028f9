#!/bin/bash
# (d) SIGUSR1 to mpirun while the program is stuck: a report, and the job
# goes on (it is not forwarded) until --timeout ends it, with a second report.
. "$AXON_SRCDIR/test/hang/lib.sh"

"$MPIRUN" --timeout 6 -np 2 "$prog" cycle marker=$marker >"$work/out" 2>"$work/err" </dev/null &
pid=$!
# Both ranks armed the doctor (their marker files) and are blocked.
for _ in $(seq 50); do
    [[ $(ls "$TMPDIR"/*/hang-armed.* 2>/dev/null | wc -l) -eq 2 ]] && break
    sleep 0.1
done
sleep 0.5
kill -USR1 $pid
for _ in $(seq 30); do
    grep -q '^mpirun: end of hang report$' "$work/err" && break
    sleep 0.1
done
kill -0 $pid 2>/dev/null || { show_output; fail "mpirun ended after SIGUSR1"; }
[[ $(pgrep -f "marker=$marker" | wc -l) -ge 2 ]] || { show_output; fail "the ranks ended after SIGUSR1"; }
expect_line "$work/err" '^mpirun: hang report \(mpirun received SIGUSR1\):$' "SIGUSR1 report"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle"
wait $pid
rc=$?
expect_rc 124 "ended by --timeout after the SIGUSR1 report"
[[ $(count_reports) -eq 2 ]] || { show_output; fail "two reports expected (SIGUSR1, timeout)"; }
[[ "$(grep '^mpirun: hang report (' "$work/err" | head -n 1)" == "mpirun: hang report (mpirun received SIGUSR1):" ]] ||
    { show_output; fail "the SIGUSR1 report comes first"; }
expect_last_line "mpirun: the job ran longer than --timeout 6 s; ending it" "timeout message"
expect_no_orphans
expect_clean_tmp
echo "hang sigusr1 OK"
