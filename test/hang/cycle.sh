#!/bin/bash
# (a) Both ranks MPI_Recv from each other first; --timeout 3: the report
# names each rank's call with its arguments and the cycle, then the job
# ends as without the doctor (message, exit status 124).
. "$AXON_SRCDIR/test/hang/lib.sh"

run_mpirun --timeout 3 -np 2 "$prog" cycle marker=$marker
expect_rc 124 "cycle under --timeout 3"
expect_line "$work/err" '^mpirun: hang report \(the job ran longer than --timeout 3 s\):$' "report header"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Recv\(source=1, tag=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 0's call"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\): in MPI_Recv\(source=0, tag=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 1's call"
expect_in_block 0 '^mpirun:     receive from 1 tag 0 on MPI_COMM_WORLD \(up to 4 bytes\)$' "rank 0's posted receive"
expect_in_block 1 '^mpirun:   unexpected messages: none$' "rank 1's unexpected messages"
expect_in_block 1 '^mpirun:   collectives entered: none$' "rank 1's collectives"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle"
[[ $(count_reports) -eq 1 ]] || { show_output; fail "one report expected"; }
expect_last_line "mpirun: the job ran longer than --timeout 3 s; ending it" "timeout message after the report"
expect_no_orphans
expect_clean_tmp

# Three ranks, each waiting for the next: one cycle through all three.
run_mpirun --timeout 2 -np 3 "$prog" cycle marker=$marker
expect_rc 124 "a cycle of three"
expect_in_block 2 '^mpirun: rank 2 \(pid [0-9]+\): in MPI_Recv\(source=0, tag=0, comm=MPI_COMM_WORLD size=3, count=1, datatype=MPI_INT\)$' "rank 2's call"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 2, rank 2 waits for rank 0 \(a cycle\)$' "the cycle of three"
[[ $(grep -c 'diagnosis: deadlock' "$work/err") -eq 1 ]] || { show_output; fail "one cycle expected"; }
expect_no_orphans
expect_clean_tmp

# MPIEXEC_TIMEOUT names itself in the header.
MPIEXEC_TIMEOUT=2 run_mpirun -np 2 "$prog" cycle marker=$marker
expect_rc 124 "cycle under MPIEXEC_TIMEOUT=2"
expect_line "$work/err" '^mpirun: hang report \(the job ran longer than MPIEXEC_TIMEOUT 2 s\):$' "MPIEXEC_TIMEOUT header"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle (MPIEXEC_TIMEOUT)"

# A rank in MPI_Finalize waits for the ranks not there yet: rank 1 waits in
# MPI_Recv for rank 0, which went on to MPI_Finalize.
run_mpirun --timeout 2 -np 2 "$prog" finalize marker=$marker
expect_rc 124 "MPI_Finalize against MPI_Recv"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Finalize\(\)$' "rank 0 in MPI_Finalize"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\): in MPI_Recv\(source=0, tag=2, ' "rank 1 in MPI_Recv"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle through MPI_Finalize"
expect_no_orphans
expect_clean_tmp

# --no-hang-report: the timeout alone, as before the doctor.
run_mpirun --no-hang-report --timeout 2 -np 2 "$prog" cycle marker=$marker
expect_rc 124 "--no-hang-report"
[[ "$(cat "$work/err")" == "mpirun: the job ran longer than --timeout 2 s; ending it" ]] ||
    { show_output; fail "--no-hang-report: only the timeout message expected"; }
expect_no_orphans
expect_clean_tmp
echo "hang cycle OK"
