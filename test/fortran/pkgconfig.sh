#!/bin/bash
# pkg-config --cflags --libs axon-fort builds and links Fortran programs
# (use mpi, and mpif.h with ${fflags_mpif_h}) that run on 2 ranks:
#   build tree: PKG_CONFIG_PATH=<builddir>/src/tools picks
#               axon-fort-uninstalled.pc
#   installed:  make install DESTDIR= into a temporary directory,
#               PKG_CONFIG_PATH=<it>/lib/pkgconfig, --define-variable=prefix=
# The flags are exactly the include and module directories and
# -L<libdir> -Wl,-rpath,<libdir> -lmpifort_abi -lmpi_abi; the programs,
# built with these flags only and run without LD_LIBRARY_PATH, load Axon's
# libraries from <libdir>.
set -u
[[ -e "$AXON_BUILDDIR/libmpifort_abi.la" ]] || { echo "Fortran bindings not built (no libmpifort_abi)"; exit 77; }
command -v pkg-config >/dev/null || { echo "pkg-config is not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=$AXON_BUILDDIR
mkvar() { sed -n "s|^$1 = ||p" "$B/Makefile"; }
fc=$(mkvar FC) fc_id=$(mkvar AXON_FC_ID) mismatch=$(mkvar FC_ALLOW_MISMATCH) version=$(mkvar PACKAGE_VERSION)
prefix=$(mkvar prefix)
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR

cat >"$tmp/use_mpi.f90" <<'EOS'
program use_mpi
  use mpi
  implicit none
  integer :: ierr, rank, np, s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call MPI_Allreduce(rank + 1, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (s /= np * (np + 1) / 2) stop 1
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0)', 'use_mpi OK ', np
end program use_mpi
EOS
cat >"$tmp/mpif_h.f90" <<'EOS'
program mpif_h
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, np, i
  double precision :: d
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  i = rank
  d = rank
  call MPI_Bcast(i, 1, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(d, 1, MPI_DOUBLE_PRECISION, np - 1, MPI_COMM_WORLD, ierr)
  if (i /= np - 1 .or. d /= np - 1) stop 1
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0)', 'mpif_h OK ', np
end program mpif_h
EOS

# check WHERE LIBDIR CFLAGS LIBS PKG-CONFIG-ARGS...: the flags, then build and run both programs.
check() {
  local where=$1 libdir=$2 want_cflags=$3 want_libs=$4; shift 4
  local cflags libs p extra
  cflags=$(pkg-config "$@" --cflags axon-fort) || fail "$where: pkg-config --cflags"
  libs=$(pkg-config "$@" --libs axon-fort) || fail "$where: pkg-config --libs"
  cflags=${cflags%"${cflags##*[! ]}"} libs=${libs%"${libs##*[! ]}"}   # pkg-config ends with a blank
  [[ "$cflags" == "$want_cflags" ]] || fail "$where: --cflags '$cflags', want '$want_cflags'"
  [[ "$libs" == "$want_libs" ]] || fail "$where: --libs '$libs', want '$want_libs'"
  [[ "$(pkg-config "$@" --modversion axon-fort)" == "$version" ]] || fail "$where: --modversion"
  [[ "$(pkg-config "$@" --variable=fc_id axon-fort)" == "$fc_id" ]] || fail "$where: fc_id"
  [[ "$(pkg-config "$@" --variable=fflags_mpif_h axon-fort)" == "$mismatch" ]] || fail "$where: fflags_mpif_h"
  for p in use_mpi mpif_h; do
    extra=
    [[ $p == mpif_h ]] && extra=$(pkg-config "$@" --variable=fflags_mpif_h axon-fort)
    # shellcheck disable=SC2086
    $fc $extra $cflags -o "$tmp/$where-$p" "$tmp/$p.f90" $libs -J "$tmp" ||
      fail "$where: $p does not build with pkg-config's flags"
    out=$(env -u LD_LIBRARY_PATH "$MPIRUN" -np 2 "$tmp/$where-$p" 2>&1) || fail "$where: $p: $out"
    [[ "$out" == "$p OK 2" ]] || fail "$where: $p printed: $out"
    ldd "$tmp/$where-$p" | grep -q "libmpifort_abi.so.1 => $libdir/libmpifort_abi.so.1" ||
      fail "$where: $p: $(ldd "$tmp/$where-$p")"
  done
  echo "$where: pkg-config --cflags --libs axon-fort: $cflags $libs; 2 programs built and ran"
}

PKG_CONFIG_PATH="$B/src/tools" check build-tree "$B/.libs" "-I$B/src/fortran" \
  "-L$B/.libs -Wl,-rpath,$B/.libs -lmpifort_abi -lmpi_abi"

make -C "$B" -s install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 || { tail "$tmp/install.log"; fail "make install"; }
ax="$tmp/root$prefix"
[[ -f "$ax/lib/pkgconfig/axon-fort.pc" ]] || fail "axon-fort.pc not installed"
[[ ! -e "$ax/lib/pkgconfig/axon-fort-uninstalled.pc" ]] || fail "axon-fort-uninstalled.pc installed"
PKG_CONFIG_PATH="$ax/lib/pkgconfig" check installed "$ax/lib" "-I$ax/include -I$ax/lib/fortran/$fc_id" \
  "-L$ax/lib -Wl,-rpath,$ax/lib -lmpifort_abi -lmpi_abi" --define-variable=prefix="$ax"
echo "pkgconfig OK"
