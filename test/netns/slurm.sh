#!/bin/bash
# Slurm on this machine (contrib/slurm/up.sh: munged, slurmctld, 2 slurmd):
# srun --mpi=pmix runs the library as a plain PMIx client (rank, size, node
# locality and business cards from Slurm's PMIx server); srun without
# --mpi=pmix is refused with a clear message; mpirun inside an allocation
# takes the nodes from it and starts its daemons with srun. Skips (77) when
# Slurm is not installed or cannot start; always stops the cluster.
set -u
: "${MPIRUN:?}" "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
for tool in srun salloc slurmd slurmctld munged; do
    command -v $tool >/dev/null 2>&1 ||
        skip "Slurm is not installed ($tool missing; contrib/install-deps.sh installs slurmd slurmctld slurm-client munge)"
done
[[ $(id -u) -eq 0 ]] || skip "the one-machine Slurm cluster needs root"
ls /usr/lib/*/slurm-wlm/mpi_pmix*.so >/dev/null 2>&1 || skip "Slurm's PMIx plugin (mpi_pmix) is not installed"

mpi_nodes="$AXON_BUILDDIR/test/netns/mpi_nodes"
probe="$AXON_BUILDDIR/test/launcher/pmix_probe"
cluster=$(mktemp -d)
work=$(mktemp -d)
trap '"$AXON_SRCDIR/contrib/slurm/down.sh" "$cluster" >/dev/null 2>&1; rm -rf "$cluster" "$work"' EXIT
if ! "$AXON_SRCDIR/contrib/slurm/up.sh" "$cluster" 2 >"$work/up" 2>&1; then
    cat "$work/up"
    tail -n 5 "$cluster"/log/*.log 2>/dev/null
    skip "the one-machine Slurm cluster did not start"
fi
export SLURM_CONF="$cluster/slurm.conf"

show_output() { echo "--- stdout"; cat "$work/out"; echo "--- stderr"; cat "$work/err"; echo "---"; }
run() {  # run CMD...: sets rc, stdout in $work/out, stderr in $work/err
    timeout 60 "$@" >"$work/out" 2>"$work/err" </dev/null
    rc=$?
}
expect_rc() { [[ $rc -eq $1 ]] || { show_output; fail "$2: exit status $rc, expected $1"; }; }
expect_count() {  # expect_count FILE REGEX N WHAT
    local n
    n=$(grep -Ec -- "$2" "$1")
    [[ $n -eq $3 ]] || { show_output; fail "$4: $n lines match /$2/, expected $3"; }
}

# srun --mpi=pmix: 2 nodes x 2 ranks; n1 and n2 share this machine, so only
# PMIx's locality (not the host name) keeps their shared memory apart.
export AXON_BTL=self,sm,tcp
run srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$mpi_nodes" hello "0,1;2,3"
expect_rc 0 "srun --mpi=pmix hello"
expect_count "$work/out" "^rank [0-3] size 4 node ranks 2 leaders 2 ok$" 4 "srun --mpi=pmix hello"
run srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$mpi_nodes" ring
expect_rc 0 "srun --mpi=pmix ring"
expect_count "$work/out" "^rank [0-3] ring ok$" 4 "srun --mpi=pmix ring"

# srun without PMIx: every rank refuses instead of running as a singleton.
run srun --mpi=none -N1 -n2 "$mpi_nodes" ring
[[ $rc -ne 0 ]] || { show_output; fail "srun without --mpi=pmix: exit status 0"; }
expect_count "$work/err" "MPI_Init: started by srun without --mpi=pmix\?" 2 "srun without --mpi=pmix message"

# mpirun inside an allocation: nodes and slots from Slurm, daemons through srun.
run salloc -N2 -n4 --ntasks-per-node=2 "$MPIRUN" --display-map "$probe" info wireup
expect_rc 0 "mpirun in salloc"
expect_count "$work/out" "^mpirun:   rank [01] on n1: " 2 "mpirun in salloc: ranks on n1"
expect_count "$work/out" "^mpirun:   rank [23] on n2: " 2 "mpirun in salloc: ranks on n2"
expect_count "$work/out" "wireup 4/4$" 4 "mpirun in salloc: wireup"
run salloc -N2 -n4 --ntasks-per-node=2 "$MPIRUN" -x AXON_BTL "$mpi_nodes" coll
expect_rc 0 "mpirun in salloc: collectives"
expect_count "$work/out" "^rank [0-3] coll ok$" 4 "mpirun in salloc: collectives"
echo "slurm OK"
