#!/bin/bash
# --timeout: the job is ended with a message and exit status 124.
. "$AXON_SRCDIR/test/launcher/lib.sh"

start=$(now_ms)
run_mpirun --timeout 1 -np 2 "$probe" shm sleep=30 marker=$marker
elapsed=$(($(now_ms) - start))
expect_rc 124 "--timeout 1"
[[ "$(cat "$work/err")" == "mpirun: the job ran longer than --timeout 1 s; ending it" ]] || { show_output; fail "timeout message"; }
[[ $elapsed -ge 900 && $elapsed -lt 7000 ]] || fail "timeout took ${elapsed} ms"
expect_no_orphans
ns=$(sed -n 's|^rank 0 shm /dev/shm/axon\.\(.*\)\.probe\.0$|\1|p' "$work/out")
[[ -n "$ns" ]] || fail "rank 0 made no shm file"
expect_no_job_files "$ns"

# A job that finishes in time is not affected.
run_mpirun --timeout 10 -np 2 "$probe" wireup
expect_rc 0 "job within its timeout"
echo "timeout OK"
