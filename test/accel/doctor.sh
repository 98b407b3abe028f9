#!/bin/bash
# axon_info --doctor's GPU report against the fake CUDA driver and a fake
# sysfs (AXON_DOCTOR_ROOT): two GPUs on two NUMA nodes without peer access,
# two RDMA NICs on node 0 (one under GPU 0's PCIe switch, one behind another
# host bridge), nvidia_peermem loaded, no MPS, four local ranks. Then the
# same without a driver.
set -u
: "${AXON_BUILDDIR:?}"
info="$AXON_BUILDDIR/src/tools/axon_info"
fake="$AXON_BUILDDIR/test/accel/.libs/libfakecuda.so"
[[ -f "$fake" ]] || { echo "skip: fake CUDA driver not built (configure found no cuda.h)"; exit 77; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dev() {  # dev PATH-UNDER-/sys/devices NUMA: a PCI device and its /sys/bus/pci entry
  mkdir -p "$root/sys/devices/$1" "$root/sys/bus/pci/devices"
  echo "$2" >"$root/sys/devices/$1/numa_node"
  ln -s "$root/sys/devices/$1" "$root/sys/bus/pci/devices/$(basename "$1")"
}
nic() {  # nic NAME PCI-PATH NUMA
  dev "$2" "$3"
  mkdir -p "$root/sys/class/infiniband/$1"
  ln -s "$root/sys/devices/$2" "$root/sys/class/infiniband/$1/device"
}
# GPU 0 and mlx5_0 below one PCIe switch (upstream 11:00.0, downstream 12:00.0 / 12:01.0).
dev pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0 0
nic mlx5_0 pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.0 0
nic mlx5_1 pci0000:20/0000:20:01.0/0000:21:00.0 0
dev pci0000:80/0000:80:01.0/0000:83:00.0 1
mkdir -p "$root/sys/module/nvidia_peermem" "$root/proc"
: >"$root/proc/modules"

out=$(AXON_DOCTOR_ROOT="$root" AXON_ACCEL_CUDA_LIBRARY="$fake" FAKE_CUDA_DEVICES=2 \
      FAKE_CUDA_PCI=0000:13:00.0,0000:83:00.0 FAKE_CUDA_PEER=0 MPI_LOCALNRANKS=4 \
      CUDA_MPS_PIPE_DIRECTORY="$root/no-mps" "$info" --doctor 2>&1)
rc=$?
echo "$out"
fail=0
want() {  # want REGEX WHAT
  grep -qE -- "$1" <<<"$out" || { echo "FAIL: no $2 (/$1/)"; fail=1; }
}
[[ $rc -eq 0 ]] || { echo "FAIL: axon_info --doctor exit $rc"; fail=1; }
want 'driver: CUDA 13\.0 \(driver API 13000\), 2 GPUs' "driver version and GPU count"
want 'GPU 0: .*PCI 0000:13:00\.0, NUMA node 0, GPU-f0f1f2f3-' "GPU 0 with its PCI address, NUMA node and UUID"
want 'GPU 1: .*PCI 0000:83:00\.0, NUMA node 1' "GPU 1 on NUMA node 1"
want 'dma-buf yes' "dma-buf support"
want 'peer access GPU 0 <-> GPU 1: no' "peer access (none)"
want 'nvidia_peermem: loaded' "nvidia_peermem"
want 'MPS: not running' "the MPS verdict"
want 'ranks per GPU: 4 local ranks \(MPI_LOCALNRANKS\) on 2 GPUs +\[WARN\] ranks share a GPU' "the GPU-sharing warning"
want '^ +mlx5_0 +mlx5_1 *$' "the topology header"
want '^ +GPU 0 +PIX +NODE *$' "GPU 0: PIX to mlx5_0, NODE to mlx5_1"
want '^ +GPU 1 +SYS +SYS *$' "GPU 1: SYS to both NICs"
want '\[WARN\] GPU 1 is on NUMA node 1 and no RDMA NIC is \(mlx5_0 on node 0, mlx5_1 on node 0\)' "the NUMA warning"
grep -q '\[WARN\] GPU 0 is on NUMA' <<<"$out" && { echo "FAIL: a NUMA warning for GPU 0, which has NICs on its node"; fail=1; }

# No driver: said, not an error.
out=$(AXON_DOCTOR_ROOT="$root" AXON_ACCEL_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$info" --doctor 2>&1)
rc=$?
echo "$out" | sed -n '/GPUs (CUDA)/,+1p'
[[ $rc -eq 0 ]] || { echo "FAIL: without a driver, exit $rc"; fail=1; }
want 'no CUDA driver \(/nonexistent/libcuda\.so\.1 cannot be loaded\)' "the no-driver line"
[[ $fail -eq 0 ]] && echo "doctor: ok"
exit $fail
