#!/bin/bash
# --timeout (or MPIEXEC_TIMEOUT): the job is ended with a message and exit
# status 124.
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

# MPIEXEC_TIMEOUT (what MPICH's and Open MPI's launchers read, and test
# harnesses set) is the default; --timeout wins over it.
start=$(now_ms)
MPIEXEC_TIMEOUT=1 run_mpirun -np 2 "$probe" sleep=30
elapsed=$(($(now_ms) - start))
expect_rc 124 "MPIEXEC_TIMEOUT=1"
[[ "$(cat "$work/err")" == "mpirun: the job ran longer than MPIEXEC_TIMEOUT 1 s; ending it" ]] ||
    { show_output; fail "MPIEXEC_TIMEOUT message"; }
[[ $elapsed -ge 900 && $elapsed -lt 7000 ]] || fail "MPIEXEC_TIMEOUT took ${elapsed} ms"
expect_no_orphans
MPIEXEC_TIMEOUT=1 run_mpirun --timeout 20 -np 2 "$probe" sleep=2
expect_rc 0 "--timeout 20 over MPIEXEC_TIMEOUT=1"
MPIEXEC_TIMEOUT=soon run_mpirun -np 1 "$probe" wireup
expect_rc 1 "MPIEXEC_TIMEOUT=soon"
grep -q "^mpirun: MPIEXEC_TIMEOUT needs a positive number of seconds, not 'soon'" "$work/err" ||
    { show_output; fail "bad MPIEXEC_TIMEOUT message"; }
echo "timeout OK"
