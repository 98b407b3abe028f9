#!/bin/sh
# One command from a fresh Debian 12 machine to a running MPI job:
# installs the build dependencies, builds and installs Axon into PREFIX
# (default: $HOME/axon), compiles examples/hello.c with mpicc and runs it on
# two ranks with mpirun.
set -e
prefix=${1:-$HOME/axon}
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
cd "$top"
[ -x configure ] || ./autogen.sh
mkdir -p build && cd build
[ -f Makefile ] || ../configure --prefix="$prefix"
make -j"$(nproc)"
make install
"$prefix/bin/mpicc" -O2 -o hello "$top/examples/hello.c"
echo "== $prefix/bin/mpirun -np 2 ./hello"
"$prefix/bin/mpirun" -np 2 ./hello
