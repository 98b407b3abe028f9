#!/bin/bash
# AXON_RCACHE=off turns caching off (every acquire registers; an MPI job
# reads the state through MPI_T), and AXON_RCACHE_MAX_BYTES sets the bound a
# cache evicts beyond. Each program checks the setting's effect itself.
set -u
B="$AXON_BUILDDIR"
fail=0
AXON_RCACHE=off "$B/test/rcache/cache_unit" off || { echo "FAIL: cache_unit off"; fail=1; }
AXON_RCACHE_MAX_BYTES=16k "$B/test/rcache/cache_unit" max16k || { echo "FAIL: cache_unit max16k"; fail=1; }
AXON_RCACHE=off "$MPIRUN" -np 2 "$B/test/rcache/mpi_hooks" off || { echo "FAIL: mpi_hooks off"; fail=1; }
[[ $fail -eq 0 ]] && echo "params: ok"
exit $fail
