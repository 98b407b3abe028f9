#!/bin/bash
# Failures across nodes end the job within a bounded time, with a message
# naming the host (and rank, signal, status), a non-zero exit status, and
# nothing left behind in any node.
. "$AXON_SRCDIR/test/netns/lib.sh"
hosts="$node1:2,$node2:2,$node3:2"

within() {  # within MS WHAT
    [[ $elapsed_ms -le $1 ]] || { show_output; fail "$2 took $elapsed_ms ms (limit $1)"; }
}

# An unreachable host: the agent fails (as ssh does with 255).
run_nodes -H "$node1:2,${prefix}9:2" "$probe" wireup marker=$marker
expect_rc 1 "unreachable host"
expect_line "$work/err" "^mpirun: cannot start the daemon on host ${prefix}9: the launch agent exited with status 255 " "unreachable host message"
within 5000 "unreachable host"
expect_clean "unreachable host"

# A host whose daemon never connects: --launch-timeout.
"$MPIRUN" -H "$node1:1,$node2:1" --launch-agent "$AXON_SRCDIR/test/netns/hang_agent.sh {}" --launch-timeout 2 \
    --head-addr "$head_addr" "$probe" marker=$marker >"$work/out" 2>"$work/err" </dev/null
rc=$?
expect_rc 1 "launch timeout"
expect_line "$work/err" "^mpirun: the daemon on host $node1 did not connect back within 2 s \(--launch-timeout\)" "launch timeout message"
[[ -z "$(pgrep -f "hang_agent.sh $node1" || true)" ]] || fail "the hanging agent was left running"
expect_clean "launch timeout"

# A remote rank crashes: 128+11, rank and host named.
run_nodes -H "$hosts" -x AXON_BTL=self,sm,tcp "$mpi_nodes" segv 3 marker=$marker
expect_rc 139 "remote SIGSEGV"
expect_line "$work/err" "^mpirun: rank 3 \(pid [0-9]+\) on $node2 was killed by signal 11 \(Segmentation fault\); ending the job$" "remote SIGSEGV message"
within 8000 "remote SIGSEGV"
expect_clean "remote SIGSEGV"

# A remote rank exits with a status, or calls abort.
run_nodes -H "$hosts" "$probe" wireup exit=5:9 sleep=30 marker=$marker
expect_rc 9 "remote exit status"
expect_line "$work/err" "^mpirun: rank 5 \(pid [0-9]+\) on $node3 exited with status 9; ending the job$" "remote exit message"
within 8000 "remote exit status"
run_nodes -H "$hosts" "$probe" wireup abort=2:7 sleep=30 marker=$marker
expect_rc 7 "remote abort"
expect_line "$work/err" "^mpirun: rank 2 \(pid [0-9]+\) on $node2 called MPI_Abort with status 7: probe called abort; ending the job$" "remote abort message"
expect_clean "remote exit and abort"

# The program is missing on the nodes (mpirun's node runs no rank here).
run_nodes -H "$node1:1,$node2:1" /nonexistent/program marker=$marker
expect_rc 127 "missing program on the nodes"
expect_line "$work/err" "^mpirun: on host ${prefix}[12]: cannot run '/nonexistent/program': No such file or directory; ending the job$" "missing program message"
expect_clean "missing program"

# A daemon is killed: the job ends and names its host.
run_nodes -H "$hosts" "$probe" wireup sleep=30 marker=$marker &
job=$!
for _ in $(seq 1 100); do
    daemon=$(pgrep -f "^[^ ]*/mpirun --daemon $head_addr [0-9]+ 1$" || true)
    [[ -n "$daemon" ]] && grep -q "wireup" "$work/out" 2>/dev/null && break
    sleep 0.05
done
[[ -n "$daemon" ]] || fail "no daemon for node 2 found"
kill -9 $daemon
wait $job
rc=$(cat "$work/rc")
elapsed_ms=$(cat "$work/elapsed")
expect_rc 1 "daemon killed"
expect_line "$work/err" "^mpirun: lost the connection to the daemon on host $node2 \(it died or was killed\); ending the job$" "daemon killed message"
within 10000 "daemon killed"
# A SIGKILLed daemon cannot remove its node's tmpdir (like a SIGKILLed
# mpirun); its ranks are gone all the same.
expect_clean "daemon killed" "$node2"

# A daemon that stops answering (SIGSTOP) does not hang mpirun once the job
# ends: it is given up on (and its agent killed) a few seconds later.
run_nodes -H "$node1:1,$node2:1" "$probe" wireup sleep=30 marker=$marker &
job=$!
for _ in $(seq 1 100); do
    daemon=$(pgrep -f "^[^ ]*/mpirun --daemon $head_addr [0-9]+ 1$" || true)
    [[ -n "$daemon" && $(grep -c wireup "$work/out" 2>/dev/null) -eq 2 ]] && break
    sleep 0.05
done
kill -STOP $daemon
kill -TERM "$(pgrep -f "^$MPIRUN --launch-agent .*marker=$marker" | head -n 1)"
wait $job
rc=$(cat "$work/rc")
elapsed_ms=$(cat "$work/elapsed")
expect_rc 143 "stopped daemon"
expect_line "$work/err" "^mpirun: the daemon on host $node2 did not finish after the job ended; giving up on it$" "stopped daemon message"
within 15000 "stopped daemon"
expect_clean "stopped daemon" "$node2"

# mpirun gets SIGTERM: forwarded, the job ends everywhere, 128+15.
run_nodes -H "$hosts" "$probe" wireup sleep=30 marker=$marker &
job=$!
for _ in $(seq 1 100); do
    [[ $(grep -c wireup "$work/out" 2>/dev/null) -eq 6 ]] && break
    sleep 0.05
done
kill -TERM "$(pgrep -f "^$MPIRUN --launch-agent .*marker=$marker" | head -n 1)"
wait $job
rc=$(cat "$work/rc")
expect_rc 143 "SIGTERM to mpirun"
expect_line "$work/err" "^mpirun: received signal 15 \(Terminated\); forwarding it to the ranks and ending the job$" "SIGTERM message"
expect_clean "SIGTERM to mpirun"
echo "failures OK"
