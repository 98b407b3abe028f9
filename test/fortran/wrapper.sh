#!/bin/bash
# mpifort / mpif90 / mpif77: -show, -fc=, AXON_FC (and MPICH_FC, OMPI_FC),
# -compile-info / -link-info, no link flags with -c, and the note printed when
# the compiler in use is another gfortran version than the one that built mpi.mod.
set -u
w="$AXON_BUILDDIR/src/tools/mpifort"
[[ -e "$AXON_BUILDDIR/libmpifort_abi.la" ]] || { echo "Fortran bindings not built (no libmpifort_abi)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
unset AXON_FC MPICH_FC OMPI_FC

show=$("$w" -show prog.f90 -o prog) || fail "-show exited non-zero"
echo "mpifort -show: $show"
[[ "$show" == gfortran* || "$show" == *fortran* ]] || fail "-show does not start with the configured compiler: $show"
[[ "$show" == *"-lmpifort_abi -lmpi_abi"* ]] || fail "-show lacks -lmpifort_abi -lmpi_abi"
[[ "$show" == *"-Wl,-rpath,"* ]] || fail "-show lacks the rpath"
[[ "$show" == *" prog.f90 -o prog "* ]] || fail "-show lost the user arguments"
if gfortran -dumpversion >/dev/null 2>&1 && [[ $(gfortran -dumpversion | cut -d. -f1) -ge 10 ]]; then
  [[ "$show" == *-fallow-argument-mismatch* ]] || fail "gfortran >= 10 without -fallow-argument-mismatch"
fi
for alias in mpif90 mpif77; do
  [[ "$("$AXON_BUILDDIR/src/tools/$alias" -show prog.f90 -o prog)" == "$show" ]] || fail "$alias differs from mpifort"
done

[[ "$("$w" -fc=myfc -show x.f90)" == "myfc "* ]] || fail "-fc= not used"
[[ "$(AXON_FC=axonfc "$w" -show x.f90)" == "axonfc "* ]] || fail "AXON_FC not used"
[[ "$(MPICH_FC=mpichfc "$w" -show x.f90)" == "mpichfc "* ]] || fail "MPICH_FC not used"
[[ "$(OMPI_FC=ompifc "$w" -show x.f90)" == "ompifc "* ]] || fail "OMPI_FC not used"
[[ "$(AXON_FC=axonfc MPICH_FC=mpichfc "$w" -show x.f90)" == "axonfc "* ]] || fail "AXON_FC must win over MPICH_FC"
[[ "$(AXON_FC=axonfc "$w" -fc=myfc -show x.f90)" == "myfc "* ]] || fail "-fc= must win over AXON_FC"
[[ "$(AXON_FC=axonfc "$w" -fc=myfc -show x.f90)" != *"-fc="* ]] || fail "-fc= passed on to the compiler"

c=$("$w" -show -c x.f90)
[[ "$c" != *-lmpi_abi* ]] || fail "-c must not add link flags: $c"
ci=$("$w" -compile-info)
[[ "$ci" == *-I* && "$ci" != *-lmpi_abi* ]] || fail "-compile-info: $ci"
li=$("$w" -link-info)
[[ "$li" == *"-lmpifort_abi -lmpi_abi"* ]] || fail "-link-info: $li"
[[ "$("$w" -compile_info)" == "$ci" && "$("$w" -link_info)" == "$li" ]] || fail "-compile_info/-link_info"

# A "gfortran" of another version: the wrapper says the module does not match.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/gfortran" <<'EOS'
#!/bin/sh
case "$1" in
  --version) echo "GNU Fortran (fake) 99.1.0" ;;
  -dumpversion) echo 99.1.0 ;;
esac
exit 0
EOS
chmod +x "$tmp/gfortran"
note=$("$w" -fc="$tmp/gfortran" -c x.f90 2>&1 >/dev/null)
echo "note: $note"
[[ "$note" == *"modules were built by gfortran"*"99.1.0"* ]] || fail "no note about the module's compiler version"
same=$("$w" -c x.f90 -fc=gfortran -o /dev/null -fsyntax-only 2>&1 </dev/null | grep -c "was built by" || true)
[[ "$same" == 0 ]] || fail "note printed for the configured compiler"
# What CMake's FindMPI asks (-showme:compile, -showme:link with one dash) and
# the directories / library names; with MPICH_FC naming the wrapper itself (as
# FindMPI sets it when the project's compiler is mpifort), no endless loop.
# -showme:compile / -showme:link print the flags only (Open MPI), -link-info the whole command (MPICH).
[[ "$("$w" -showme:compile)" == "$("$w" --showme:compile)" && "$("$w" -showme:link)" == "$("$w" --showme:link)" ]] ||
  fail "-showme:compile / -showme:link"
[[ "$li" == "$("$w" --showme:command) $("$w" --showme:compile) $("$w" --showme:link)" ]] ||
  fail "-link-info is not the compiler, --showme:compile and --showme:link: $li"
export AXON_MPIFORT_BUILDDIR="$AXON_BUILDDIR"
[[ "$("$w" --showme:incdirs)" == "$AXON_BUILDDIR/src/fortran $AXON_BUILDDIR/src/fortran" ]] ||
  fail "--showme:incdirs: $("$w" --showme:incdirs)"
[[ "$("$w" --showme:libdirs)" == "$AXON_BUILDDIR/.libs" && "$("$w" --showme:libs)" == "mpifort_abi mpi_abi" ]] ||
  fail "--showme:libdirs / --showme:libs"
loop=$(MPICH_FC="$w" timeout 10 "$w" -compile-info) || fail "MPICH_FC=mpifort: $loop"
[[ "$loop" == "$w "* ]] || fail "MPICH_FC=mpifort: $loop"
out=$(cd "$tmp" && printf 'program p\nend program p\n' >p.f90 && MPICH_FC="$w" timeout 20 "$w" -c p.f90 -o p.o 2>&1) ||
  fail "MPICH_FC=mpifort compiling: $out"
# An 8-byte default INTEGER is refused before compiling (the bindings take 4).
rc=0
msg=$("$w" -fdefault-integer-8 -c "$tmp/p.f90" -o "$tmp/p8.o" 2>&1) || rc=$?
[[ $rc == 1 && "$msg" == *"-fdefault-integer-8 is not supported"* && ! -e "$tmp/p8.o" ]] ||
  fail "-fdefault-integer-8: exit $rc: $msg"
echo "wrapper OK"
