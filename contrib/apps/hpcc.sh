#!/bin/bash
# Builds the HPC Challenge benchmark (Debian's hpcc source package: HPL,
# PTRANS, MPIRandomAccess, MPIFFT, STREAM, DGEMM and the ping-pong and ring
# tests) with Axon's mpicc and runs it at 2 and 4 ranks. Each run passes
# when HPCC's own verifications pass: HPL's residual check and PTRANS's
# five timed repetitions "PASSED" (PTRANS adds a CPU-time line for some of
# them, how many depends on timing), no "FAILED", no MPIRandomAccess errors, and an MPIFFT
# error below 1e-10. HPL still calls MPI_Address and MPI_Type_struct
# (removed in MPI-3.0; see README). Not part of `make check`: it
# downloads under 1 MB, builds for about a minute and runs for seconds.
#
#   contrib/apps/hpcc.sh PREFIX [WORKDIR]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-hpcc) holds the source, the build and the
# outputs (WORKDIR/run-npN/hpccoutf.txt). HPCC_N (default 2000) is HPL's
# matrix order. Needs a BLAS: libblas-dev. Exit status: 0 when every run
# passed, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR]}
work=${2:-/tmp/axon-hpcc}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

[[ -d src ]] || source_tree hpcc "$work"
if [[ ! -x src/hpcc ]]; then
  # HPL's build reads its compiler and libraries from hpl/Make.<arch>.
  cat > src/hpl/Make.axon <<MAKE
SHELL = /bin/sh
CD = cd
CP = cp
LN_S = ln -s
MKDIR = mkdir
RM = /bin/rm -f
TOUCH = touch
ARCH = axon
TOPdir = ../../..
INCdir = \$(TOPdir)/include
BINdir = \$(TOPdir)/bin/\$(ARCH)
LIBdir = \$(TOPdir)/lib/\$(ARCH)
HPLlib = \$(LIBdir)/libhpl.a
LAlib = -lblas -lm
F2CDEFS = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS = \$(HPLlib) \$(LAlib)
HPL_DEFS = \$(F2CDEFS) \$(HPL_INCLUDES)
CC = $mpicc
CCNOOPT = \$(HPL_DEFS)
CCFLAGS = \$(HPL_DEFS) -O2 -fomit-frame-pointer -funroll-loops
LINKER = $mpicc
LINKFLAGS = \$(CCFLAGS)
ARCHIVER = ar
ARFLAGS = r
RANLIB = echo
MAKE
  make -C src arch=axon > make.log 2>&1 || { echo "$0: the HPCC build failed; see $work/make.log" >&2; exit 1; }
fi

run() {  # run NP P Q: HPL on a P x Q grid, the other tests on all NP ranks
  local np=$1 p=$2 q=$3 rc=0 dir="$work/run-np$1"
  mkdir -p "$dir"
  sed -e "6s/^[0-9]*/${HPCC_N:-2000}/" -e "11s/^[0-9]*/$p/" -e "12s/^[0-9]*/$q/" src/_hpccinf.txt > "$dir/hpccinf.txt"
  rm -f "$dir/hpccoutf.txt"
  (cd "$dir" && timeout 1200 "$mpirun" -np "$np" "$work/src/hpcc" > stdout.log 2>&1) || rc=$?
  local out="$dir/hpccoutf.txt"
  if ((rc == 0)); then
    if [[ ! -f $out ]] || grep -q FAILED "$out" || ! grep -q '^Success=1' "$out" ||
       ! grep -q '\.\.\.\.\.\. PASSED$' "$out" || [[ $(grep -c '^WALL .* PASSED ' "$out") -lt 5 ]] ||
       ! grep -q '^MPIRandomAccess_Errors=0$' "$out" || ! grep -q '^MPIRandomAccess_LCG_Errors=0$' "$out" ||
       ! awk -F= '/^MPIFFT_maxErr=/ { found = 1; exit !($2 < 1e-10) } END { if (!found) exit 1 }' "$out"; then
      rc="a verification failed"
    fi
  fi
  count_result "hpcc np=$np (HPL ${p}x$q)" "$rc" "$out"
}
run 2 1 2
run 4 2 2
finish
