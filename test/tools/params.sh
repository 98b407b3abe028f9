#!/bin/bash
# Parameters: typed values, unknown variables, MPI_T writes (test/tools/param_cvars.c).
#  1. axon_info --params lists an algorithm choice as a writable enum with its
#     values, and an integer with its range.
#  2. A write of AXON_COLL_BCAST_ALGORITHM through MPI_T changes the algorithm
#     the next MPI_Bcast runs: the AXON_COLL_EXPLAIN line after each marker
#     names the written algorithm, "forced by"; an MPI_Ibcast forced to shm
#     falls back to binomial; auto is no longer forced.
#  3. Bad values in the environment: an enum name not on the list warns with
#     the allowed names and uses the default; an integer out of its range
#     warns and is clamped; once per rank.
#  4. AXON_* variables no parameter declares: rank 0 warns once per variable,
#     with the closest parameter when one is near (a typo), none for the
#     variables of Axon's scripts (AXON_SRCDIR, AXON_TEST_*); a singleton
#     warns too; AXON_PARAM_CHECK=0 silences it.
#  5. Threads reading the control variables for the first time at once (10
#     runs), and reading one while another thread writes it.
set -u
fail() { echo "FAIL: $*"; exit 1; }
prog="$AXON_BUILDDIR/test/tools/param_cvars"
info="$AXON_BUILDDIR/src/tools/axon_info"
work=$(mktemp -d /tmp/axon.params.XXXXXX) || fail "mktemp"
trap 'rm -rf "$work"' EXIT
# (None of what this test varies may come from the caller's environment.)
unset AXON_COLL_BCAST_ALGORITHM AXON_COLL_KNOMIAL_RADIX AXON_COLL_EXPLAIN AXON_PARAM_CHECK
show() { echo "--- stdout"; cat "$work/out"; echo "--- stderr"; cat "$work/err"; echo "---"; }
run() { "$@" >"$work/out" 2>"$work/err" </dev/null; }
count() { grep -c -F -- "$1" "$work/err"; }

# 1. the listing
params=$("$info" --params) || fail "axon_info --params exited $?"
grep -A1 -x -F 'AXON_COLL_BCAST_ALGORITHM (enum, MPI_T writable: same value on every rank)' <<<"$params" |
    grep -q -F '[one of: auto, binomial, knomial, scatter_allgather, pipeline, shm, hierarchical] (default: auto)' ||
    fail "AXON_COLL_BCAST_ALGORITHM is not listed as a writable enum with its values"
grep -A1 -x -F 'AXON_COLL_KNOMIAL_RADIX (integer)' <<<"$params" | grep -q -F '[2 to 1024] (default: 4)' ||
    fail "AXON_COLL_KNOMIAL_RADIX is not listed with its range"
grep -q -x -F 'AXON_PARAM_CHECK (boolean)' <<<"$params" || fail "AXON_PARAM_CHECK is not listed"
echo "ok: axon_info --params shows enums and ranges"

# 2. writes take effect at the next call
run env AXON_COLL_EXPLAIN=1 "$MPIRUN" -np 2 "$prog" || { show; fail "param_cvars under AXON_COLL_EXPLAIN=1 exited $?"; }
# The bcast line rank 0 explains after marker $1.
after() { awk -v m="marker: $1" '$0 == m {found = 1; next} found && /^axon coll: bcast / {print; exit}' "$work/err"; }
for alg in knomial pipeline binomial shm; do
    line=$(after "bcast $alg")
    [[ "$line" == "axon coll: bcast on 2 ranks, 4000 bytes: $alg ("*"): forced by AXON_COLL_BCAST_ALGORITHM" ]] ||
        { show; fail "after writing $alg the bcast ran: '$line'"; }
done
line=$(after "ibcast shm")
[[ "$line" == *": binomial ("*"): forced by AXON_COLL_BCAST_ALGORITHM; shm: node-level algorithms run blocking calls only, using binomial" ]] ||
    { show; fail "forced shm, MPI_Ibcast: '$line'"; }
line=$(after "bcast auto")
[[ -n "$line" && "$line" != *"forced by"* ]] || { show; fail "after writing auto the bcast ran: '$line'"; }
echo "ok: MPI_T_cvar_write chose the next bcast's algorithm (knomial, pipeline, binomial, shm; auto: $line)"

# 3. bad values
run env AXON_COLL_BCAST_ALGORITHM=bogus AXON_COLL_KNOMIAL_RADIX=1 "$MPIRUN" -np 2 "$prog" report ||
    { show; fail "bad values: exited $?"; }
[[ "$(cat "$work/out")" == *"radix=2 bcast=auto"* ]] || { show; fail "bad values not replaced by the default / the bound"; }
n=$(count 'warning: ignoring AXON_COLL_BCAST_ALGORITHM="bogus": not a valid value (one of: auto, binomial, knomial, scatter_allgather, pipeline, shm, hierarchical); using auto')
[[ $n -eq 2 ]] || { show; fail "$n warnings about the enum value, want one per rank (2)"; }
n=$(count 'warning: AXON_COLL_KNOMIAL_RADIX="1" is out of its range 2 to 1024; using 2')
[[ $n -eq 2 ]] || { show; fail "$n warnings about the radix, want one per rank (2)"; }
run env AXON_COLL_KNOMIAL_RADIX=5000 AXON_COLL_BCAST_ALGORITHM=Pipeline "$MPIRUN" -np 1 "$prog" report ||
    { show; fail "radix 5000: exited $?"; }
[[ "$(cat "$work/out")" == *"radix=1024 bcast=pipeline"* && $(count "warning:") -eq 1 ]] ||
    { show; fail "radix 5000 is not clamped to 1024 (or a name in other case is refused)"; }
echo "ok: bad values warn and fall back (enum: default; integer: clamped)"

# 4. unknown variables
unknown() {  # unknown EXPECTED-COUNT COMMAND...: warnings about AXON_COLL_BCAST_ALGORITM and AXON_FOO
    run env AXON_COLL_BCAST_ALGORITM=knomial AXON_FOO=1 AXON_TEST_PARAMS_OWN=1 "${@:2}" ||
        { show; fail "unknown variables ($*): exited $?"; }
    local typo="AXON_COLL_BCAST_ALGORITM is set but is not an Axon parameter: did you mean AXON_COLL_BCAST_ALGORITHM?"
    local far="AXON_FOO is set but is not an Axon parameter (axon_info --params lists them"
    [[ $(count "$typo") -eq $1 && $(count "$far") -eq $1 && $(count "not an Axon parameter") -eq $((2 * $1)) ]] ||
        { show; fail "$*: not $1 warning(s) per unknown variable"; }
    [[ $1 -eq 0 ]] || grep -F -- "$typo" "$work/err" | grep -q '^axon\[0@' || { show; fail "$*: not from rank 0"; }
}
unknown 1 "$MPIRUN" -np 3 "$prog" report
unknown 1 "$prog" report
unknown 0 env AXON_PARAM_CHECK=0 "$MPIRUN" -np 3 "$prog" report
echo "ok: unknown AXON_* variables: one warning each from rank 0, with the near parameter; AXON_PARAM_CHECK=0 silences"

# 5. threads
for i in 1 2 3 4 5 6 7 8 9 10; do
    run env AXON_COLL_KNOMIAL_RADIX=7 AXON_COLL_BCAST_ALGORITHM=pipeline AXON_BTL_SM_EAGER_LIMIT=4096 \
        AXON_BTL=self,sm "$prog" threads || { show; fail "threads, run $i: exited $?"; }
    grep -q "; 4 compared with the environment" "$work/out" || { show; fail "threads, run $i: not 4 compared"; }
done
echo "ok: 10 runs of 8 threads reading every control variable first at once; a writer and 3 readers"
