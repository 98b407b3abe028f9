#!/bin/bash
# Binding and mapping inside a node: --bind-to socket|numa|l3cache|hwthread|
# core|none (hwloc objects; round-robin when ranks outnumber them), --map-by
# ppr:N:core|socket|numa|node and :PE=n, --cpus-per-rank, Hydra's
# -bind-to core:N, --cpu-set, and --report-bindings as Open MPI prints it.
# Expected cpus come from sysfs, so the test holds on any machine with two
# usable cpus; the exact --report-bindings lines are checked where the
# machine is one socket of single-thread cores (as the 2-core test VM).
. "$AXON_SRCDIR/test/launcher/lib.sh"
[[ $(nproc) -ge 2 ]] || { echo "needs 2 usable cpus, this machine allows $(nproc)"; exit 77; }
own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
me=$(hostname)

cpus_of() { sed -n "s/^rank $1 cpus //p" "$work/out"; }
# Every cpu of ours in the same OBJECT as cpu C (sysfs), as a list.
sibling_cpus() {  # sibling_cpus C core|package|l3|numa
    local c=$1 list
    case $2 in
        core) list=$(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list) ;;
        package) list=$(cat /sys/devices/system/cpu/cpu$c/topology/core_siblings_list) ;;
        l3) list=$(cat /sys/devices/system/cpu/cpu$c/cache/index3/shared_cpu_list 2>/dev/null || echo "$own") ;;
        numa) list=$(cat /sys/devices/system/cpu/cpu$c/node*/cpulist 2>/dev/null | head -n 1) ;;
    esac
    # reduced to what mpirun may use
    python3 - "$list" "$own" <<'EOF'
import sys
def parse(s):
    out = set()
    for part in s.split(','):
        if '-' in part:
            a, b = part.split('-'); out.update(range(int(a), int(b) + 1))
        elif part:
            out.add(int(part))
    return out
cpus = sorted(parse(sys.argv[1]) & parse(sys.argv[2]))
ranges, start = [], None
for i, c in enumerate(cpus):
    if start is None: start = c
    if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
        ranges.append(str(start) if start == c else f"{start}-{c}"); start = None
print(','.join(ranges))
EOF
}
first_cpu() { echo "${1%%[,-]*}"; }

run_mpirun -np 2 --bind-to core "$probe" cpus
expect_rc 0 "--bind-to core"
c0=$(cpus_of 0) c1=$(cpus_of 1)
[[ -n "$c0" && -n "$c1" && "$c0" != "$c1" ]] || { show_output; fail "--bind-to core: not two cores"; }

# Wider levels: each rank gets every cpu of the object holding its core.
for level in socket:package numa:numa l3cache:l3; do
    run_mpirun -np 2 --bind-to "${level%%:*}" "$probe" cpus
    expect_rc 0 "--bind-to ${level%%:*}"
    for r in 0 1; do
        c=$([[ $r == 0 ]] && echo "$c0" || echo "$c1")
        want=$(sibling_cpus "$(first_cpu "$c")" "${level##*:}")
        [[ -n "$want" ]] || want=$own  # no such object here: the whole node
        [[ "$(cpus_of $r)" == "$want" ]] || { show_output; fail "--bind-to ${level%%:*}: rank $r has '$(cpus_of $r)', expected '$want'"; }
    done
done
# hwthread: one hardware thread each; none: mpirun's cpuset.
run_mpirun -np 2 --bind-to hwthread "$probe" cpus
expect_rc 0 "--bind-to hwthread"
[[ "$(cpus_of 0)" =~ ^[0-9]+$ && "$(cpus_of 1)" =~ ^[0-9]+$ && "$(cpus_of 0)" != "$(cpus_of 1)" ]] ||
    { show_output; fail "--bind-to hwthread: not one thread each"; }
run_mpirun -np 2 --bind-to none "$probe" cpus
[[ "$(cpus_of 0)|$(cpus_of 1)" == "$own|$own" ]] || { show_output; fail "--bind-to none"; }

# Two cores per rank: :PE=2, --cpus-per-rank 2, Hydra's core:2.
pair=$(python3 -c "import sys; a,b=sorted([int(sys.argv[1]),int(sys.argv[2])]); print(f'{a}-{b}' if b==a+1 else f'{a},{b}')" \
    "$(first_cpu "$c0")" "$(first_cpu "$c1")")
if lscpu 2>/dev/null | grep -Eq '^Thread\(s\) per core:[[:space:]]+1$'; then
    for spelling in "--map-by slot:PE=2" "--map-by core:pe=2" "--cpus-per-rank 2" "-bind-to core:2"; do
        run_mpirun -np 1 $spelling "$probe" cpus
        expect_rc 0 "$spelling"
        [[ "$(cpus_of 0)" == "$pair" ]] || { show_output; fail "$spelling: rank 0 has '$(cpus_of 0)', expected '$pair'"; }
    done
fi

# ppr:N:core: N ranks share each core; ppr:N:node: N per node; without -np
# their product is the number of ranks.
cores=$(($(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)))
run_mpirun --map-by ppr:2:core "$probe" cpus
expect_rc 0 "--map-by ppr:2:core"
[[ $(grep -c ' cpus ' "$work/out") -eq $((2 * cores)) ]] || { show_output; fail "ppr:2:core did not start 2 per core"; }
[[ "$(cpus_of 0)" == "$(cpus_of 1)" && "$(cpus_of 0)" != "$(cpus_of 2)" ]] || { show_output; fail "ppr:2:core: ranks 0,1 share a core, 2 does not"; }
run_mpirun --map-by ppr:3:node "$probe" cpus
[[ $(grep -c ' cpus ' "$work/out") -eq 3 ]] || { show_output; fail "ppr:3:node did not start 3"; }
run_mpirun --map-by ppr:1:socket --display-map "$probe"
expect_rc 0 "--map-by ppr:1:socket"
sockets=$(lscpu -p=SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
expect_line "$work/out" "^mpirun: job .*: $sockets ranks? on 1 node" "ppr:1:socket: one per socket"

# --cpu-set: only these cpus, bound or not.
last=$(python3 -c "import sys; print(max(int(x) for p in sys.argv[1].split(',') for x in p.split('-')))" "$own")
run_mpirun -np 2 --cpu-set "$last" "$probe" cpus
expect_rc 0 "--cpu-set"
[[ "$(cpus_of 0)|$(cpus_of 1)" == "$last|$last" ]] || { show_output; fail "--cpu-set $last"; }
run_mpirun -np 2 --cpu-set "$last" --bind-to none "$probe" cpus
[[ "$(cpus_of 0)|$(cpus_of 1)" == "$last|$last" ]] || { show_output; fail "--cpu-set $last --bind-to none"; }
run_mpirun -np 1 --cpu-set 4095 "$probe"
expect_rc 1 "--cpu-set outside"
expect_line "$work/err" "^mpirun: --cpu-set 4095 names no cpu ranks may use here \(usable: $own\)$" "--cpu-set outside message"

# --report-bindings: Open MPI's lines on stderr, one per rank.
run_mpirun -np 2 --report-bindings "$probe"
expect_rc 0 "--report-bindings"
for r in 0 1; do
    expect_line "$work/err" "^\[$me:[0-9]+\] MCW rank $r bound to socket [0-9]+\[core [0-9]+\[hwt [0-9,-]+\]\]: (\[[B./]+\])+$" \
        "--report-bindings line of rank $r"
done
if [[ $(nproc) -eq 2 && $sockets -eq 1 ]] && lscpu | grep -Eq '^Thread\(s\) per core:[[:space:]]+1$'; then
    pid='[0-9]+'
    expect_line "$work/err" "^\[$me:$pid\] MCW rank 0 bound to socket 0\[core 0\[hwt 0\]\]: \[B/\.\]$" "rank 0, exactly"
    expect_line "$work/err" "^\[$me:$pid\] MCW rank 1 bound to socket 0\[core 1\[hwt 0\]\]: \[\./B\]$" "rank 1, exactly"
    run_mpirun -np 1 --bind-to socket --report-bindings "$probe"
    expect_line "$work/err" "^\[$me:$pid\] MCW rank 0 bound to socket 0\[core 0\[hwt 0\]\], socket 0\[core 1\[hwt 0\]\]: \[B/B\]$" \
        "--bind-to socket --report-bindings"
fi
run_mpirun -np 1 --bind-to none --report-bindings "$probe"
[[ "$(grep -c . "$work/err")" -eq 1 ]] || { show_output; fail "unbound: not one line"; }
expect_line "$work/err" "^\[$me:[0-9]+\] MCW rank 0 is not bound \(or bound to all available processors\)$" "unbound"
expect_no_orphans
echo "binding and mapping OK"
