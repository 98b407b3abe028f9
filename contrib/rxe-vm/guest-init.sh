#!/bin/busybox sh
# /init of the soft-RoCE test VM (runs from the busybox initramfs that
# setup.sh builds). It mounts the host's root file system read-only over
# virtio-9p with a tmpfs overlay on top (the guest may write anywhere, nothing
# leaks back), mounts the read-write shares the host asked for, loads
# rdma_rxe, creates rxe0 on the NIC and runs the command chrooted into that
# root. The command, its cwd, environment and the rw mount points come from
# the "axonio" share; the command's output and exit status go back there.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "[axon-rxe-vm $(cut -d' ' -f1 /proc/uptime)s] $*" > /dev/ttyS0; }
halt_now() { sync; echo o > /proc/sysrq-trigger; sleep 30; }
fatal() { say "FATAL: $*"; echo 125 > /io/rc 2>/dev/null; halt_now; }
karg() { for w in $(cat /proc/cmdline); do case "$w" in "$1="*) echo "${w#*=}"; return;; esac; done; }

NETDEV=$(karg axon.netdev); NETDEV=${NETDEV:-eth0}
ADDR=$(karg axon.ip); ADDR=${ADDR:-10.0.2.15/24}
MTU=$(karg axon.mtu)
MODDIR=$(karg axon.moddir)
KV=$(uname -r)

for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache \
         9pnet 9pnet_virtio 9p overlay; do
  [ -f /mods/$m.ko ] && { insmod /mods/$m.ko 2>/dev/null || fatal "insmod $m"; }
done

mkdir -p /host /rw /root /io
P9="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o $P9,ro,cache=loose hostroot /host || fatal "cannot mount the host root (9p)"
mount -t 9p -o $P9 axonio /io || fatal "cannot mount the io share"
mount -t tmpfs -o size=50% tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /root || fatal "overlay"

# The guest kernel's modules are the extracted Debian package in the host's cache.
mkdir -p /lib/modules/$KV
mount --bind "/root$MODDIR" /lib/modules/$KV || fatal "no modules at $MODDIR"
# rxe computes its ICRC through the crypto API: "crc32" must be loaded first
# (without it `rdma link add` fails with ENOENT).
for m in virtio_net dummy crc32_generic crc32-pclmul rdma_rxe ib_uverbs rdma_ucm ib_umad; do
  modprobe $m 2>/dev/null || say "modprobe $m failed"
done

for fs in proc:proc sysfs:sys devtmpfs:dev; do mount -t "${fs%%:*}" "${fs%%:*}" "/root/${fs#*:}"; done
mkdir -p /root/dev/pts /root/dev/shm
mount -t devpts devpts /root/dev/pts
mount -t tmpfs tmpfs /root/dev/shm
mount -t tmpfs tmpfs /root/tmp
mount -t tmpfs tmpfs /root/run
mkdir -p "/root/lib/modules/$KV" && mount --bind /lib/modules/$KV "/root/lib/modules/$KV"
mkdir -p /root/axonio && mount --bind /io /root/axonio
n=0
while read -r dir; do
  [ -n "$dir" ] || continue
  mkdir -p "/root$dir"
  mount -t 9p -o $P9 rw$n "/root$dir" || fatal "cannot mount rw share $n at $dir"
  n=$((n+1))
done < /io/rwdirs

hostname axonvm
printf '127.0.0.1 localhost\n%s axonvm\n' "${ADDR%/*}" > /root/etc/hosts
ip link set lo up
if [ "$NETDEV" != none ]; then
  [ "${NETDEV#dummy}" != "$NETDEV" ] && ip link add "$NETDEV" type dummy
  ip link set "$NETDEV" up || fatal "no network device $NETDEV"
  [ -n "$MTU" ] && ip link set "$NETDEV" mtu "$MTU"
  ip addr add "$ADDR" dev "$NETDEV"
  chroot /root rdma link add rxe0 type rxe netdev "$NETDEV" || fatal "rdma link add rxe0 failed"
fi
say "ready"

ulimit -l unlimited
ulimit -n 65536
chroot /root /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/sh -c '. /axonio/env; cd "$(cat /axonio/cwd)" 2>/dev/null || cd /; exec /bin/sh /axonio/cmd' \
  > /io/out 2>&1 < /dev/null
echo $? > /io/rc
say "command exited with $(cat /io/rc)"
umount /root/axonio 2>/dev/null
halt_now
