#!/bin/bash
# up.sh -- a one-machine Slurm cluster for tests: a private munged, one
# slurmctld and N slurmd daemons (nodes n1..nN) on this host, every file
# (config, key, state, spool, logs, per-node TmpFS) under DIR.
#
#   contrib/slurm/up.sh DIR [N]      start (N defaults to 2); prints the
#                                    "export SLURM_CONF=..." line to use
#   contrib/slurm/down.sh DIR        stop everything started by up.sh
#
# Needs root and Debian's slurmd slurmctld slurm-client munge (and
# libpmix-dev, which mpi_pmix_v4.so loads without a package dependency).
# Nodes share the machine: SlurmdParameters=config_overrides lets each claim
# 4 CPUs, proctrack/linuxproc and task/none need no cgroup setup.
# Exit status 0 when every node is idle; otherwise 1 with the reason.
set -u
dir=${1:?usage: up.sh DIR [N]}
count=${2:-2}
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null 2>&1 || { echo "up.sh: $tool is not installed" >&2; exit 1; }
done
mkdir -p "$dir"/{state,log,munge}
chmod 700 "$dir/munge"

# A private munged: its own key and socket, so nothing of the machine's is used.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" || { echo "up.sh: munged did not start" >&2; exit 1; }

# Ports: a random base, so concurrent clusters (and leftovers) do not clash.
base=$((20000 + (RANDOM % 2000) * 10))
host=$(hostname -s)
nodes=""
{
    echo "ClusterName=axontest"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$base"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/socket"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "TmpFS=$dir/tmp/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SwitchType=switch/none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    for i in $(seq 1 "$count"); do
        mkdir -p "$dir/spool/n$i" "$dir/tmp/n$i"
        echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=4 State=UNKNOWN"
        nodes="$nodes${nodes:+,}n$i"
    done
    echo "PartitionName=test Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
} >"$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"

slurmctld -f "$SLURM_CONF" || { echo "up.sh: slurmctld did not start (see $dir/log)" >&2; exit 1; }
for i in $(seq 1 "$count"); do
    slurmd -f "$SLURM_CONF" -N "n$i" || { echo "up.sh: slurmd n$i did not start (see $dir/log)" >&2; exit 1; }
done
for _ in $(seq 1 100); do
    states=$(sinfo -h -o %T 2>/dev/null | sort -u)
    [[ "$states" == idle ]] && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
    sleep 0.1
done
echo "up.sh: the nodes did not become idle (sinfo: ${states:-no answer}; see $dir/log)" >&2
exit 1
