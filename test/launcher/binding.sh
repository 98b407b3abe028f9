#!/bin/bash
# Binding: --bind-to core gives each rank one distinct core; --bind-to none
# leaves mpirun's cpuset; the default binds like --bind-to core, round-robin
# when ranks outnumber cores; --display-map reports it.
. "$AXON_SRCDIR/test/launcher/lib.sh"

own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
cores=$(nproc)
if [[ $cores -lt 2 ]]; then
    echo "needs 2 usable cores, this machine allows $cores"
    exit 77
fi

cpus_of() { sed -n "s/^rank $1 cpus //p" "$work/out"; }

run_mpirun -np 2 --bind-to core "$probe" cpus
expect_rc 0 "--bind-to core"
c0=$(cpus_of 0)
c1=$(cpus_of 1)
# One core each. This test expects one hardware thread per core, as here;
# with SMT a core's list would be two numbers.
if lscpu 2>/dev/null | grep -Eq '^Thread\(s\) per core:[[:space:]]+1$'; then
    [[ "$c0" =~ ^[0-9]+$ && "$c1" =~ ^[0-9]+$ ]] || { show_output; fail "not one cpu each: '$c0' '$c1'"; }
fi
[[ -n "$c0" && -n "$c1" && "$c0" != "$c1" && "$c0" != "$own" ]] || { show_output; fail "cores not distinct"; }

run_mpirun -np 2 --bind-to none "$probe" cpus
expect_rc 0 "--bind-to none"
[[ "$(cpus_of 0)" == "$own" && "$(cpus_of 1)" == "$own" ]] || { show_output; fail "--bind-to none changed the cpuset"; }

# Default: one core per rank, round-robin when ranks outnumber the cores
# (rank r shares rank r - cores' core).
run_mpirun -np "$cores" "$probe" cpus
expect_rc 0 "default binding, fitting"
[[ "$(cpus_of 0)" != "$own" ]] || { show_output; fail "default did not bind $cores ranks"; }
[[ "$(cpus_of 0)" == "$c0" && "$(cpus_of 1)" == "$c1" ]] || { show_output; fail "default binding differs from --bind-to core"; }
run_mpirun -np $((2 * cores)) "$probe" cpus
expect_rc 0 "default binding, oversubscribed"
for ((r = 0; r < 2 * cores; r++)); do
    c=$(cpus_of $r)
    [[ -n "$c" && "$c" != "$own" ]] || { show_output; fail "rank $r not bound although the default binds"; }
    if ((r >= cores)); then
        [[ "$c" == "$(cpus_of $((r - cores)))" ]] || { show_output; fail "rank $r not on rank $((r - cores))'s core"; }
    fi
done
run_mpirun -np $((cores + 1)) --bind-to none "$probe" cpus
expect_rc 0 "oversubscribed, --bind-to none"
for ((r = 0; r <= cores; r++)); do
    [[ "$(cpus_of $r)" == "$own" ]] || { show_output; fail "rank $r bound despite --bind-to none"; }
done

# --display-map names every rank and its core.
run_mpirun -np 2 --bind-to core --display-map "$probe"
expect_rc 0 "--display-map"
expect_line "$work/out" "^mpirun: job axon\.[0-9]+\.[0-9a-f]{8}: 2 ranks on 1 node, bound to cores$" "map header"
expect_line "$work/out" "^mpirun:   rank 0 on .*: core 0 \(cpus $c0\)$" "map of rank 0"
expect_line "$work/out" "^mpirun:   rank 1 on .*: core 1 \(cpus $c1\)$" "map of rank 1"

# An mpirun restricted to one cpu keeps its ranks inside it (both bound to
# that cpu's core, reduced to the cpu).
first=${c0}
run_mpirun_restricted() { taskset -c "$first" "$MPIRUN" "$@" >"$work/out" 2>"$work/err" </dev/null; rc=$?; }
if command -v taskset >/dev/null; then
    run_mpirun_restricted -np 2 "$probe" cpus
    expect_rc 0 "mpirun restricted to one cpu"
    [[ "$(cpus_of 0)" == "$first" && "$(cpus_of 1)" == "$first" ]] || { show_output; fail "ranks escaped mpirun's cpuset"; }
fi
echo "binding OK"
