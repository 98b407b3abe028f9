#!/bin/bash
# The point-to-point programs again under the shared-memory transport's other
# code paths, which the defaults do not reach on every machine: the copy
# fallback for large messages when CMA is off (as when ptrace is forbidden),
# CMA without the sender helping, a tiny eager limit and ring (so messages
# fragment and sends queue behind a full ring), waiting without spinning, and
# large non-contiguous sends packed whole rather than segment by segment.
. "$AXON_SRCDIR/test/launcher/lib.sh"
# Each variant with the name protocol_variants checks it by: the counters
# that show the variant took effect (test/mpi/protocol_variants.c).
variants=(
    "default:"
    "no-cma:AXON_BTL_SM_CMA=0"
    "no-help:AXON_BTL_SM_CMA_SENDER_HELPS=0"
    "tiny-ring:AXON_BTL_SM_EAGER_LIMIT=256 AXON_BTL_SM_SLOTS=2"
    "no-spin:AXON_WAIT_SPIN=0"
    "whole-pack:AXON_PML_PACK_SEGMENT=0"
)
for entry in "${variants[@]}"; do
    name=${entry%%:*} variant=${entry#*:}
    exports=()
    for assignment in $variant; do exports+=(-x "$assignment"); done
    for program in p2p_basic p2p_ordering p2p_nonblocking "protocol_variants $name"; do
        # shellcheck disable=SC2086
        run_mpirun -np 2 "${exports[@]}" "$AXON_BUILDDIR/test/mpi/"$program marker=$marker
        expect_rc 0 "$program with ${variant:-the defaults}"
    done
    echo "ok: $name ${variant}"
done
expect_no_orphans
