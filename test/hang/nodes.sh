#!/bin/bash
# (e) Across nodes: two "nodes" (daemons through local_agent.sh), one rank
# each; mpirun asks the daemons, which ask their ranks and send the answers;
# a rank's own request goes through its daemon.
. "$AXON_SRCDIR/test/hang/lib.sh"

run_mpirun --launch-agent "$agent" -H axon-hang1,axon-hang2 --timeout 3 -np 2 "$prog" cycle marker=$marker
expect_rc 124 "cycle on two nodes"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\) on axon-hang1: in MPI_Recv\(source=1, tag=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 0 on axon-hang1"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\) on axon-hang2: in MPI_Recv\(source=0, tag=0, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 1 on axon-hang2"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle"
expect_last_line "mpirun: the job ran longer than --timeout 3 s; ending it" "timeout message"
expect_no_orphans
expect_clean_tmp

# mpirun's node and another: local and remote answers in one report.
run_mpirun --launch-agent "$agent" -H localhost,axon-hang2 --timeout 3 -np 2 "$prog" cycle marker=$marker
expect_rc 124 "cycle on mpirun's node and another"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\) on axon-hang2: in MPI_Recv\(source=0, ' "rank 1 on axon-hang2"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\) on [^ ]+: in MPI_Recv\(source=1, ' "rank 0 on mpirun's node"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle"
expect_no_orphans
expect_clean_tmp
# AXON_HANG_REPORT_AFTER on another node: the rank asks its daemon, which
# asks mpirun (HANG_ASK); one report, and the job finishes.
run_mpirun --launch-agent "$agent" -H axon-hang1,axon-hang2 -genv AXON_HANG_REPORT_AFTER 2 -np 2 "$prog" stall \
    marker=$marker
expect_rc 0 "a stall that resolves, on two nodes"
expect_line "$work/out" '^received 42$' "the program's output"
[[ $(count_reports) -eq 1 ]] || { show_output; fail "one report expected, $(count_reports) printed"; }
expect_line "$work/err" '^mpirun: hang report \(rank 1 made no progress for AXON_HANG_REPORT_AFTER seconds\):$' "report header"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\) on axon-hang2: in MPI_Recv\(source=0, tag=0, ' "rank 1's call"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\) on axon-hang1: not in a blocking MPI call$' "rank 0 computing"
expect_no_orphans
expect_clean_tmp
echo "hang nodes OK"
