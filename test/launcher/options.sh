#!/bin/bash
# Command-line handling: errors are clear and exit 1; accepted spellings work.
. "$AXON_SRCDIR/test/launcher/lib.sh"

expect_error() {  # expect_error MESSAGE-REGEX ARGS...
    local regex=$1
    shift
    run_mpirun "$@"
    expect_rc 1 "mpirun $*"
    expect_line "$work/err" "$regex" "error for: mpirun $*"
}

expect_error "^mpirun: unknown option '--frobnicate' \(see mpirun --help\)$" --frobnicate -np 2 "$probe"
expect_error "^mpirun: give the number of ranks with -np N" "$probe"
expect_error "^mpirun: no program to run" -np 2
expect_error "^mpirun: the number of ranks must be a positive integer, not '0'" -np 0 "$probe"
expect_error "^mpirun: the number of ranks must be a positive integer, not 'x'" -n x "$probe"
expect_error "^mpirun: option '-np' needs a value" -np
expect_error "^mpirun: --bind-to accepts core, hwthread, socket, numa, l3cache or none, not 'l2cache' \(see mpirun --help\)$" \
    --bind-to l2cache -np 1 "$probe"
expect_error "^mpirun: --timeout needs a positive number of seconds" --timeout -3 -np 1 "$probe"
expect_error "^mpirun: --map-by accepts slot, node, core, hwthread, socket, numa, l3cache or ppr:N:OBJECT, with :PE=n, not 'l2cache'" \
    --map-by l2cache -np 1 "$probe"
expect_error "^mpirun: --map-by accepts .*, not 'ppr:0:node'" --map-by ppr:0:node "$probe"
expect_error "^mpirun: --map-by slot:FOO: unknown qualifier 'FOO' \(PE=n, OVERSUBSCRIBE, SPAN\)" --map-by slot:FOO -np 1 "$probe"
expect_error "^mpirun: --rank-by accepts slot or node, not 'socket'" --rank-by socket -np 1 "$probe"
expect_error "^mpirun: 3 ranks do not fit --map-by ppr:1:node on 2 nodes$" --map-by ppr:1:node -H localhost,localhost.invalid -np 3 "$probe"
expect_error "^mpirun: --launch-timeout needs a positive number of seconds, not '0'" --launch-timeout 0 -np 1 "$probe"
# Another host: its daemon is started through the launch agent; one that fails is named.
expect_error "^mpirun: cannot start the daemon on host axon-elsewhere: the launch agent exited with status 1 before the daemon connected" \
    --launch-agent "false {}" -H axon-elsewhere:2 -np 2 "$probe"
printf 'localhost slots=1\naxon-elsewhere slots=4\n' >"$work/hosts"
expect_error "^mpirun: cannot start the daemon on host axon-elsewhere" --launch-agent false --hostfile "$work/hosts" "$probe"
# Hostfile errors name the file and line.
printf '# hosts\n\nlocalhost slots=2\nbad:x\n' >"$work/hosts"
expect_error "^mpirun: $work/hosts:4: bad host entry 'bad:x'" --hostfile "$work/hosts" "$probe"
printf 'localhost slots=two\n' >"$work/hosts"
expect_error "^mpirun: $work/hosts:1: bad 'slots=two'; slots must be a positive integer" --hostfile "$work/hosts" "$probe"
printf 'localhost cpus=2\n' >"$work/hosts"
expect_error "^mpirun: $work/hosts:1: unknown key 'cpus=2'" --hostfile "$work/hosts" "$probe"
printf '# nothing\n\n' >"$work/hosts"
expect_error "^mpirun: hostfile '$work/hosts' names no host" --hostfile "$work/hosts" "$probe"

# Spellings: -n, -np, --np, --n=2, single-dash long options, '--' before the program.
for spelling in "-n 2" "-np 2" "--np 2" "--n=2" "-np=2"; do
    # shellcheck disable=SC2086
    run_mpirun $spelling -tag-output -- "$probe" say=x
    expect_rc 0 "spelling $spelling"
    [[ $(grep -c '<stdout>: x$' "$work/out") -eq 2 ]] || { show_output; fail "spelling $spelling did not start 2 ranks"; }
done

# --oversubscribe is accepted silently.
run_mpirun --oversubscribe -np 3 "$probe" wireup
expect_rc 0 "--oversubscribe"
[[ ! -s "$work/err" ]] || { show_output; fail "--oversubscribe printed something"; }

# Slots of this node give the number of ranks when -np is absent.
run_mpirun -H localhost:3 "$probe" info
expect_rc 0 "-H localhost:3"
[[ $(grep -c '^rank=' "$work/out") -eq 3 ]] || { show_output; fail "-H localhost:3 did not start 3 ranks"; }
printf '# this node\nlocalhost slots=2\n' >"$work/hosts"
run_mpirun --hostfile "$work/hosts" "$probe" info
expect_rc 0 "--hostfile"
[[ $(grep -c '^rank=' "$work/out") -eq 2 ]] || { show_output; fail "hostfile with 2 slots did not start 2 ranks"; }

# Options after the program belong to the program.
run_mpirun -np 1 /bin/echo -np --help
expect_rc 0 "program options"
[[ "$(cat "$work/out")" == "-np --help" ]] || { show_output; fail "program arguments were changed"; }

# '--' ends the options: the rest is the program's, ':' included.
run_mpirun -np 2 -- /bin/echo -np : x
expect_rc 0 "--"
[[ "$(cat "$work/out")" == $'-np : x\n-np : x' ]] || { show_output; fail "'--' did not keep ': x' for the program"; }
# Open MPI's --allow-run-as-root is accepted (root needs no flag).
run_mpirun --allow-run-as-root -np 1 "$probe"
expect_rc 0 "--allow-run-as-root"
# Copying programs to the nodes is refused, with a reason.
for spelling in -s --preload-binary; do
    run_mpirun $spelling -np 1 "$probe"
    expect_rc 1 "$spelling"
    expect_line "$work/err" "^mpirun: $spelling( \(--preload-binary\))? is not supported: Axon does not copy files to the nodes; install the program at the same path on every node, or on a shared file system$" \
        "$spelling message"
done

run_mpirun --help
expect_rc 0 "--help"
expect_line "$work/out" "^Usage: mpirun " "help text"
# Every spelling of both families that mpirun accepts is in the help text.
for o in -n -np -c -x -env -envlist -envall -envnone -wdir -wd -H -host -genv -genvlist -genvall -genvnone --mca \
    --timeout --oversubscribe --allow-run-as-root -s --preload-binary -f --hostfile -machinefile -hosts \
    --launch-agent --launch-timeout --head-addr -iface --prefix --map-by -ppn --npernode -N --rank-by --bind-to \
    --cpus-per-rank --cpu-set --report-bindings --display-map --tag-output -l -prepend-rank --output-filename \
    --app -configfile -h --help -V --version; do
    grep -Eq -- "(^|[ ,])$o([ ,]|\$)" "$work/out" || fail "--help does not list $o"
done
# --report / --report-file: AXON_REPORT and AXON_REPORT_FILE in every rank's
# environment (the library reads them); the file's path made absolute.
mpmd="$AXON_BUILDDIR/test/launcher/mpmd_probe"
(cd "$work" && run_mpirun --report summary --report-file rep.txt -np 2 "$mpmd" env=AXON_REPORT env=AXON_REPORT_FILE
 expect_rc 0 "--report, --report-file"
 expect_line "$work/out" "^rank=1 .* AXON_REPORT=summary AXON_REPORT_FILE=$work/rep.txt$" "--report in rank 1") || exit 1
run_mpirun --report= -np 1 "$mpmd"
expect_rc 1 "--report= (empty)"
expect_line "$work/err" "^mpirun: --report needs a value" "--report= message"

run_mpirun --version
expect_rc 0 "--version"
expect_line "$work/out" "^mpirun \(Axon MPI\) [0-9]" "version text"
echo "options OK"
