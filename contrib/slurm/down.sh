#!/bin/bash
# down.sh DIR -- stops the cluster up.sh started in DIR (idempotent): asks
# slurmctld to shut everything down, then makes sure through the pid files,
# and stops the private munged. DIR itself is left to the caller.
set -u
dir=${1:?usage: down.sh DIR}
export SLURM_CONF="$dir/slurm.conf"
[[ -f "$SLURM_CONF" ]] && timeout 5 scontrol shutdown >/dev/null 2>&1
stop() {  # stop PIDFILE: TERM, then KILL after 2 s
    local pid
    [[ -f "$1" ]] || return 0
    pid=$(cat "$1")
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null
        for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$1"
}
for pidfile in "$dir"/slurmd.*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do stop "$pidfile"; done
exit 0
