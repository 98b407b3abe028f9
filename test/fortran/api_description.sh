#!/bin/bash
# src/binding/mpi_api.txt is up to date: deriving it again from include/mpi.h
# and the functions libmpi_abi exports gives the same file.
set -u
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
lib="$AXON_BUILDDIR/.libs/libmpi_abi.so"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
nm -D --defined-only "$lib" | awk '$3 ~ /^MPI_/ {print $3}' >"$list"
if ! python3 "$AXON_SRCDIR/src/binding/derive_api.py" --exported "$list" --check; then
  echo "FAIL: src/binding/mpi_api.txt is out of date: run"
  echo "  python3 src/binding/derive_api.py --exported <(nm -D --defined-only $lib | awk '\$3 ~ /^MPI_/ {print \$3}')"
  exit 1
fi
echo "mpi_api.txt up to date"
