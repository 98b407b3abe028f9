#!/bin/sh
# The whole test suite from a fresh clone: installs the dependencies, builds
# Axon in build-tests/ with warnings as errors, and runs `make check`, which
# ends with "N passed, M failed" and fails on any failure.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh" --tests
cd "$top"
./autogen.sh
mkdir -p build-tests && cd build-tests
../configure --prefix="$PWD/_install" --enable-werror
make -j"$(nproc)"
make check
