#!/bin/bash
# Builds parallel HDF5 (Debian's source package) with Axon's mpicc and runs
# its MPI-IO test programs (testpar) under Axon's mpirun. An application-level
# check of MPI-IO, derived datatypes and collectives that no unit test gives.
# Not part of `make check`: it downloads about 14 MB; build and run take
# about 7 minutes on an idle two-core machine (20–40 on a busy one).
#
#   contrib/apps/hdf5-testpar.sh PREFIX [WORKDIR]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-hdf5) holds the source, the build and the logs.
# Set AXON_LIB=DIR to run against another build of the library (for example a
# build tree's .libs) without reinstalling. Needs Debian's source index
# (deb-src); the script adds a private one, the system's apt sources stay as
# they are. Exit status: 0 when every program passed, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR]}
work=${2:-/tmp/axon-hdf5}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

# 1. Source: `apt-get source` through a private deb-src list.
if [[ ! -d src ]]; then
  source_tree hdf5 "$work"
fi

# 2. Build: the library and the parallel tests only.
if [[ ! -x build/testpar/testphdf5 ]]; then
  mkdir -p build
  (cd build &&
   ../src/configure CC="$mpicc" --enable-parallel --disable-fortran --disable-cxx --disable-java \
     --disable-hl --disable-tools --enable-build-mode=production -q > configure.log 2>&1 &&
   make -j"$(nproc)" -C src > make-src.log 2>&1 &&
   make -j"$(nproc)" -C test libh5test.la > make-test.log 2>&1 &&
   make -j"$(nproc)" -C testpar t_mpi testphdf5 t_pflush1 t_pflush2 t_pread t_shapesame \
     t_filters_parallel > make-testpar.log 2>&1) ||
    { echo "$0: the HDF5 build failed; logs in $work/build" >&2; exit 1; }
fi

# 3. Run. t_pflush1 ends without closing its file and exits 1 by design;
#    t_pflush2 then checks what was flushed.
cd build/testpar
[[ -n ${AXON_LIB:-} ]] && export LD_LIBRARY_PATH="$AXON_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() {  # run EXPECTED_STATUS NP PROGRAM
  local want=$1 np=$2 prog=$3 rc=0
  timeout 1200 "$mpirun" -np "$np" "./$prog" > "$prog.np$np.log" 2>&1 || rc=$?
  local status=0
  [[ $rc == "$want" ]] || status="$rc, want $want"
  count_result "$prog np=$np" "$status" "$PWD/$prog.np$np.log"
}
run 0 4 t_mpi
run 0 3 testphdf5
run 0 4 testphdf5
run 0 6 testphdf5
run 1 4 t_pflush1
run 0 4 t_pflush2
run 0 4 t_pread
run 0 4 t_shapesame
run 0 4 t_filters_parallel
finish
