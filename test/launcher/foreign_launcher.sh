#!/bin/bash
# A process that looks like one rank of several but has no PMIx server fails
# MPI_Init with a clear message instead of running as a singleton; a plain
# start without any launcher still runs as a singleton.
. "$AXON_SRCDIR/test/launcher/lib.sh"
program="$AXON_BUILDDIR/test/netns/mpi_nodes"

check_refused() {  # check_refused WHAT-REGEX VAR=VALUE...
    local what=$1
    shift
    env -u PMIX_NAMESPACE "$@" "$program" ring >"$work/out" 2>"$work/err" </dev/null
    rc=$?
    [[ $rc -ne 0 ]] || { show_output; fail "$*: MPI_Init did not refuse"; }
    expect_line "$work/err" "MPI_Init: started by $what\? .*use Axon's mpirun, or srun --mpi=pmix" "$*"
    [[ ! -s "$work/out" ]] || { show_output; fail "$*: the program ran"; }
}

check_refused "srun without --mpi=pmix" SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NTASKS=4 SLURM_PROCID=1
check_refused "a PMI-1/PMI-2 launcher \(e\.g\. MPICH's Hydra\)" PMI_RANK=1 PMI_SIZE=2
check_refused "Open MPI's mpirun" OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0

# One task of a Slurm step, or no launcher at all: a singleton.
env -u PMIX_NAMESPACE SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NTASKS=1 "$program" ring >"$work/out" 2>"$work/err" </dev/null
rc=$?
expect_rc 0 "single Slurm task"
expect_line "$work/out" "^rank 0 ring ok$" "single Slurm task runs as a singleton"
echo "foreign launcher OK"
