#!/bin/bash
# A program that cannot be run is reported before any rank starts (127 when
# not found, 126 when not executable); an exec that fails inside a rank ends
# the job the same way.
. "$AXON_SRCDIR/test/launcher/lib.sh"

run_mpirun -np 2 "$work/no-such-program" marker=$marker
expect_rc 127 "missing path"
[[ "$(cat "$work/err")" == "mpirun: cannot run '$work/no-such-program': No such file or directory" ]] ||
    { show_output; fail "message for a missing path"; }

run_mpirun -np 2 axon-no-such-command-$$
expect_rc 127 "command not in PATH"
[[ "$(cat "$work/err")" == "mpirun: cannot run 'axon-no-such-command-$$': No such file or directory" ]] ||
    { show_output; fail "message for a command not in PATH"; }

printf '#!/bin/sh\nexit 0\n' >"$work/not-executable"
chmod 644 "$work/not-executable"
run_mpirun -np 1 "$work/not-executable"
expect_rc 126 "file without x bit"
expect_line "$work/err" "^mpirun: cannot run '$work/not-executable': Permission denied$" "not-executable message"

run_mpirun -np 1 "$work"
expect_rc 126 "a directory"

# PATH is searched like execvp does, including the PATH given with -x.
mkdir "$work/bin"
printf '#!/bin/sh\necho found-in-path\n' >"$work/bin/axon-test-tool"
chmod 755 "$work/bin/axon-test-tool"
run_mpirun -np 1 -x PATH="$work/bin:$PATH" axon-test-tool
expect_rc 0 "command found through -x PATH"
[[ "$(cat "$work/out")" == found-in-path ]] || { show_output; fail "PATH lookup ran the wrong thing"; }

# Executable, but exec fails in the rank (its interpreter is missing).
printf '#!/nonexistent/interpreter\n' >"$work/bad-interpreter"
chmod 755 "$work/bad-interpreter"
run_mpirun -np 2 "$work/bad-interpreter" marker=$marker
expect_rc 127 "exec failure inside the rank"
expect_line "$work/err" "^mpirun: cannot run '$work/bad-interpreter' \(rank [01]\): No such file or directory; ending the job$" \
    "exec failure message"
expect_no_orphans
echo "missing program OK"
