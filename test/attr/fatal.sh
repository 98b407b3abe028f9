#!/bin/bash
# MPI_ERRORS_ARE_FATAL (the default) and MPI_ERRORS_ABORT end the whole job:
# mpirun exits non-zero, stderr names the failing function and the error
# class, and no rank goes on (test/attr/fatal.c makes the last rank fail).
set -u
prog="$AXON_BUILDDIR/test/attr/fatal"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
failed=0

# expect MODE NP FUNCTION CLASS CLASS_VALUE: the job's exit status is the
# class (docs/architecture.md, "Errors").
expect() {
  local mode=$1 np=$2 fn=$3 cls=$4 value=$5
  timeout -k 5 60 "$MPIRUN" -np "$np" "$prog" "$mode" >"$out" 2>"$err" </dev/null
  local rc=$?
  if [[ $rc -eq 0 || $rc -eq 124 || $rc -eq 137 ]]; then
    echo "FAIL $mode np $np: mpirun exit status $rc (expected a non-zero status, not a timeout)"; failed=1
  elif [[ $rc -ne $value ]]; then
    echo "FAIL $mode np $np: mpirun exit status $rc, expected $value ($cls)"; failed=1
  fi
  if ! grep -q "$fn" "$err" || ! grep -q "$cls" "$err"; then
    echo "FAIL $mode np $np: stderr does not name $fn and $cls:"; sed 's/^/    /' "$err"; failed=1
  fi
  if grep -q unreachable "$out"; then
    echo "FAIL $mode np $np: a rank went on after the error:"; sed 's/^/    /' "$out"; failed=1
  fi
  echo "$mode np $np: exit $rc; $(grep -m1 "$fn" "$err")"
}

for np in 1 2 3; do
  expect world "$np" MPI_Send MPI_ERR_RANK 6
  expect abort "$np" MPI_Send MPI_ERR_TAG 4
  expect self "$np" MPI_Type_free MPI_ERR_TYPE 3
done
exit $failed
