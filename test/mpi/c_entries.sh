#!/bin/bash
# The generated C entry points (src/mpi/entries/*_entries.inc, written by
# src/binding/gen_c_entries.py from src/binding/c_entries.txt and mpi_api.txt)
# are up to date, and libmpi_abi exports every function they define as
# MPI_<name> (a weak alias) and PMPI_<name>. The generator also refuses a
# family naming a function that mpi_api.txt lacks, and a form its file lacks.
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
command -v nm >/dev/null || { echo "no nm"; exit 77; }
gen="$AXON_SRCDIR/src/binding/gen_c_entries.py"
lib="$AXON_BUILDDIR/.libs/libmpi_abi.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

if ! python3 "$gen" --check; then
  echo "FAIL: src/mpi/entries is out of date with src/binding/c_entries.txt: run"
  echo "  python3 src/binding/gen_c_entries.py"
  fail=1
fi

# Every generated name, exported twice.
python3 "$gen" --list | sort -u >"$work/names" || { echo "FAIL: gen_c_entries.py --list"; exit 1; }
[[ -s "$work/names" ]] || { echo "FAIL: gen_c_entries.py --list printed no names"; exit 1; }
nm -D --defined-only "$lib" >"$work/nm" || { echo "FAIL: cannot read the symbols of $lib"; exit 1; }
awk '$2 == "W" { print $3 }' "$work/nm" | sort -u >"$work/weak"
awk '$2 == "T" { print $3 }' "$work/nm" | sort -u >"$work/text"
exported=1
missing=$(comm -23 "$work/names" "$work/weak")
if [[ -n "$missing" ]]; then
  echo "FAIL: generated but not exported as weak MPI_ symbols:" $missing
  fail=1 exported=0
fi
missing=$(sed 's/^/P/' "$work/names" | comm -23 - "$work/text")
if [[ -n "$missing" ]]; then
  echo "FAIL: generated but not exported as PMPI_ functions:" $missing
  fail=1 exported=0
fi
[[ $exported -eq 1 ]] && echo "$(wc -l <"$work/names") generated entry points, each exported as MPI_ and PMPI_"

# Errors in c_entries.txt are reported, not written.
refuses() {  # refuses WHAT EXPECTED-MESSAGE  (c_entries.txt text on stdin)
  cat >"$work/entries.txt"
  if python3 "$gen" --entries "$work/entries.txt" --outdir "$work/out" >"$work/log" 2>&1; then
    echo "FAIL: gen_c_entries.py accepted $1"
    fail=1
  elif ! grep -q "$2" "$work/log"; then
    echo "FAIL: gen_c_entries.py on $1 did not say '$2':"
    cat "$work/log"
    fail=1
  fi
}
refuses "an unknown function" "MPI_Frobnicate is not a function of mpi_api.txt" <<'EOF'
file coll MPI_
form blocking *
    form = kBlocking
MPI_Frobnicate: blocking
    do_frobnicate({fn}, comm, {form})
EOF
refuses "a form that does not exist" "MPI_Iexscan_init (form Iinit of MPI_Exscan) is not a function" <<'EOF'
file coll MPI_
form Iinit I*_init
    form = kBlocking
MPI_Exscan: Iinit
    do_allreduce({fn}, coll::Kind::exscan, sendbuf, recvbuf, count, datatype, op, comm, {form})
EOF
refuses "a form its file does not define" "file coll has no form 'I'" <<'EOF'
file coll MPI_
form blocking *
    form = kBlocking
MPI_Barrier: blocking I
    do_barrier({fn}, comm, {form})
EOF
[[ -e "$work/out" ]] && { echo "FAIL: gen_c_entries.py wrote output for a bad c_entries.txt"; fail=1; }

[[ $fail -eq 0 ]] && echo "c_entries up to date"
exit $fail
