#!/bin/bash
# Wire-up at 1, 2 and 4 ranks (4 oversubscribes a 2-core machine): what PMIx
# publishes to each rank, the business-card exchange through a fence, the
# nspace name, and that the tmpdir is removed afterwards.
. "$AXON_SRCDIR/test/launcher/lib.sh"

for np in 1 2 4; do
    start=$(now_ms)
    run_mpirun -np $np "$probe" info wireup marker=$marker
    elapsed=$(($(now_ms) - start))
    expect_rc 0 "wire-up with $np ranks"
    echo "np=$np: ${elapsed} ms"
    [[ $elapsed -lt 5000 ]] || fail "$np ranks took ${elapsed} ms"

    peers=$(seq -s, 0 $((np - 1)))
    nspace=$(info_field 0 nspace)
    [[ "$nspace" =~ ^axon\.[0-9]+\.[0-9a-f]{8}$ ]] || fail "nspace '$nspace' is not axon.<pid>.<8 hex>"
    tmpdir=$(info_field 0 tmpdir)
    [[ -n "$tmpdir" && "$tmpdir" != - ]] || fail "no PMIX_TMPDIR"
    for ((r = 0; r < np; r++)); do
        expect_line "$work/out" "^rank $r wireup $np/$np\$" "card exchange of rank $r at np=$np"
        expect_line "$work/out" "^rank=$r size=$np univ=$np local_rank=$r node_rank=$r local_size=$np nodeid=0 num_nodes=1 localldr=0 appnum=0 peers=$peers jobid=$nspace " \
            "job info of rank $r at np=$np"
        [[ "$(info_field $r nspace)" == "$nspace" ]] || fail "rank $r is in another nspace"
        [[ "$(info_field $r tmpdir)" == "$tmpdir" ]] || fail "rank $r has another tmpdir"
        locality=$(info_field $r locality)
        # Bound ranks (the default, round-robin over the cores when they
        # outnumber them) get a locality string naming their core.
        cores=$(nproc)
        [[ "$locality" == *CR* ]] || fail "rank $r bound at np=$np but locality is '$locality'"
        if ((r >= cores)); then
            [[ "$locality" == "$(info_field $((r - cores)) locality)" ]] ||
                fail "rank $r at np=$np is not where rank $((r - cores)) is: '$locality'"
        fi
    done
    [[ $(grep -c '^rank=' "$work/out") -eq $np ]] || fail "expected $np info lines"
    [[ ! -s "$work/err" ]] || { show_output; fail "unexpected stderr at np=$np"; }
    expect_no_orphans
    expect_no_job_files "$nspace" "$tmpdir"
done

# Two jobs at once get different nspaces and do not disturb each other.
"$MPIRUN" -np 2 "$probe" info wireup marker=$marker >"$work/a" 2>&1 </dev/null & first=$!
"$MPIRUN" -np 2 "$probe" info wireup marker=$marker >"$work/b" 2>&1 </dev/null & second=$!
wait $first || fail "first concurrent job failed: $(cat "$work/a")"
wait $second || fail "second concurrent job failed: $(cat "$work/b")"
a=$(sed -n 's/.* nspace=//p' "$work/a" | sort -u)
b=$(sed -n 's/.* nspace=//p' "$work/b" | sort -u)
[[ -n "$a" && -n "$b" && "$a" != "$b" ]] || fail "concurrent jobs share nspace '$a'"
expect_no_orphans
echo "wire-up OK"
