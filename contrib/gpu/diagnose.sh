#!/bin/bash
# Where a device message's time goes, in one call: the GPU diagnosis that
# decides what the ~150 us device round trip between two ranks sharing one
# H200 is (docs/cuda.md, "GPU diagnosis"). Three parts, each written to a
# file of its own, then a summary:
#   floor.txt  the driver alone, no MPI (gpu_pingpong): two processes taking
#              turns at one copy on one GPU (D2D through IPC at 8 B and
#              4 MiB), the same with one context doing the work, the same in
#              one process with one context, H2D and D2H from 8 B to 64 KiB
#              (one process, and two taking turns), waits and context flags
#   axon.txt   Axon's device latency (pt2pt_latency -d cuda D D): default;
#              AXON_WAIT_SPIN=0 and a large spin; --bind-to none;
#              AXON_ACCEL_COPY_WAIT=event; IPC off; staging at every size
#   shim.txt   the default and event-wait runs again under
#              cuda_timing_shim.so (AXON_ACCEL_CUDA_LIBRARY): per driver entry
#              point calls, total and maximum time, and the time inside
#              driver calls against the time between them, per rank
#   summary.txt  medians of all of the above; also printed
#
#   diagnose.sh [--dry-run] [--build BUILDDIR] [--bench DIR] [--mpirun PATH] [--out DIR]
#     --build   Axon build tree (default: $AXON_BUILDDIR)
#     --bench   gpu_pingpong, pt2pt_latency and cuda_timing_shim.so (made by
#               bundle.sh); default: built into OUT/bench from this tree
#     --mpirun  default: BUILDDIR/_install/bin/mpirun, else BUILDDIR/src/launcher/mpirun
#     --out     default: $OUT (the device tool's output folder), else ./gpu-diagnosis
#     --dry-run the fake driver (BUILDDIR/test/accel/.libs/libfakecuda.so) for
#               every CUDA call, few rounds: checks the script end to end
# Should take about 3 minutes on an H200 (estimated; each run is cut at
# 45 s); a dry run takes seconds. Exit status: 0 when every step ran, 1 otherwise.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
dry=0 build=${AXON_BUILDDIR:-} bench= mpirun= out=${OUT:-}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --build) build=$2; shift ;;
    --bench) bench=$2; shift ;;
    --mpirun) mpirun=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "diagnose.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$build" && -d "$build" ]] || { echo "diagnose.sh: --build BUILDDIR (or AXON_BUILDDIR) is needed" >&2; exit 2; }
build=$(cd "$build" && pwd)
out=${out:-$PWD/gpu-diagnosis}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -z "$mpirun" ]]; then
  mpirun="$build/_install/bin/mpirun"
  [[ -x "$mpirun" ]] || mpirun="$build/src/launcher/mpirun"
fi

if [[ $dry -eq 1 ]]; then
  fake="$build/test/accel/.libs/libfakecuda.so"
  [[ -f "$fake" ]] || { echo "skip: fake CUDA driver not built (configure found no cuda.h)"; exit 77; }
  export BENCH_CUDA_LIBRARY="$fake" AXON_ACCEL_CUDA_LIBRARY="$fake"
  rounds=20 sizes=1:4K cap=0.02 limit=30 big=64K
else
  rounds=2000 sizes=1:64K cap=0.2 limit=45 big=4M
fi
driver=${AXON_ACCEL_CUDA_LIBRARY:-libcuda.so.1}

# The programs: from the bundle, or built here against this tree.
if [[ -z "$bench" ]]; then
  bench="$out/bench"
  mkdir -p "$bench"
  cat >"$bench/mpicc" <<EOF
#!/bin/sh
exec cc -I$src/include "\$@" -L$build/.libs -Wl,-rpath,$build/.libs -lmpi_abi
EOF
  chmod +x "$bench/mpicc"
  make -s -C "$src/contrib/bench" MPICC="$bench/mpicc" OUT="$bench" "$bench/gpu_pingpong" "$bench/pt2pt_latency" \
    >"$bench/make.log" 2>&1 || { echo "diagnose.sh: building the benchmarks failed:"; cat "$bench/make.log"; exit 1; }
  cuda_inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
  if [[ -f "$cuda_inc/cuda.h" ]]; then
    cc -O2 -shared -fPIC -I"$cuda_inc" -o "$bench/cuda_timing_shim.so" "$src/contrib/gpu/cuda_timing_shim.c" -ldl ||
      { echo "diagnose.sh: building the timing shim failed"; exit 1; }
  fi
fi
bench=$(cd "$bench" && pwd)

failed=0
# run FILE LABEL [VAR=VALUE...] COMMAND...: appends to FILE, at most $limit s.
run() {
  local file=$1 label=$2; shift 2
  echo "=== $label" >>"$out/$file"
  timeout -k 5 "$limit" env "$@" >>"$out/$file" 2>&1
  local rc=$?
  echo "=== rc $rc" >>"$out/$file"
  [[ $rc -eq 0 ]] || { failed=1; echo "  (failed: $label, exit $rc)"; }
}

: >"$out/floor.txt"; : >"$out/axon.txt"; : >"$out/shim.txt"
{
  date -u; uname -r; echo "driver: $driver  dry run: $dry  mpirun: $mpirun"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv 2>&1
  info="$build/_install/bin/axon_info"
  [[ -x "$info" ]] || info="$build/src/tools/axon_info"
  "$info" --doctor 2>&1 | sed -n '/GPUs (CUDA)/,/GPU-NIC topology/p'
} >"$out/env.txt" 2>&1
echo "GPU diagnosis -> $out"

# 1. The floor: the driver alone.
pp="$bench/gpu_pingpong -n $rounds"
echo "floor (gpu_pingpong, no MPI) ..."
run floor.txt "two processes, D2D by IPC, 8 B" $pp -c ipc -m 8
run floor.txt "two processes, D2D by IPC, $big" $pp -c ipc -m $big
run floor.txt "two processes, only one copies (one context busy), 8 B" $pp -c ipc -o -m 8
run floor.txt "one process, one context, D2D, 8 B" $pp -1 -c dtod -m 8
run floor.txt "one process, one context, D2D, $big" $pp -1 -c dtod -m $big
run floor.txt "one process, H2D 8 B - 64 KiB" $pp -1 -c htod -m 8:64K
run floor.txt "one process, D2H 8 B - 64 KiB" $pp -1 -c dtoh -m 8:64K
run floor.txt "two processes, H2D 8 B - 64 KiB" $pp -c htod -m 8:64K
run floor.txt "two processes, D2H 8 B - 64 KiB" $pp -c dtoh -m 8:64K
for w in event legacy; do run floor.txt "two processes, D2D by IPC, 8 B, wait $w" $pp -c ipc -w $w -m 8; done
for f in spin yield blocking; do run floor.txt "two processes, D2D by IPC, 8 B, context $f" $pp -c ipc -s $f -m 8; done
run floor.txt "two processes, D2D by IPC, 8 B, bound to cpu 0,1" $pp -c ipc -b -m 8

# 2. Axon, one knob at a time.
lat="$bench/pt2pt_latency -m $sizes -t $cap -d cuda D D"
echo "Axon (pt2pt_latency -d cuda D D) ..."
run axon.txt "default" "$mpirun" -np 2 $lat
run axon.txt "AXON_WAIT_SPIN=0" AXON_WAIT_SPIN=0 "$mpirun" -np 2 $lat
run axon.txt "AXON_WAIT_SPIN=1000000" AXON_WAIT_SPIN=1000000 "$mpirun" -np 2 $lat
run axon.txt "--bind-to none" "$mpirun" --bind-to none -np 2 $lat
run axon.txt "AXON_ACCEL_COPY_WAIT=event" AXON_ACCEL_COPY_WAIT=event "$mpirun" -np 2 $lat
run axon.txt "AXON_ACCEL_IPC=0" AXON_ACCEL_IPC=0 "$mpirun" -np 2 $lat
run axon.txt "AXON_ACCEL_IPC=0 AXON_ACCEL_EAGER_LIMIT=0 (staging at every size)" AXON_ACCEL_IPC=0 \
  AXON_ACCEL_EAGER_LIMIT=0 "$mpirun" -np 2 $lat

# 3. The driver calls, timed.
if [[ -f "$bench/cuda_timing_shim.so" ]]; then
  echo "driver calls (cuda_timing_shim) ..."
  for wait in sync event; do
    d="$out/shim-$wait"
    rm -rf "$d"; mkdir -p "$d"
    run shim.txt "default latency, AXON_ACCEL_COPY_WAIT=$wait, under the shim" AXON_ACCEL_COPY_WAIT=$wait \
      AXON_ACCEL_CUDA_LIBRARY="$bench/cuda_timing_shim.so" CUDA_TIMING_SHIM_LIBRARY="$driver" \
      CUDA_TIMING_SHIM_OUT="$d" "$mpirun" -np 2 $lat
    for f in "$d"/shim.*.txt; do [[ -f "$f" ]] && { echo "--- $wait: $(basename "$f")"; cat "$f"; }; done >>"$out/shim.txt"
  done
else
  echo "=== no cuda_timing_shim.so (no cuda.h to build it)" >>"$out/shim.txt"
fi

# 4. The summary.
{
  echo "GPU diagnosis summary ($(date -u +%F\ %T) UTC, driver $driver, dry run $dry)"
  echo "-- the floor, no MPI: time per turn (one copy and its wait; two processes take turns)"
  awk '/^=== rc/ {if (n == 1) printf "  %-58s %9s us\n", label, one; else if (n > 1) printf "  %s (bytes:us)\n   %s\n", label, all
                  n=0; next}
       /^=== / {label=substr($0,5); n=0; all=""; next}
       /per turn: median/ {for (i=1;i<=NF;i++) {if ($i ~ /^bytes=/) b=substr($i,7); if ($i=="median") m=$(i+1)}
                           one=m; all=all " " b ":" m; n++}' "$out/floor.txt"
  echo "-- Axon, one-way latency in us (median) at 8 B, 4 KiB and the largest size"
  awk '/^=== rc/ {if (label != "") printf "  %-58s %9s %9s %9s\n", label, a, b, c; label=""; next}
       /^=== / {label=substr($0,5); a=b=c="-"; last=""; next}
       /^[0-9]+ +[0-9.]+ / {if ($1=="8") a=$2; if ($1=="4096") b=$2; c=$2}' "$out/axon.txt"
  echo "-- driver calls under the shim: the three costliest per rank, and inside/between calls"
  awk '/^--- / {who=$2; n=0; next}
       /^# cuda_timing_shim:/ {who=who " rank " $NF; next}
       /^  cu/ {if (n++ < 3) printf "  %-22s %-30s %8s calls %10s ms  max %9s us\n", who, $1, $2, $3, $5}
       /^# inside driver calls/ {sub(/^# /, ""); printf "  %-22s %s\n", who, $0}' "$out/shim.txt"
  [[ $failed -eq 0 ]] && echo "-- every step ran" || echo "-- some steps FAILED: see the files"
} >"$out/summary.txt"
cat "$out/summary.txt"
exit $failed
