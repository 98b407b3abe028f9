#!/bin/bash
# Runs Axon's GPU checks on a machine with an NVIDIA GPU from a folder made by
# contrib/gpu/bundle.sh. Run from the source tree, as root (it links the
# build tree and PMIx's folder into place where they are missing).
#   check.sh BUNDLE OUTDIR [tests|diag|bench|all]...
# (With the device tool: OUTDIR "$OUT", whose files come back.)
#   tests  every accel_* test, the real-driver ones included  -> tests.txt
#   diag   where a device round trip's time goes (contrib/gpu/diagnose.sh):
#          gpu_pingpong without MPI (two processes taking turns at one copy,
#          one process alone, H2D/D2H sweeps, waits, context flags), Axon's
#          D D latency one knob at a time, the driver calls timed by
#          cuda_timing_shim.so    -> diag.txt (summary), diagnosis/*.txt
#   bench  the -d cuda benchmarks and the driver's own copy bandwidth, the
#          limit they are compared with                      -> bench.txt
#   all    tests, diag, bench (the default)
# Also writes OUTDIR/env.txt; the exit status is the tests'.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
b=$(cd "$1" && pwd) out=$2
shift 2
what=" ${*:-all} "
[[ "$what" == " all " ]] && what=" tests diag bench "
mkdir -p "$out"
build=$(cat "$b/builddir")
if [[ ! -e "$build" ]]; then mkdir -p "$(dirname "$build")"; ln -s "$b/tree" "$build"; fi
pmix=/usr/lib/x86_64-linux-gnu/pmix2
if [[ ! -e "$pmix" ]]; then mkdir -p "$(dirname "$pmix")"; ln -s "$b/pmix2" "$pmix"; fi
export LD_LIBRARY_PATH="$pmix/lib:$b/deb${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AXON_SRCDIR="$src" AXON_BUILDDIR="$build" AXON_TEST_TIMEOUT=${AXON_TEST_TIMEOUT:-90}
mpirun="$build/_install/bin/mpirun"

{
  date -u; uname -a; head -n 2 /etc/os-release
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  nproc
  echo "--- unresolved libraries (none expected):"
  ldd "$mpirun" "$build"/.libs/libmpi_abi.so.1 "$b"/pmix2/lib/pmix/*.so 2>&1 | grep -E 'not found|version' || true
  "$build/_install/bin/axon_info" 2>&1 | head -n 20
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

bench=$b/bench
run() {  # run LABEL [VAR=VALUE...] COMMAND...: at most 45 s
  local label=$1; shift
  echo "=== $label"
  timeout -k 5 45 env "$@" 2>&1 | grep -v -E 'pmix_mca_base_component_repository_open|dlopen error|Perhaps a missing symbol'
  echo "=== rc ${PIPESTATUS[0]}"
}

rc=0
if [[ "$what" == *" tests "* ]]; then
  bash "$src/test/run-tests.sh" '^accel_' 2>&1 | tee "$out/tests.txt"
  rc=${PIPESTATUS[0]}
  cp -r "$build/test/logs" "$out/logs" 2>/dev/null
fi

if [[ "$what" == *" diag "* ]]; then
  # contrib/gpu/diagnose.sh: the floor without MPI, Axon one knob at a time,
  # the driver calls timed; figures in OUTDIR/diagnosis, summary printed.
  bash "$src/contrib/gpu/diagnose.sh" --build "$build" --bench "$bench" --mpirun "$mpirun" \
    --out "$out/diagnosis" 2>&1 | tee "$out/diag.txt"
fi

if [[ "$what" == *" bench "* ]]; then
  {
    run "gpu_copy_bw" "$bench/gpu_copy_bw" -n 1 -m 64M
    for pl in "D D" "D H"; do
      run "latency $pl" "$mpirun" -np 2 "$bench/pt2pt_latency" -m 0:4M -t 0.2 -d cuda $pl
    done
    run "latency D D (staging)" AXON_ACCEL_IPC=0 "$mpirun" -np 2 "$bench/pt2pt_latency" -m 0:4M -t 0.2 -d cuda D D
    run "bw D D" "$mpirun" -np 2 "$bench/pt2pt_bw" -m 4K:64M -r 5 -t 0.2 -d cuda D D
    run "bw D D (staging)" AXON_ACCEL_IPC=0 "$mpirun" -np 2 "$bench/pt2pt_bw" -m 4K:64M -r 5 -t 0.2 -d cuda D D
    for np in 2 4; do
      run "allreduce np$np D D" "$mpirun" -np $np "$bench/coll_latency" -c allreduce -m 4:64M -t 0.2 -d cuda D D
    done
    run "allreduce np2 H H" "$mpirun" -np 2 "$bench/coll_latency" -c allreduce -m 4:64M -t 0.2 -d cuda H H
  } 2>&1 | tee "$out/bench.txt"
fi
exit "$rc"
