#!/bin/sh
# Installs the Debian/Ubuntu packages Axon needs.
#   contrib/install-deps.sh           to build (the RDMA verbs transport is built
#                                     from rdma-core's headers)
#   contrib/install-deps.sh --tests   also what the test suite uses: network
#                                     namespaces, a one-machine Slurm, rdma-core
#                                     tools, the soft-RoCE VM's host tools, cmake, man-db,
#                                     clang (libFuzzer)
#   contrib/install-deps.sh --peers   also Open MPI and MPICH (for contrib/bench)
set -e
packages="build-essential autoconf automake libtool pkg-config libpmix-dev libhwloc-dev procps"
# The Fortran bindings: the compiler, and Python 3 that generates them.
packages="$packages gfortran python3"
packages="$packages libibverbs-dev librdmacm-dev"
# Multi-node tests (network namespaces) and the one-machine Slurm test.
packages_multinode="iproute2 util-linux slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge"
# RDMA tools for the soft-RoCE tests and benchmarks, and the soft-RoCE VM's
# host tools (installed here, not by the first VM test, whose time limit a
# slow download would exceed).
packages_verbs="ibverbs-utils ibverbs-providers rdmacm-utils perftest rdma-core"
packages_verbs="$packages_verbs qemu-system-x86 busybox-static kmod cpio"
# CMake: test/fortran/cmake.sh (find_package(MPI) finds Axon); man and groff:
# test/tools/man.sh renders the man pages.
packages_tools="cmake man-db groff-base"
# The fuzzers of test/fuzz: clang and its libFuzzer/ASan runtimes.
packages_tools="$packages_tools clang libclang-rt-dev"
for arg in "$@"; do
  case "$arg" in
    --tests) packages="$packages $packages_multinode $packages_verbs $packages_tools" ;;
    --peers) packages="$packages openmpi-bin libopenmpi-dev mpich libmpich-dev" ;;
    *) echo "usage: $0 [--tests] [--peers]" >&2; exit 2 ;;
  esac
done

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
