#!/bin/bash
# (c) Rank 1 exits (status 0, without MPI_Finalize) while rank 0 waits in
# MPI_Recv from it: when the finalize grace ends the job (exit status 1),
# the report says first what rank 0 waits for, and that rank 1 exited.
. "$AXON_SRCDIR/test/hang/lib.sh"

run_mpirun -np 2 "$prog" exit marker=$marker
expect_rc 1 "a rank left without MPI_Finalize"
expect_line "$work/err" '^mpirun: hang report \(rank 1 \(pid [0-9]+\) exited without calling MPI_Finalize\):$' "report header"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Recv\(source=1, tag=3, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 0's call"
[[ -z "$(block 1)" ]] || { show_output; fail "an exited rank has no block"; }
expect_line "$work/err" '^mpirun: diagnosis: rank 0 waits for rank 1, which exited with status 0 without calling MPI_Finalize$' "the wait on the exited rank"
expect_line "$work/err" '^mpirun: diagnosis: rank 1 exited with status 0 without calling MPI_Finalize$' "the exited rank"
expect_last_line "mpirun: rank 1 (pid $(sed -n 's/^mpirun: hang report (rank 1 (pid \([0-9]*\)).*/\1/p' "$work/err")) exited without calling MPI_Finalize while other ranks kept running; ending the job" "the job's end"
expect_no_orphans
expect_clean_tmp

# Under a timeout that comes first, the exit shows in the timeout's report.
run_mpirun --timeout 1 -np 2 "$prog" exit marker=$marker
[[ $rc -eq 124 || $rc -eq 1 ]] || { show_output; fail "exit status $rc, expected 124 (or 1 on a slow start)"; }
expect_line "$work/err" '^mpirun: diagnosis: rank 1 exited with status 0 without calling MPI_Finalize$' "the exited rank (timeout)"
expect_no_orphans
expect_clean_tmp
echo "hang exited OK"
