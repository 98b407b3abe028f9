#!/bin/bash
# Builds MPICH's own test suite (test/mpi of Debian's mpich source package)
# with Axon's mpicc and runs it under Axon's mpirun: a few thousand small
# programs, written by another MPI's authors, that check what the standard
# says. Not part of `make check`: it downloads about 22 MB and builds for
# 15-25 minutes on two cores; the run takes about 15 minutes.
#
#   contrib/apps/mpich-tests.sh PREFIX [WORKDIR] [DIR ...]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-mpich-tests) holds the source, the build and
# the logs (WORKDIR/logs/DIR.NAME.NP.log). DIRs are test/mpi folders
# (default: all C ones and, when PREFIX has mpifort, the Fortran ones f77,
# f90 and f08; errors and threads hold folders of their own, e.g.
# errors/coll). Exit status: 0 when nothing failed, 1 otherwise.
#
# The suite is written against MPICH, whose handles are integers; Axon's
# mpi.h is the MPI 5.0 standard ABI, whose handles are pointers. So:
# - Programs that store handles in int variables, switch on handles or
#   compare a message with MPI_REQUEST_NULL cannot work on any pointer-handle
#   MPI; they are listed below and reported as skipped, with the reason.
# - Programs using MPI_LB / MPI_UB (removed in MPI-3.0, not provided),
#   MPICH extensions (MPIX_*) or QMPI do not build; they are reported as
#   "not built".
# - A test marked xfail in MPICH's list (behaviour the standard allows
#   either way, e.g. cancelling a send) counts as "xfail" when it fails.
# - Options for MPICH's mpiexec (mpiexecarg=) are dropped; those tests
#   expect a non-zero exit status, which Axon's mpirun gives.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR] [DIR ...]}
work=${2:-/tmp/axon-mpich-tests}
shift $(($# < 2 ? $# : 2))
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"
dirs=("$@")
fortran=none
[[ -x $prefix/bin/mpifort ]] && fortran=all
if [[ ${#dirs[@]} == 0 ]]; then
  dirs=(attr coll comm datatype errhan group info init io mpi_t part pt2pt rma spawn topo errors threads)
  [[ $fortran == all ]] && dirs+=(f77 f90 f08)
fi

# Tests that cannot pass on Axon, and why (name: reason): C tests that
# assume integer handles, Fortran tests of what the MPI 5.0 standard no
# longer has.
declare -A skip=(
  [coll/nonblocking2]="keeps MPI_Datatype handles in int arrays"
  [coll/nonblocking3]="keeps MPI_Datatype handles in int arrays"
  [datatype/pack_external]="switches on MPI_Datatype handles"
  [f77/datatype/allctypesf]="expects MPI_LB and MPI_UB, removed in MPI-3.0 (not in the MPI 5.0 ABI)"
  [f90/datatype/allctypesf90]="expects MPI_LB and MPI_UB, removed in MPI-3.0 (not in the MPI 5.0 ABI)"
  [f08/datatype/allctypesf08]="expects MPI_LB and MPI_UB, removed in MPI-3.0 (not in the MPI 5.0 ABI)"
  [f77/init/baseenvf]="takes an MPI version above 4 for an error (Axon is MPI 5.0)"
  [f90/init/baseenvf90]="takes an MPI version above 4 for an error (Axon is MPI 5.0)"
  [f08/init/baseenvf90]="takes an MPI version above 4 for an error (Axon is MPI 5.0)"
)

# 1. Source.
if [[ ! -d src ]]; then
  source_tree mpich "$work" '*/test/mpi'
  # An Improbe that finds nothing leaves MPI_MESSAGE_NULL, which MPICH's
  # test compares with MPI_REQUEST_NULL (the same integer there).
  sed -i 's/\*message != MPI_REQUEST_NULL/*message != MPI_MESSAGE_NULL/' src/test/mpi/threads/pt2pt/mt_probe_impl.c
fi
tests=$work/src/test/mpi

# 2. Build (make -k: the programs that cannot build are reported below).
if [[ ! -f $tests/util/.built ]]; then
  (cd "$tests" && ./configure --with-mpi="$prefix" --enable-fortran=$fortran --disable-cxx --enable-strictmpi \
     --enable-threads=multiple > "$work/configure.log" 2>&1) ||
    { echo "$0: configure failed; see $work/configure.log" >&2; exit 1; }
  # The suite builds its f08 folder only inside an MPICH build (FROM_MPICH);
  # the mpi_f08 module of PREFIX is what it needs, so the folder is switched on.
  if [[ $fortran == all ]]; then
    sed -i 's/^S\["HAS_F08_FALSE"\]=""/S["HAS_F08_FALSE"]="#"/; s/^S\["HAS_F08_TRUE"\]="#"/S["HAS_F08_TRUE"]=""/;
            s/^S\["f08dir"\]="#"/S["f08dir"]="f08"/' "$tests/config.status"
    (cd "$tests" && ./config.status > "$work/config-status.log" 2>&1)
  fi
  make -C "$tests/util" -j"$(nproc)" > "$work/make-util.log" 2>&1
  make -C "$tests/dtpools" -j"$(nproc)" > "$work/make-dtpools.log" 2>&1
  touch "$tests/util/.built"
fi
for d in "${dirs[@]}"; do
  top=${d%%/*}
  [[ -f $tests/$top/.built ]] && continue
  make -C "$tests/$top" -k -j"$(nproc)" CFLAGS="-O2" \
    > "$work/make-${top}.log" 2>&1 || true
  # --enable-strictmpi leaves out MPI-3.1's nonblocking collective I/O
  # (io/i_*: MPICH called them MPIX when the list was written); every
  # listed program the default target skipped gets its own try.
  for list in "$tests/$top/testlist" "$tests/$top"/*/testlist; do
    [[ -f $list ]] || continue
    while read -r name np _; do
      [[ -n $name && -n $np && $name != \#* && ! -x ${list%/testlist}/$name ]] || continue
      make -C "${list%/testlist}" CFLAGS="-O2" "$name" \
        >> "$work/make-${top}.log" 2>&1 || true
    done < "$list"
  done
  touch "$tests/$top/.built"
done

# 3. Run every test of each DIR's testlist ("name ranks key=value ...", or
# a folder with a testlist of its own).
mkdir -p logs
passed=0 failed=0 xfailed=0 skipped=0 unbuilt=0
run_list() {
  local dir=$1 name np rest
  [[ -f $tests/$dir/testlist ]] || { echo "$0: no testlist in $dir" >&2; failed=$((failed + 1)); return; }
  while read -r name np rest; do
    [[ -z $name || $name == \#* ]] && continue
    if [[ -z $np && -d $tests/$dir/$name ]]; then
      run_list "$dir/$name"
      continue
    fi
    local args=() envs=() limit=180 xfail="" want=ok w
    for w in $rest; do
      case $w in
        arg=*) args+=("${w#arg=}") ;;
        env=*) envs+=(-x "${w#env=}") ;;
        timeLimit=*) limit=${w#timeLimit=} ;;
        xfail=*) xfail=1 ;;
        resultTest=TestStatus | resultTest=TestErrFatal) want=fail ;;
      esac
    done
    local id="$dir/$name" log="logs/${dir//\//.}.$name.$np.log"
    if [[ -n ${skip[$id]:-} ]]; then
      echo "SKIP  $id np=$np: ${skip[$id]}"
      skipped=$((skipped + 1))
      continue
    fi
    if [[ ! -x $tests/$dir/$name ]]; then
      echo "NOT BUILT  $id (see $work/make-${dir%%/*}.log)"
      unbuilt=$((unbuilt + 1))
      continue
    fi
    # mpirun ends a job that runs past MPIEXEC_TIMEOUT (exit 124), as
    # MPICH's mpiexec does for its test runner; timeout(1) is the backstop.
    local rc=0
    (cd "$tests/$dir" && MPIEXEC_TIMEOUT=$limit timeout $((limit + 60)) \
       "$mpirun" -np "$np" "${envs[@]}" "./$name" "${args[@]}") > "$log" 2>&1 < /dev/null || rc=$?
    local good=0
    if [[ $want == fail ]]; then
      if [[ $rc != 0 ]]; then good=1; fi
    elif [[ $rc == 0 ]] && grep -qi "no errors" "$log"; then
      good=1
    fi
    if [[ $good == 1 ]]; then
      passed=$((passed + 1))
    elif [[ -n $xfail ]]; then
      echo "XFAIL $id np=$np ${args[*]} (exit $rc; $work/$log)"
      xfailed=$((xfailed + 1))
    else
      echo "FAIL  $id np=$np ${args[*]} (exit $rc; $work/$log)"
      failed=$((failed + 1))
    fi
  done < "$tests/$dir/testlist"
}
for d in "${dirs[@]}"; do
  run_list "$d"
done
echo "xfail $xfailed, skipped $skipped, not built $unbuilt"
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
