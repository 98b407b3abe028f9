#!/bin/bash
# bench.sh BUILD_DIR [RUNS]: latency and bandwidth over soft-RoCE (rxe0) in the VM:
#   perftest   ib_send_lat, ib_write_bw (the raw verbs floor of this device)
#   Axon       contrib/bench pt2pt_latency / pt2pt_bw with AXON_BTL=verbs,self
#   Open MPI   the same programs with pml ucx over rxe0 (when mpicc.openmpi is there)
# Each benchmark runs RUNS times (default 3), alternating the MPIs; the table
# printed at the end holds the medians. BUILD_DIR is a configured and built
# Axon tree (its libmpi_abi is used in place).
# bench.sh BUILD_DIR RUNS large: 16-64 MiB one-way times, send buffer
# registered whole against exposed in segments (docs/verbs.md).
# bench.sh BUILD_DIR RUNS rcache: rendezvous bandwidth 1-8 MiB with the
# registration cache on (AXON_RCACHE=1) and off (=0).
#
# Soft-RoCE under qemu TCG is emulated end to end: absolute numbers say
# nothing about real hardware; the ratios between rows are what to read.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
B=$(cd "${1:?usage: bench.sh BUILD_DIR [RUNS]}" && pwd)
RUNS=${2:-3}
OUT=$B/rxe-bench
mkdir -p "$OUT"
# The median of the numbers on stdin; cell FILE_PREFIX SIZE: the median of
# SIZE's second column over the runs' files.
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2); else print "-"}'; }
cell() { for f in "$OUT/$1".[0-9]*; do [ -f "$f" ] && awk -v s="$2" '$1 == s {print $2}' "$f"; done | median; }
LIB=$B/.libs
if [ "${3:-}" = large ]; then
  # bench.sh BUILD_DIR RUNS large: one-way time of 16 and 64 MiB
  # messages (pt2pt_latency, RGET) with the send buffer registered whole
  # before the RTS (AXON_BTL_VERBS_EXPOSE_SEGMENT=0) against exposed in
  # segments (the default), alternating, medians over the runs.
  cc -O2 -I"$SRC/include" -o "$OUT/axon_lat" "$SRC/contrib/bench/pt2pt_latency.c" "$SRC/contrib/bench/bench_common.c" \
    -L"$LIB" -Wl,-rpath,"$LIB" -lmpi_abi -lm || exit 1
  cat > "$OUT/guest_large.sh" <<EOF
#!/bin/sh
cat /proc/loadavg
for r in \$(seq $RUNS); do
  for seg in 0 4194304; do
    for size in 16M 64M; do
      AXON_BTL=verbs,self AXON_BTL_VERBS_EXPOSE_SEGMENT=\$seg $B/src/launcher/mpirun -np 2 $OUT/axon_lat -m \$size:\$size \
        -x 1 -i 5 >> $OUT/large_seg\$seg.\$r 2>&1
    done
  done
done
cat /proc/loadavg
EOF
  rm -f "$OUT"/large_seg*.[0-9]*
  AXON_RXE_VM_RW=$B AXON_RXE_VM_TIMEOUT=${AXON_RXE_VM_TIMEOUT:-1800} "$HERE/run-in-rxe-vm.sh" "sh $OUT/guest_large.sh" || exit $?
  echo "| size (B) | whole buffer registered first (us) | exposed in 4 MiB segments (us) |"
  echo "|---:|---:|---:|"
  for s in 16777216 67108864; do echo "| $s | $(cell large_seg0 $s) | $(cell large_seg4194304 $s) |"; done
  exit 0
fi
if [ "${3:-}" = rcache ]; then
  # bench.sh BUILD_DIR RUNS rcache: pt2pt_bw (the same buffers sent again and
  # again, RGET, window 4) for 1-8 MiB with AXON_RCACHE=1 (each buffer
  # registered once) against AXON_RCACHE=0 (the receiver's pieces and the
  # sender's buffer registered and deregistered for every message),
  # alternating, medians over the runs. Each size's timed part is capped
  # (RCACHE_SECONDS, default 6 s) so a run stays within minutes under TCG.
  cc -O2 -I"$SRC/include" -o "$OUT/axon_bw" "$SRC/contrib/bench/pt2pt_bw.c" "$SRC/contrib/bench/bandwidth.c" \
    "$SRC/contrib/bench/bench_common.c" -L"$LIB" -Wl,-rpath,"$LIB" -lmpi_abi -lm || exit 1
  cat > "$OUT/guest_rcache.sh" <<EOF
#!/bin/sh
cat /proc/loadavg
for r in \$(seq $RUNS); do
  for on in 1 0; do
    AXON_BTL=verbs,self AXON_RCACHE=\$on $B/src/launcher/mpirun -np 2 $OUT/axon_bw -m 1M:8M -w 4 -r 3 \
      -t ${RCACHE_SECONDS:-6} > $OUT/rcache_on\$on.\$r 2>&1
  done
done
cat /proc/loadavg
EOF
  rm -f "$OUT"/rcache_on*.[0-9]*
  AXON_RXE_VM_RW=$B AXON_RXE_VM_TIMEOUT=${AXON_RXE_VM_TIMEOUT:-1800} "$HERE/run-in-rxe-vm.sh" "sh $OUT/guest_rcache.sh" || exit $?
  echo "| size (B) | AXON_RCACHE=1 (MB/s) | AXON_RCACHE=0 (MB/s) |"
  echo "|---:|---:|---:|"
  for s in 1048576 2097152 4194304 8388608; do echo "| $s | $(cell rcache_on1 $s) | $(cell rcache_on0 $s) |"; done
  exit 0
fi
if [ "${3:-}" = rma ]; then
  # bench.sh BUILD_DIR RUNS rma: one-sided latency (contrib/bench/rma_latency,
  # Win_allocate, lock_all + flush after each operation) between 2 ranks
  # through rxe0: Axon by active messages (AXON_OSC_PATH=am) and by RDMA
  # (AXON_OSC_PATH=rdma: WRITE / READ, NIC atomics), Open MPI with osc ucx.
  ITERS=${RMA_ITERS:-300}
  cc -O2 -I"$SRC/include" -o "$OUT/axon_rma" "$SRC/contrib/bench/rma_latency.c" -L"$LIB" -Wl,-rpath,"$LIB" \
    -lmpi_abi || exit 1
  command -v mpicc.openmpi >/dev/null && mpicc.openmpi -O2 -o "$OUT/ompi_rma" "$SRC/contrib/bench/rma_latency.c"
  OPS="put get accumulate fetch_and_op compare_and_swap"
  cat > "$OUT/guest_rma.sh" <<EOF
#!/bin/sh
B=$B; OUT=$OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
UCX="-x UCX_NET_DEVICES=rxe0:1 -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_UD_VERBS_ETH_DGID_CHECK=n -x UCX_WARN_UNUSED_ENV_VARS=n"
for r in \$(seq $RUNS); do
  for op in $OPS; do
    AXON_BTL=verbs,self AXON_OSC_PATH=am \$B/src/launcher/mpirun -np 2 \$OUT/axon_rma allocate \$op $ITERS > \$OUT/rma_am_\$op.\$r 2>&1
    AXON_BTL=verbs,self AXON_OSC_PATH=rdma \$B/src/launcher/mpirun -np 2 \$OUT/axon_rma allocate \$op $ITERS > \$OUT/rma_rdma_\$op.\$r 2>&1
    if [ -x \$OUT/ompi_rma ]; then
      timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca btl self --mca osc ucx \$UCX \$OUT/ompi_rma allocate \$op $ITERS > \$OUT/rma_ompi_\$op.\$r 2>&1
    fi
  done
done
EOF
  rm -f "$OUT"/rma_*.[0-9]*
  AXON_RXE_VM_RW=$B AXON_RXE_VM_TIMEOUT=${AXON_RXE_VM_TIMEOUT:-1800} "$HERE/run-in-rxe-vm.sh" "sh $OUT/guest_rma.sh" || exit $?
  echo "| operation | bytes | Axon, active messages (us) | Axon, RDMA (us) | Open MPI + UCX (us) |"
  echo "|---|---:|---:|---:|---:|"
  for op in $OPS; do
    sizes=8; case $op in put|get) sizes="8 512 32768";; esac
    for s in $sizes; do
      echo "| $op | $s | $(cell rma_am_$op "$s") | $(cell rma_rdma_$op "$s") | $(cell rma_ompi_$op "$s") |"
    done
  done
  exit 0
fi
cc -O2 -I"$SRC/include" -o "$OUT/axon_lat" "$SRC/contrib/bench/pt2pt_latency.c" "$SRC/contrib/bench/bench_common.c" \
  -L"$LIB" -Wl,-rpath,"$LIB" -lmpi_abi -lm || exit 1
cc -O2 -I"$SRC/include" -o "$OUT/axon_bw" "$SRC/contrib/bench/pt2pt_bw.c" "$SRC/contrib/bench/bandwidth.c" \
  "$SRC/contrib/bench/bench_common.c" -L"$LIB" -Wl,-rpath,"$LIB" -lmpi_abi -lm || exit 1
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$OUT/ompi_lat" "$SRC/contrib/bench/pt2pt_latency.c" "$SRC/contrib/bench/bench_common.c" -lm
  mpicc.openmpi -O2 -o "$OUT/ompi_bw" "$SRC/contrib/bench/pt2pt_bw.c" "$SRC/contrib/bench/bandwidth.c" \
    "$SRC/contrib/bench/bench_common.c" -lm
fi
cat > "$OUT/guest.sh" <<EOF
#!/bin/sh
# runs inside the VM
B=$B; OUT=$OUT; RUNS=$RUNS
GID=\$(for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
  case \$(cat \$g) in 0000:0000:0000:0000:0000:ffff:*) basename \$g; break;; esac; done)
perf() {  # perf NAME TOOL ARGS: server in the background, client when it listens
  \$2 -d rxe0 -x \$GID \$3 > \$OUT/\$1.server 2>&1 &
  spid=\$!
  for i in \$(seq 100); do ss -ltn 2>/dev/null | grep -q ':18515 ' && break; sleep 0.2; done
  \$2 -d rxe0 -x \$GID \$3 10.0.2.15 > \$OUT/\$1.client 2>&1
  wait \$spid
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
UCX="-x UCX_NET_DEVICES=rxe0:1 -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_UD_VERBS_ETH_DGID_CHECK=n -x UCX_WARN_UNUSED_ENV_VARS=n"
for r in \$(seq \$RUNS); do
  perf send_lat.\$r ib_send_lat "-s 8 -n 2000"
  perf write_bw.\$r ib_write_bw "-s 1048576 -n 200"
  AXON_BTL=verbs,self \$B/src/launcher/mpirun -np 2 \$OUT/axon_lat -m 0:64K > \$OUT/axon_lat.\$r 2>&1
  AXON_BTL=verbs,self \$B/src/launcher/mpirun -np 2 \$OUT/axon_bw -m 1K:1M -w 16 -r 5 > \$OUT/axon_bw.\$r 2>&1
  AXON_BTL=verbs,self AXON_BTL_VERBS_RNDV=put \$B/src/launcher/mpirun -np 2 \$OUT/axon_bw -m 1K:1M -w 16 -r 5 > \$OUT/axon_bwput.\$r 2>&1
  if [ -x \$OUT/ompi_lat ]; then
    mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca btl self --mca osc ^ucx \$UCX \$OUT/ompi_lat -m 0:64K > \$OUT/ompi_lat.\$r 2>&1
    mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca btl self --mca osc ^ucx \$UCX \$OUT/ompi_bw -m 1K:1M -w 16 -r 5 > \$OUT/ompi_bw.\$r 2>&1
  fi
done
EOF
rm -f "$OUT"/*.[0-9] "$OUT"/*.client "$OUT"/*.server
AXON_RXE_VM_RW=$B AXON_RXE_VM_TIMEOUT=${AXON_RXE_VM_TIMEOUT:-1200} "$HERE/run-in-rxe-vm.sh" "sh $OUT/guest.sh" || exit $?

# perftest: the typical latency (usec) and average bandwidth (MB/s) columns of the result line
lat=$(for f in "$OUT"/send_lat.*.client; do awk '$1 == 8 {print $5}' "$f"; done | median)
bw=$(for f in "$OUT"/write_bw.*.client; do awk '$1 == 1048576 {print $4}' "$f"; done | median)
echo "perftest over rxe0: ib_send_lat 8 B typical ${lat} us; ib_write_bw 1 MiB average ${bw} MB/s"
# contrib/bench prints "size value" rows after a header: median per size across runs
table() {  # table PREFIX
  for f in "$OUT/$1".[0-9]*; do [ -f "$f" ] && grep -E '^ *[0-9]+ +[0-9.]+' "$f"; done |
    awk '{print $1, $2}' | sort -n -k1,1 -k2,2g |
    awk '{a[$1] = a[$1] " " $2} END {for (s in a) print s, a[s]}' | sort -n |
    while read -r size vals; do echo "$size $(echo $vals | tr ' ' '\n' | median)"; done
}
echo
echo "| size (B) | Axon verbs latency (us) | Open MPI+UCX latency (us) |"
echo "|---:|---:|---:|"
join -a1 -e - -o 0,1.2,2.2 <(table axon_lat) <(table ompi_lat) | sed 's/ / | /g; s/^/| /; s/$/ |/'
echo
echo "| size (B) | Axon verbs bandwidth, RGET (MB/s) | Axon, RPUT (MB/s) | Open MPI+UCX bandwidth (MB/s) |"
echo "|---:|---:|---:|---:|"
join -a1 -e - -o 0,1.2,1.3,2.2 <(join -a1 -e - -o 0,1.2,2.2 <(table axon_bw) <(table axon_bwput)) <(table ompi_bw) |
  sed 's/ / | /g; s/^/| /; s/$/ |/'
