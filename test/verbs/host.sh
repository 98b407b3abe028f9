#!/bin/bash
# Host side, no VM: on a machine without RDMA devices, asking for verbs
# explicitly must fail start-up with a message saying why and what to look
# at; `axon_info --doctor` must say there are no RDMA devices.
set -u
: "${AXON_BUILDDIR:?}"
B=$AXON_BUILDDIR
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
  echo "SKIP: this host has RDMA devices ($(ls /sys/class/infiniband | tr '\n' ' '))"
  exit 77
fi
fail=0
out=$(AXON_BTL=verbs,self timeout 60 "$B/src/launcher/mpirun" -np 2 "$B/test/verbs/pingpong" 2>&1)
rc=$?
echo "$out"
if grep -q '^#define AXON_HAVE_VERBS 1' "$B/axon_config.h"; then
  want="AXON_BTL asks for verbs, but no RDMA devices found"
else
  want="AXON_BTL names verbs, but this Axon was built without it"
fi
[ $rc -ne 0 ] || { echo "FAIL: mpirun exited 0 with AXON_BTL=verbs,self and no device"; fail=1; }
echo "$out" | grep -qF "$want" || { echo "FAIL: expected the message: $want"; fail=1; }
echo "$out" | grep -q "verbs_pingpong: ok" && { echo "FAIL: the program ran"; fail=1; }
# Not asked for explicitly: the default transports carry on.
out=$(timeout 60 "$B/src/launcher/mpirun" -np 2 "$B/test/verbs/pingpong" 65536 2>&1) ||
  { echo "$out"; echo "FAIL: default transports"; fail=1; }
doc=$("$B/src/tools/axon_info" --doctor 2>&1)
echo "$doc"
echo "$doc" | grep -q "no RDMA devices" || { echo "FAIL: doctor does not say 'no RDMA devices'"; fail=1; }
echo "$doc" | grep -q "ulimit -l" || { echo "FAIL: doctor does not show the locked-memory limit"; fail=1; }
exit $fail
