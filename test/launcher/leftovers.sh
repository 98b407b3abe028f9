#!/bin/bash
# A SIGKILLed mpirun (or daemon) leaves nothing behind: its janitor removes
# the job's tmpdir (/tmp/axon.<pid>.*) and shared-memory files and kills
# what the ranks forked; the ranks themselves die with mpirun. And a clean
# run leaves no janitor running.
. "$AXON_SRCDIR/test/launcher/lib.sh"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
tmp=${TMPDIR:-/tmp}
[[ ${#tmp} -lt 48 && -d "$tmp" ]] || tmp=/tmp

# wait_gone WHAT CHECK-COMMAND...: CHECK prints nothing within 3 s.
wait_gone() {
    local what=$1 left=
    shift
    for _ in $(seq 1 60); do
        left=$("$@")
        [[ -z "$left" ]] && return 0
        sleep 0.05
    done
    fail "$what still there 3 s later: $left"
}
job_dirs() { ls -d "$tmp"/axon."$1".* 2>/dev/null; }
job_shm() { ls /dev/shm 2>/dev/null | grep -F "axon.axon.$1." || true; }
marked() { pgrep -f "marker=$marker" || true; }
janitors_of() { pgrep -f -- "--janitor axon\.$1\." || true; }

# Starts a job in the background whose ranks created shared-memory files and
# forked a child each; waits until it runs. Sets $job (mpirun's pid).
start_job() {  # start_job MPIRUN-ARGS...
    "$MPIRUN" "$@" >"$work/out" 2>"$work/err" </dev/null &
    job=$!
    for _ in $(seq 1 100); do
        [[ $(grep -c ' shm ' "$work/out" 2>/dev/null) -ge 2 ]] && return 0
        sleep 0.05
    done
    show_output
    fail "the job did not start"
}

# One node: kill -9 mpirun while its ranks (and a child of each) run.
start_job -np 2 "$probe" shm sleep=30 marker=$marker
( sh -c "sleep 30 # marker=$marker" & ) # not part of the job: must survive
[[ -n "$(job_dirs $job)" ]] || fail "no tmpdir for job $job"
[[ -n "$(job_shm $job)" ]] || fail "no shared-memory files for job $job"
kill -9 $job
wait $job 2>/dev/null
wait_gone "the tmpdir of the SIGKILLed mpirun $job" job_dirs $job
wait_gone "the shared-memory files of mpirun $job" job_shm $job
wait_gone "the janitor of mpirun $job" janitors_of $job
# Only the unrelated sleep is left of what carried the marker.
left=$(pgrep -f "marker=$marker" | xargs -r ps -o args= -p | grep -v '^sh -c sleep 30\|^sleep 30' || true)
[[ -z "$left" ]] || fail "ranks left behind: $left"
pkill -f "sleep 30 # marker=$marker" 2>/dev/null; true

# What a rank forked dies too: the janitor kills the ranks' process groups.
"$MPIRUN" -np 1 sh -c "sleep 30 & echo started; wait # marker=$marker" >"$work/out" 2>&1 </dev/null &
job=$!
for _ in $(seq 1 100); do grep -q started "$work/out" 2>/dev/null && break; sleep 0.05; done
kill -9 $job
wait $job 2>/dev/null
wait_gone "the rank's child (sleep 30)" marked
wait_gone "the tmpdir of mpirun $job" job_dirs $job

# Two nodes: kill -9 mpirun; the daemon sees it go, kills its ranks and
# cleans its node; nothing of either node is left.
start_job --launch-agent "$agent" -H localhost:1,axon-left2:1 -np 2 "$probe" shm sleep=30 marker=$marker
kill -9 $job
wait $job 2>/dev/null
wait_gone "the tmpdirs of the job of mpirun $job" job_dirs $job
wait_gone "the shared-memory files of the job of mpirun $job" job_shm $job
wait_gone "the daemon and ranks" marked
wait_gone "the daemon" pgrep -f -- "--daemon .* 1$"

# kill -9 of the daemon: its janitor cleans its node's tmpdir.
start_job --launch-agent "$agent" -H localhost:1,axon-left2:1 -np 2 "$probe" shm sleep=30 marker=$marker
daemon=$(pgrep -f -- "mpirun --daemon .* 1$" | head -n 1)
[[ -n "$daemon" ]] || fail "no daemon found"
[[ $(job_dirs $job | wc -l) -eq 2 ]] || fail "expected two tmpdirs (mpirun's, the daemon's): $(job_dirs $job)"
kill -9 "$daemon"
wait $job
rc=$?
expect_rc 1 "daemon killed"
expect_line "$work/err" "^mpirun: lost the connection to the daemon on host axon-left2 \(it died or was killed\); ending the job$" \
    "daemon killed message"
wait_gone "the tmpdirs of job $job" job_dirs $job
wait_gone "the ranks" marked

# A clean run: no janitor outlives mpirun, no file is left.
run_mpirun -np 2 "$probe" shm marker=$marker
expect_rc 0 "clean run"
pid_of_job=$(sed -n 's/^rank 0 shm \/dev\/shm\/axon\.axon\.\([0-9]*\)\..*/\1/p' "$work/out")
[[ -n "$pid_of_job" ]] || { show_output; fail "no shm line"; }
[[ -z "$(janitors_of "$pid_of_job")" ]] || fail "a janitor outlived a clean mpirun"
[[ -z "$(job_dirs "$pid_of_job")$(job_shm "$pid_of_job")" ]] || fail "a clean run left files"
expect_no_orphans
echo "leftovers OK"
