#!/bin/sh
# Prepares the soft-RoCE test VM: host packages (when we may install them),
# Debian's stock kernel (linux-image-amd64, fetched with `apt-get download`),
# its modules with a fresh modules.dep, an uncompressed vmlinux for qemu's
# PVH direct boot, and a busybox initramfs whose /init is guest-init.sh.
#
#   contrib/rxe-vm/setup.sh            install packages if missing, build the cache
#   contrib/rxe-vm/setup.sh --no-install   only build the cache (fails if tools are missing)
#   contrib/rxe-vm/setup.sh --print-cache  print the cache directory and exit
#
# The cache lives in $AXON_RXE_VM_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/axon-rxe-vm)
# so every build tree and every `make check` reuses it. A stamp records the
# kernel version and a hash of guest-init.sh; when both match, setup does nothing.
# Exit status: 0 ready; 1 cannot prepare (the reason is printed on stderr).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AXON_RXE_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/axon-rxe-vm}
install=yes
case "${1:-}" in
  --no-install) install=no ;;
  --print-cache) echo "$CACHE"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--no-install|--print-cache]" >&2; exit 2 ;;
esac

fail() { echo "rxe-vm setup: $*" >&2; exit 1; }

# Host tools: qemu, busybox for the initramfs, kmod for depmod, cpio, python3
# (unpacks the xz bzImage), rdma-core's `rdma` tool and the verbs utilities the
# guest runs (the guest's root file system is the host's).
pkgs="qemu-system-x86 busybox-static kmod cpio python3 iproute2 rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  [ "$install" = yes ] || fail "missing packages:$missing"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo -n"; else
    fail "missing packages:$missing (run as root or install them)"; fi
  echo "rxe-vm setup: installing$missing" >&2
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
    --no-install-recommends $missing >/dev/null 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
        --no-install-recommends $missing >/dev/null 2>&1; } ||
    fail "cannot install$missing"
fi
for t in qemu-system-x86_64 depmod cpio python3; do
  command -v $t >/dev/null || fail "$t not found"
done
[ -x /bin/busybox ] || fail "/bin/busybox not found (busybox-static)"

# Which kernel: the one linux-image-amd64 depends on (override with AXON_RXE_VM_KPKG).
pkg=${AXON_RXE_VM_KPKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')}
[ -n "$pkg" ] || fail "cannot tell which kernel package linux-image-amd64 depends on (apt-cache)"
want="$pkg $(cksum < "$HERE/guest-init.sh" | cut -d' ' -f1)"
if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$want" ] && [ -f "$CACHE/initrd.img" ]; then
  exit 0
fi

mkdir -p "$CACHE/debs"
lock="$CACHE/.lock"
# Two test runs may prepare the cache at the same time: serialise.
exec 9>"$lock"
command -v flock >/dev/null && flock 9
if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$want" ]; then exit 0; fi

deb=$(ls "$CACHE/debs/${pkg}_"*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
  (cd "$CACHE/debs" && apt-get download "$pkg" >/dev/null 2>&1) ||
    fail "apt-get download $pkg failed (no network or no apt sources?)"
  deb=$(ls "$CACHE/debs/${pkg}_"*.deb | head -1)
fi
rm -rf "$CACHE/kernel.new"
dpkg-deb -x "$deb" "$CACHE/kernel.new"
kv=$(ls "$CACHE/kernel.new/lib/modules" | head -1)
[ -n "$kv" ] || fail "no modules in $deb"
depmod -b "$CACHE/kernel.new" "$kv"

# qemu boots an ELF vmlinux through its PVH entry directly; the bzImage would
# first decompress itself, which costs many seconds without KVM.
python3 - "$CACHE/kernel.new/boot/vmlinuz-$kv" "$CACHE/vmlinux.new" <<'EOF' || rm -f "$CACHE/vmlinux.new"
import lzma, sys
blob = open(sys.argv[1], 'rb').read()
start = blob.find(b'\xfd7zXZ\x00')
if start < 0:
    sys.exit(1)
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(blob[start:])
if elf[:4] != b'\x7fELF':
    sys.exit(1)
open(sys.argv[2], 'wb').write(elf)
EOF

# The initramfs: busybox, the modules needed to reach the host's root over
# virtio-9p with an overlay on top, and /init.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/sbin" "$stage/mods" "$stage/proc" "$stage/sys" "$stage/dev" "$stage/lib/modules"
cp /bin/busybox "$stage/bin/busybox"
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache \
         9pnet 9pnet_virtio 9p overlay; do
  f=$(find "$CACHE/kernel.new/lib/modules/$kv" -name "$m.ko*" | head -1)
  [ -n "$f" ] || continue   # built in, or absent from this kernel
  case "$f" in
    *.xz) xz -dc "$f" > "$stage/mods/$m.ko" ;;
    *.zst) zstd -qdc "$f" > "$stage/mods/$m.ko" ;;
    *) cp "$f" "$stage/mods/$m.ko" ;;
  esac
done
cp "$HERE/guest-init.sh" "$stage/init"
chmod 755 "$stage/init"
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$CACHE/initrd.img.new"

rm -rf "$CACHE/kernel"
mv "$CACHE/kernel.new" "$CACHE/kernel"
[ -f "$CACHE/vmlinux.new" ] && mv "$CACHE/vmlinux.new" "$CACHE/vmlinux"
cp "$CACHE/kernel/boot/vmlinuz-$kv" "$CACHE/vmlinuz"
mv "$CACHE/initrd.img.new" "$CACHE/initrd.img"
echo "$kv" > "$CACHE/kversion"
echo "$want" > "$CACHE/stamp"
echo "rxe-vm setup: kernel $kv ready in $CACHE" >&2
