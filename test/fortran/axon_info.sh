#!/bin/bash
# axon_info reports the Fortran bindings exactly as configure found them: the
# compiler (the build tree Makefile's FC) and its version (AXON_FC_ID, and
# what the compiler says with -dumpversion), mpif.h in $(includedir), the
# module directory $(libdir)/fortran/$(AXON_FC_ID) for use mpi and use mpi_f08;
# "(not installed)" exactly when the file is not at its installed place.
# Without the bindings: "Fortran: no".
set -u
fail() { echo "FAIL: $*"; exit 1; }
info="$AXON_BUILDDIR/src/tools/axon_info"
[[ -x "$info" ]] || fail "no $info"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'axon-print-%%:\n\t@echo $($*)\n' >"$tmp/print.mk"
mkvar() { make -s --no-print-directory -C "$AXON_BUILDDIR" -f Makefile -f "$tmp/print.mk" "axon-print-$1"; }
out=$("$info") || fail "axon_info failed: $out"
echo "$out"
line() { grep -F -x -- "$1" <<<"$out" >/dev/null || fail "no line '$1'"; }

if [[ ! -e "$AXON_BUILDDIR/libmpifort_abi.la" ]]; then
  line "  Fortran:           no (not built: configure found no Fortran compiler, or --disable-fortran)"
  echo "axon_info OK (no Fortran)"
  exit 0
fi
fc=$(mkvar FC) fc_id=$(mkvar AXON_FC_ID) includedir=$(mkvar includedir) fmoddir=$(mkvar fmoddir)
libdir=$(mkvar libdir)
[[ -n "$fc" && -n "$fc_id" && "$fmoddir" == "$libdir/fortran/$fc_id" ]] ||
  fail "Makefile: FC=$fc AXON_FC_ID=$fc_id fmoddir=$fmoddir libdir=$libdir"
version=${fc_id##*-}
case $("${fc%% *}" --version 2>/dev/null | head -n 1) in
  *"GNU Fortran"*) [[ "$($fc -dumpversion)" == "$version" || "$($fc -dumpversion)" == "$version".* ]] ||
                     fail "$fc -dumpversion says $($fc -dumpversion), AXON_FC_ID $fc_id" ;;
esac
line "  Fortran:           yes: $fc $version (libmpifort_abi; mpifort, mpif90, mpif77)"
note() { [[ -e "$1" ]] && echo "" || echo " (not installed)"; }
line "    mpif.h:          yes, $includedir/mpif.h$(note "$includedir/mpif.h")"
line "    use mpi:         yes, module directory $fmoddir$(note "$fmoddir/mpi.mod")"
line "    use mpi_f08:     yes, module directory $fmoddir$(note "$fmoddir/mpi_f08.mod")"
[[ $(grep -c '^  Fortran:' <<<"$out") -eq 1 ]] || fail "more than one Fortran line"
echo "axon_info OK"
