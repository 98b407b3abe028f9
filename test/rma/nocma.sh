#!/bin/bash
# Cross-memory attach forbidden: the ranks run without CAP_SYS_PTRACE and
# make themselves non-dumpable, so process_vm_readv between them fails with
# EPERM. MPI_Win_create / MPI_Win_create_dynamic windows must then reach the
# other ranks by active messages (the log says so) and rma_passive must pass.
# Skips where CAP_SYS_PTRACE cannot be dropped (not root, no setpriv).
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv (util-linux) is not installed"; exit 77; }
setpriv --bounding-set=-sys_ptrace true 2>/dev/null || { echo "SKIP: cannot drop CAP_SYS_PTRACE"; exit 77; }
failed=0
for flavor in create dynamic; do
    out=$(AXON_VERBOSE=1 setpriv --bounding-set=-sys_ptrace \
          "$MPIRUN" -np 3 "$AXON_BUILDDIR/test/rma/rma_passive" $flavor nodump 2>&1)
    rc=$?
    if [[ $rc -ne 0 ]] || [[ $(grep -c "^rma_passive: ok$" <<<"$out") -ne 3 ]]; then
        echo "$out" | grep -v "^axon\[" | tail -n 20
        echo "FAIL: $flavor without CMA: exit $rc"; failed=1
    elif ! grep -q "active messages reach it" <<<"$out"; then
        echo "$out" | tail -n 20
        echo "FAIL: $flavor: CMA was not refused, the fallback was not exercised"; failed=1
    else
        echo "$flavor without CMA: ok"
    fi
done
exit $failed
