# lib.sh -- helpers for the hang doctor's tests (sourced): the launcher
# tests' helpers, the program that hangs, and a private TMPDIR (mpirun's
# and its daemons' tmpdirs, where the ranks answer) that must be empty
# after each job.
. "$AXON_SRCDIR/test/launcher/lib.sh"
prog="$AXON_BUILDDIR/test/hang/hang_prog"
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"

expect_clean_tmp() {  # no tmpdir (nor any answer file in it) left behind
    local left
    left=$(ls -A "$TMPDIR")
    [[ -z "$left" ]] || { ls -laR "$TMPDIR"; fail "left in TMPDIR: $left"; }
}

# block RANK: rank RANK's block of the hang report in $work/err (its first
# line and the detail lines under it).
block() {
    awk -v head="^mpirun: rank $1( \\(pid [0-9]+\\))?( on [^ :]+)?: " '
        $0 ~ head { inside = 1; print; next }
        inside && /^mpirun:   / { print; next }
        { inside = 0 }' "$work/err"
}

expect_in_block() {  # expect_in_block RANK REGEX WHAT
    block "$1" | grep -Eq -- "$2" || { show_output; fail "$3: no line matching /$2/ in rank $1's block"; }
}

expect_last_line() {  # expect_last_line TEXT WHAT: the last line of stderr
    [[ "$(tail -n 1 "$work/err")" == "$1" ]] || { show_output; fail "$2: last line of stderr is not '$1'"; }
}

count_reports() { grep -c '^mpirun: hang report (' "$work/err"; }
