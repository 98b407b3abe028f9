#!/bin/bash
# The man pages: mpirun(1), mpicc(1), mpicxx(1), axon_info(1) (and mpifort(1)
# with the Fortran bindings) are made from each program's --help text:
#   each page has a .TH line naming the program and the version, and NAME,
#   SYNOPSIS, DESCRIPTION and OPTIONS sections; man renders it without a
#   warning (groff's -ww); every option --help lists is in the rendered page;
#   make install DESTDIR= puts them in share/man/man1 with mpiexec.1 (-> mpirun.1),
#   and mpif90.1 / mpif77.1 (-> mpifort.1), and man finds them by name there.
set -u
fail() { echo "FAIL: $*"; exit 1; }
B=$AXON_BUILDDIR
command -v man >/dev/null || { echo "man is not installed (apt-get install man-db groff-base)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkvar() { sed -n "s|^$1 = ||p" "$B/Makefile"; }
version=$(mkvar PACKAGE_VERSION) prefix=$(mkvar prefix)
render() { env -u MAN_KEEP_FORMATTING LC_ALL=C MANWIDTH=200 man --warnings=w -E ascii "$@" 2>"$tmp/warnings"; }

pages="mpirun mpicc mpicxx axon_info"
[[ -e "$B/libmpifort_abi.la" ]] && pages="$pages mpifort"
for p in $pages; do
  page="$B/man/$p.1"
  [[ -f "$page" ]] || fail "$page was not made"
  case $p in
    mpirun) help=$("$B/src/launcher/mpirun" --help) ;;
    axon_info) help=$("$B/src/tools/axon_info" --help) ;;
    *) help=$("$B/src/tools/$p" --showme:help) ;;
  esac
  up=$(tr '[:lower:]' '[:upper:]' <<<"$p")
  grep -q "^\.TH $up 1 \"[0-9-]*\" \"Axon MPI $version\"" "$page" || fail "$p.1: .TH line: $(grep '^\.TH' "$page")"
  for s in NAME SYNOPSIS DESCRIPTION OPTIONS; do
    grep -q "^\.SH $s\$" "$page" || fail "$p.1 has no $s section"
  done
  text=$(render -l "$page") || fail "man -l $p.1 failed"
  [[ ! -s "$tmp/warnings" ]] || fail "man -l $p.1 warns: $(cat "$tmp/warnings")"
  grep -q "^ *$p - " <<<"$text" || fail "$p.1: NAME is not '$p - ...': $(sed -n 3,4p <<<"$text")"
  # Every option word of --help's option lines (two spaces, then an option).
  n=0
  for o in $(grep -E '^  -' <<<"$help" | sed -E 's/^  ([^ ].*)$/\1/; s/(  |\t).*//' | tr ',' ' '); do
    [[ "$o" == -* ]] || continue
    o=${o%%=*}
    grep -q -F -e "$o" <<<"$text" || fail "$p.1 lacks $o, which $p's help lists"
    n=$((n + 1))
  done
  [[ $n -ge 4 ]] || fail "$p: found only $n options in its help text"
  # The help's first synopsis line is the page's.
  syn=$(sed -n 's/^Usage: //p' <<<"$help" | head -1)
  grep -q -F -e "$syn" <<<"$text" || fail "$p.1: SYNOPSIS lacks '$syn'"
  echo "$p.1: $n options, sections and .TH checked, renders without warnings"
done

make -C "$B" -s install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 || { tail "$tmp/install.log"; fail "make install"; }
man1="$tmp/root$prefix/share/man/man1"
want="axon_info.1 mpicc.1 mpicxx.1 mpiexec.1 mpirun.1"
[[ -e "$B/libmpifort_abi.la" ]] && want="axon_info.1 mpicc.1 mpicxx.1 mpiexec.1 mpif77.1 mpif90.1 mpifort.1 mpirun.1"
got=$(cd "$man1" 2>/dev/null && printf '%s\n' * | sort | tr '\n' ' ')
[[ "$got" == "$want " ]] || fail "share/man/man1 holds '$got', want '$want'"
[[ "$(readlink "$man1/mpiexec.1")" == mpirun.1 ]] || fail "mpiexec.1 is not a link to mpirun.1"
if [[ -e "$B/libmpifort_abi.la" ]]; then
  [[ "$(readlink "$man1/mpif90.1")" == mpifort.1 && "$(readlink "$man1/mpif77.1")" == mpifort.1 ]] ||
    fail "mpif90.1 / mpif77.1 are not links to mpifort.1"
fi
for p in ${want//.1/}; do
  cmp -s "$man1/$p.1" "$B/man/$p.1" || [[ -L "$man1/$p.1" ]] || fail "installed $p.1 differs from the build tree's"
  text=$(MANPATH="$tmp/root$prefix/share/man" render "$p") || fail "man $p with MANPATH=<DESTDIR>/share/man failed"
  [[ -n "$text" && ! -s "$tmp/warnings" ]] || fail "man $p: $(cat "$tmp/warnings")"
done
[[ "$(MANPATH="$tmp/root$prefix/share/man" render mpiexec | grep -c -- '--bind-to')" -ge 1 ]] || fail "man mpiexec is not mpirun's page"
echo "man OK: installed $want"
