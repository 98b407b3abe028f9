#!/bin/bash
# contrib/gpu/diagnose.sh (the GPU diagnosis that contrib/gpu/check.sh diag
# runs on a GPU machine) end to end against the fake driver: every step
# runs, every file and every part of the summary is there.
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
[[ -f "$AXON_BUILDDIR/test/accel/.libs/libfakecuda.so" ]] || { echo "skip: fake CUDA driver not built"; exit 77; }
# It builds the benchmarks against the build tree (a bundle on a GPU machine has no compiler).
command -v cc >/dev/null && command -v make >/dev/null || { echo "skip: no cc/make to build the benchmarks"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bash "$AXON_SRCDIR/contrib/gpu/diagnose.sh" --dry-run --build "$AXON_BUILDDIR" --out "$out"
rc=$?
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: diagnose.sh --dry-run exit $rc"; fail=1; }
for f in env.txt floor.txt axon.txt shim.txt summary.txt; do
  [[ -s "$out/$f" ]] || { echo "FAIL: no $f"; fail=1; }
done
sum="$out/summary.txt"
want() { grep -qE -- "$1" "$sum" || { echo "FAIL: the summary lacks /$1/"; fail=1; }; }
want '^  two processes, D2D by IPC, 8 B +[0-9.]+ us$'
want '^  one process, one context, D2D, 8 B +[0-9.]+ us$'
want '^  one process, H2D 8 B - 64 KiB \(bytes:us\)$'
want '^ +8:[0-9.]+ .* 65536:[0-9.]+$'
for v in 'default' 'AXON_WAIT_SPIN=0' 'AXON_WAIT_SPIN=1000000' '--bind-to none' 'AXON_ACCEL_COPY_WAIT=event' 'AXON_ACCEL_IPC=0'; do
  want "^  $v +[0-9.]+ +[0-9.]+ +[0-9.]+$"
done
want '^  sync: rank 0 .*inside driver calls: [0-9.]+ ms of [0-9.]+ ms'
grep -qE '^  cuStreamSynchronize +[0-9]+ ' "$out/shim.txt" || { echo "FAIL: the shim timed no cuStreamSynchronize"; fail=1; }
want '^  event: rank 1 .*inside driver calls: [0-9.]+ ms of [0-9.]+ ms'
want '^-- every step ran$'
[[ $(ls "$out"/shim-sync/shim.*.txt 2>/dev/null | wc -l) -eq 2 ]] || { echo "FAIL: not one shim report per rank"; fail=1; }
[[ $fail -eq 0 ]] && echo "diagnose dry run: ok"
exit $fail
