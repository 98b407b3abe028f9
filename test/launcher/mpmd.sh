#!/bin/bash
# MPMD: several programs in one MPI_COMM_WORLD, given as "a : b", in an Open
# MPI appfile (--app) or a Hydra configfile (-configfile), each with its own
# -n, -x/-env, -wdir and -host; MPI_APPNUM (and PMIx's app information) is
# the program's index; MPI_UNIVERSE_SIZE and the job size are the total.
. "$AXON_SRCDIR/test/launcher/lib.sh"
mpmd="$AXON_BUILDDIR/test/launcher/mpmd_probe"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
cd "$work" || fail "cd $work"
mkdir sub
here=$(pwd)

# The lines of stdout that start with PREFIX (default "rank="), in rank
# order, against the expected text on stdin.
expect_ranks() {  # expect_ranks WHAT [PREFIX] < EXPECTED
    local expected got
    expected=$(sort -V)
    got=$(grep -F -- "${2:-rank=}" "$work/out" | grep -v '^mpirun:' | sort -V)
    [[ "$got" == "$expected" ]] || { show_output; echo "--- expected"; echo "$expected"; fail "$1"; }
}

# ':' separates programs: 3 ranks, MPI_APPNUM 0, 1, 1; each keeps its arguments.
run_mpirun -np 1 "$mpmd" a1 : -np 2 "$mpmd" b1 b2 marker=$marker
expect_rc 0 "a : b"
expect_ranks "-np 1 a : -np 2 b" <<EOF
rank=0 size=3 appnum=0 universe=3 world_apps=2 wdir=$here argv=$mpmd|a1
rank=1 size=3 appnum=1 universe=3 world_apps=2 wdir=$here argv=$mpmd|b1|b2|marker=$marker
rank=2 size=3 appnum=1 universe=3 world_apps=2 wdir=$here argv=$mpmd|b1|b2|marker=$marker
EOF
[[ ! -s "$work/err" ]] || { show_output; fail "a : b wrote to stderr"; }

# What PMIx says: each rank's app number and rank in its app, each app's
# size and first rank, the number of apps, the job size.
run_mpirun -np 2 "$probe" appinfo : -np 3 "$probe" appinfo info
expect_rc 0 "PMIx app information"
expect_ranks "PMIx app information" "rank " <<EOF
rank 0 appnum=0 app_rank=0 app_size=2 app_ldr=0 num_apps=2
rank 1 appnum=0 app_rank=1 app_size=2 app_ldr=0 num_apps=2
rank 2 appnum=1 app_rank=0 app_size=3 app_ldr=2 num_apps=2
rank 3 appnum=1 app_rank=1 app_size=3 app_ldr=2 num_apps=2
rank 4 appnum=1 app_rank=2 app_size=3 app_ldr=2 num_apps=2
EOF
for r in 2 3 4; do
    [[ "$(info_field $r size)/$(info_field $r univ)/$(info_field $r appnum)" == 5/5/1 ]] ||
        { show_output; fail "rank $r: job size, universe or appnum"; }
done

# Per-program options: -x, -env (Hydra), -wdir; -genv for all, which a
# program's own setting overrides.
run_mpirun -genv V g -n 1 -x V=x "$mpmd" env=V env=W : -n 1 -env W w -wdir sub "$mpmd" env=V env=W : \
    -np 1 "$mpmd" env=V env=W
expect_rc 0 "per-program options"
expect_ranks "per-program -x, -env, -wdir, -genv" <<EOF
rank=0 size=3 appnum=0 universe=3 world_apps=3 wdir=$here argv=$mpmd|env=V|env=W V=x W=(unset)
rank=1 size=3 appnum=1 universe=3 world_apps=3 wdir=$here/sub argv=$mpmd|env=V|env=W V=g W=w
rank=2 size=3 appnum=2 universe=3 world_apps=3 wdir=$here argv=$mpmd|env=V|env=W V=g W=(unset)
EOF

# Open MPI's appfile: one program per line, comments, blank lines, quotes;
# the command line's -x is every line's default, a line's own -x wins.
cat >"$work/appfile" <<EOF
# an Open MPI appfile
-np 1 $mpmd first env=D

-np 2 -x D=line3 $mpmd 'two words' env=D   # the third line
EOF
run_mpirun -x D=default --app "$work/appfile"
expect_rc 0 "--app"
expect_ranks "--app FILE" <<EOF
rank=0 size=3 appnum=0 universe=3 world_apps=2 wdir=$here argv=$mpmd|first|env=D D=default
rank=1 size=3 appnum=1 universe=3 world_apps=2 wdir=$here argv=$mpmd|two words|env=D D=line3
rank=2 size=3 appnum=1 universe=3 world_apps=2 wdir=$here argv=$mpmd|two words|env=D D=line3
EOF

# Hydra's configfile: the same, and ':' joins programs on one line.
cat >"$work/config" <<EOF
-n 1 -env Q q1 $mpmd c1 env=Q : -n 1 $mpmd c2 env=Q
-n 1 -wdir $here/sub $mpmd c3 env=Q
EOF
run_mpirun -configfile "$work/config"
expect_rc 0 "-configfile"
expect_ranks "-configfile FILE" <<EOF
rank=0 size=3 appnum=0 universe=3 world_apps=3 wdir=$here argv=$mpmd|c1|env=Q Q=q1
rank=1 size=3 appnum=1 universe=3 world_apps=3 wdir=$here argv=$mpmd|c2|env=Q Q=(unset)
rank=2 size=3 appnum=2 universe=3 world_apps=3 wdir=$here/sub argv=$mpmd|c3|env=Q Q=(unset)
EOF

# -host per program: program 1 on this node, program 2 on another "node"
# (a daemon started through a local launch agent), which starts in
# mpirun's directory or in its -wdir; all in one world (MPI over TCP).
run_mpirun --launch-agent "$agent" -np 1 -host localhost "$mpmd" : -np 2 -host axon-mpmd2 "$mpmd" env=V : \
    -np 1 -host axon-mpmd2 -wdir sub -env V v "$mpmd" env=V
expect_rc 0 "-host per program"
expect_ranks "-host per program" <<EOF
rank=0 size=4 appnum=0 universe=4 world_apps=4 wdir=$here argv=$mpmd
rank=1 size=4 appnum=1 universe=4 world_apps=4 wdir=$here argv=$mpmd|env=V V=(unset)
rank=2 size=4 appnum=1 universe=4 world_apps=4 wdir=$here argv=$mpmd|env=V V=(unset)
rank=3 size=4 appnum=2 universe=4 world_apps=4 wdir=$here/sub argv=$mpmd|env=V V=v
EOF
run_mpirun --launch-agent "$agent" -np 1 -host localhost "$probe" info : -np 2 -host axon-mpmd2 "$probe" info
expect_rc 0 "-host per program (PMIx)"
[[ "$(info_field 0 host) $(info_field 1 host) $(info_field 2 host)" == "$(hostname) axon-mpmd2 axon-mpmd2" ]] ||
    { show_output; fail "ranks not on the hosts their programs name"; }
[[ "$(info_field 1 nodeid)/$(info_field 1 appnum)/$(info_field 0 appnum)" == 1/1/0 ]] || { show_output; fail "node or app"; }

# Errors: exact messages, exit status 1, nothing started.
expect_error() {  # expect_error MESSAGE ARGS...: the whole of stderr is MESSAGE
    local message=$1
    shift
    run_mpirun "$@"
    expect_rc 1 "mpirun $*"
    [[ "$(cat "$work/err")" == "$message" ]] || { show_output; echo "--- expected: $message"; fail "mpirun $*"; }
    [[ ! -s "$work/out" ]] || { show_output; fail "mpirun $* started something"; }
}
expect_error "mpirun: context 2 ($mpmd) needs -n N: in a job of several programs each gives its number of ranks (see mpirun --help)" \
    -np 1 "$mpmd" : "$mpmd"
expect_error "mpirun: no program after ':' (see mpirun --help)" -np 1 "$mpmd" :
expect_error "mpirun: no program before ':' (see mpirun --help)" -np 1 : -np 1 "$mpmd"
printf '%s\n' "-np 1 $mpmd" "" "-np 2 --frobnicate $mpmd" >"$work/bad"
expect_error "mpirun: $work/bad:3: unknown option '--frobnicate' (see mpirun --help)" --app "$work/bad"
printf '%s\n' "# only options" "-np 2" >"$work/bad"
expect_error "mpirun: $work/bad:2: no program in this line (see mpirun --help)" -configfile "$work/bad"
printf '%s\n' "-np 2 $mpmd 'open" >"$work/bad"
expect_error "mpirun: $work/bad:1: unmatched single quote" --app "$work/bad"
expect_error "mpirun: cannot read '$work/none': No such file or directory" --app "$work/none"
expect_error "mpirun: give the programs either on the command line or in the --app/-configfile file (see mpirun --help)" \
    --app "$work/appfile" -np 1 "$mpmd"
printf 'localhost slots=2\n' >"$work/hosts"
expect_error "mpirun: -H names host 'axon-elsewhere', which is not among the job's hosts (--hostfile, -hosts or the Slurm allocation)" \
    --hostfile "$work/hosts" -np 1 -host axon-elsewhere "$mpmd"
# A missing program of any context: 127 before anything starts.
run_mpirun -np 1 "$mpmd" : -np 1 /nonexistent/prog
expect_rc 127 "missing second program"
[[ "$(cat "$work/err")" == "mpirun: cannot run '/nonexistent/prog': No such file or directory" ]] ||
    { show_output; fail "missing second program message"; }
[[ ! -s "$work/out" ]] || { show_output; fail "a rank started although a program is missing"; }
expect_no_orphans
echo "mpmd OK"
