#!/bin/bash
# Waiting for one peer without spinning (test/mpi/wait_policy.c): poll for a
# peer on another CPU, yield at once for a peer on this one. The ranks are
# placed by binding (one core each) or by running mpirun on one CPU.
. "$AXON_SRCDIR/test/launcher/lib.sh"
program="$AXON_BUILDDIR/test/mpi/wait_policy"
cpus=$(nproc)
if [[ $cpus -ge 2 ]]; then
    run_mpirun -np 2 --bind-to core -x AXON_WAIT_SPIN=0 "$program" poll marker=$marker
    expect_rc 0 "peer on another CPU, polling"
    cat "$work/out"
    run_mpirun -np 2 --bind-to core -x AXON_WAIT_SPIN=0 -x AXON_WAIT_PEER_SPIN_US=0 "$program" yield marker=$marker
    expect_rc 0 "peer on another CPU, polling off"
    cat "$work/out"
else
    echo "one CPU: the cases with a peer on another CPU cannot run"
fi
# Both ranks on CPU 0 (mpirun's own cpuset has one core: the ranks are not
# bound and inherit it).
run_mpirun_on() { taskset -c 0 "$MPIRUN" "$@" >"$work/out" 2>"$work/err" </dev/null; rc=$?; }
run_mpirun_on -np 2 -x AXON_WAIT_SPIN=0 "$program" same marker=$marker
expect_rc 0 "both ranks on one CPU"
cat "$work/out"
expect_no_orphans
echo "ok"
