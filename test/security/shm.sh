#!/bin/bash
# The job's files in /dev/shm (docs/security.md, "Other users of the node"),
# with shm_user: btl/sm rings, node-level collective segments (shm algorithms
# forced), a shared window. Case by the first argument:
#   exclusive  under shm_shim (check): every creating open of a file in
#              /dev/shm uses O_EXCL (a call without it fails and is logged),
#              every file of the three kinds is created 0600 under a name
#              with 128 random bits, and opened by the other ranks;
#   planted    the shim plants a junk file (mode 0666, owner nobody) under
#              the very name just before every other creation: each
#              creation that collides is refused and retried under another
#              name, nobody opens a planted file, the data stay exact;
#   flooded    ... before every creation: the job fails with a message
#              saying names were taken, never uses one;
#   swapped    the shim replaces each file with a planted one just before
#              another rank opens it: the opener refuses it (owner, mode)
#              with a message and the job fails;
#   guessed    no shim: between the job's start (its namespace is visible
#              in /tmp) and MPI_Init, files are planted under every name the
#              old scheme used (axon.<nspace>.sm.<rank>, .osc.<rank>.<n>,
#              .coll.<id>.<leader>...); the job runs with exact data and
#              leaves them untouched.
. "$AXON_SRCDIR/test/launcher/lib.sh"
case_name=$1
np=4
user="$AXON_BUILDDIR/test/security/shm_user"
shim="$AXON_BUILDDIR/test/security/shm_shim.so"
mkdir -p "$AXON_BUILDDIR/test/security"
if [[ ! -e $shim || "$AXON_SRCDIR/test/security/shm_shim.c" -nt $shim ]]; then
    ${CC:-cc} -shared -fPIC -O1 -o "$shim.tmp" "$AXON_SRCDIR/test/security/shm_shim.c" -ldl && mv "$shim.tmp" "$shim" ||
        fail "cannot build the LD_PRELOAD shim"
fi
export AXON_BTL=self,sm
export AXON_COLL_ALLREDUCE_ALGORITHM=shm AXON_COLL_BCAST_ALGORITHM=shm AXON_COLL_BARRIER_ALGORITHM=shm
log="$work/shim.log"
hex32='[0-9a-f]{32}'
under_shim() {  # under_shim MODE [VAR=VALUE...]: the job, each rank under the shim
    local mode=$1
    shift
    run_mpirun -np $np env LD_PRELOAD="$shim" AXON_SHIM_LOG="$log" AXON_SHIM_MODE="$mode" "$@" "$user" marker=$marker
}
ok_ranks() { [[ $(grep -c "shm_user: ok" "$work/out") -eq $np ]] || { show_output; fail "not every rank said ok"; }; }

case "$case_name" in
exclusive)
    under_shim check
    expect_rc 0 "the job under the shim"
    ok_ranks
    grep -q NONEXCL "$log" && { cat "$log"; fail "a file in /dev/shm was created without O_EXCL"; }
    ns_re='/axon\.[A-Za-z0-9._-]+'
    for kind in "sm\.[0-9]+" "coll\.[0-9]+" "osc\.[0-9]+\.[0-9]+"; do
        n=$(grep -Ec "^create $ns_re\.$kind\.$hex32 \(mode 0600\) -> ok$" "$log")
        [[ $n -ge 1 ]] || { cat "$log"; fail "no file of kind $kind created exclusively, mode 0600, with a random name"; }
    done
    [[ $(grep -Ec "^create $ns_re\.sm\.[0-9]+\.$hex32 " "$log") -eq $np ]] || { cat "$log"; fail "not one sm segment per rank"; }
    [[ $(grep -Ec "^open $ns_re\.sm\.[0-9]+\.$hex32 .*-> ok$" "$log") -eq $((np * (np - 1))) ]] ||
        { cat "$log"; fail "each rank should open every peer's sm segment"; }
    others=$(grep -v "^create /axon\.\|^open /axon\." "$log" || true)
    [[ -z "$others" ]] || { echo "$others"; fail "something else used /dev/shm"; }
    echo "ok: $(grep -c '^create' "$log") files created exclusively (mode 0600, random names), $(grep -c '^open' "$log") opens"
    ;;
planted)
    under_shim plant
    expect_rc 0 "the job with planted files"
    ok_ranks
    n=$(grep -c "^planted " "$log")
    [[ $n -ge $np ]] || { cat "$log"; fail "the shim planted only $n files"; }
    expect_line "$work/err" "exists already \(owner uid [0-9]+, mode 0666, 4096 bytes\): not using it, trying another name" \
        "a collision is reported"
    for name in $(sed -n 's/^planted //p' "$log"); do
        grep -qF "create $name (mode 0600) -> File exists" "$log" || { cat "$log"; fail "$name: the creation did not fail"; }
        grep -qF "open $name " "$log" && { cat "$log"; fail "$name: a rank opened a planted file"; }
    done
    echo "ok: $n planted files refused, every segment made under another name, data exact"
    ;;
flooded)
    under_shim plant AXON_SHIM_PLANT=always
    [[ $rc -ne 0 ]] || { show_output; fail "the job ran although every name it drew was taken"; }
    expect_line "$work/err" "other random names were taken already \(someone is planting files in /dev/shm\)" \
        "the failure names the cause"
    grep -q "^open .* -> ok" "$log" && grep -qF "$(sed -n 's/^planted //p' "$log" | head -n 1) " <(grep '^open' "$log") &&
        fail "a planted file was opened"
    echo "ok: the job failed with: $(grep -m1 'taken already' "$work/err")"
    ;;
swapped)
    under_shim swap
    [[ $rc -ne 0 ]] || { show_output; fail "the job ran on swapped files"; }
    expect_line "$work/err" "is (owned by another user|its mode is not 0600) \(owner uid [0-9]+, mode 0666, 4096 bytes\): not what a rank of this job made, not using it" \
        "the opener refuses a file that is not its peer's"
    echo "ok: the job failed with: $(grep -m1 'not what a rank' "$work/err")"
    ;;
guessed)
    "$MPIRUN" -np $np "$user" "$work" marker=$marker >"$work/out" 2>"$work/err" </dev/null &
    job=$!
    for _ in $(seq 200); do [[ -s "$work/ns" ]] && break; sleep 0.05; done
    [[ -s "$work/ns" ]] || { touch "$work/planted" "$work/verified"; wait $job; show_output; fail "the job did not start"; }
    ns=$(tr -c 'A-Za-z0-9._\n-' '_' <"$work/ns")
    head -c 65536 /dev/zero | tr '\0' '\245' >"$work/junk"
    planted=()
    for r in $(seq 0 $((np - 1))); do
        planted+=("axon.$ns.sm.$r" "axon.$ns.osc.$r.0" "axon.$ns.osc.$r.1")
        for id in 0 1 2 3 4 5 6 7 8; do planted+=("axon.$ns.coll.$id.$r"); done
    done
    for f in "${planted[@]}"; do
        cp "$work/junk" "/dev/shm/$f" && chmod 0666 "/dev/shm/$f"
        [[ $(id -u) -eq 0 ]] && chown 65534:65534 "/dev/shm/$f"
    done
    touch "$work/planted"
    for _ in $(seq 400); do [[ -s "$work/worked" ]] && break; sleep 0.05; done
    changed=0
    for f in "${planted[@]}"; do cmp -s "$work/junk" "/dev/shm/$f" || changed=$((changed + 1)); done
    touch "$work/verified"
    wait $job
    rc=$?
    for f in "${planted[@]}"; do rm -f "/dev/shm/$f"; done
    expect_rc 0 "the job next to planted files"
    ok_ranks
    [[ -s "$work/worked" ]] || fail "the job did not get to its end"
    [[ $changed -eq 0 ]] || fail "$changed planted files were changed (adopted)"
    echo "ok: ${#planted[@]} files planted under the old names, none touched, data exact"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
expect_no_orphans
