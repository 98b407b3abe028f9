#!/bin/bash
# Builds hypre (Debian's hypre source package: parallel multigrid solvers)
# with Axon's mpicc and runs hypre's regression tests under Axon's mpirun:
# each test script runs the ij, struct or sstruct driver at 1 to 8 ranks and
# compares its iteration counts and residual norms with hypre's saved
# output. Not part of `make check`: it downloads about 7 MB and builds for
# about 10 minutes on two cores.
#
#   contrib/apps/hypre-tests.sh PREFIX [WORKDIR] [TEST ...]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-hypre) holds the source, the build and the
# logs. TESTs are scripts under src/test (default: the three that hypre's
# `make checkpar` runs, TEST_ij/solvers.sh TEST_struct/solvers.sh
# TEST_sstruct/solvers.sh; 'TEST_ij/*.sh' and the like for the whole
# regression, 61 scripts, about 16 minutes). Numbers are compared with a
# relative tolerance of 1e-6, as `make checkpar` does: the last digit of a
# residual depends on the order of a reduction, which the standard leaves
# to the implementation. Exit status: 0 when every test passed, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR] [TEST ...]}
work=${2:-/tmp/axon-hypre}
shift $(($# < 2 ? $# : 2))
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

[[ -d src ]] || source_tree hypre "$work"
if [[ ! -x src/src/test/sstruct ]]; then
  (cd src/src &&
   ./configure CC="$mpicc" CXX="$mpicxx" --enable-shared=no > configure.log 2>&1 &&
   make -j"$(nproc)" > make.log 2>&1 &&
   make -j"$(nproc)" test > make-test.log 2>&1) ||
    { echo "$0: the hypre build failed; logs in $work/src/src" >&2; exit 1; }
fi

cd src/src/test
tests=("$@")
((${#tests[@]})) || tests=(TEST_ij/solvers.sh TEST_struct/solvers.sh TEST_sstruct/solvers.sh)
for t in "${tests[@]}"; do
  rc=0
  # runtest.sh leaves TEST_x/name.err, empty when every output matched.
  rm -f "${t%.sh}.err"
  bash ./runtest.sh -rtol 1e-6 -mpi "$mpirun -np" "$t" > "${t%.sh}.runtest.log" 2>&1 || rc=$?
  [[ $rc != 0 || ! -s ${t%.sh}.err ]] || rc="output differs"
  count_result "$t" "$rc" "$PWD/${t%.sh}.err"
done
finish
