#!/bin/bash
# Output forwarding and --tag-output format, -x, and the local-rank variables.
. "$AXON_SRCDIR/test/launcher/lib.sh"

run_mpirun -np 2 --tag-output "$probe" say=hello err=oops partial=abcdef marker=$marker
expect_rc 0 "tagged run"
sort "$work/out" >"$work/sorted"
printf '%s\n' '[1,0]<stdout>: abcdef' '[1,0]<stdout>: hello' '[1,1]<stdout>: abcdef' '[1,1]<stdout>: hello' |
    cmp -s - "$work/sorted" || { show_output; fail "tagged stdout"; }
sort "$work/err" | cmp -s - <(printf '%s\n' '[1,0]<stderr>: oops' '[1,1]<stderr>: oops') ||
    { show_output; fail "tagged stderr"; }

# Untagged: output passes through unchanged.
run_mpirun -np 2 "$probe" say=plain
expect_rc 0 "untagged run"
[[ "$(cat "$work/out")" == $'plain\nplain' ]] || { show_output; fail "untagged output"; }

# A last line without newline gets one when tagged.
run_mpirun -np 1 --tag-output /bin/printf 'one\ntwo'
expect_rc 0 "tagged last line"
[[ "$(cat "$work/out")" == $'[1,0]<stdout>: one\n[1,0]<stdout>: two' ]] || { show_output; fail "unterminated line"; }

# -x NAME=value, -x NAME (mpirun's value), repeatable; an unset NAME exports nothing.
export AXON_LAUNCHER_TEST_FROM_ENV="from env"
unset AXON_LAUNCHER_TEST_UNSET
run_mpirun -np 2 -x AXON_LAUNCHER_TEST_SET=given -x AXON_LAUNCHER_TEST_FROM_ENV -x AXON_LAUNCHER_TEST_UNSET \
    "$probe" env=AXON_LAUNCHER_TEST_SET env=AXON_LAUNCHER_TEST_FROM_ENV env=AXON_LAUNCHER_TEST_UNSET \
    env=MPI_LOCALRANKID env=MPI_LOCALNRANKS env=PMIX_MCA_gds
expect_rc 0 "-x run"
for r in 0 1; do
    expect_line "$work/out" "^rank $r AXON_LAUNCHER_TEST_SET=given$" "-x NAME=value"
    expect_line "$work/out" "^rank $r AXON_LAUNCHER_TEST_FROM_ENV=from env$" "-x NAME"
    expect_line "$work/out" "^rank $r AXON_LAUNCHER_TEST_UNSET=\(unset\)$" "-x of an unset NAME"
    expect_line "$work/out" "^rank $r MPI_LOCALRANKID=$r$" "MPI_LOCALRANKID"
    expect_line "$work/out" "^rank $r MPI_LOCALNRANKS=2$" "MPI_LOCALNRANKS"
    expect_line "$work/out" "^rank $r PMIX_MCA_gds=hash$" "gds forced to hash"
done
echo "output OK"
