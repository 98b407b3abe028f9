#!/bin/bash
# axon_info: the summary names the MPI and ABI versions and reports this build
# and this node as they are, not as a fixed text:
#   the transports line is what axon_config.h says is built (verbs only with
#   AXON_HAVE_VERBS); each transport says whether it is usable here (verbs:
#   "no RDMA devices" exactly when libibverbs sees none; tcp: every IPv4
#   address that is up);
#   CUDA: "built" exactly with AXON_HAVE_CUDA; the driver line follows
#   AXON_ACCEL_CUDA_LIBRARY (a missing library: "not found"), and says found
#   exactly when the dynamic loader has libcuda.so.1;
#   PMIx: the version of the pmix_version.h the build used, and the loaded
#   library's; hwloc: HWLOC_API_VERSION of the hwloc.h used, and the loaded one;
#   Fortran: yes exactly when libmpifort_abi.la is in the build tree.
# --counters lists the performance counters; bad options fail; --help is the
# man page's text (test/tools/man.sh).
set -u
fail() { echo "FAIL: $*"; exit 1; }
B=$AXON_BUILDDIR
info="$B/src/tools/axon_info"
mkvar() { sed -n "s|^$1 = ||p" "$B/Makefile"; }
unset AXON_ACCEL_CUDA_LIBRARY AXON_ACCEL
out=$("$info") || fail "axon_info exited $?"
echo "$out"
line() { grep -q -F -x -- "$1" <<<"$out" || fail "no line '$1'"; }
grep -q "MPI standard: *5.0" <<<"$out" || fail "no MPI 5.0"
grep -q "MPI ABI: *1.0" <<<"$out" || fail "no ABI 1.0"
"$info" --no-such-option >/dev/null 2>&1 && fail "unknown option accepted"
"$info" --version | grep -q "Axon MPI" || fail "--version does not say Axon MPI"
[[ "$("$info" --help | head -1)" == "Usage: axon_info "* ]] || fail "--help: $("$info" --help | head -1)"
counters=$("$info" --counters) || fail "--counters exited $?"
for c in axon_pml_eager_sends axon_pml_unexpected_queue_length axon_btl_sm_cma_bytes; do
  grep -q "^$c (" <<<"$counters" || fail "--counters does not list $c: $counters"
done
grep -q "^axon_pml_unexpected_queue_length (level)" <<<"$counters" || fail "queue length is not a level"

have() { grep -q "^#define $1 1" "$B/axon_config.h"; }
# ---- transports
if have AXON_HAVE_VERBS; then line "  transports (btl):  self, sm, tcp, verbs"; else line "  transports (btl):  self, sm, tcp"; fi
line "    self:            usable here (a rank's messages to itself)"
grep -q "^    sm:              usable here: /dev/shm writable; single copy (CMA): \(yes\|no\)" <<<"$out" || fail "sm line"
tcp=$(grep "^    tcp:  " <<<"$out") || fail "no tcp line"
if command -v ip >/dev/null; then
  # Up and running (a carrier): the interfaces the TCP transport can use.
  while read -r dev a; do
    [[ "$dev" == lo || "$(cat "/sys/class/net/$dev/carrier" 2>/dev/null)" != 1 ]] && continue
    [[ "$tcp" == *"$dev $a"* ]] || fail "tcp line lacks $dev $a (ip -4 addr): $tcp"
  done < <(ip -4 -o addr show up | awk '{sub("/.*", "", $4); print $2, $4}')
fi
verbs=$(grep "^    verbs:  " <<<"$out") || fail "no verbs line"
if have AXON_HAVE_VERBS; then
  if ! compgen -G "/sys/class/infiniband_verbs/uverbs*" >/dev/null; then
    [[ "$verbs" == *"not usable here: no RDMA devices"* ]] || fail "no uverbs device here, but: $verbs"
  else
    for d in /sys/class/infiniband_verbs/uverbs*; do
      dev=$(cat "$d/ibdev")
      [[ "$verbs" == *"$dev"* ]] || fail "verbs line lacks device $dev: $verbs"
    done
  fi
else
  line "    verbs:           not built (configure found no libibverbs/librdmacm development files)"
fi

# ---- CUDA
if have AXON_HAVE_CUDA; then
  grep -q "^  CUDA:              built (" <<<"$out" || fail "CUDA built, but: $(grep CUDA: <<<"$out")"
  if have AXON_HAVE_CUDA_KERNELS; then line "  CUDA:              built (CUDA-aware buffers; GPU kernels built in)"; fi
else
  line "  CUDA:              not built (configure found no cuda.h; --with-cuda=DIR)"
fi
driver=$(grep "^    driver here:  " <<<"$out") || fail "no CUDA driver line"
if /sbin/ldconfig -p 2>/dev/null | grep -q "libcuda\.so\.1 "; then
  [[ "$driver" == "    driver here:     libcuda.so.1, CUDA "* ]] || fail "libcuda.so.1 is installed, but: $driver"
else
  [[ "$driver" == "    driver here:     not found (libcuda.so.1: "* ]] || fail "no libcuda.so.1 here, but: $driver"
fi
missing=$(AXON_ACCEL_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$info" | grep "^    driver here:  ")
[[ "$missing" == "    driver here:     not found (/nonexistent/libcuda.so.1: "* ]] ||
  fail "AXON_ACCEL_CUDA_LIBRARY=/nonexistent/...: $missing"
# A stand-in driver: what axon_info prints is what the driver answers.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/fakecuda.c" <<'EOS'
#include <stdlib.h>
int cuInit(unsigned flags) { (void)flags; return getenv("FAKE_CUINIT_FAILS") ? 100 : 0; }
int cuDriverGetVersion(int *v) { *v = 12040; return 0; }
int cuDeviceGetCount(int *n) { *n = 3; return 0; }
EOS
if $(mkvar CC) -shared -fPIC -o "$tmp/libfakecuda.so" "$tmp/fakecuda.c"; then
  fake=$(AXON_ACCEL_CUDA_LIBRARY="$tmp/libfakecuda.so" "$info" | grep "^    driver here:  ")
  [[ "$fake" == "    driver here:     $tmp/libfakecuda.so, CUDA 12.4, 3 devices" ]] || fail "stand-in driver: $fake"
  fake=$(FAKE_CUINIT_FAILS=1 AXON_ACCEL_CUDA_LIBRARY="$tmp/libfakecuda.so" "$info" | grep "^    driver here:  ")
  [[ "$fake" == "    driver here:     $tmp/libfakecuda.so, CUDA 12.4, but cuInit failed (CUDA error 100"* ]] ||
    fail "stand-in driver whose cuInit fails: $fake"
  fake=$(AXON_ACCEL=0 AXON_ACCEL_CUDA_LIBRARY="$tmp/libfakecuda.so" "$info" | grep "^    driver here:  ")
  [[ "$fake" == *"3 devices (AXON_ACCEL turns CUDA support off)" ]] || fail "AXON_ACCEL=0: $fake"
else
  fail "cannot build the stand-in CUDA driver"
fi

# ---- PMIx and hwloc: the headers the build used (their -I directories, else /usr/include)
find_header() {
  local h=$1 d; shift
  for d in $(tr ' ' '\n' <<<"$*" | sed -n 's/^-I//p') /usr/include /usr/local/include; do
    [[ -f "$d/$h" ]] && { echo "$d/$h"; return 0; }
  done
  return 1
}
pv=$(find_header pmix_version.h "$(mkvar PMIX_CFLAGS)") || fail "pmix_version.h not found"
num() { sed -n "s/^#define $1 \([0-9]*\)L\{0,1\}\$/\1/p" "$pv"; }
pmix="$(num PMIX_VERSION_MAJOR).$(num PMIX_VERSION_MINOR).$(num PMIX_VERSION_RELEASE)"
[[ "$pmix" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "cannot read the version in $pv: $pmix"
grep -q -F "  PMIx:              $pmix at build time (pmix_version.h); loaded: " <<<"$out" ||
  fail "PMIx line: $(grep PMIx: <<<"$out"), want $pmix from $pv"
hv=$(find_header hwloc.h "$(mkvar HWLOC_CFLAGS)") || fail "hwloc.h not found"
api=$(sed -n 's/^#define HWLOC_API_VERSION 0x\([0-9a-fA-F]*\)$/\1/p' "$hv")
[[ -n "$api" ]] || fail "no HWLOC_API_VERSION in $hv"
hwloc="$((16#$api >> 16)).$(((16#$api >> 8) & 255)).$((16#$api & 255))"
grep -q -F "  hwloc:             API $hwloc at build time (hwloc.h); loaded: API " <<<"$out" ||
  fail "hwloc line: $(grep hwloc: <<<"$out"), want API $hwloc from $hv"

# ---- Fortran (test/fortran/axon_info.sh checks its details)
if [[ -e "$B/libmpifort_abi.la" ]]; then
  grep -q "^  Fortran:           yes: " <<<"$out" || fail "libmpifort_abi.la is built, but: $(grep Fortran: <<<"$out")"
else
  grep -q "^  Fortran:           no " <<<"$out" || fail "no libmpifort_abi.la, but: $(grep Fortran: <<<"$out")"
fi
echo "axon_info OK: transports, CUDA ($driver), PMIx $pmix, hwloc API $hwloc"
