#!/bin/bash
# traffic.c over TCP alone (AXON_BTL=tcp,self) at 2, 3 and 4 ranks, then
# under TCP's harder code paths: a send queue of zero bytes (every send that
# finds data queued is refused and retried by the PML) and a 1 KiB eager limit
# (everything large travels as thousands of fragments); striped over two
# connections per pair; last, self,sm,tcp on one node, where shared memory
# must carry everything and TCP nothing.
# (Partial writes and reads happen in every run: 8 MiB messages and the
# 12 MiB flood overrun the socket buffers.)
# Usage: traffic.sh NP [variants|striped|mixed]
. "$AXON_SRCDIR/test/launcher/lib.sh"
np=$1
case "${2:-plain}" in
plain)
    AXON_BTL=tcp,self run_mpirun -np "$np" "$AXON_BUILDDIR/test/tcp/traffic" tcp-used marker=$marker
    expect_rc 0 "traffic over tcp at np $np" ;;
variants)
    AXON_BTL=tcp,self AXON_BTL_TCP_QUEUE_LIMIT=0 AXON_BTL_TCP_EAGER_LIMIT=1k \
        run_mpirun -np "$np" "$AXON_BUILDDIR/test/tcp/traffic" tcp-used marker=$marker
    expect_rc 0 "traffic over tcp with no send queue and a 1 KiB eager limit at np $np" ;;
striped)
    # Striping on one machine: every rank listens on loopback and on another
    # interface; AXON_BTL_TCP_STRIPE_LOCAL makes each pair use both, so
    # fragments (4 KiB here: many of them) arrive out of order.
    # Only loopback and the default route's interface: others may be bridges
    # of concurrent tests that vanish mid-run (taking queued fragments along).
    command -v ip >/dev/null || { echo "SKIP: no ip command to find a second interface"; exit 77; }
    second=$(ip -o -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1)}' | head -n 1)
    [[ -n "$second" && "$second" != lo ]] || { echo "SKIP: no interface besides loopback to stripe over"; exit 77; }
    AXON_BTL=tcp,self AXON_BTL_TCP_IF_INCLUDE="lo,$second" AXON_BTL_TCP_STRIPE_LOCAL=1 AXON_BTL_TCP_EAGER_LIMIT=4k \
        run_mpirun -np "$np" "$AXON_BUILDDIR/test/tcp/traffic" tcp-striped marker=$marker
    expect_rc 0 "traffic striped over two connections per pair at np $np" ;;
mixed)
    AXON_BTL=self,sm,tcp run_mpirun -np "$np" "$AXON_BUILDDIR/test/tcp/traffic" tcp-unused marker=$marker
    expect_rc 0 "traffic with self,sm,tcp at np $np" ;;
esac
expect_line "$work/out" "tcp_traffic: ok" "exact data"
[[ $(grep -c "tcp_traffic: ok" "$work/out") -eq $np ]] || { show_output; fail "not every rank said ok"; }
expect_no_orphans
echo "ok"
