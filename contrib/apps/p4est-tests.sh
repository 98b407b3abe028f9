#!/bin/bash
# Builds p4est and its libsc (Debian's p4est source package: parallel
# adaptive octree meshes) with Axon's mpicc and runs their `make check`
# tests under Axon's mpiexec at 2 and 4 ranks: mesh refinement, 2:1
# balance, partitioning, ghost layers and libsc's shared-memory node arrays
# (MPI_Comm_split_type and MPI_Win_allocate_shared). Not part of
# `make check`: it downloads under 1 MB and builds and runs in about 5
# minutes on two cores. Needs autoconf, automake, libtool and gfortran
# (libsc's configure insists on a Fortran 77 compiler) and zlib1g-dev.
#
#   contrib/apps/p4est-tests.sh PREFIX [WORKDIR]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-p4est) holds the source, the build and the
# logs (src/test/*.log, src/sc/test/*.log). Exit status: 0 when every test
# passed at both rank counts, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR]}
work=${2:-/tmp/axon-p4est}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

[[ -d src ]] || source_tree p4est "$work"
if [[ ! -f src/Makefile ]]; then
  # The tarball has no configure scripts and no version files (they come
  # from git); bootstrap makes both.
  echo 2.2 > src/.tarball-version
  echo 2.2 > src/sc/.tarball-version
  (cd src && ./bootstrap > bootstrap.log 2>&1 &&
   ./configure --enable-mpi --disable-shared --without-blas CC="$mpicc" CXX="$mpicxx" \
     F77=gfortran FC=gfortran > configure.log 2>&1) ||
    { echo "$0: bootstrap or configure failed; logs in $work/src" >&2; exit 1; }
fi
make -C src -j"$(nproc)" > make.log 2>&1 || { echo "$0: the p4est build failed; see $work/make.log" >&2; exit 1; }

for np in 2 4; do
  rc=0
  make -C src -j1 check LOG_COMPILER="$mpiexec" AM_LOG_FLAGS="-n $np" > "check-np$np.log" 2>&1 || rc=$?
  # Automake prints a result line per test (libsc's, then p4est's); FAIL,
  # ERROR and XPASS fail the suite, as they do there.
  while read -r result name; do
    status=0
    [[ $result == @(FAIL|ERROR|XPASS): ]] && status=${result%:}
    count_result "$name np=$np" "$status" "$work/check-np$np.log"
  done < <(grep -E '^(PASS|FAIL|ERROR|XPASS|XFAIL|SKIP): ' "check-np$np.log")
  ((rc == 0)) || count_result "make check np=$np" "$rc" "$work/check-np$np.log"
done
finish
