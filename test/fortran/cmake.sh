#!/bin/bash
# CMake's FindMPI finds Axon: find_package(MPI REQUIRED COMPONENTS C CXX
# Fortran) in a small project, with Axon installed (make install DESTDIR=)
# into a temporary directory, finds Axon's mpicc, mpicxx and mpifort (and
# their include directories, libmpi_abi and libmpifort_abi), never the decoy
# wrappers later on PATH (or first on PATH, when MPI_HOME or MPI_<LANG>_COMPILER
# name Axon's); mpif.h, use mpi and use mpi_f08 are found; the
# project's C, C++ and Fortran (mpif.h and use mpi) programs build and run on
# 2 ranks under Axon's mpirun. Three configurations:
#   path:     Axon's bin first on PATH (decoys after it); built and run
#   mpi_home: decoys first on PATH, MPI_HOME=<Axon's prefix>; built and run
#   compiler: decoys first on PATH, -DMPI_C_COMPILER= -DMPI_CXX_COMPILER=
#             -DMPI_Fortran_COMPILER= Axon's wrappers; configured only
set -u
[[ -e "$AXON_BUILDDIR/libmpifort_abi.la" ]] || { echo "Fortran bindings not built (no libmpifort_abi)"; exit 77; }
command -v cmake >/dev/null || { echo "cmake is not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
[[ -n "${AXON_KEEP_TMP:-}" ]] && echo "keeping $tmp" || trap 'rm -rf "$tmp"' EXIT

# ---- install into $tmp/root and make the wrappers point there
prefix=$(sed -n 's/^prefix = //p' "$AXON_BUILDDIR/Makefile")
make -C "$AXON_BUILDDIR" -s install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 ||
  { tail "$tmp/install.log"; fail "make install DESTDIR="; }
ax="$tmp/root$prefix"
for w in mpicc mpicxx mpifort mpif90 mpif77; do
  # The configured absolute directories move under DESTDIR; ${prefix}-relative ones follow.
  sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=\"/#\1=\"$tmp/root/#" "$ax/bin/$w"
done
"$ax/bin/mpicc" -showme:compile | grep -q -- "-I$tmp/root" || fail "relocated mpicc: $("$ax/bin/mpicc" -showme:compile)"

# ---- decoys: wrappers of "another MPI" that record being run
mkdir -p "$tmp/decoy"
for w in mpicc mpicxx mpiCC mpic++ mpifort mpif90 mpif95 mpif77 mpiexec mpirun; do
  cat >"$tmp/decoy/$w" <<EOS
#!/bin/sh
echo "\$0 \$*" >>"$tmp/decoy.used"
echo "cc -I/nonexistent/decoy/include -L/nonexistent/decoy/lib -lmpi"
EOS
  chmod +x "$tmp/decoy/$w"
done

# ---- the project
mkdir -p "$tmp/proj"
cat >"$tmp/proj/CMakeLists.txt" <<'EOS'
cmake_minimum_required(VERSION 3.10)
project(axon_findmpi C CXX Fortran)
find_package(MPI REQUIRED COMPONENTS C CXX Fortran)
add_executable(hello_c hello.c)
target_link_libraries(hello_c MPI::MPI_C)
add_executable(hello_cxx hello.cpp)
target_link_libraries(hello_cxx MPI::MPI_CXX)
add_executable(hello_f90 hello_f90.f90)
target_link_libraries(hello_f90 MPI::MPI_Fortran)
add_executable(hello_f77 hello_f77.f)
target_link_libraries(hello_f77 MPI::MPI_Fortran)
set(out "")
foreach(v MPI_C_COMPILER MPI_CXX_COMPILER MPI_Fortran_COMPILER MPI_C_INCLUDE_DIRS MPI_Fortran_INCLUDE_DIRS
          MPI_C_LIB_NAMES MPI_Fortran_LIB_NAMES MPI_mpi_abi_LIBRARY MPI_mpifort_abi_LIBRARY
          MPI_Fortran_HAVE_F77_HEADER MPI_Fortran_HAVE_F90_MODULE MPI_Fortran_HAVE_F08_MODULE
          MPI_C_VERSION MPI_Fortran_VERSION MPIEXEC_EXECUTABLE)
  string(APPEND out "${v}=${${v}}\n")
endforeach()
file(WRITE "${CMAKE_BINARY_DIR}/found.txt" "${out}")
EOS
cat >"$tmp/proj/hello.c" <<'EOS'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) return 1;
    MPI_Finalize();
    if (rank == 0) printf("hello_c OK %d\n", size);
    return 0;
}
EOS
cat >"$tmp/proj/hello.cpp" <<'EOS'
#include <mpi.h>
#include <cstdio>
#include <vector>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> all(static_cast<size_t>(size));
    MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r)
        if (all[static_cast<size_t>(r)] != r) return 1;
    MPI_Finalize();
    if (rank == 0) std::printf("hello_cxx OK %d\n", size);
    return 0;
}
EOS
cat >"$tmp/proj/hello_f90.f90" <<'EOS'
program hello_f90
  use mpi
  implicit none
  integer :: ierr, rank, np, s
  double precision :: d(2)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call MPI_Allreduce(rank, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  d = rank
  call MPI_Bcast(d, 2, MPI_DOUBLE_PRECISION, np - 1, MPI_COMM_WORLD, ierr)
  if (s /= np * (np - 1) / 2 .or. d(2) /= np - 1) stop 1
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0)', 'hello_f90 OK ', np
end program hello_f90
EOS
cat >"$tmp/proj/hello_f77.f" <<'EOS'
      PROGRAM HELLO
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, S
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      CALL MPI_REDUCE(1, S, 1, MPI_INTEGER, MPI_SUM, 0,
     &     MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. S .NE. NP) STOP 1
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT '(A,I0)', 'hello_f77 OK ', NP
      END
EOS

# check_found BUILD: the cache and found.txt name Axon's files only.
check_found() {
  local b=$1 f="$1/found.txt"
  [[ -f "$f" ]] || fail "$b: no found.txt"
  get() { sed -n "s|^$1=||p" "$f"; }
  [[ "$(get MPI_C_COMPILER)" == "$ax/bin/mpicc" ]] || fail "$b: MPI_C_COMPILER=$(get MPI_C_COMPILER)"
  [[ "$(get MPI_CXX_COMPILER)" == "$ax/bin/mpicxx" ]] || fail "$b: MPI_CXX_COMPILER=$(get MPI_CXX_COMPILER)"
  case $(get MPI_Fortran_COMPILER) in
    "$ax/bin/mpifort" | "$ax/bin/mpif90" | "$ax/bin/mpif77") ;;
    *) fail "$b: MPI_Fortran_COMPILER=$(get MPI_Fortran_COMPILER)" ;;
  esac
  [[ "$(get MPI_C_INCLUDE_DIRS)" == "$ax/include" ]] || fail "$b: MPI_C_INCLUDE_DIRS=$(get MPI_C_INCLUDE_DIRS)"
  [[ "$(get MPI_Fortran_INCLUDE_DIRS)" == "$ax/include;$ax/lib/fortran/"* ]] ||
    fail "$b: MPI_Fortran_INCLUDE_DIRS=$(get MPI_Fortran_INCLUDE_DIRS)"
  [[ "$(get MPI_C_LIB_NAMES)" == "mpi_abi" ]] || fail "$b: MPI_C_LIB_NAMES=$(get MPI_C_LIB_NAMES)"
  [[ "$(get MPI_Fortran_LIB_NAMES)" == "mpifort_abi;mpi_abi" ]] ||
    fail "$b: MPI_Fortran_LIB_NAMES=$(get MPI_Fortran_LIB_NAMES)"
  [[ "$(get MPI_mpi_abi_LIBRARY)" == "$ax/lib/libmpi_abi.so" ]] || fail "$b: MPI_mpi_abi_LIBRARY=$(get MPI_mpi_abi_LIBRARY)"
  [[ "$(get MPI_mpifort_abi_LIBRARY)" == "$ax/lib/libmpifort_abi.so" ]] ||
    fail "$b: MPI_mpifort_abi_LIBRARY=$(get MPI_mpifort_abi_LIBRARY)"
  [[ "$(get MPI_Fortran_HAVE_F77_HEADER)" == TRUE ]] || fail "$b: no mpif.h found"
  [[ "$(get MPI_Fortran_HAVE_F90_MODULE)" == TRUE ]] || fail "$b: no use mpi found"
  [[ "$(get MPI_Fortran_HAVE_F08_MODULE)" == TRUE ]] || fail "$b: no use mpi_f08 found"
  [[ "$(get MPI_C_VERSION)" == 5.0 && "$(get MPI_Fortran_VERSION)" == 5.0 ]] ||
    fail "$b: MPI versions $(get MPI_C_VERSION) / $(get MPI_Fortran_VERSION)"
  [[ ! -e "$tmp/decoy.used" ]] || fail "$b: a decoy wrapper was run: $(cat "$tmp/decoy.used")"
}

# configure NAME CMAKE-ARGS...: configure $tmp/NAME; the environment is the caller's.
configure() {
  local b="$tmp/$1"; shift
  cmake -S "$tmp/proj" -B "$b" "$@" >"$b.log" 2>&1 || { tail -30 "$b.log"; fail "cmake configure ($b)"; }
  check_found "$b"
}
build_and_run() {
  local b="$tmp/$1" p
  cmake --build "$b" >>"$b.log" 2>&1 || { tail -30 "$b.log"; fail "cmake --build ($b)"; }
  for p in hello_c hello_cxx hello_f90 hello_f77; do
    out=$("$MPIRUN" -np 2 "$b/$p" 2>&1) || fail "$1: $p: $out"
    [[ "$out" == "$p OK 2" ]] || fail "$1: $p printed: $out"
    # Linked against Axon's installed libraries, not another MPI.
    ldd "$b/$p" | grep -q "libmpi_abi.so.1 => $ax/lib/" || fail "$1: $p: $(ldd "$b/$p")"
  done
  ldd "$b/hello_f90" | grep -q "libmpifort_abi.so.1 => $ax/lib/" || fail "$1: hello_f90 without libmpifort_abi"
  echo "$1: found Axon; 4 programs built and ran"
}

unset MPI_HOME MPICH_CC MPICH_CXX MPICH_FC OMPI_CC OMPI_CXX OMPI_FC AXON_FC AXON_MPIFORT_BUILDDIR
export CC=gcc CXX=g++ FC=$(sed -n 's/^FC = //p' "$AXON_BUILDDIR/Makefile")

(PATH="$ax/bin:$tmp/decoy:$PATH" configure path) || exit 1
build_and_run path
(PATH="$tmp/decoy:$PATH" MPI_HOME="$ax" configure mpi_home) || exit 1
build_and_run mpi_home
(PATH="$tmp/decoy:$PATH" configure compiler -DMPI_C_COMPILER="$ax/bin/mpicc" -DMPI_CXX_COMPILER="$ax/bin/mpicxx" \
  -DMPI_Fortran_COMPILER="$ax/bin/mpifort") || exit 1
echo "compiler: found Axon"
echo "cmake OK"
