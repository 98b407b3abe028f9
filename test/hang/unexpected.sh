#!/bin/bash
# (g) Unexpected messages and pending requests: rank 1 sends 3 messages
# with tag 7 that rank 0 never receives; rank 0 waits in MPI_Recv tag 9.
# Then a rendezvous send waited for while the receiver waits for another
# tag, and one left pending while its sender waits in MPI_Recv.
. "$AXON_SRCDIR/test/hang/lib.sh"

run_mpirun --timeout 3 -np 2 "$prog" unexpected marker=$marker
expect_rc 124 "unexpected messages"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Recv\(source=1, tag=9, comm=MPI_COMM_WORLD size=2, count=1, datatype=MPI_INT\)$' "rank 0's call"
expect_in_block 0 '^mpirun:     receive from 1 tag 9 on MPI_COMM_WORLD \(up to 4 bytes\)$' "rank 0's posted receive"
expect_in_block 0 '^mpirun:     3 on MPI_COMM_WORLD: from 1 tag 7 \(4 bytes\), from 1 tag 7 \(4 bytes\), from 1 tag 7 \(4 bytes\)$' "rank 0's unexpected messages"
expect_in_block 1 '^mpirun: rank 1 \(pid [0-9]+\): in MPI_Recv\(source=0, tag=5, ' "rank 1's call"
expect_in_block 1 '^mpirun:   unexpected messages: none$' "rank 1 has none"
expect_no_orphans
expect_clean_tmp

run_mpirun --timeout 3 -np 2 "$prog" wait marker=$marker
expect_rc 124 "a rendezvous send waited for"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Wait\(1 request\)$' "rank 0 in MPI_Wait"
expect_in_block 0 '^mpirun:   request 0: send to 1 tag 4 on MPI_COMM_WORLD \(1048576 bytes\), ' "rank 0's send request"
expect_in_block 1 '^mpirun:     1 on MPI_COMM_WORLD: from 0 tag 4 \(1048576 bytes\)$' "rank 1's unexpected rendezvous message"
expect_line "$work/err" '^mpirun: diagnosis: deadlock: rank 0 waits for rank 1, rank 1 waits for rank 0 \(a cycle\)$' "the cycle through a request"
expect_no_orphans
expect_clean_tmp
# A pending nonblocking send is listed while the rank waits for something else.
run_mpirun --timeout 3 -np 2 "$prog" isend marker=$marker
expect_rc 124 "a pending MPI_Isend"
expect_in_block 0 '^mpirun: rank 0 \(pid [0-9]+\): in MPI_Recv\(source=1, tag=6, ' "rank 0 in MPI_Recv"
expect_in_block 0 '^mpirun:   pending sends:$' "rank 0 has pending sends"
expect_in_block 0 '^mpirun:     send to 1 tag 4 on MPI_COMM_WORLD \(1048576 bytes\), ' "rank 0's pending MPI_Isend"
expect_in_block 1 '^mpirun:   pending sends: none$' "rank 1 has none"
expect_no_orphans
expect_clean_tmp
echo "hang unexpected OK"
