#!/bin/bash
# Signals to mpirun: forwarded to the ranks, the job ends, mpirun exits
# 128+signal, nothing is left behind; SIGUSR2 forwarded, SIGUSR1 not (the
# hang doctor's); a rank ignoring SIGTERM is killed after
# the grace period; ranks die with a SIGKILLed mpirun.
. "$AXON_SRCDIR/test/launcher/lib.sh"

wait_for_lines() {  # wait_for_lines FILE COUNT: until FILE has COUNT lines (max 5 s)
    for _ in $(seq 100); do
        [[ $(wc -l <"$1") -ge $2 ]] && return 0
        sleep 0.05
    done
    fail "ranks did not start: $(cat "$1")"
}

for sig in TERM INT HUP; do
    "$MPIRUN" -np 3 "$probe" info shm sleep=30 marker=$marker >"$work/out" 2>"$work/err" </dev/null &
    pid=$!
    wait_for_lines "$work/out" 6
    start=$(now_ms)
    kill -s $sig $pid
    wait $pid
    rc=$?
    number=$(kill -l $sig)
    expect_rc $((128 + number)) "SIG$sig to mpirun"
    [[ $(($(now_ms) - start)) -lt 4000 ]] || fail "SIG$sig: the job did not end promptly"
    expect_line "$work/err" "^mpirun: received signal $number \(.*\); forwarding it to the ranks and ending the job$" \
        "SIG$sig message"
    expect_no_orphans
    expect_no_job_files "$(info_field 0 nspace)" "$(info_field 0 tmpdir)"
done

# SIGUSR2 is forwarded and the job goes on; SIGUSR1 is mpirun's own (a hang
# report, test/hang/sigusr1.sh): not forwarded, and with ranks that are no
# MPI programs there is nothing to report.
"$MPIRUN" -np 2 /bin/sh -c 'trap "echo usr1" USR1; trap "echo usr2" USR2; echo up; while :; do sleep 0.05; done' \
    marker=$marker >"$work/out" 2>"$work/err" </dev/null &
pid=$!
wait_for_lines "$work/out" 2
kill -USR1 $pid
sleep 0.3
kill -USR2 $pid
for _ in $(seq 60); do
    [[ $(grep -c '^usr2$' "$work/out") -ge 2 ]] && break
    sleep 0.05
done
kill -0 $pid 2>/dev/null || { show_output; fail "mpirun ended after SIGUSR1/SIGUSR2"; }
kill -TERM $pid
wait $pid
[[ $(grep -c '^usr2$' "$work/out") -eq 2 ]] || { show_output; fail "SIGUSR2 not forwarded to both ranks"; }
if grep -q '^usr1$' "$work/out"; then show_output; fail "SIGUSR1 was forwarded"; fi
if grep -q 'hang report' "$work/err"; then show_output; fail "a hang report without MPI ranks"; fi
expect_no_orphans

# Ranks that ignore SIGTERM are killed after the grace period (~3 s).
"$MPIRUN" -np 2 /bin/sh -c 'trap "" TERM; echo up; exec sleep 30' marker=$marker >"$work/out" 2>"$work/err" </dev/null &
pid=$!
wait_for_lines "$work/out" 2
start=$(now_ms)
kill -TERM $pid
wait $pid
rc=$?
elapsed=$(($(now_ms) - start))
expect_rc 143 "SIGTERM with ranks ignoring it"
[[ $elapsed -ge 2500 && $elapsed -lt 9000 ]] || fail "grace period before SIGKILL was ${elapsed} ms"
expect_no_orphans

# A second signal kills at once.
"$MPIRUN" -np 2 /bin/sh -c 'trap "" TERM; echo up; exec sleep 30' marker=$marker >"$work/out" 2>"$work/err" </dev/null &
pid=$!
wait_for_lines "$work/out" 2
start=$(now_ms)
kill -TERM $pid
sleep 0.2
kill -TERM $pid
wait $pid
rc=$?
expect_rc 143 "two SIGTERMs"
[[ $(($(now_ms) - start)) -lt 2500 ]] || fail "a second signal did not kill at once"
expect_no_orphans

# mpirun killed outright: the ranks die with it (PR_SET_PDEATHSIG).
"$MPIRUN" -np 2 "$probe" info sleep=30 marker=$marker >"$work/out" 2>"$work/err" </dev/null &
pid=$!
wait_for_lines "$work/out" 2
kill -KILL $pid
wait $pid 2>/dev/null
for _ in $(seq 40); do
    pgrep -f "marker=$marker" >/dev/null || break
    sleep 0.05
done
expect_no_orphans
rm -rf "$(info_field 0 tmpdir)"  # nobody is left to remove it after SIGKILL
echo "signals OK"
