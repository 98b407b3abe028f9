#!/bin/bash
# Packs a built Axon tree, its GPU tests and benchmarks, and the Debian
# runtime libraries they load into one folder that runs on a GPU machine
# where none of those packages is installed (checked on an NVIDIA H100/H200
# host whose image is not Debian).  The folder is then copied there and
# contrib/gpu/check.sh is run from the source tree.
#   bundle.sh BUILDDIR OUTDIR
# BUILDDIR is a configured and built tree (make && make install && make check
# TESTS=), whose absolute path must also exist on the GPU machine (check.sh
# makes a link there): its programs find libmpi through that path.
set -euo pipefail
build=$(cd "$1" && pwd) out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"; mkdir -p "$out/deb" "$out/bench"
out=$(cd "$out" && pwd)
echo "$build" >"$out/builddir"

# The parts of the build tree the accel tests use (run-tests.sh, run.sh).
copy() { mkdir -p "$out/tree/$(dirname "$1")"; cp -a "$build/$1" "$out/tree/$1"; }
copy _install
copy src/launcher/mpirun
for f in "$build"/.libs/libmpi_abi.so*; do copy ".libs/$(basename "$f")"; done
for p in classify device_coll device_dtype device_p2p kernels driver_calls ext; do copy "test/accel/$p"; done
copy src/tools/axon_info; copy src/tools/.libs  # a libtool wrapper and its program
copy test/accel/.libs
find "$out/tree" -type f -perm -u+x -exec strip --strip-debug {} + 2>/dev/null || true

# Benchmarks, built with this Axon's mpicc, and the driver-call timing shim
# of contrib/gpu/diagnose.sh (needs only cuda.h: the driver is dlopen'ed).
make -s -C "$src/contrib/bench" MPICC="$build/_install/bin/mpicc" OUT="$out/bench" >/dev/null
cuda_inc=$(sed -n 's/^CUDA_CPPFLAGS = -I//p' "$build/Makefile")
cuda_inc=${cuda_inc:-/usr/local/cuda/include}
if [[ -f "$cuda_inc/cuda.h" ]]; then
  cc -O2 -shared -fPIC -I"$cuda_inc" -o "$out/bench/cuda_timing_shim.so" "$src/contrib/gpu/cuda_timing_shim.c" -ldl
else
  echo "bundle.sh: no cuda.h ($cuda_inc): the diagnosis runs without the driver-call timing shim" >&2
fi

# Every shared library outside glibc that the launcher, libmpi and the PMIx
# components load, and PMIx's own tree (its components are found by the
# absolute path it was built with).
libs=$( (ldd "$build/src/launcher/mpirun"; ldd "$build"/.libs/libmpi_abi.so.1
         ldd /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so) 2>/dev/null |
        awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libpmix)\.so')
for l in $libs; do cp -L "$l" "$out/deb/"; done
cp -a /usr/lib/x86_64-linux-gnu/pmix2 "$out/pmix2"
rm -f "$out/pmix2/lib/libpmix.a"; rm -rf "$out/pmix2/include"
du -sh "$out"
