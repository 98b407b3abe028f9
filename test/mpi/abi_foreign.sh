#!/bin/bash
# MPI_ERRORS_ABORT, as a binary built against another standard-ABI header
# names it (value 0x143), ends the job at the first erroneous call: the call
# does not return, and mpirun exits with the error code (MPI_ERR_RANK, 6),
# naming the cause.
set -u
: "${AXON_BUILDDIR:?}"
out=$("$AXON_BUILDDIR/src/launcher/mpirun" -np 2 "$AXON_BUILDDIR/test/mpi/abi_foreign" abort 2>&1)
rc=$?
echo "$out"
if grep -q 'returned' <<<"$out"; then
  echo "FAIL: MPI_Send returned under MPI_ERRORS_ABORT"; exit 1
fi
if [[ $rc -ne 6 ]]; then
  echo "FAIL: mpirun exited $rc, want 6 (MPI_ERR_RANK)"; exit 1
fi
if ! grep -q 'MPI_ERR_RANK' <<<"$out"; then
  echo "FAIL: no message naming MPI_ERR_RANK"; exit 1
fi
echo "MPI_ERRORS_ABORT ended the job with status $rc"
