#!/bin/bash
# Interface selection of the TCP transport: an include list by name or by
# subnet works; an include list matching nothing, a malformed subnet, or
# include and exclude together make MPI_Init fail with a clear message and
# exit status 1; excluding loopback makes ranks of one node use another
# interface when there is one.
. "$AXON_SRCDIR/test/launcher/lib.sh"
prog="$AXON_BUILDDIR/test/tcp/traffic"
run() { run_mpirun -np 2 "$@" "$prog" tcp-used marker=$marker; }
export AXON_BTL=tcp,self

for include in lo 127.0.0.0/8 'l*'; do
    AXON_BTL_TCP_IF_INCLUDE=$include run
    expect_rc 0 "AXON_BTL_TCP_IF_INCLUDE=$include"
done

AXON_BTL_TCP_IF_INCLUDE=nosuchif0 run
expect_rc 1 "an include list matching nothing"
expect_line "$work/err" "AXON_BTL_TCP_IF_INCLUDE=nosuchif0 matches no interface that is up" "clear message"

AXON_BTL_TCP_IF_INCLUDE=lo AXON_BTL_TCP_IF_EXCLUDE=docker0 run
expect_rc 1 "include and exclude together"
expect_line "$work/err" "AXON_BTL_TCP_IF_INCLUDE and AXON_BTL_TCP_IF_EXCLUDE are both set" "clear message"

AXON_BTL_TCP_IF_INCLUDE=10.0.0.0/33 run
expect_rc 1 "a malformed subnet"
expect_line "$work/err" "\"10.0.0.0/33\" is neither an interface name nor an IPv4 subnet" "clear message"

# Without loopback, ranks of one node connect through another interface —
# when this machine has one that is up.
if ! command -v ip >/dev/null; then
    echo "ok (no ip command: AXON_BTL_TCP_IF_EXCLUDE=lo not tried)"
    exit 0
fi
# (ax*: bridges of concurrent test/netns runs, which may vanish mid-run.)
others=$(ip -o -4 addr show up 2>/dev/null | awk '$2 != "lo" && $2 !~ /^(docker|virbr|ax)/' | wc -l)
AXON_BTL_TCP_IF_EXCLUDE='lo,ax*' run
if [[ $others -gt 0 ]]; then
    expect_rc 0 "AXON_BTL_TCP_IF_EXCLUDE=lo,ax* with another interface"
else
    expect_rc 1 "AXON_BTL_TCP_IF_EXCLUDE=lo,ax* and no other interface"
    expect_line "$work/err" "tcp: no usable network interface" "clear message"
fi
expect_no_orphans
echo "ok"
