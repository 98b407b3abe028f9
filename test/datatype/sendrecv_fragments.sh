#!/bin/bash
# datatype_sendrecv through the copy-through-rings fallback (no CMA) with a
# tiny eager limit, so non-contiguous messages travel as many fragments that
# split basic elements: the sender packs each fragment with a convertor and
# the receiver unpacks each one in place.
set -u
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
AXON_BTL_SM_CMA=0 AXON_BTL_SM_EAGER_LIMIT=100 exec "$MPIRUN" -np 2 "$AXON_BUILDDIR/test/datatype/sendrecv"
