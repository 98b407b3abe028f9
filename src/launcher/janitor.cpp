// janitor.cpp -- the janitor process and mpirun's side of its pipe.
#include "launcher/janitor.hpp"

#include "launcher/job_files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace axon::launcher {

bool Janitor::start(const std::string &nspace, std::string &error) {
    char exe[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (length <= 0) {
        error = std::string("cannot find mpirun's own program: ") + std::strerror(errno);
        return false;
    }
    exe[length] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    UniqueFd read_end(fds[0]), write_end(fds[1]);
    pid_t pid = fork();
    if (pid < 0) {
        error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (pid == 0) {
        // Before any thread exists (mpirun starts libpmix later); still only
        // async-signal-safe calls, as after any fork.
        setsid();  // out of mpirun's process group and terminal
        dup2(read_end.get(), STDIN_FILENO);
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            // Not mpirun's stdout/stderr: `out=$(mpirun ...)` must not wait for the janitor.
            dup2(null_fd, STDOUT_FILENO);
            dup2(null_fd, STDERR_FILENO);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);  // mpirun blocks the signals it reads
        signal(SIGPIPE, SIG_DFL);
        const char *argv[] = {exe, "--janitor", nspace.c_str(), nullptr};
        execv(exe, const_cast<char *const *>(argv));
        _exit(127);
    }
    pid_ = pid;
    pipe_ = std::move(write_end);
    return true;
}

void Janitor::say(const std::string &line) {
    if (!pipe_) return;
    std::string text = line + "\n";
    // Short lines to a process that reads at once; a janitor that died makes
    // this fail with EPIPE (SIGPIPE is ignored), and nothing else happens.
    ssize_t written = write(pipe_.get(), text.data(), text.size());
    if (written != static_cast<ssize_t>(text.size())) pipe_.reset();
}

void Janitor::watch_dir(const std::string &path) { say("dir " + path); }
void Janitor::watch_rank(pid_t pid) { say("pid " + std::to_string(pid)); }
void Janitor::forget_rank(pid_t pid) { say("gone " + std::to_string(pid)); }

void Janitor::dismiss() {
    if (pid_ <= 0) return;
    say("done");
    pipe_.reset();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < deadline) {
        int status;
        pid_t got = waitpid(pid_, &status, WNOHANG);
        if (got == pid_ || (got < 0 && errno == ECHILD)) break;  // ECHILD: the event loop reaped it
        usleep(2000);
    }
    pid_ = -1;
}

int run_janitor(int argc, char **argv) {
    if (argc != 3) return 1;
    const std::string nspace = argv[2];
    std::vector<std::string> dirs;
    std::set<pid_t> ranks;
    std::string pending;
    char chunk[4096];
    bool dismissed = false;
    while (!dismissed) {
        ssize_t got = read(STDIN_FILENO, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;  // EOF: mpirun is gone
        pending.append(chunk, static_cast<size_t>(got));
        for (size_t newline; !dismissed && (newline = pending.find('\n')) != std::string::npos;) {
            std::string line = pending.substr(0, newline);
            pending.erase(0, newline + 1);
            if (line == "done") {
                dismissed = true;
            } else if (line.rfind("dir ", 0) == 0) {
                dirs.push_back(line.substr(4));
            } else if (line.rfind("pid ", 0) == 0) {
                ranks.insert(static_cast<pid_t>(std::atoi(line.c_str() + 4)));
            } else if (line.rfind("gone ", 0) == 0) {
                ranks.erase(static_cast<pid_t>(std::atoi(line.c_str() + 5)));
            }
        }
    }
    if (dismissed) return 0;
    // mpirun died without cleaning up. Its ranks die with it (PDEATHSIG);
    // what they forked is still in their process groups.
    for (pid_t rank : ranks) {
        if (rank > 1) kill(-rank, SIGKILL);
    }
    for (const auto &dir : dirs) {
        JobFiles files(nspace);
        files.adopt_tmpdir(dir);
        files.remove_all();
    }
    if (dirs.empty()) JobFiles(nspace).remove_all();  // the shared-memory files at least
    return 0;
}

}  // namespace axon::launcher
