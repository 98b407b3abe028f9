// spawn.hpp -- finding the program and starting one rank (fork + exec).
#pragma once

#include "base/unique_fd.h"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace axon::launcher {

// Resolves `program` the way execvp would, with `path_variable` as PATH.
// Returns 0 and sets `resolved`, or the errno execvp would fail with
// (ENOENT, EACCES, ...), so mpirun can refuse before starting any rank.
int resolve_program(const std::string &program, const std::string &path_variable, std::string &resolved);

// Value of NAME in a NAME=value list, or "" when absent.
std::string env_value(const std::vector<std::string> &env, const std::string &name);
// Sets NAME=value in a NAME=value list, replacing an existing entry.
void env_set(std::vector<std::string> &env, const std::string &name, const std::string &value);

struct SpawnRequest {
    std::string executable;               // resolved path (execve, no PATH search in the child)
    std::vector<std::string> argv;        // argv[0] is the program as the user typed it
    std::vector<std::string> env;         // complete environment
    const cpu_set_t *affinity = nullptr;  // bind before exec when set
    int stdin_fd = -1;                    // becomes the rank's fd 0
    const sigset_t *signal_mask = nullptr;  // the mask the rank starts with
    const rlimit *open_files_limit = nullptr;  // RLIMIT_NOFILE the rank starts with
    std::string working_dir;              // chdir before exec (MPI_Comm_spawn's "wdir"); empty: inherit
};

struct RankProcess {
    pid_t pid = -1;
    UniqueFd stdout_pipe;   // read ends of the rank's stdout / stderr
    UniqueFd stderr_pipe;
    UniqueFd exec_status;   // carries errno when exec fails; EOF when exec succeeded
};

// Forks and execs one rank in its own process group, with PR_SET_PDEATHSIG
// so it dies with mpirun. Returns false (with `error`) when fork or pipe fails.
bool spawn_rank(const SpawnRequest &request, RankProcess &process, std::string &error);

// After the rank exited: the errno of a failed exec, or 0 when exec worked.
int exec_failure(const RankProcess &process);

}  // namespace axon::launcher
