#!/bin/bash
# (b) Rank 0 in MPI_Barrier, rank 1 in MPI_Scatter on MPI_COMM_WORLD: both
# blocked in collective #1 there, in different calls: a mismatch.
. "$AXON_SRCDIR/test/hang/lib.sh"

run_mpirun --timeout 3 -np 2 "$prog" mismatch marker=$marker
expect_rc 124 "mismatch under --timeout 3"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Barrier\(comm=MPI_COMM_WORLD size=2\), collective #1 on MPI_COMM_WORLD$' "rank 0 in MPI_Barrier"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\): in MPI_Scatter\(root=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\), collective #1 on MPI_COMM_WORLD$' "rank 1 in MPI_Scatter"
expect_in_block 0 '^mpirun:   collectives entered: MPI_COMM_WORLD 1 \(last MPI_Barrier\)$' "rank 0's collective count"
expect_line "$work/err" '^mpirun: diagnosis: collective mismatch on MPI_COMM_WORLD: rank 0 in MPI_Barrier \(collective #1\); rank 1 in MPI_Scatter root 0 \(collective #1\)$' "the mismatch"
if grep -q 'diagnosis: deadlock' "$work/err"; then show_output; fail "no cycle in a collective mismatch"; fi
expect_last_line "mpirun: the job ran longer than --timeout 3 s; ending it" "timeout message"
expect_no_orphans
expect_clean_tmp

# A repeated small allreduce takes the shortcut past the selection; it is
# recorded all the same: rank 0 in its third MPI_Allreduce, rank 1 (two
# entered) in MPI_Recv.
run_mpirun --timeout 2 -np 2 "$prog" repeat marker=$marker
expect_rc 124 "repeat under --timeout 2"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Allreduce\(comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\), collective #3 on MPI_COMM_WORLD$' "rank 0 in its third MPI_Allreduce"
expect_in_block 0 '^mpirun:   collectives entered: MPI_COMM_WORLD 3 \(last MPI_Allreduce\)$' "rank 0's collective count"
expect_in_block 1 '^mpirun:   collectives entered: MPI_COMM_WORLD 2 \(last MPI_Allreduce\)$' "rank 1's collective count"
expect_no_orphans
expect_clean_tmp
echo "hang mismatch OK"
