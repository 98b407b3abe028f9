#!/bin/bash
# (f) AXON_HANG_REPORT_AFTER=2: rank 1 waits 4 s in MPI_Recv for rank 0,
# which computes meanwhile; rank 1 asks for one report after 2 s, and the
# job finishes normally.
. "$AXON_SRCDIR/test/hang/lib.sh"

AXON_HANG_REPORT_AFTER=2 run_mpirun -np 2 "$prog" stall marker=$marker
expect_rc 0 "a stall that resolves"
expect_line "$work/out" '^received 42$' "the program's output"
[[ $(count_reports) -eq 1 ]] || { show_output; fail "one report expected, $(count_reports) printed"; }
expect_line "$work/err" '^mpirun: hang report \(rank 1 made no progress for AXON_HANG_REPORT_AFTER seconds\):$' "report header"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\): in MPI_Recv\(source=0, tag=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 1's call"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): not in a blocking MPI call$' "rank 0 computing"
if grep -Eq '; ending (it|the job)$' "$work/err"; then show_output; fail "the job goes on after the report"; fi
expect_no_orphans
expect_clean_tmp

# Both ranks of a deadlock ask, at about the same time: one report for them,
# then the timeout's.
AXON_HANG_REPORT_AFTER=1 run_mpirun --timeout 4 -np 2 "$prog" cycle marker=$marker
expect_rc 124 "a deadlock with AXON_HANG_REPORT_AFTER=1"
[[ $(grep -c '^mpirun: hang report (rank [01] made no progress for AXON_HANG_REPORT_AFTER seconds):$' "$work/err") -eq 1 ]] ||
    { show_output; fail "one report for the ranks' requests expected"; }
[[ $(count_reports) -eq 2 ]] || { show_output; fail "two reports expected (the ranks', the timeout's)"; }
expect_no_orphans
expect_clean_tmp

# Off by default: no report for the same stall.
run_mpirun -np 2 "$prog" stall marker=$marker
expect_rc 0 "a stall without AXON_HANG_REPORT_AFTER"
[[ $(count_reports) -eq 0 ]] || { show_output; fail "no report expected by default"; }
echo "hang after OK"
