#!/bin/bash
# Runs an accel test program under mpirun (NP 0: directly) with the fake CUDA
# driver or the real one.  run.sh DRIVER NP PROGRAM [ARGS...]
#   DRIVER  fake      test/accel/libfakecuda.so (skips when not built: no cuda.h)
#           fake-noipc  the fake, with AXON_ACCEL_IPC=0 (forced staging)
#           fake-event  the fake, with AXON_ACCEL_COPY_WAIT=event (copies waited for by polled events)
#           none      a driver path that does not exist: accel must stay off
#           real      libcuda.so.1 (skips without a driver or GPU)
#           real-noipc  the real driver with AXON_ACCEL_IPC=0 (forced staging)
#           real-event  the real driver with AXON_ACCEL_COPY_WAIT=event
set -u
driver=$1 np=$2 prog=$3
shift 3
fake="$AXON_BUILDDIR/test/accel/.libs/libfakecuda.so"
case "$driver" in
  fake|fake-noipc|fake-event)
    [[ -f "$fake" ]] || { echo "skip: fake CUDA driver not built (configure found no cuda.h)"; exit 77; }
    export AXON_ACCEL_CUDA_LIBRARY="$fake"
    [[ "$driver" == fake-noipc ]] && export AXON_ACCEL_IPC=0
    [[ "$driver" == fake-event ]] && export AXON_ACCEL_COPY_WAIT=event ;;
  fake-nodevice)
    [[ -f "$fake" ]] || { echo "skip: fake CUDA driver not built (configure found no cuda.h)"; exit 77; }
    export AXON_ACCEL_CUDA_LIBRARY="$fake" FAKE_CUDA_DEVICES=0 ;;
  none)
    export AXON_ACCEL_CUDA_LIBRARY=/nonexistent/libcuda.so.1 AXON_VERBOSE=1 ;;
  real|real-noipc|real-event)
    unset AXON_ACCEL_CUDA_LIBRARY
    [[ "$driver" == real-noipc ]] && export AXON_ACCEL_IPC=0
    [[ "$driver" == real-event ]] && export AXON_ACCEL_COPY_WAIT=event
    # The program itself says why it cannot run (no driver, no GPU): ask it
    # once as a singleton so mpirun is not started for nothing.
    probe=$("$AXON_BUILDDIR/$prog" --probe 2>&1 | tail -n 1)
    if [[ "$probe" == skip:* ]]; then echo "$probe"; exit 77; fi ;;
esac
[[ -x "$AXON_BUILDDIR/$prog" ]] || { echo "skip: $prog not built (configure found no cuda.h)"; exit 77; }
if [[ "$np" -eq 0 ]]; then
  out=$("$AXON_BUILDDIR/$prog" "$@" 2>&1)
else
  out=$("$MPIRUN" -np "$np" "$AXON_BUILDDIR/$prog" "$@" 2>&1)
fi
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || exit $rc
if [[ "$driver" == none && "$np" -gt 0 && -f "$fake" ]]; then
  # (A build without CUDA has no driver to look for, so nothing to log.)
  # Each rank logged once that CUDA support is off, and nothing else went wrong.
  n=$(grep -c "CUDA support off: no CUDA driver" <<<"$out")
  [[ "$n" -eq "$np" ]] || { echo "expected $np 'CUDA support off' lines, saw $n"; exit 1; }
fi
exit 0
