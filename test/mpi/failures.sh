#!/bin/bash
# Job failure through the MPI library: MPI_Abort(comm, 7) ends the job with
# exit 7; a rank killed by a signal ends it with a message naming the rank
# and the signal; an error under MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT ends
# it with a message naming the call and the error. Always within seconds,
# with no process and no /dev/shm file of the job left behind.
. "$AXON_SRCDIR/test/launcher/lib.sh"
program="$AXON_BUILDDIR/test/mpi/failures"

job_files() { ls /dev/shm 2>/dev/null | grep '^axon\.' | sort; }
before=$(job_files)
# Files of a job whose mpirun still runs belong to another test run sharing
# the machine; this test's jobs have all ended when it looks.
. "$AXON_SRCDIR/test/shm_jobs.sh"
expect_clean() {  # no processes, no new shared-memory files
    expect_no_orphans
    local new
    new=$(comm -13 <(echo "$before") <(job_files) | only_ended_jobs)
    [[ -z "$new" ]] || fail "$1: shared-memory files left behind: $new"
}
timed() {  # timed MAX_MS ARGS...: run_mpirun, failing when slower than MAX_MS
    local max=$1 start
    shift
    start=$(now_ms)
    run_mpirun "$@"
    local took=$(($(now_ms) - start))
    [[ $took -lt $max ]] || { show_output; fail "$*: took ${took} ms"; }
}

for np in 2 4; do
    last=$((np - 1))
    timed 10000 -np $np "$program" abort $last marker=$marker
    expect_rc 7 "MPI_Abort(7) on rank $last of $np"
    expect_line "$work/err" "^mpirun: rank $last \(pid [0-9]+\) called MPI_Abort with status 7" "abort message"
    expect_clean "abort np $np"

    timed 10000 -np $np "$program" segv 1 marker=$marker
    expect_rc 139 "SIGSEGV in rank 1 of $np"
    expect_line "$work/err" "^mpirun: rank 1 \(pid [0-9]+\) was killed by signal 11 \(Segmentation fault\)" \
        "signal message"
    expect_clean "segv np $np"

    timed 10000 -np $np "$program" fatal 0 marker=$marker
    [[ $rc -ne 0 ]] || { show_output; fail "MPI_ERRORS_ARE_FATAL: exit status 0"; }
    expect_line "$work/err" "MPI_Send.*MPI_ERR_RANK|MPI_ERR_RANK.*MPI_Send" "fatal error names the call and class"
    expect_clean "fatal np $np"

    timed 10000 -np $np "$program" errabort 1 marker=$marker
    [[ $rc -ne 0 ]] || { show_output; fail "MPI_ERRORS_ABORT: exit status 0"; }
    expect_line "$work/err" "MPI_Send.*MPI_ERR_RANK|MPI_ERR_RANK.*MPI_Send" "abort error names the call and class"
    if grep -q "still running" "$work/err"; then show_output; fail "MPI_ERRORS_ABORT returned to the program"; fi
    expect_clean "errabort np $np"
done
echo "failures: ok"
