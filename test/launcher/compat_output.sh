#!/bin/bash
# --output-filename DIR (Open MPI's layout: DIR/1/rank.N/stdout and stderr,
# N zero-padded to the digits of the number of ranks; :nocopy, :nojobid; a
# relative DIR is mpirun's; written on the rank's node), and Hydra's -l
# (-prepend-rank) tags.
. "$AXON_SRCDIR/test/launcher/lib.sh"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
cd "$work" || fail "cd $work"

# mpirun's own stdout and stderr go to $work/o and $work/e here.
runs() {  # runs ARGS...
    "$MPIRUN" "$@" >"$work/o" 2>"$work/e" </dev/null
    rc=$?
}
show() { echo "--- stdout"; cat "$work/o"; echo "--- stderr"; cat "$work/e"; echo "---"; }

# A relative DIR is below mpirun's directory; each rank's two files, and
# the output still on mpirun's stdout and stderr.
runs -np 2 --output-filename rel "$probe" say=hello err=oops marker=$marker
[[ $rc -eq 0 ]] || { show; fail "--output-filename rel: exit $rc"; }
for r in 0 1; do
    [[ "$(cat "$work/rel/1/rank.$r/stdout")" == hello ]] || fail "rank $r stdout file: $(cat "$work/rel/1/rank.$r/stdout")"
    [[ "$(cat "$work/rel/1/rank.$r/stderr")" == oops ]] || fail "rank $r stderr file: $(cat "$work/rel/1/rank.$r/stderr")"
done
[[ "$(ls "$work/rel/1")" == $'rank.0\nrank.1' ]] || fail "files of other ranks: $(ls "$work/rel/1")"
[[ "$(cat "$work/o")" == $'hello\nhello' && "$(cat "$work/e")" == $'oops\noops' ]] ||
    { show; fail "--output-filename: no copy on mpirun's stdout/stderr"; }

# :nocopy: to the files only; :nojobid: no "1/" level; with --tag-output the
# files hold what the rank wrote, the terminal the tagged lines.
runs -np 1 --output-filename "$work/quiet:nocopy" "$probe" say=hush
[[ $rc -eq 0 && ! -s "$work/o" && "$(cat "$work/quiet/1/rank.0/stdout")" == hush ]] || { show; fail ":nocopy"; }
runs -np 1 --tag-output --output-filename "$work/flat:nojobid" "$probe" say=flat
[[ $rc -eq 0 && "$(cat "$work/flat/rank.0/stdout")" == flat && "$(cat "$work/o")" == "[1,0]<stdout>: flat" ]] ||
    { show; fail ":nojobid with --tag-output"; }

# Ten ranks: rank.00 ... rank.09, as Open MPI pads them.
runs -np 10 --bind-to none --output-filename "$work/ten" "$probe" say=x
[[ $rc -eq 0 ]] || { show; fail "10 ranks"; }
[[ "$(ls "$work/ten/1" | tr '\n' ' ')" == "rank.00 rank.01 rank.02 rank.03 rank.04 rank.05 rank.06 rank.07 rank.08 rank.09 " ]] ||
    fail "padding: $(ls "$work/ten/1")"

# A rank on another node writes its files there (here: the same file system).
runs --launch-agent "$agent" -H localhost,axon-out2 -np 2 --output-filename "$work/remote" "$probe" say=far
[[ $rc -eq 0 && "$(cat "$work/remote/1/rank.1/stdout")" == far && "$(cat "$work/o")" == $'far\nfar' ]] ||
    { show; fail "--output-filename with a rank on another node"; }

# A directory that cannot be made: exit 1, said why.
: >"$work/plainfile"
runs -np 1 --output-filename "$work/plainfile/x" "$probe" say=x
[[ $rc -eq 1 ]] || { show; fail "unwritable --output-filename: exit $rc"; }
grep -Eq "^mpirun: --output-filename: cannot create $work/plainfile/x: Not a directory; ending the job$" "$work/e" ||
    { show; fail "unwritable --output-filename: message"; }

# Hydra's -l / -prepend-rank: "[rank] " before each line of either stream.
for option in -l -prepend-rank; do
    runs -np 2 $option "$probe" say=line err=eline
    [[ $rc -eq 0 ]] || { show; fail "$option"; }
    [[ "$(sort "$work/o")" == $'[0] line\n[1] line' && "$(sort "$work/e")" == $'[0] eline\n[1] eline' ]] ||
        { show; fail "$option tags"; }
done
expect_no_orphans
echo "output options OK"
