#!/bin/bash
# run.sh PROGRAM NP: runs test/fortran/PROGRAM on NP ranks; skips when the
# Fortran bindings were not built (configure found no Fortran compiler).
prog="$AXON_BUILDDIR/test/fortran/$1"
if [[ ! -x "$prog" ]]; then
  echo "Fortran bindings not built: no $prog"
  exit 77
fi
exec "$MPIRUN" -np "$2" "$prog"
