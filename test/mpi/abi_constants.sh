#!/bin/bash
# The standard's ABI table (test/mpi/abi/constants.txt) and Axon's mpi.h name
# the same constants: every integer constant and object-like macro that
# mpi.h defines in its standard-ABI form (AXON_MPI_H_ABI_ONLY) is in the table,
# and every table row is in mpi.h (test abi_constants compares the values).
# Then the comparison itself is shown to fail: compiled against a copy of
# mpi.h with MPI_ERRORS_RETURN / MPI_ERRORS_ABORT and MPI_SEEK_SET /
# MPI_SEEK_END exchanged, it must exit 1 and name exactly those four.
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
cc=$(sed -n 's/^CC = //p' "$AXON_BUILDDIR/Makefile")
table="$AXON_SRCDIR/test/mpi/abi/constants.txt"
check_src="$AXON_BUILDDIR/test/mpi/abi_constants_check.c"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# Names defined by mpi.h: object-like macros, and enumerators of its enums.
$cc -E -dM -DAXON_MPI_H_ABI_ONLY -I"$AXON_SRCDIR/include" "$AXON_SRCDIR/include/mpi.h" |
  awk '$1 == "#define" && $2 ~ /^MPIX?_/ && $2 !~ /\(/ { print $2 }' >"$work/names"
$cc -E -P -DAXON_MPI_H_ABI_ONLY -I"$AXON_SRCDIR/include" "$AXON_SRCDIR/include/mpi.h" | tr '\n' ' ' |
  grep -o 'enum[ A-Za-z_0-9]*{[^}]*}' | sed 's/^[^{]*{//; s/}$//' | tr ',' '\n' |
  sed -n 's/^ *\([A-Za-z_][A-Za-z_0-9]*\).*/\1/p' >>"$work/names"
# Feature macros of the header itself, not constants with a value.
grep -vx -e MPI_H_ABI "$work/names" | sort -u >"$work/header"
awk '!/^[ \t]*(#|$)/ { print $1 }' "$table" | sort -u >"$work/table"
echo "mpi.h defines $(wc -l <"$work/header") constants, the table lists $(wc -l <"$work/table")"
extra=$(comm -23 "$work/header" "$work/table")
missing=$(comm -13 "$work/header" "$work/table")
if [[ -n "$extra" ]]; then
  echo "FAIL: mpi.h defines constants the standard's table does not list:" $extra
  fail=1
fi
if [[ -n "$missing" ]]; then
  echo "FAIL: mpi.h lacks constants of the standard's table:" $missing
  fail=1
fi
if ! grep -q '^#define MPI_H_ABI' "$AXON_SRCDIR/include/mpi.h"; then
  echo "FAIL: mpi.h does not define MPI_H_ABI"
  fail=1
fi

# The check must catch a changed value: exchange two pairs in a copy.
mkdir "$work/include"
cp "$AXON_SRCDIR/include/mpi.h" "$AXON_SRCDIR/include/mpi_fortran.h" "$work/include/"
sed -i -e 's/^\(#define MPI_ERRORS_RETURN *((MPI_Errhandler)\)0x142)/\10x143)/' \
       -e 's/^\(#define MPI_ERRORS_ABORT *((MPI_Errhandler)\)0x143)/\10x142)/' \
       -e 's/^\( *MPI_SEEK_SET *= *\)401,/\1403,/' \
       -e 's/^\( *MPI_SEEK_END *= *\)403$/\1401/' "$work/include/mpi.h"
if cmp -s "$AXON_SRCDIR/include/mpi.h" "$work/include/mpi.h"; then
  echo "FAIL: could not make the altered copy of mpi.h (its layout changed?)"
  fail=1
fi
if ! $cc -I"$work/include" -o "$work/altered" "$check_src" 2>"$work/cc.log"; then
  echo "FAIL: the check does not compile against the altered mpi.h:"; cat "$work/cc.log"
  fail=1
else
  "$work/altered" >"$work/altered.out"
  rc=$?
  named=$(sed -n 's/^\([A-Z_]*\): mpi.h gives.*/\1/p' "$work/altered.out" | sort | tr '\n' ' ')
  if [[ $rc -ne 1 || "$named" != "MPI_ERRORS_ABORT MPI_ERRORS_RETURN MPI_SEEK_END MPI_SEEK_SET " ]]; then
    echo "FAIL: against the altered mpi.h the check exited $rc naming: $named"
    cat "$work/altered.out"
    fail=1
  else
    echo "the altered mpi.h is caught: $(tail -n 1 "$work/altered.out")"
  fi
fi
exit $fail
