#!/usr/bin/env bash
# compare.sh: point-to-point benchmarks side by side for Axon, Open MPI and
# MPICH on this machine. Builds contrib/bench once per MPI, runs every
# benchmark several times with the MPIs interleaved (A B C A B C ...) so that
# drift and background load hit all of them alike, takes the median per size
# across runs and prints one table per benchmark.
#
# Usage: contrib/bench/compare.sh [--axon PREFIX] [--runs N] [-np N] [--markdown] ...
#        (compare.sh --help lists every option)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
    cat <<'EOF'
usage: compare.sh [options]
  --axon PREFIX       also run Axon: PREFIX/bin/mpicc and PREFIX/bin/mpirun
  --axon-args "ARGS"  extra arguments for Axon's mpirun (e.g. binding flags)
  --runs N            runs per benchmark and MPI, interleaved; default 3
  -np N, --np N       ranks; default 2 (ranks 0 and 1 measure; -np 4 on a
                      2-core machine shows behaviour when oversubscribed)
  --bench LIST        comma-separated subset of latency,bw,bibw,vector; default all
                      (message rate, messages/s, window of 64, 1-64 B: mr (one pair, ranks
                      0 -> 1) and mbw_mr (all pairs: rank i -> i + N/2, N = the cores,
                      rounded down to even, unless mbw_mr@N);
                      start-up: startup (MPI_Init to the first barrier done, inside the job,
                      and the whole mpirun of that hello, timed from outside);
                      NAME@N runs one benchmark at N ranks whatever -np says (e.g.
                      startup@256, coll_allreduce@64; a coll_OP@N without --sizes
                      measures 8 B only after 10 warm-up calls: -m 8:8 -x 10);
                      scale = startup@64,startup@256,coll_barrier@64,coll_bcast@64,
                      coll_allreduce@64;
                      (collectives, not in the default: coll_allreduce, coll_bcast, coll_reduce,
                      coll_allgather, coll_alltoall, coll_barrier and coll_i<same> with overlap;
                      coll_<blocking op>_osu: OSU's loop, each call timed alone and followed
                      by an untimed barrier, with a second table for the whole iteration;
                      one-sided, rank 0 -> 1 in lock_all + flush, rma_latency.c: rma_<flavor>_<op>
                      with flavor allocate or create and op put, get, accumulate, fetch_and_op,
                      compare_and_swap, or put_bw / get_bw (MB/s, 64 operations per flush),
                      e.g. rma_allocate_put; --sizes / --bench-args ignored)
  --sizes MIN:MAX     size range passed to every benchmark as -m
  --bench-args "ARGS" extra arguments for every benchmark (e.g. "-r 21")
  --markdown          print the tables as Markdown (for docs/performance.md)
  --results DIR       keep builds and raw outputs here; default a new /tmp dir
  --timeout SECONDS   limit for one benchmark run; default 300
  --no-openmpi, --no-mpich   leave a peer out
EOF
}

runs=3 np=2 markdown=0 axon_prefix="" axon_args="" sizes="" bench_args=""
results="" run_timeout=300 benches="latency,bw,bibw,vector" use_openmpi=1 use_mpich=1
while [ $# -gt 0 ]; do
    case "$1" in
        --axon) axon_prefix=${2:?--axon needs a PREFIX}; shift 2 ;;
        --axon-args) axon_args=${2?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        -np|--np) np=${2:?}; shift 2 ;;
        --bench) benches=${2:?}; shift 2 ;;
        --sizes) sizes=${2:?}; shift 2 ;;
        --bench-args) bench_args=${2?}; shift 2 ;;
        --markdown) markdown=1; shift ;;
        --results) results=${2:?}; shift 2 ;;
        --timeout) run_timeout=${2:?}; shift 2 ;;
        --no-openmpi) use_openmpi=0; shift ;;
        --no-mpich) use_mpich=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "compare.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$runs" in ''|*[!0-9]*|0) echo "compare.sh: --runs needs a count >= 1" >&2; exit 2 ;; esac
case "$np" in ''|*[!0-9]*|0|1) echo "compare.sh: -np needs at least 2" >&2; exit 2 ;; esac
benches=${benches//scale/startup@64,startup@256,coll_barrier@64,coll_bcast@64,coll_allreduce@64}
for token in ${benches//,/ }; do
    b=${token%@*}
    if [ "$b" != "$token" ]; then
        case "${token#*@}" in ''|*[!0-9]*|0|1) echo "compare.sh: $token: ranks after @ must be at least 2" >&2; exit 2 ;; esac
    fi
    case "$b" in coll_allreduce_osu|coll_bcast_osu|coll_reduce_osu|coll_allgather_osu|coll_alltoall_osu) continue ;; esac
    case "$b" in rma_allocate_*|rma_create_*) case "${b#rma_*_}" in put|get|accumulate|fetch_and_op|compare_and_swap|put_bw|get_bw) continue ;; esac ;; esac
    case "$b" in latency|bw|bibw|vector|mr|mbw_mr|startup|coll_allreduce|coll_bcast|coll_reduce|coll_allgather|coll_alltoall|coll_barrier|coll_iallreduce|coll_ibcast|coll_ireduce|coll_iallgather|coll_ialltoall|coll_ibarrier) ;; *) echo "compare.sh: unknown benchmark: $b" >&2; exit 2 ;; esac
done
bench_ranks() { # token -> ranks it runs at (NAME@N: N; mbw_mr: every core, in pairs; else -np)
    case "$1" in
        *@*) echo "${1#*@}" ;;
        mbw_mr) local even=$(( $(nproc 2>/dev/null || echo 2) / 2 * 2 )); echo $(( even < 2 ? 2 : even )) ;;
        *) echo "$np" ;;
    esac
}

say() { printf '%s\n' "$*" >&2; }

if [ -z "$results" ]; then
    results=$(mktemp -d /tmp/axon-bench.XXXXXX) || exit 1
fi
mkdir -p "$results/raw" "$results/build" || exit 1

cpus=$(nproc 2>/dev/null || echo 1)
am_root=0; [ "$(id -u)" = 0 ] && am_root=1

# ---- which MPIs: id, label, compiler, launcher command --------------------
# mpi_launch: the launcher when the ranks fit the cores, mpi_launch_over when
# they outnumber them (only Open MPI needs other flags then); -np N follows.
mpi_ids=() mpi_labels=() mpi_cc=() mpi_launch=() mpi_launch_over=() mpi_version=()
add_mpi() { mpi_ids+=("$1"); mpi_labels+=("$2"); mpi_cc+=("$3"); mpi_launch+=("$4"); mpi_launch_over+=("$5"); mpi_version+=("$6"); }
launch_for() { # index ranks -> the whole launch command
    if [ "$2" -gt "$cpus" ]; then echo "${mpi_launch_over[$1]} -np $2"; else echo "${mpi_launch[$1]} -np $2"; fi
}

if [ -n "$axon_prefix" ]; then
    if [ -x "$axon_prefix/bin/mpicc" ] && [ -x "$axon_prefix/bin/mpirun" ]; then
        v=$("$axon_prefix/bin/mpirun" --version 2>/dev/null | head -n 1)
        add_mpi axon "Axon" "$axon_prefix/bin/mpicc" \
            "$axon_prefix/bin/mpirun $axon_args" "$axon_prefix/bin/mpirun $axon_args" "${v:-unknown}"
    else
        say "compare.sh: no $axon_prefix/bin/mpicc or mpirun; is Axon installed there (make install)?"
        exit 2
    fi
fi
install_hint="apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev"
if [ "$use_openmpi" = 1 ]; then
    if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
        ompi_run="mpirun.openmpi"
        [ "$am_root" = 1 ] && ompi_run="$ompi_run --allow-run-as-root"
        # More ranks than cores: Open MPI refuses to start or to bind unless told it may.
        v=$(mpirun.openmpi --version 2>/dev/null | head -n 1)
        add_mpi ompi "Open MPI" mpicc.openmpi "$ompi_run --bind-to core" \
            "$ompi_run --oversubscribe --bind-to core:overload-allowed" "${v:-unknown}"
    else
        say "compare.sh: Open MPI not found (mpicc.openmpi/mpirun.openmpi); column skipped. Install: $install_hint"
    fi
fi
if [ "$use_mpich" = 1 ]; then
    if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
        v=$(mpirun.mpich --version 2>/dev/null | awk -F: '/Version/ {gsub(/^[ \t]+/, "", $2); print "HYDRA " $2; exit}')
        add_mpi mpich "MPICH" mpicc.mpich "mpirun.mpich -bind-to core" "mpirun.mpich -bind-to core" "${v:-unknown}"
    else
        say "compare.sh: MPICH not found (mpicc.mpich/mpirun.mpich); column skipped. Install: $install_hint"
    fi
fi
if [ ${#mpi_ids[@]} -eq 0 ]; then
    say "compare.sh: no MPI to run. Install the peers ($install_hint) or pass --axon PREFIX."
    exit 2
fi

# ---- build once per MPI ----------------------------------------------------
built_ids=()
for i in "${!mpi_ids[@]}"; do
    id=${mpi_ids[$i]}
    say "building with ${mpi_cc[$i]} ..."
    # -B: a --results folder used before holds programs linked against
    # whatever library was installed then; never measure those again.
    if make -B -s -C "$here" MPICC="${mpi_cc[$i]}" OUT="$results/build/$id" all \
            >"$results/build/$id.log" 2>&1; then
        built_ids+=("$i")
    else
        say "compare.sh: build with ${mpi_cc[$i]} failed; ${mpi_labels[$i]} skipped. Log: $results/build/$id.log"
        tail -n 5 "$results/build/$id.log" >&2
    fi
done
[ ${#built_ids[@]} -gt 0 ] || { say "compare.sh: nothing built"; exit 1; }

# ---- is the machine quiet? ----------------------------------------------------
# Another process on the CPUs skews every figure, the oversubscribed ones
# most: a rank that yields hands its CPU to that process instead of to its
# partner. Sample the CPUs' busy time for a second before the runs and name
# the busiest processes when more than a tenth of it was taken.
cpu_times() { # -> "total idle" jiffies of all CPUs so far
    awk '/^cpu / { idle = $5 + $6; t = 0; for (i = 2; i <= NF; i++) t += $i; print t, idle }' /proc/stat 2>/dev/null
}
cpu_busy_percent() {
    local a b
    a=$(cpu_times)
    sleep 1
    b=$(cpu_times)
    [ -n "$a" ] && [ -n "$b" ] || return 0
    echo "$a $b" | awk '{ dt = $3 - $1; di = $4 - $2; if (dt > 0) printf "%d", 100 * (dt - di) / dt }'
}
busy=$(cpu_busy_percent)
busy_note=""
if [ -n "$busy" ] && [ "$busy" -gt 10 ]; then
    top_procs=$(ps -eo pcpu=,pid=,comm= --sort=-pcpu 2>/dev/null | awk '$1 > 5 && $3 != "ps" { printf "%s%s (pid %s, %s%%)", sep, $3, $2, $1; sep = ", " }' | cut -c1-300)
    busy_note="the CPUs were ${busy}% busy before the runs${top_procs:+: $top_procs}; figures are not comparable with a quiet machine's"
    say "compare.sh: WARNING: $busy_note"
fi

# ---- run, interleaved --------------------------------------------------------
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
started=$(date +%s)
failures=0
for bench in ${benches//,/ }; do
    for run in $(seq 1 "$runs"); do
        for i in "${built_ids[@]}"; do
            id=${mpi_ids[$i]}
            out="$results/raw/$bench.$id.$run"
            name=${bench%@*} ranks=$(bench_ranks "$bench")
            args=()
            if [ -n "$sizes" ]; then args+=(-m "$sizes")
            elif [ "$name" != "$bench" ] && [ "${name#coll_}" != "$name" ]; then args+=(-m 8:8 -x 10)
            fi
            # shellcheck disable=SC2206 # word splitting of user arguments is wanted
            args+=($bench_args)
            say "[$(date +%T)] $bench run $run/$runs: ${mpi_labels[$i]} ($ranks ranks)"
            prog=("$results/build/$id/pt2pt_$name")
            case "$name" in
                mr) prog=("$results/build/$id/pt2pt_mr" -p 1) ;;
                mbw_mr) prog=("$results/build/$id/pt2pt_mr" -p all) ;;
                startup) prog=("$results/build/$id/startup"); args=() ;;
                coll_*_osu) op=${name#coll_}; prog=("$results/build/$id/coll_latency" -c "${op%_osu}" -b) ;;
                coll_*) prog=("$results/build/$id/coll_latency" -c "${name#coll_}") ;;
                rma_*) flavor=${name#rma_}; flavor=${flavor%%_*}
                       prog=("$results/build/$id/rma_latency" "$flavor" "${name#rma_"$flavor"_}"); args=() ;;
            esac
            # startup: the job is timed from just before the launcher runs.
            launched=$(date +%s%N)
            [ "$name" = startup ] && args+=(-l "$launched")
            # shellcheck disable=SC2046 # the launcher command is a word list
            timeout --kill-after=10 "$run_timeout" $(launch_for "$i" "$ranks") \
                "${prog[@]}" "${args[@]}" >"$out.out" 2>"$out.err"
            rc=$?
            # Whole launch to exit, ms: the hello's wall time for startup.
            echo $(( ($(date +%s%N) - launched) / 1000000 )) >"$out.wall"
            if [ "$rc" -ne 0 ]; then
                failures=$((failures + 1))
                say "  FAILED (exit status $rc$([ "$rc" = 124 ] && echo ", timed out after ${run_timeout}s")); last lines of $out.err:"
                tail -n 5 "$out.err" >&2
                mv "$out.out" "$out.failed"
            fi
        done
    done
done
elapsed=$(( $(date +%s) - started ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---- report ------------------------------------------------------------------
# Median across runs, per size, of each run's per-size median (column 2).
median_across_runs() { # bench id [column] -> "size value runs spread" lines
    local f files=() column=${3:-2}
    for f in "$results/raw/$1.$2".*.out; do [ -e "$f" ] && files+=("$f"); done
    [ ${#files[@]} -gt 0 ] || return 0
    awk -v c="$column" '!/^#/ && NF >= c { print $1, $c }' "${files[@]}" | median_by_key
}
# The same for startup, keyed by ranks, over every startup@N run of one MPI:
# the job's own ready_ms (column 2), or the launcher's wall time (.wall).
startup_medians() { # id ready|wall -> "ranks value runs spread" lines
    local f
    for f in "$results/raw/"startup*".$1".*.out; do
        [ -e "$f" ] || continue
        if [ "$2" = ready ]; then awk '!/^#/ && NF >= 2 { print $1, $2 }' "$f"
        else awk -v wall="$(cat "${f%.out}.wall")" '!/^#/ && NF >= 2 { print $1, wall }' "$f"
        fi
    done | median_by_key
}
median_by_key() { # "key value" lines -> "key median count spread" lines
    sort -k1,1n -k2,2g |
        awk '{ size[NR] = $1; value[NR] = $2 }
             END {
                 for (i = 1; i <= NR; i = j) {
                     for (j = i; j <= NR && size[j] == size[i]; j++) ;
                     n = j - i; mid = i + int(n / 2)
                     m = (n % 2) ? value[mid] : (value[mid - 1] + value[mid]) / 2
                     # spread: largest over smallest per-run median (1 = runs agree)
                     spread = (value[i] > 0) ? value[j - 1] / value[i] : 1
                     printf "%s %.6g %d %.3g\n", size[i], m, n, spread

                 }
             }'
}

library_line() { # id -> the library's own version string from a run
    local f
    for f in "$results/raw/"*".$1".*.out; do
        [ -e "$f" ] && { sed -n "s/^# mpi: //p" "$f" | tr -s "\t " "  " | head -n 1; return; }
    done
    echo "(no successful run)"
}

at_ranks=""
for bench in ${benches//,/ }; do case "$bench" in *@*) at_ranks="$at_ranks $bench" ;; esac; done
{
    cpu_model=$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' /proc/cpuinfo 2>/dev/null)
    sockets=$(lscpu 2>/dev/null | awk -F: '/^Socket\(s\)/ { gsub(/ /, "", $2); print $2 }')
    per_socket=$(lscpu 2>/dev/null | awk -F: '/^Core\(s\) per socket/ { gsub(/ /, "", $2); print $2 }')
    threads=$(lscpu 2>/dev/null | awk -F: '/^Thread\(s\) per core/ { gsub(/ /, "", $2); print $2 }')
    p="# "; [ "$markdown" = 1 ] && p=""
    echo "${p}Axon point-to-point comparison, $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
    [ "$markdown" = 1 ] && echo
    echo "${p}- cpu: ${cpu_model:-unknown}; $cpus usable cpus (${sockets:-?} socket(s) x ${per_socket:-?} cores x ${threads:-?} threads)"
    echo "${p}- kernel: $(uname -srm)"
    echo "${p}- load average before / after: ${load_before:-?} / ${load_after:-?}"
    [ -n "$busy_note" ] && echo "${p}- WARNING: $busy_note"
    echo "${p}- ranks: $np; runs per MPI: $runs, interleaved; median per size across runs; ${elapsed}s"
    for i in "${built_ids[@]}"; do
        echo "${p}- ${mpi_labels[$i]}: $(library_line "${mpi_ids[$i]}") [launcher: ${mpi_version[$i]}]"
        echo "${p}  run as: $(launch_for "$i" "$np") pt2pt_<bench>$([ -n "$sizes" ] && echo " -m $sizes")${bench_args:+ $bench_args}"
        [ "${mpi_launch_over[$i]}" != "${mpi_launch[$i]}" ] &&
            echo "${p}  above $cpus ranks: ${mpi_launch_over[$i]} -np N"
    done
    [ -n "$at_ranks" ] && echo "${p}- NAME@N benchmarks ran at N ranks:$at_ranks"
    [ "$failures" -gt 0 ] && echo "${p}- $failures run(s) FAILED; their columns use the remaining runs (raw: $results/raw)"
    echo
} | tee "$results/summary.txt"

# One table: rows from per-MPI "key value runs spread" files, in column order.
print_table() { # title lower|higher bytes|ranks label-list files...
    local title=$1 better=$2 rows=$3 labels=$4
    shift 4
    awk -v labels="$labels" -v better="$better" -v markdown="$markdown" -v title="$title" \
        -v runs="$runs" -v rows="$rows" '
        function human(b) {
            if (rows == "ranks") return b " ranks"
            if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
            if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
            return b " B"
        }
        function fmt(v) {
            if (v == "") return "-"
            if (v < 10) return sprintf("%.3f", v)
            if (v < 1000) return sprintf("%.1f", v)
            return sprintf("%.0f", v)
        }
        FNR == 1 { column++ }
        {
            value[$1, column] = $2
            if (!($1 in seen)) { seen[$1] = 1; sizes[++nsizes] = $1 }
            if ($4 + 0 > worst[column] + 0) { worst[column] = $4; worst_at[column] = $1 }
        }
        END {
            ncols = split(labels, name, "|")
            axon = 0
            for (c = 1; c <= ncols; c++) if (name[c] == "Axon") axon = c
            ratio_head = (better == "lower") \
                ? "Axon/best peer (< 1: Axon faster)" : "Axon/best peer (> 1: Axon faster)"
            sense = (better == "lower") ? "lower is better" : "higher is better"
            if (markdown) {
                printf "**%s** (%s; median of %d runs)\n\n| %s |", title, sense, runs, rows == "ranks" ? "ranks" : "size"
                for (c = 1; c <= ncols; c++) printf " %s |", name[c]
                if (axon) printf " %s |", ratio_head
                printf "\n|---:|"
                for (c = 1; c <= ncols; c++) printf "---:|"
                if (axon) printf "---:|"
                printf "\n"
            } else {
                printf "# %s (%s; median of %d runs)\n%-10s", title, sense, runs, rows == "ranks" ? "ranks" : "size"
                for (c = 1; c <= ncols; c++) printf " %12s", name[c]
                if (axon) printf "  %s", ratio_head
                printf "\n"
            }
            # Sizes in numeric order (insertion sort: a few dozen at most).
            for (i = 2; i <= nsizes; i++)
                for (j = i; j > 1 && sizes[j - 1] + 0 > sizes[j] + 0; j--) {
                    t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t
                }
            for (i = 1; i <= nsizes; i++) {
                s = sizes[i]; best = ""
                for (c = 1; c <= ncols; c++) {
                    if (c == axon || !((s, c) in value)) continue
                    v = value[s, c] + 0
                    if (best == "" || (better == "lower" ? v < best : v > best)) best = v
                }
                ratio = "-"
                if (axon && ((s, axon) in value) && best != "" && best > 0)
                    ratio = sprintf("%.2f", value[s, axon] / best)
                if (markdown) {
                    printf "| %s |", human(s)
                    for (c = 1; c <= ncols; c++) printf " %s |", fmt(value[s, c])
                    if (axon) printf " %s |", ratio
                    printf "\n"
                } else {
                    printf "%-10s", s
                    for (c = 1; c <= ncols; c++) printf " %12s", fmt(value[s, c])
                    if (axon) printf "  %s", ratio
                    printf "\n"
                }
            }
            # How far apart the runs were: a spread far above 1 means the
            # machine, not the MPI, decided the figures at that size.
            line = ""
            for (c = 1; c <= ncols; c++)
                if (worst[c] != "")
                    line = line sprintf("%s%s %.2fx at %s", line == "" ? "" : ", ", name[c],
                                        worst[c], markdown || rows == "ranks" ? human(worst_at[c]) : worst_at[c] " B")
            if (runs > 1 && line != "")
                printf "%sworst run-to-run spread (largest / smallest per-run median): %s\n",
                       markdown ? "\n" : "# ", line
            printf "\n"
        }' "$@" | tee -a "$results/summary.txt"
}

startup_done=0
for bench in ${benches//,/ }; do
    name=${bench%@*}
    at=""; [ "$name" != "$bench" ] && at=", ${bench#*@} ranks"
    if [ "$name" = startup ]; then
        # Every startup@N goes into the same two tables, one row per rank count.
        [ "$startup_done" = 1 ] && continue
        startup_done=1
        for metric in ready wall; do
            labels="" tables=""
            for i in "${built_ids[@]}"; do
                id=${mpi_ids[$i]}
                startup_medians "$id" "$metric" >"$results/startup-$metric.$id.median"
                labels="$labels${labels:+|}${mpi_labels[$i]}"
                tables="$tables $results/startup-$metric.$id.median"
            done
            if [ "$metric" = ready ]; then
                title="startup: ms from entering MPI_Init to leaving the first MPI_Barrier, slowest rank"
            else
                title="startup: ms of the whole mpirun of that hello (launch to exit, timed outside)"
            fi
            # shellcheck disable=SC2086 # one file per MPI, in column order
            print_table "$title" lower ranks "$labels" $tables
        done
        continue
    fi
    case "$name" in
        mr)      title="pt2pt_mr -p 1: messages/s, one pair (rank 0 -> 1), window of 64"; better=higher ;;
        mbw_mr)  title="pt2pt_mr -p all: messages/s, all pairs at once (rank i -> i + N/2), window of 64"; better=higher
                 [ -z "$at" ] && at=", $(bench_ranks mbw_mr) ranks" ;;
        latency) title="pt2pt_latency: one-way latency in microseconds"; better=lower ;;
        bw)      title="pt2pt_bw: streaming bandwidth in MB/s (10^6 bytes), window of 64"; better=higher ;;
        bibw)    title="pt2pt_bibw: bidirectional bandwidth in MB/s, both directions summed"; better=higher ;;
        coll_*_osu) op=${name#coll_}; op=${op%_osu}
                 title="coll_latency -c $op -b (OSU loop: call, untimed barrier): microseconds per call, averaged over the ranks"; better=lower ;;
        coll_*)  title="coll_latency -c ${name#coll_}: microseconds per call, all ranks (size = bytes per rank)"; better=lower ;;
        rma_*_bw) title="rma_latency ${name#rma_}: MB/s (10^6 bytes), 64 operations per MPI_Win_flush, rank 0 -> 1 in MPI_Win_lock_all"; better=higher ;;
        rma_*)   title="rma_latency ${name#rma_}: microseconds per operation + MPI_Win_flush, rank 0 -> 1 in MPI_Win_lock_all"; better=lower ;;
        vector)  title="pt2pt_vector: one-way latency in microseconds, vector(N, 1, 2) of doubles (size = data bytes)"; better=lower ;;
    esac
    labels="" tables=""
    for i in "${built_ids[@]}"; do
        id=${mpi_ids[$i]}
        median_across_runs "$bench" "$id" >"$results/$bench.$id.median"
        labels="$labels${labels:+|}${mpi_labels[$i]}"
        tables="$tables $results/$bench.$id.median"
    done
    # shellcheck disable=SC2086 # one file per MPI, in column order
    print_table "$title$at" "$better" bytes "$labels" $tables
    if [ "${name%_osu}" != "$name" ]; then
        tables=""
        for i in "${built_ids[@]}"; do
            median_across_runs "$bench" "${mpi_ids[$i]}" 6 >"$results/$bench.${mpi_ids[$i]}.iteration.median"
            tables="$tables $results/$bench.${mpi_ids[$i]}.iteration.median"
        done
        # shellcheck disable=SC2086
        print_table "coll_latency -c $op -b: microseconds per iteration (call + barrier), slowest rank$at" lower bytes "$labels" $tables
    fi
done
say "raw outputs, builds and this summary: $results"
[ "$failures" -eq 0 ]
