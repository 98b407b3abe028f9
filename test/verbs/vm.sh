#!/bin/bash
# vm.sh GROUP: runs test/verbs/in-vm.sh GROUP inside the soft-RoCE VM
# (contrib/rxe-vm: qemu + Debian kernel + rdma_rxe), the build tree shared
# read-write. Skips (77) when the VM cannot be prepared on this host (no
# qemu, no kernel package, no network for apt) or Axon was built without verbs.
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
if ! grep -q '^#define AXON_HAVE_VERBS 1' "$AXON_BUILDDIR/axon_config.h"; then
  echo "SKIP: built without the verbs transport (install libibverbs-dev librdmacm-dev, re-run configure)"
  exit 77
fi
if ! setup=$("$AXON_SRCDIR/contrib/rxe-vm/setup.sh" 2>&1); then
  echo "$setup"
  echo "SKIP: the soft-RoCE VM cannot be prepared here: $(echo "$setup" | tail -n 1)"
  exit 77
fi
cd "$AXON_BUILDDIR" || exit 1
# The guest sees the host's / read-only but with its own /tmp, /run, ...:
# the source and build trees are shared explicitly, by their real paths.
AXON_SRCDIR=$(cd "$AXON_SRCDIR" && pwd -P) AXON_BUILDDIR=$(pwd -P)
export AXON_SRCDIR AXON_BUILDDIR
# The source first: a build tree inside it (build-tests/) is mounted over it.
export AXON_RXE_VM_RW="$AXON_SRCDIR:$AXON_BUILDDIR" AXON_RXE_VM_TIMEOUT=${AXON_RXE_VM_TIMEOUT:-110}
export AXON_RXE_VM_ENV="AXON_BUILDDIR AXON_SRCDIR"
# The multi-rail group needs two soft-RoCE devices (rxe0, rxe1 on two NICs).
[ "$1" = rails ] && export AXON_RXE_VM_NICS=2
exec "$AXON_SRCDIR/contrib/rxe-vm/run-in-rxe-vm.sh" "sh $AXON_SRCDIR/test/verbs/in-vm.sh $1"
