# lib.sh -- helpers for the launcher tests (sourced, not run).
# Needs MPIRUN and AXON_BUILDDIR (set by test/run-tests.sh).
set -u
: "${MPIRUN:?}" "${AXON_BUILDDIR:?}"
probe="$AXON_BUILDDIR/test/launcher/pmix_probe"
# A word unique to this script run, passed to every rank as marker=..., so
# pgrep -f finds exactly this test's processes.
marker="launcher-test.$$.$RANDOM"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

# run_mpirun ARGS...: runs mpirun with stdin from /dev/null; sets $rc, and
# leaves stdout in $work/out and stderr in $work/err.
run_mpirun() {
    "$MPIRUN" "$@" >"$work/out" 2>"$work/err" </dev/null
    rc=$?
}

expect_rc() {  # expect_rc EXPECTED WHAT
    [[ $rc -eq $1 ]] || { show_output; fail "$2: exit status $rc, expected $1"; }
}

show_output() {
    echo "--- stdout"; cat "$work/out"; echo "--- stderr"; cat "$work/err"; echo "---"
}

expect_line() {  # expect_line FILE REGEX WHAT: some line of FILE matches the ERE
    grep -Eq -- "$2" "$1" || { show_output; fail "$3: no line matching /$2/ in $(basename "$1")"; }
}

expect_no_orphans() {  # every process of this test is gone
    local left
    left=$(pgrep -f "marker=$marker" || true)
    [[ -z "$left" ]] || { ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ',')"; fail "processes left behind: $left"; }
}

expect_no_job_files() {  # expect_no_job_files NSPACE [TMPDIR]
    local ns=$1 tmp=${2:-}
    local left
    left=$(ls /dev/shm 2>/dev/null | grep -F "axon.$ns." || true)
    [[ -z "$left" ]] || fail "shared-memory files left behind: $left"
    if [[ -n "$tmp" && -e "$tmp" ]]; then fail "tmpdir $tmp left behind"; fi
    return 0
}

# The field NAME=value of the first stdout line of rank R printed by "info".
info_field() {  # info_field RANK NAME
    grep -E "^rank=$1 " "$work/out" | head -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }
