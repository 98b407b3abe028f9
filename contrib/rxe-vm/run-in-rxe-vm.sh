#!/bin/bash
# run-in-rxe-vm.sh 'COMMAND'
#
# Runs COMMAND (a /bin/sh command line) as root inside a qemu VM that has a
# soft-RoCE device rxe0 (rdma_rxe on the VM's virtio NIC) and returns its exit
# status. The guest's root file system is the host's own / (read-only, with a
# throw-away tmpfs overlay), so programs built on the host run unchanged; the
# directories in AXON_RXE_VM_RW (colon separated; default: the current
# directory) are shared read-write at the same paths. COMMAND runs in the
# caller's current directory; its stdout and stderr arrive on our stdout.
#
# Exit status: COMMAND's; 124 timeout; 125 the VM could not be prepared or
# did not run the command. qemu never outlives this script.
#
# Environment (all optional):
#   AXON_RXE_VM_TIMEOUT  seconds before the VM is killed (default 600)
#   AXON_RXE_VM_MEM      guest memory (default 2G)
#   AXON_RXE_VM_SMP      guest CPUs (default: host CPUs, at most 4)
#   AXON_RXE_VM_ACCEL    auto | tcg | kvm (auto: kvm only with vmx/svm, see docs/verbs.md)
#   AXON_RXE_VM_RW       read-write directories (default $PWD; "" for none)
#   AXON_RXE_VM_ENV      names of host environment variables to pass to COMMAND
#                        (AXON_* variables are always passed)
#   AXON_RXE_VM_MTU      MTU of the guest NIC (rxe's active MTU follows it)
#   AXON_RXE_VM_NICS     number of guest NICs (default 1): NIC i (eth<i>, 10.0.<2+i>.15/24)
#                        gets soft-RoCE device rxe<i>, e.g. 2 for multi-rail tests
#   AXON_RXE_VM_CACHE    kernel/initramfs cache (see setup.sh)
#   AXON_RXE_VM_QUIET=1  no progress lines on stderr
set -u
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
if [ $# -ne 1 ]; then sed -n '2,29p' "$0" >&2; exit 2; fi
note() { [ "${AXON_RXE_VM_QUIET:-0}" = 1 ] || echo "[rxe-vm] $*" >&2; }

"$HERE/setup.sh" --no-install >&2 || "$HERE/setup.sh" >&2 || { note "cannot prepare the VM"; exit 125; }
CACHE=$("$HERE/setup.sh" --print-cache)
KV=$(cat "$CACHE/kversion")
KERNEL=$CACHE/vmlinux
[ -f "$KERNEL" ] || KERNEL=$CACHE/vmlinuz

ACCEL=${AXON_RXE_VM_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  # /dev/kvm alone is not enough: on hosts that are themselves paravirtualised
  # guests (no vmx/svm flag) a stock kernel hangs early under -accel kvm.
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
fi
SMP=${AXON_RXE_VM_SMP:-$(nproc)}
[ "$SMP" -gt 4 ] && SMP=4
TIMEOUT=${AXON_RXE_VM_TIMEOUT:-600}

IO=$(mktemp -d "${TMPDIR:-/tmp}/axon-rxe-vm.XXXXXX") || exit 125
QPID=""
TPID=""
# qemu writes its pid file; killing `timeout` alone (with -KILL it cannot
# forward the signal) would leave qemu running, so qemu itself is killed.
cleanup() {
  [ -s "$IO/qemu.pid" ] && kill -KILL "$(cat "$IO/qemu.pid")" 2>/dev/null
  [ -n "$QPID" ] && kill -KILL "$QPID" 2>/dev/null
  [ -n "$TPID" ] && kill "$TPID" 2>/dev/null
  rm -rf "$IO"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

NICS=${AXON_RXE_VM_NICS:-1}
: > "$IO/cmd"
# guest-init.sh sets up eth0/rxe0 (and loads what rxe needs); further NICs
# are set up here, before the command, so the cached initramfs stays valid.
for i in $(seq 1 $((NICS - 1))); do
  cat >> "$IO/cmd" <<EOF
ip link set eth$i up && ip addr add 10.0.$((2 + i)).15/24 dev eth$i ${AXON_RXE_VM_MTU:+&& ip link set eth$i mtu $AXON_RXE_VM_MTU} &&
  rdma link add rxe$i type rxe netdev eth$i || { echo "rxe-vm: cannot set up eth$i/rxe$i" >&2; exit 125; }
EOF
done
printf '%s\n' "$1" >> "$IO/cmd"
pwd > "$IO/cwd"
: > "$IO/out"
: > "$IO/env"
for v in $(compgen -e | grep '^AXON_' | grep -v '^AXON_RXE_VM_') ${AXON_RXE_VM_ENV:-}; do
  [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}" >> "$IO/env"
done
: > "$IO/rwdirs"

args=(-nographic -no-reboot -nodefaults -smp "$SMP" -m "${AXON_RXE_VM_MEM:-2G}" -pidfile "$IO/qemu.pid"
      -serial "file:$IO/console"
      -kernel "$KERNEL" -initrd "$CACHE/initrd.img"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
      -virtfs "local,path=$IO,mount_tag=axonio,security_model=none"
      -netdev user,id=net0 -device "virtio-net-pci,netdev=net0,romfile=")
for i in $(seq 1 $((NICS - 1))); do
  args+=(-netdev "user,id=net$i,net=10.0.$((2 + i)).0/24" -device "virtio-net-pci,netdev=net$i,romfile=")
done
if [ "$ACCEL" = kvm ]; then args+=(-accel kvm -cpu host); else args+=(-accel tcg,thread=multi -cpu max); fi
n=0
IFS=: read -r -a rw <<< "${AXON_RXE_VM_RW-$PWD}"
for d in "${rw[@]}"; do
  [ -n "$d" ] && [ -d "$d" ] || continue
  d=$(readlink -f "$d")
  args+=(-virtfs "local,path=$d,mount_tag=rw$n,security_model=none,multidevs=remap")
  echo "$d" >> "$IO/rwdirs"
  n=$((n+1))
done
append="console=ttyS0 panic=-1 quiet loglevel=3 axon.moddir=$CACHE/kernel/lib/modules/$KV"
[ -n "${AXON_RXE_VM_MTU:-}" ] && append+=" axon.mtu=$AXON_RXE_VM_MTU"

start=$(date +%s.%N)
note "booting Linux $KV ($ACCEL, $SMP CPUs), timeout ${TIMEOUT}s"
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" -append "$append" > "$IO/qemu.log" 2>&1 &
QPID=$!
tail -n +1 -s 0.2 -f --pid=$QPID "$IO/out" &
TPID=$!
wait $QPID
qrc=$?
QPID=""
wait $TPID 2>/dev/null
TPID=""
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ -s "$IO/rc" ]; then
  rc=$(cat "$IO/rc")
  ready=$(grep -o 'axon-rxe-vm [0-9.]*s\] ready' "$IO/console" | grep -o '[0-9.]*s' | head -1)
  note "guest ready after ${ready:-?}, total ${wall}s, exit $rc"
  if [ "$rc" = 125 ]; then tail -30 "$IO/console" >&2; fi
  exit "$rc"
fi
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
  note "timeout after ${TIMEOUT}s"
  rc=124
else
  note "the VM stopped without running the command (qemu exit $qrc)"
  rc=125
fi
tail -15 "$IO/qemu.log" >&2
tail -30 "$IO/console" >&2
exit $rc
