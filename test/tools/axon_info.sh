#!/bin/bash
# axon_info: the summary names the MPI and ABI versions; --counters lists the
# performance counters; bad options fail.
set -u
info="$AXON_BUILDDIR/src/tools/axon_info"
out=$("$info") || { echo "axon_info exited $?"; exit 1; }
grep -q "MPI standard: *5.0" <<<"$out" || { echo "no MPI 5.0 in: $out"; exit 1; }
grep -q "MPI ABI: *1.0" <<<"$out" || { echo "no ABI 1.0 in: $out"; exit 1; }
"$info" --no-such-option >/dev/null 2>&1 && { echo "unknown option accepted"; exit 1; }
"$info" --version | grep -q "Axon MPI" || { echo "--version does not say Axon MPI"; exit 1; }
counters=$("$info" --counters) || { echo "--counters exited $?"; exit 1; }
for c in axon_pml_eager_sends axon_pml_unexpected_queue_length axon_btl_sm_cma_bytes; do
    grep -q "^$c (" <<<"$counters" || { echo "--counters does not list $c: $counters"; exit 1; }
done
grep -q "^axon_pml_unexpected_queue_length (level)" <<<"$counters" || { echo "queue length is not a level"; exit 1; }
exit 0
