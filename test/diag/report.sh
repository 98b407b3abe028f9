#!/bin/bash
# The communication report (AXON_REPORT=comm): the numbers equal what
# test/diag/report_traffic sent, in the text on stderr, the CSV and the JSON
# file, over sm and over tcp; nothing without AXON_REPORT; an unwritable
# file is a warning, not a failure.
. "$AXON_SRCDIR/test/launcher/lib.sh"
program="$AXON_BUILDDIR/test/diag/report_traffic"
MiB2=2097152

# ---- sm, CSV --------------------------------------------------------------
AXON_REPORT=comm AXON_REPORT_FILE="$work/r.csv" run_mpirun -np 3 "$program"
expect_rc 0 "report over sm"
for r in 0 1 2; do expect_line "$work/out" "^rank $r sent$" "rank $r's data"; done
csv="$work/r.csv"
[[ -s $csv ]] || fail "no CSV file written"
head -1 "$csv" | grep -qx 'section,communicator,size,call,from,to,transport,protocol,messages,bytes,algorithms' ||
    fail "CSV header: $(head -1 "$csv")"
expect_csv() {  # expect_csv LINE: exactly this row is in the CSV
    grep -qxF -- "$1" "$csv" || { cat "$csv"; fail "CSV row missing: $1"; }
}
for pair in "0,1" "1,2" "2,0"; do
    expect_csv "point_to_point,,,,$pair,sm,eager,10,80,"
    expect_csv "point_to_point,,,,$pair,sm,rendezvous,2,$MiB2,"
done
expect_csv "point_to_point,,,,0,0,self,eager,3,300,"
rows=$(grep -c '^point_to_point,' "$csv")
[[ $rows -eq 7 ]] || { cat "$csv"; fail "$rows point-to-point rows, expected 7"; }
for r in 0 1 2; do
    grep -qE "^collective,MPI_COMM_WORLD,3,allreduce,$r,,,,5,200,[a-z]" "$csv" || { cat "$csv"; fail "rank $r allreduce row"; }
    grep -qE "^collective,MPI_COMM_WORLD,3,barrier,$r,,,,1,0,[a-z]" "$csv" || { cat "$csv"; fail "rank $r barrier row"; }
done
# halves: ranks 0 and 2 (size 2), rank 1 alone (size 1); 4 bcasts of 256 bytes.
grep -qE '^collective,halves,2,bcast,0,,,,4,1024,[a-z]' "$csv" || { cat "$csv"; fail "halves bcast row of rank 0"; }
grep -qE '^collective,halves,2,bcast,2,,,,4,1024,[a-z]' "$csv" || { cat "$csv"; fail "halves bcast row of rank 2"; }
grep -qE '^collective,halves,1,bcast,1,,,,4,1024,[a-z]' "$csv" || { cat "$csv"; fail "halves bcast row of rank 1"; }
# collectives' own traffic is kept apart: some, and none in point_to_point.
grep -q '^collective_traffic,' "$csv" || fail "no collective traffic rows"

# The text: the matrix of messages, the pair list and the communicators.
err="$work/err"
expect_line "$err" '^axon report: point-to-point messages, 3 ranks' "report title"
expect_line "$err" '^ +0 +3 +12 +0$' "messages row of rank 0"
expect_line "$err" '^ +1 +0 +0 +12$' "messages row of rank 1"
expect_line "$err" '^ +2 +12 +0 +0$' "messages row of rank 2"
expect_line "$err" "^ +0 +300 +2097232 +0\$" "bytes row of rank 0"
expect_line "$err" "^ +0 +1 +sm +10 +80 +2 +$MiB2\$" "pair 0->1"
expect_line "$err" '^ +MPI_COMM_WORLD +3 +allreduce +5 +600 ' "allreduce summary (bytes of all members)"
expect_line "$err" '^ +halves +2 +bcast +4 +2048 ' "halves summary"
[[ $(grep -c '^axon report: point-to-point messages' "$err") -eq 1 ]] || fail "the report is printed once (rank 0)"

# ---- tcp, JSON ------------------------------------------------------------
AXON_BTL=self,tcp AXON_REPORT=comm AXON_REPORT_FILE="$work/r.json" run_mpirun -np 2 "$program"
expect_rc 0 "report over tcp"
python3 - "$work/r.json" <<'PY' || fail "JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"] == 2, r["ranks"]
pairs = {(p["from"], p["to"]): p for p in r["point_to_point"]}
assert set(pairs) == {(0, 1), (1, 0), (0, 0)}, sorted(pairs)
for key in [(0, 1), (1, 0)]:
    p = pairs[key]
    assert p["transport"] == "tcp", p
    assert p["eager"] == {"messages": 10, "bytes": 80}, p
    assert p["rendezvous"] == {"messages": 2, "bytes": 2 * 1048576}, p
assert pairs[(0, 0)]["transport"] == "self" and pairs[(0, 0)]["eager"] == {"messages": 3, "bytes": 300}
calls = {(c["rank"], c["communicator"], c["call"]): c for c in r["collectives"]}
for rank in (0, 1):
    a = calls[(rank, "MPI_COMM_WORLD", "allreduce")]
    assert a["calls"] == 5 and a["bytes"] == 200 and a["size"] == 2 and a["algorithms"], a
    b = calls[(rank, "halves", "bcast")]
    assert b["calls"] == 4 and b["bytes"] == 1024 and b["size"] == 1, b
assert all(t["transport"] in ("tcp", "self") for t in r["collective_traffic"]), r["collective_traffic"]
PY

# ---- mpirun --report / --report-file (a relative name is the caller's) ----
(cd "$work" && "$MPIRUN" --report comm --report-file opt.csv -np 2 "$program" >"$work/out" 2>"$work/err" </dev/null)
rc=$?
expect_rc 0 "mpirun --report comm --report-file opt.csv"
expect_line "$work/err" '^axon report: point-to-point messages, 2 ranks' "text report from --report"
grep -qxF "point_to_point,,,,0,1,sm,eager,10,80," "$work/opt.csv" || fail "--report-file: no 0->1 eager row in $work/opt.csv"

# ---- off by default; an unwritable file warns -----------------------------
run_mpirun -np 2 "$program"
expect_rc 0 "no report"
grep -q '^axon report' "$work/err" && fail "a report without AXON_REPORT"
AXON_REPORT=comm AXON_REPORT_FILE=/nonexistent/dir/r.csv run_mpirun -np 2 "$program"
expect_rc 0 "unwritable report file"
expect_line "$work/err" 'AXON_REPORT_FILE: cannot write /nonexistent/dir/r.csv: No such file or directory' "warning"
expect_line "$work/err" '^axon report: point-to-point messages, 2 ranks' "text report still printed"
echo "report: ok"
