#!/bin/bash
# pkg-config: a C program built with `pkg-config --cflags --libs` flags only
# starts without LD_LIBRARY_PATH (the .pc's rpath), alone (a singleton) and
# on 2 ranks under mpirun, and loads Axon's libmpi_abi:
#   build tree: PKG_CONFIG_PATH=<builddir>/src/tools picks axon-uninstalled.pc
#   installed:  make install DESTDIR= into a temporary directory; axon.pc and
#               the names users look for, mpi.pc, mpi-c.pc, mpi-cxx.pc (and
#               mpi-fort.pc with the Fortran bindings), all resolve to the
#               same flags, with --define-variable=prefix=; a C++ program
#               built with mpi-cxx and a C one built with the installed mpicc
#               (its paths moved under DESTDIR) run too.
set -u
command -v pkg-config >/dev/null || { echo "pkg-config is not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=$AXON_BUILDDIR
mkvar() { sed -n "s|^$1 = ||p" "$B/Makefile"; }
cc=$(mkvar CC) cxx=$(mkvar CXX) version=$(mkvar PACKAGE_VERSION) prefix=$(mkvar prefix)
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR AXON_CC MPICH_CC OMPI_CC AXON_CXX MPICH_CXX OMPI_CXX
unset AXON_MPICC_ACTIVE AXON_MPICXX_ACTIVE

cat >"$tmp/hello.c" <<'EOS'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) printf("hello OK %d %d\n", size, sum);
    return 0;
}
EOS
sed 's/stdio.h/cstdio/; s/printf/std::printf/' "$tmp/hello.c" >"$tmp/hello.cpp"

# run WHERE PROGRAM LIBDIR: without LD_LIBRARY_PATH, alone and on 2 ranks,
# exact output; the library comes from LIBDIR through the program's rpath.
run() {
  local where=$1 prog=$2 libdir=$3 out
  readelf -d "$prog" | grep -E 'R(UN)?PATH' | grep -q -F "$libdir" || fail "$where: no rpath to $libdir in $prog"
  out=$(env -u LD_LIBRARY_PATH "$prog" 2>&1) || fail "$where: $prog alone: $out"
  [[ "$out" == "hello OK 1 0" ]] || fail "$where: $prog alone printed: $out"
  out=$(env -u LD_LIBRARY_PATH "$MPIRUN" -np 2 "$prog" 2>&1) || fail "$where: $prog on 2 ranks: $out"
  [[ "$out" == "hello OK 2 1" ]] || fail "$where: $prog on 2 ranks printed: $out"
  env -u LD_LIBRARY_PATH ldd "$prog" | grep -q "libmpi_abi.so.1 => $libdir/libmpi_abi.so.1" ||
    fail "$where: $prog: $(env -u LD_LIBRARY_PATH ldd "$prog")"
}
# shellcheck disable=SC2086
flags() { local f; f=$(pkg-config "$@") || fail "pkg-config $*"; echo $f; }   # one line, single blanks

# ---- the build tree
export PKG_CONFIG_PATH="$B/src/tools"
got=$(flags --cflags --libs axon)
inc=$(flags --cflags-only-I axon)   # <srcdir>/include, perhaps spelt <builddir>/../include
[[ "$inc" == -I* && "$(cd "${inc#-I}" && pwd -P)" == "$(cd "$AXON_SRCDIR/include" && pwd -P)" ]] ||
  fail "build tree: --cflags '$inc' is not -I<srcdir>/include"
want="$inc -L$B/.libs -Wl,-rpath,$B/.libs -lmpi_abi"
[[ "$got" == "$want" ]] || fail "build tree: pkg-config --cflags --libs axon: '$got', want '$want'"
# shellcheck disable=SC2046
$cc -o "$tmp/tree-hello" "$tmp/hello.c" $(pkg-config --cflags --libs axon) || fail "build tree: does not build"
run build-tree "$tmp/tree-hello" "$B/.libs"
echo "build tree: $got; built and ran without LD_LIBRARY_PATH"

# ---- installed
make -C "$B" -s install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 || { tail "$tmp/install.log"; fail "make install"; }
ax="$tmp/root$prefix"
pcdir="$ax/lib/pkgconfig"
export PKG_CONFIG_PATH="$pcdir"
names="axon mpi mpi-c mpi-cxx"
[[ -e "$B/libmpifort_abi.la" ]] && names="$names axon-fort mpi-fort"
if [[ ! -e "$B/libmpifort_abi.la" && -e "$pcdir/mpi-fort.pc" ]]; then
  fail "mpi-fort.pc installed without the Fortran bindings"
fi
for f in axon-uninstalled axon-fort-uninstalled; do
  [[ ! -e "$pcdir/$f.pc" ]] || fail "$f.pc installed"
done
want="-I$ax/include -L$ax/lib -Wl,-rpath,$ax/lib -lmpi_abi"
for n in $names; do
  [[ -f "$pcdir/$n.pc" ]] || fail "$n.pc not installed in lib/pkgconfig"
  [[ "$(pkg-config --modversion "$n")" == "$version" ]] || fail "$n: --modversion $(pkg-config --modversion "$n")"
  got=$(flags --define-variable=prefix="$ax" --cflags --libs "$n")
  case $n in
    *fort) w="-I$ax/include -I$ax/lib/fortran/$(mkvar AXON_FC_ID) -L$ax/lib -Wl,-rpath,$ax/lib -lmpifort_abi -lmpi_abi" ;;
    *) w=$want ;;
  esac
  [[ "$got" == "$w" ]] || fail "installed: pkg-config --cflags --libs $n: '$got', want '$w'"
  echo "installed: pkg-config --cflags --libs $n: $got"
done
# shellcheck disable=SC2046
$cc -o "$tmp/inst-hello" "$tmp/hello.c" $(pkg-config --define-variable=prefix="$ax" --cflags --libs mpi-c) ||
  fail "installed: C with mpi-c does not build"
run installed-c "$tmp/inst-hello" "$ax/lib"
# shellcheck disable=SC2046
$cxx -o "$tmp/inst-hello-cxx" "$tmp/hello.cpp" $(pkg-config --define-variable=prefix="$ax" --cflags --libs mpi-cxx) ||
  fail "installed: C++ with mpi-cxx does not build"
run installed-c++ "$tmp/inst-hello-cxx" "$ax/lib"

# The installed mpicc, its configured absolute paths moved under DESTDIR.
sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=\"/#\1=\"$tmp/root/#" "$ax/bin/mpicc"
"$ax/bin/mpicc" -o "$tmp/wrapped-hello" "$tmp/hello.c" || fail "installed mpicc does not build"
run installed-mpicc "$tmp/wrapped-hello" "$ax/lib"
echo "pkgconfig OK"
