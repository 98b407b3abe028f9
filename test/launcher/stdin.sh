#!/bin/bash
# stdin goes to rank 0 only (the others read /dev/null), through pipes, with
# EOF, and with more data than a pipe holds.
. "$AXON_SRCDIR/test/launcher/lib.sh"

printf 'first line\nsecond line\nno newline' | "$MPIRUN" -np 3 "$probe" stdin marker=$marker >"$work/out" 2>"$work/err"
rc=$?
expect_rc 0 "stdin from a pipe"
grep -v '^rank [12] ' "$work/out" >"$work/rank0"
printf 'first line\nsecond line\nno newlinerank 0 stdin eof\n' | cmp -s - "$work/rank0" ||
    { show_output; fail "rank 0 did not get exactly the input"; }
expect_line "$work/out" "^rank 1 stdin empty$" "rank 1 stdin"
expect_line "$work/out" "^rank 2 stdin empty$" "rank 2 stdin"

# 1 MiB, more than any pipe buffer: delivered intact.
head -c 1048576 /dev/urandom | base64 >"$work/big"
# One rank: untagged output of a second rank could land inside rank 0's lines.
"$MPIRUN" -np 1 "$probe" stdin <"$work/big" >"$work/out" 2>"$work/err"
rc=$?
expect_rc 0 "large stdin"
sed '$d' "$work/out" | cmp -s - "$work/big" || fail "large stdin was not delivered intact"
[[ "$(tail -n 1 "$work/out")" == "rank 0 stdin eof" ]] || fail "large stdin: no EOF"

# No stdin at all (/dev/null): rank 0 sees EOF at once.
run_mpirun -np 2 "$probe" stdin
expect_rc 0 "stdin at EOF"
expect_line "$work/out" "^rank 0 stdin eof$" "EOF for rank 0"

# Rank 0 never reads stdin and exits: mpirun must not hang on a writer.
yes | head -c 10000000 | "$MPIRUN" -np 2 "$probe" marker=$marker >"$work/out" 2>"$work/err"
rc=$?
expect_rc 0 "unread stdin"
expect_no_orphans
echo "stdin OK"
