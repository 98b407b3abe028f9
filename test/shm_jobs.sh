# shm_jobs.sh -- sourced by test/run-tests.sh and the tests that look for
# leftover /dev/shm files.
#
# only_ended_jobs: reads /dev/shm names (one a line) and prints those whose
# job has ended. Files of jobs whose mpirun is still running are not a
# case's leftovers (another test run may share the machine): a job's files
# are named axon.axon.<mpirun pid>.<...>, a singleton's axon.<...>.<pid>....
only_ended_jobs() {
  local f pid
  while read -r f; do
    [[ -z "$f" ]] && continue
    pid=$(sed -n 's/^axon\.[a-z]*\.\([0-9][0-9]*\)\..*/\1/p' <<<"$f")
    [[ -n "$pid" && -d /proc/$pid ]] && continue
    echo "$f"
  done
}
