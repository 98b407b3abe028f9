#!/bin/bash
# Runs every case listed in test/*/tests.list and ends with "N passed, M failed".
#
# A tests.list line is:   NAME  NP  COMMAND [ARGS...]      ('#' starts a comment)
#   NP > 0  : COMMAND is a program in the build tree, run as
#             mpirun -np NP $AXON_BUILDDIR/COMMAND ARGS; it must exit 0.
#   NP = 0  : COMMAND runs as is: a script path is taken relative to the source
#             tree, a program relative to the build tree. Exit 0 passes, 77 skips.
# Every case runs under a time limit (AXON_TEST_TIMEOUT, default 120 s) and must
# leave no /dev/shm/axon.* file behind.
# Usage: run-tests.sh [NAME-REGEX]
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
export AXON_SRCDIR AXON_BUILDDIR
export MPIRUN="$AXON_BUILDDIR/src/launcher/mpirun"
filter=${1:-.}
limit=${AXON_TEST_TIMEOUT:-120}
logdir="$AXON_BUILDDIR/test/logs"
mkdir -p "$logdir"
passed=0 failed=0 skipped=0
failed_names=()

shm_files() { ls /dev/shm 2>/dev/null | grep '^axon\.' | sort; }
# only_ended_jobs: files of jobs still running are another run's, not leftovers.
. "$AXON_SRCDIR/test/shm_jobs.sh"

for list in "$AXON_SRCDIR"/test/*/tests.list; do
  while read -r name np cmd args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ "$name" =~ $filter ]] || continue
    log="$logdir/$name.log"
    before=$(shm_files)
    start=$(date +%s%N)
    if [[ "$np" -gt 0 ]]; then
      # shellcheck disable=SC2086
      timeout -k 5 "$limit" "$MPIRUN" -np "$np" "$AXON_BUILDDIR/$cmd" $args >"$log" 2>&1 </dev/null
    else
      if [[ "$cmd" == *.sh ]]; then cmd="$AXON_SRCDIR/$cmd"; else cmd="$AXON_BUILDDIR/$cmd"; fi
      # shellcheck disable=SC2086
      timeout -k 5 "$limit" "$cmd" $args >"$log" 2>&1 </dev/null
    fi
    rc=$?
    tenths=$((($(date +%s%N) - start) / 100000000)); secs="$((tenths / 10)).$((tenths % 10))"
    leftover=$(comm -13 <(echo "$before") <(shm_files) | only_ended_jobs)
    if [[ $rc -eq 0 && -n "$leftover" ]]; then
      echo "leftover shared-memory files: $leftover" >>"$log"
      rm -f $(sed 's|^|/dev/shm/|' <<<"$leftover")
      rc=99
    fi
    if [[ $rc -eq 0 ]]; then
      passed=$((passed + 1)); echo "PASS  $name (${secs}s)"
    elif [[ $rc -eq 77 ]]; then
      skipped=$((skipped + 1)); echo "SKIP  $name: $(tail -n 1 "$log")"
    else
      failed=$((failed + 1)); failed_names+=("$name")
      [[ $rc -eq 124 ]] && why="timed out after ${limit}s" || why="exit $rc"
      echo "FAIL  $name ($why) -- last lines of $log:"
      tail -n 15 "$log" | sed 's/^/      | /'
    fi
  done <"$list"
done

[[ $failed -gt 0 ]] && echo "failed: ${failed_names[*]}"
if [[ $skipped -gt 0 ]]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[[ $failed -eq 0 && $passed -gt 0 ]]
