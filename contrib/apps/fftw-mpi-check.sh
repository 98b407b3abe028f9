#!/bin/bash
# Builds FFTW 3's MPI interface (Debian's fftw3 source package) with Axon's
# mpicc and runs FFTW's own MPI self-check: mpi-bench computes random
# distributed transforms (complex and real, 1-D to 4-D, in place and out of
# place, transposed layouts) at 1, 2, 3 and 4 ranks and compares each with a
# reference FFT; what it exercises in MPI is mostly MPI_Alltoall(v),
# derived datatypes and communicator splits. Not part of `make check`: it
# downloads about 4 MB, builds for about 5 minutes and runs for about 3.
#
#   contrib/apps/fftw-mpi-check.sh PREFIX [WORKDIR]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-fftw) holds the source, the build and the logs.
# FFTW_CHECKS (default 100) transforms per rank count, up to FFTW_MAXSIZE
# (default 60000) elements: FFTW's "bigcheck". Exit status: 0 when every
# rank count passed, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR]}
work=${2:-/tmp/axon-fftw}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

[[ -d src ]] || source_tree fftw3 "$work"
if [[ ! -x src/mpi/mpi-bench ]]; then
  (cd src &&
   ./configure --enable-mpi --enable-threads --disable-fortran MPICC="$mpicc" > configure.log 2>&1 &&
   make -j"$(nproc)" > make.log 2>&1 &&
   make -C mpi mpi-bench >> make.log 2>&1) ||
    { echo "$0: the FFTW build failed; logs in $work/src" >&2; exit 1; }
fi

mkdir -p logs
check() {  # check NAME [check.pl options]: one mpi-bench series
  local name=$1 rc=0
  local log="$work/logs/${name//[ =]/_}.log"
  shift
  perl -w src/tests/check.pl --verbose --random --maxsize="${FFTW_MAXSIZE:-60000}" -c="${FFTW_CHECKS:-100}" \
    "$@" > "$log" 2>&1 || rc=$?
  count_result "$name" "$rc" "$log"
}
for np in 1 2 3 4; do
  check "mpi-bench np=$np" --mpi "$mpirun -np $np $work/src/mpi/mpi-bench"
done
check "mpi-bench np=3 threads=2" --mpi --nthreads=2 "$mpirun -np 3 $work/src/mpi/mpi-bench"
finish
