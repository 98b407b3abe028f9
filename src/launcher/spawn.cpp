// spawn.cpp -- program lookup and fork/exec of a rank.
//
// mpirun is multi-threaded (libpmix runs a progress thread), so between fork
// and exec the child may only make async-signal-safe calls: everything it
// needs (argv, envp, affinity, fds) is prepared before fork.
#include "launcher/spawn.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace axon::launcher {
namespace {

// 0 when `path` is an executable regular file, else the errno exec would give.
int check_executable(const std::string &path) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) return errno;
    if (S_ISDIR(info.st_mode)) return EISDIR;
    if (!S_ISREG(info.st_mode) || access(path.c_str(), X_OK) != 0) return EACCES;
    return 0;
}

std::vector<char *> pointer_array(const std::vector<std::string> &strings) {
    std::vector<char *> pointers;
    pointers.reserve(strings.size() + 1);
    for (const auto &text : strings) pointers.push_back(const_cast<char *>(text.c_str()));
    pointers.push_back(nullptr);
    return pointers;
}

bool make_pipe(UniqueFd &read_end, UniqueFd &write_end) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    return true;
}

// The child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void become_rank(const SpawnRequest &request, pid_t parent, int stdout_fd, int stderr_fd,
                              int status_fd, char *const argv[], char *const envp[]) {
    setpgid(0, 0);  // own group: mpirun signals the rank and whatever it forks
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // mpirun died before prctl took effect

    if (request.stdin_fd >= 0) dup2(request.stdin_fd, STDIN_FILENO);
    dup2(stdout_fd, STDOUT_FILENO);
    dup2(stderr_fd, STDERR_FILENO);

    // mpirun blocks the signals it reads through signalfd and ignores SIGPIPE;
    // the program must start with ordinary dispositions and mask.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGPIPE, &default_action, nullptr);
    if (request.signal_mask) sigprocmask(SIG_SETMASK, request.signal_mask, nullptr);
    if (request.open_files_limit) setrlimit(RLIMIT_NOFILE, request.open_files_limit);

    if (request.affinity) sched_setaffinity(0, sizeof(cpu_set_t), request.affinity);
    if (!request.working_dir.empty() && chdir(request.working_dir.c_str()) != 0) {
        int failure = errno;
        ssize_t written = write(status_fd, &failure, sizeof failure);
        (void)written;
        _exit(127);
    }

    execve(request.executable.c_str(), argv, envp);
    int failure = errno;
    ssize_t written = write(status_fd, &failure, sizeof failure);
    (void)written;
    _exit(127);
}

}  // namespace

std::string env_value(const std::vector<std::string> &env, const std::string &name) {
    for (const auto &entry : env) {
        if (entry.size() > name.size() && entry[name.size()] == '=' && entry.compare(0, name.size(), name) == 0) {
            return entry.substr(name.size() + 1);
        }
    }
    return {};
}

void env_set(std::vector<std::string> &env, const std::string &name, const std::string &value) {
    for (auto &entry : env) {
        if (entry.size() > name.size() && entry[name.size()] == '=' && entry.compare(0, name.size(), name) == 0) {
            entry = name + "=" + value;
            return;
        }
    }
    env.push_back(name + "=" + value);
}

int resolve_program(const std::string &program, const std::string &path_variable, std::string &resolved) {
    if (program.empty()) return ENOENT;
    if (program.find('/') != std::string::npos) {
        int failure = check_executable(program);
        if (failure == 0) resolved = program;
        return failure;
    }
    // Like execvp: an empty PATH element means the current directory; a
    // candidate that exists but cannot be run is remembered as EACCES.
    const std::string path = path_variable.empty() ? "/usr/local/bin:/bin:/usr/bin" : path_variable;
    int failure = ENOENT;
    size_t start = 0;
    while (true) {
        size_t end = path.find(':', start);
        std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
        int result = check_executable(candidate);
        if (result == 0) {
            resolved = candidate;
            return 0;
        }
        if (result == EACCES || result == EISDIR) failure = EACCES;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return failure;
}

bool spawn_rank(const SpawnRequest &request, RankProcess &process, std::string &error) {
    UniqueFd stdout_read, stdout_write, stderr_read, stderr_write, status_read, status_write;
    if (!make_pipe(stdout_read, stdout_write) || !make_pipe(stderr_read, stderr_write) ||
        !make_pipe(status_read, status_write)) {
        error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    std::vector<char *> argv = pointer_array(request.argv);
    std::vector<char *> envp = pointer_array(request.env);
    const pid_t parent = getpid();

    pid_t pid = fork();
    if (pid < 0) {
        error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (pid == 0) {
        become_rank(request, parent, stdout_write.get(), stderr_write.get(), status_write.get(), argv.data(),
                    envp.data());
    }
    // Also from the parent, so the group exists before mpirun may signal it.
    setpgid(pid, pid);
    process.pid = pid;
    process.stdout_pipe = std::move(stdout_read);
    process.stderr_pipe = std::move(stderr_read);
    process.exec_status = std::move(status_read);
    fcntl(process.stdout_pipe.get(), F_SETFL, O_NONBLOCK);
    fcntl(process.stderr_pipe.get(), F_SETFL, O_NONBLOCK);
    return true;  // the write ends close here: the rank holds the only copies
}

int exec_failure(const RankProcess &process) {
    if (!process.exec_status) return 0;
    int failure = 0;
    // The child wrote before it exited, so after the exit this never blocks.
    ssize_t got = read(process.exec_status.get(), &failure, sizeof failure);
    return got == static_cast<ssize_t>(sizeof failure) ? failure : 0;
}

}  // namespace axon::launcher
