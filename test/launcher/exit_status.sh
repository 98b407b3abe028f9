#!/bin/bash
# Exit-status policy: the first failing rank decides, mpirun names it, the
# other ranks are ended, and nothing is left behind (processes, /dev/shm
# objects of the job, the tmpdir) even when a rank crashes.
. "$AXON_SRCDIR/test/launcher/lib.sh"

# rank 1 exits 3 while the others would sleep: exit 3, within seconds.
start=$(now_ms)
run_mpirun -np 3 "$probe" wireup exit=1:3 sleep=30 marker=$marker
expect_rc 3 "rank 1 exits 3"
expect_line "$work/err" "^mpirun: rank 1 \(pid [0-9]+\) exited with status 3; ending the job$" "exit message"
[[ $(($(now_ms) - start)) -lt 8000 ]] || fail "the job was not ended promptly"
expect_no_orphans

# rank 1 segfaults after creating shared-memory files: 139, files removed.
run_mpirun -np 2 "$probe" info shm wireup signal=1:11 sleep=30 marker=$marker
expect_rc 139 "rank 1 killed by SIGSEGV"
expect_line "$work/err" "^mpirun: rank 1 \(pid [0-9]+\) was killed by signal 11 \(Segmentation fault\); ending the job$" \
    "signal message"
nspace=$(info_field 0 nspace)
expect_line "$work/out" "^rank 1 shm /dev/shm/axon\.$nspace\.probe\.1$" "rank 1 created its shm file"
expect_no_orphans
expect_no_job_files "$nspace" "$(info_field 0 tmpdir)"

# PMIx_Abort(7) from rank 2 (what MPI_Abort does): exit 7.
run_mpirun -np 3 "$probe" wireup abort=2:7 sleep=30 marker=$marker
expect_rc 7 "rank 2 aborts with 7"
expect_line "$work/err" "^mpirun: rank 2 \(pid [0-9]+\) called MPI_Abort with status 7: probe called abort; ending the job$" \
    "abort message"
[[ $(grep -c '^mpirun:' "$work/err") -eq 1 ]] || { show_output; fail "more than one report for one abort"; }
expect_no_orphans

# Abort with status 0 still fails the job.
run_mpirun -np 2 "$probe" abort=0:0 sleep=30 marker=$marker
expect_rc 1 "abort with status 0"
expect_no_orphans

# Every rank exits 0, one without PMIx_Finalize: success, with a warning.
run_mpirun -np 2 "$probe" wireup nofinalize=1 marker=$marker
expect_rc 0 "all exit 0, rank 1 without finalize"
expect_line "$work/err" "^mpirun: warning: rank 1 exited without calling MPI_Finalize$" "missing-finalize warning"

# Rank 1 leaves without finalizing while rank 0 keeps running: ended after the
# grace period, exit 1, naming rank 1.
start=$(now_ms)
run_mpirun -np 2 "$probe" wireup nofinalize=1 sleep=0:30 marker=$marker
elapsed=$(($(now_ms) - start))
expect_rc 1 "rank 1 gone without finalize while rank 0 runs"
expect_line "$work/err" "^mpirun: rank 1 \(pid [0-9]+\) exited without calling MPI_Finalize while other ranks kept running; ending the job$" \
    "no-finalize message"
[[ $elapsed -ge 1500 && $elapsed -lt 8000 ]] || fail "no-finalize grace took ${elapsed} ms"
expect_no_orphans

# A rank exiting 0 without finalize while the others finish within the grace: success.
run_mpirun -np 2 "$probe" wireup nofinalize=1 sleep=0:0.5 marker=$marker
expect_rc 0 "others finish within the grace"

# A program that is not a PMIx client at all (never connects): plain exit codes.
run_mpirun -np 2 /bin/sh -c 'exit 5'
expect_rc 5 "non-PMIx program exiting 5"
run_mpirun -np 2 /bin/true
expect_rc 0 "non-PMIx program exiting 0"
[[ ! -s "$work/err" ]] || { show_output; fail "warning for a program that never used PMIx"; }
echo "exit status OK"
