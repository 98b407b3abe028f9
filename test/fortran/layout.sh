#!/bin/bash
# The wrapper on the build tree (AXON_MPIFORT_BUILDDIR): a fixed-form
# include 'mpif.h' program passing buffers of several types, and a use mpi
# program, both built with mpifort and run on 2 ranks; the libraries export
# what they should (no Fortran symbol in libmpi_abi).
set -u
w="$AXON_BUILDDIR/src/tools/mpifort"
[[ -e "$AXON_BUILDDIR/libmpifort_abi.la" ]] || { echo "Fortran bindings not built (no libmpifort_abi)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
export AXON_MPIFORT_BUILDDIR="$AXON_BUILDDIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/fixed.f" <<'EOS'
C     Fixed form, include 'mpif.h', buffers of several types.
      PROGRAM FIXED
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, IBUF(3), ISTAT(MPI_STATUS_SIZE)
      DOUBLE PRECISION DBUF(2)
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      IBUF(1) = RANK
      DBUF(1) = 2.5D0 * RANK
      CALL MPI_BCAST(IBUF, 1, MPI_INTEGER, NP - 1, MPI_COMM_WORLD,
     &     IERR)
      CALL MPI_BCAST(DBUF, 1, MPI_DOUBLE_PRECISION, NP - 1,
     &     MPI_COMM_WORLD, IERR)
      IF (IBUF(1) .NE. NP - 1 .OR. DBUF(1) .NE. 2.5D0 * (NP - 1)) THEN
        PRINT *, 'FIXED: wrong data'
        CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      END IF
      ISTAT(MPI_SOURCE) = -1
      IF (MPI_WTIME() .LT. 0D0) STOP 1
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT *, 'fixed OK'
      END
EOS
cat >"$tmp/modern.f90" <<'EOS'
program modern
  use mpi
  implicit none
  integer :: ierr, rank, np, i(2, 2)
  real(8) :: r(3)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  i = rank
  r = rank
  call MPI_Allreduce(MPI_IN_PLACE, i, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, r, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (any(i /= np * (np - 1) / 2) .or. any(r /= np - 1)) stop 1
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'modern OK'
end program modern
EOS
cat > "$tmp/f08.f90" <<'EOS'
program f08
  use mpi_f08
  implicit none
  integer :: rank, x(6)
  type(MPI_Comm) :: comm
  call MPI_Init()
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank)
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x(1:6:2), 3, MPI_INTEGER, MPI_SUM, comm)
  if (x(1) /= 1 .or. x(2) /= rank) stop 1
  call MPI_Finalize()
  if (rank == 0) print *, 'f08 OK'
end program f08
EOS
(cd "$tmp" && "$w" -Wall -o fixed fixed.f) || fail "mpifort could not build the mpif.h program"
(cd "$tmp" && "$w" -Wall -o modern modern.f90) || fail "mpifort could not build the use mpi program"
(cd "$tmp" && "$w" -Wall -o f08 f08.f90) || fail "mpifort could not build the use mpi_f08 program"
"$MPIRUN" -np 2 "$tmp/fixed" | grep -q "fixed OK" || fail "the mpif.h program failed"
"$MPIRUN" -np 2 "$tmp/f08" | grep -q "f08 OK" || fail "the use mpi_f08 program failed"
"$MPIRUN" -np 2 "$tmp/modern" | grep -q "modern OK" || fail "the use mpi program failed"

# libmpi_abi stays the C ABI; libmpifort_abi exports only Fortran names.
c_fortran=$(nm -D --defined-only "$AXON_BUILDDIR/.libs/libmpi_abi.so" | awk '{print $3}' | grep -c '^[a-z]' || true)
[[ "$c_fortran" == 0 ]] || fail "libmpi_abi exports lower-case (Fortran) symbols"
other=$(nm -D --defined-only "$AXON_BUILDDIR/.libs/libmpifort_abi.so" | awk '{print $3}' |
  grep -v -e '^mpi_' -e '^pmpi_' -e '^axon_f_sizeof$' -e '^_' || true)
[[ -z "$other" ]] || fail "libmpifort_abi exports: $other"
# Every entry point the generator listed is exported.
missing=$(comm -23 <(sort "$AXON_BUILDDIR/src/fortran/fortran_symbols.txt") \
  <(nm -D --defined-only "$AXON_BUILDDIR/.libs/libmpifort_abi.so" | awk '{print $3}' | sort))
[[ -z "$missing" ]] || fail "not exported: $missing"
missing=$(comm -23 <(sort "$AXON_BUILDDIR/src/fortran/f08_symbols.txt") \
  <(nm -D --defined-only "$AXON_BUILDDIR/.libs/libmpifort_abi.so" | awk '{print $3}' | sort))
[[ -z "$missing" ]] || fail "use mpi_f08: not exported: $missing"
# The special objects of mpi_f08 are libmpi_abi's and the mpif.h COMMON blocks:
# libmpifort_abi has no copy of MPIX_F_status_ignore.
if nm --defined-only "$AXON_BUILDDIR/.libs/libmpifort_abi.so" | grep -q 'MPIX_F_status'; then
  fail "libmpifort_abi defines MPIX_F_status_ignore"
fi
echo "layout OK"
