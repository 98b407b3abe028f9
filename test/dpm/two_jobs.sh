#!/bin/bash
# Two separate mpirun jobs meet through a port: the server job (NP1 ranks)
# opens a port and writes its name to a file, the client job (NP2 ranks)
# reads it and connects. Every byte between the jobs travels over btl/tcp
# (each job's processes are foreign to the other). Both mpiruns must exit 0
# with no process or /dev/shm file left.
# Usage: two_jobs.sh NP1 NP2
. "$AXON_SRCDIR/test/launcher/lib.sh"
np1=$1 np2=$2
portfile="$work/port"
"$MPIRUN" -np "$np1" "$AXON_BUILDDIR/test/dpm/accept_connect" server "$portfile" marker=$marker >"$work/server.out" 2>&1 &
server=$!
run_mpirun -np "$np2" "$AXON_BUILDDIR/test/dpm/accept_connect" client "$portfile" marker=$marker
client_rc=$rc
wait $server
server_rc=$?
cat "$work/server.out" >>"$work/out"
[[ $client_rc -eq 0 && $server_rc -eq 0 ]] || { show_output; fail "client exited $client_rc, server $server_rc"; }
expect_no_orphans
echo "ok"
