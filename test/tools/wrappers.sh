#!/bin/bash
# mpicc, mpicxx and mpifort (mpif90, mpif77) in the build tree answer what Open
# MPI's and MPICH's wrappers answer:
#   compiler choice: -cc= / -cxx= / -fc= > AXON_CC > MPICH_CC > OMPI_CC >
#     configured (and _CXX, _FC; mpif90 reads MPICH_F90 before MPICH_FC, mpif77
#     MPICH_F77 and OMPI_F77 before MPICH_FC / OMPI_FC);
#   -compile-info / -link-info (MPICH): the commands, with the compiler;
#   --showme:compile / --showme:link (Open MPI): the flags only;
#   --showme:command, --showme:version, --showme:help (= -help), -v;
#   an unknown --showme:xyz fails with a message;
#   what the compiler really receives (a fake compiler records it), and no
#   endless loop when MPICH_CC names the wrapper itself (CMake's FindMPI).
set -u
fail() { echo "FAIL: $*"; exit 1; }
B=$AXON_BUILDDIR
tools="$B/src/tools"
mkvar() { sed -n "s|^$1 = ||p" "$B/Makefile"; }
version=$(mkvar PACKAGE_VERSION)
unset AXON_CC AXON_CXX AXON_FC MPICH_CC MPICH_CXX MPICH_FC MPICH_F90 MPICH_F77 OMPI_CC OMPI_CXX OMPI_FC OMPI_F77
unset AXON_MPICC_ACTIVE AXON_MPICXX_ACTIVE AXON_MPIFORT_ACTIVE AXON_MPIFORT_BUILDDIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A compiler that prints the arguments it gets, one per line, in brackets.
cat >"$tmp/fakecc" <<'EOS'
#!/bin/sh
for a in "$@"; do echo "[$a]"; done
EOS
chmod +x "$tmp/fakecc"

wrappers="mpicc mpicxx"
[[ -e "$B/libmpifort_abi.la" ]] && wrappers="$wrappers mpifort mpif90 mpif77"
checked=0
for w in $wrappers; do
  W="$tools/$w"
  [[ -x "$W" ]] || fail "$W was not generated"
  case $w in
    mpicc) opt=-cc= var=CC lang=C configured=$(mkvar CC) libs="mpi_abi" ;;
    mpicxx) opt=-cxx= var=CXX lang=C++ configured=$(mkvar CXX) libs="mpi_abi" ;;
    *) opt=-fc= var=FC lang=Fortran configured=$(mkvar FC) libs="mpifort_abi mpi_abi" ;;
  esac
  # ---- the compiler, and who wins
  [[ "$("$W" --showme:command)" == "$configured" ]] || fail "$w --showme:command: $("$W" --showme:command), want $configured"
  [[ "$(env "AXON_$var=axon" "$W" --showme:command)" == axon ]] || fail "$w: AXON_$var not used"
  [[ "$(env "MPICH_$var=mpich" "$W" --showme:command)" == mpich ]] || fail "$w: MPICH_$var not used"
  [[ "$(env "OMPI_$var=ompi" "$W" --showme:command)" == ompi ]] || fail "$w: OMPI_$var not used"
  [[ "$(env "MPICH_$var=mpich" "OMPI_$var=ompi" "$W" --showme:command)" == mpich ]] || fail "$w: MPICH_$var must win over OMPI_$var"
  [[ "$(env "AXON_$var=axon" "MPICH_$var=mpich" "OMPI_$var=ompi" "$W" --showme:command)" == axon ]] ||
    fail "$w: AXON_$var must win over MPICH_$var and OMPI_$var"
  [[ "$(env "AXON_$var=axon" "$W" "${opt}opt" --showme:command)" == opt ]] || fail "$w: $opt must win over AXON_$var"
  show=$("$W" "${opt}opt" -show x.o -o x)
  [[ "$show" == "opt "* && "$show" != *"$opt"* ]] || fail "$w: $opt passed on to the compiler: $show"
  case $w in
    mpif90)
      [[ "$(MPICH_F90=f90 MPICH_FC=fc "$W" --showme:command)" == f90 ]] || fail "mpif90: MPICH_F90 must win over MPICH_FC"
      [[ "$(AXON_FC=axon MPICH_F90=f90 "$W" --showme:command)" == axon ]] || fail "mpif90: AXON_FC must win over MPICH_F90" ;;
    mpif77)
      [[ "$(MPICH_F77=f77 MPICH_FC=fc "$W" --showme:command)" == f77 ]] || fail "mpif77: MPICH_F77 must win over MPICH_FC"
      [[ "$(OMPI_F77=of77 OMPI_FC=ofc "$W" --showme:command)" == of77 ]] || fail "mpif77: OMPI_F77 must win over OMPI_FC"
      [[ "$(MPICH_FC=fc OMPI_F77=of77 "$W" --showme:command)" == fc ]] || fail "mpif77: MPICH_FC must win over OMPI_F77" ;;
    mpifort)
      [[ "$(MPICH_F90=f90 MPICH_F77=f77 OMPI_F77=of77 "$W" --showme:command)" == "$configured" ]] ||
        fail "mpifort must not read MPICH_F90 / MPICH_F77 / OMPI_F77" ;;
  esac

  # ---- flags (Open MPI) and commands (MPICH)
  compile=$("$W" --showme:compile) link=$("$W" --showme:link)
  [[ "$compile" == -* && "$compile" == *-I/* && "$compile" != *-lmpi_abi* ]] || fail "$w --showme:compile: $compile"
  [[ "$link" == "-L"* && "$link" == *"-Wl,-rpath,"* && "$link" == *"-lmpi_abi" ]] || fail "$w --showme:link: $link"
  [[ "$("$W" -showme:compile)" == "$compile" && "$("$W" -showme:link)" == "$link" ]] || fail "$w: -showme: differs from --showme:"
  [[ "$("$W" -compile-info)" == "$configured $compile" ]] || fail "$w -compile-info: $("$W" -compile-info)"
  [[ "$("$W" -link-info)" == "$configured $compile $link" ]] || fail "$w -link-info: $("$W" -link-info)"
  [[ "$("$W" -compile_info)" == "$configured $compile" && "$("$W" -link_info)" == "$configured $compile $link" ]] ||
    fail "$w: -compile_info / -link_info"
  [[ "$("$W" -compile-info -O2 x.c)" == "$configured $compile -O2 x.c" ]] || fail "$w -compile-info with arguments"
  [[ "$("$W" -show -O2 x.c -o x)" == "$configured $compile -O2 x.c -o x $link" ]] || fail "$w -show: $("$W" -show -O2 x.c -o x)"
  [[ "$("$W" --showme -O2 x.c -o x)" == "$("$W" -show -O2 x.c -o x)" ]] || fail "$w --showme differs from -show"
  [[ "$("$W" -show -c x.c)" == "$configured $compile -c x.c" ]] || fail "$w -show -c: $("$W" -show -c x.c)"
  [[ "$("$W" --showme:libs)" == "$libs" ]] || fail "$w --showme:libs: $("$W" --showme:libs)"
  [[ "-L$("$W" --showme:libdirs)" == "${link%% *}" ]] || fail "$w --showme:libdirs: $("$W" --showme:libdirs)"
  [[ "$compile" == *"-I$("$W" --showme:incdirs | cut -d' ' -f1)"* ]] || fail "$w --showme:incdirs: $("$W" --showme:incdirs)"

  # ---- version, help, unknown options
  [[ "$("$W" --showme:version)" == "$w: Axon MPI $version ($lang)" ]] || fail "$w --showme:version: $("$W" --showme:version)"
  help=$("$W" --showme:help) || fail "$w --showme:help exited non-zero"
  [[ "$help" == "Usage: $w "* ]] || fail "$w --showme:help does not start with its usage: $(head -1 <<<"$help")"
  [[ "$("$W" -help)" == "$help" && "$("$W" -showme:help)" == "$help" ]] || fail "$w: -help differs from --showme:help"
  for o in "$opt" -show -compile-info -link-info --showme:compile --showme:link --showme:command --showme:incdirs \
           --showme:libdirs --showme:libs --showme:version --showme:help -v "AXON_$var" "MPICH_$var" "OMPI_$var"; do
    grep -q -F -e "$o" <<<"$help" || fail "$w --showme:help does not describe $o"
  done
  err=$("$W" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 1 && "$err" == "$w: no arguments"* ]] || fail "$w without arguments: exit $rc, '$err'"
  for bad in --showme:xyz -showme:compiles; do
    err=$("$W" "$bad" 2>&1 >/dev/null); rc=$?
    [[ $rc -eq 1 && "$err" == "$w: unknown option $bad"* ]] || fail "$w $bad: exit $rc, '$err'"
  done

  # ---- what the compiler receives
  got=$("$W" "${opt}$tmp/fakecc" -O2 "a b.c" -o prog | tr '\n' ' ')
  # shellcheck disable=SC2086
  want="[-I${compile##*-I}] [-O2] [a b.c] [-o] [prog] $(printf '[%s] ' $link)"
  [[ $w == mpicc || $w == mpicxx ]] && { [[ "$got" == "$want" ]] || fail "$w ran: $got; want $want"; }
  [[ "$got" == *"[a b.c]"* && "$got" == *"[-lmpi_abi] " ]] || fail "$w ran: $got"
  got=$("$W" "${opt}$tmp/fakecc" -c x.c | tr '\n' ' ')
  [[ "$got" != *-lmpi_abi* && "$got" == *"[-c] [x.c] " ]] || fail "$w -c linked: $got"
  # -v: MPICH's wrappers print their version, then the compiler's -v (no link step alone).
  out=$("$W" "${opt}$tmp/fakecc" -v)
  [[ "$(head -1 <<<"$out")" == "$w: Axon MPI $version ($lang)" && "$out" == *"[-v]"* && "$out" != *-lmpi_abi* ]] ||
    fail "$w -v: $out"
  # --version goes to the compiler, as both peers do.
  out=$("$W" "${opt}$tmp/fakecc" --version)
  [[ "$out" == *"[--version]"* && "$out" != *"Axon MPI"* ]] || fail "$w --version: $out"
  checked=$((checked + 1))
done

# MPICH_CC naming the wrapper (CC=mpicc in a CMake project): the inner run
# uses the configured compiler instead of running itself again.
printf 'int main(void) { return 0; }\n' >"$tmp/x.c"
MPICH_CC="$tools/mpicc" timeout 20 "$tools/mpicc" -c "$tmp/x.c" -o "$tmp/x.o" || fail "MPICH_CC=mpicc: exit $?"
[[ -f "$tmp/x.o" ]] || fail "MPICH_CC=mpicc: no object"
cp "$tmp/x.c" "$tmp/x.cpp"
MPICH_CXX="$tools/mpicxx" timeout 20 "$tools/mpicxx" -c "$tmp/x.cpp" -o "$tmp/y.o" || fail "MPICH_CXX=mpicxx: exit $?"
echo "wrappers OK: $checked wrappers ($wrappers)"
