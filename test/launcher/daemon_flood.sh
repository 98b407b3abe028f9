#!/bin/bash
# Strangers on mpirun's port while the daemons start (a port scan, another
# user): the launch agent floods the port the daemon connects back to with
# 300 connections that are not daemons (idle ones, a stalled one, junk)
# before starting the daemon. The job must still start and run with exact
# output, quickly, and mpirun's refusals must stay a few lines.
. "$AXON_SRCDIR/test/launcher/lib.sh"
flooder="$AXON_BUILDDIR/test/tcp/flooder"
[[ -x $flooder ]] || { echo "no $flooder"; exit 77; }
agent="$AXON_SRCDIR/test/launcher/flood_agent.sh $flooder {}"
start=$(now_ms)
run_mpirun --launch-agent "$agent" -H localhost:1,axon-flood2:1 -np 2 "$probe" wireup marker=$marker
elapsed=$(($(now_ms) - start))
expect_rc 0 "job under a flood of mpirun's port"
expect_line "$work/out" "^rank 1 wireup 2/2$" "rank on the flooded node wired up"
lines=$(grep -c "refused" "$work/err" || true)
[[ $lines -le 8 ]] || { show_output; fail "$lines lines of refusals"; }
[[ $elapsed -lt 20000 ]] || fail "the flooded launch took $elapsed ms"
expect_no_orphans
echo "daemon port flood OK ($elapsed ms, $lines refusal lines)"
