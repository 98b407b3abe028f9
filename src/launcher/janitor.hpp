// janitor.hpp -- what cleans up after a SIGKILLed mpirun (or daemon).
//
// A process killed with SIGKILL cannot remove its job's tmpdir
// ($TMPDIR/axon.<pid>.<hex>.XXXXXX) and shared-memory files, and whatever its
// ranks forked outlives it (the ranks themselves die through
// PR_SET_PDEATHSIG). So before it creates any file of a job, mpirun starts a
// janitor, `mpirun --janitor NSPACE`, in a session of its own (a signal to
// mpirun's process group or terminal does not reach it), reading a pipe from
// mpirun. mpirun writes the tmpdir and each rank's pid to it as they come,
// and "done" once it has cleaned up itself. EOF without "done" means mpirun
// died: the janitor kills the process groups of the ranks that were still
// running, removes /dev/shm/axon.<nspace>.* and the tmpdir, and exits.
#pragma once

#include "base/unique_fd.h"

#include <sys/types.h>

#include <string>

namespace axon::launcher {

class Janitor {
public:
    Janitor() = default;
    Janitor(const Janitor &) = delete;
    Janitor &operator=(const Janitor &) = delete;
    // Dismisses the janitor: mpirun's own cleanup ran.
    ~Janitor() { dismiss(); }

    // Starts `mpirun --janitor NSPACE`. Without one (fork failed) the job
    // still runs; only a SIGKILL would leave files behind, as before.
    bool start(const std::string &nspace, std::string &error);
    void watch_dir(const std::string &path);
    void watch_rank(pid_t pid);
    void forget_rank(pid_t pid);  // reaped by mpirun: its group id may be reused
    // mpirun cleaned up: the janitor exits without doing anything; waits a
    // moment for it, so no process of the job outlives mpirun.
    void dismiss();

private:
    void say(const std::string &line);
    pid_t pid_ = -1;
    UniqueFd pipe_;
};

// `mpirun --janitor NSPACE`: the janitor's whole life (stdin: the pipe).
int run_janitor(int argc, char **argv);

}  // namespace axon::launcher
