// job_supervisor.cpp -- the launch and the event loop of one job.
//
// One thread does everything here; libpmix's thread only records facts the
// loop reads (PmixHost). The loop waits in poll() on: the signalfd (SIGCHLD
// and the signals mpirun forwards), the PMIx abort wakeup, the ranks' output
// pipes and stdin; deadlines (timeout, kill grace, finalize grace, output
// drain) bound each wait.
#include "launcher/job_supervisor.hpp"

#include "launcher/janitor.hpp"

#include <hwloc/glibc-sched.h>
#include <pmix_common.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace axon::launcher {
namespace {

constexpr auto kill_grace = std::chrono::seconds(3);      // SIGTERM -> SIGKILL
constexpr auto finalize_grace = std::chrono::seconds(2);  // rank left without finalize
constexpr auto drain_after_exit = std::chrono::seconds(2);  // output of exited ranks

int exit_status_of_exec_failure(int failure) { return failure == ENOENT ? 127 : 126; }

// How a rank ended, for the hang report ("exited with status 0 without calling MPI_Finalize").
std::string exit_text(int wait_status, int exec_errno, bool connected, bool finalized) {
    if (exec_errno != 0) return std::string("could not be started: ") + std::strerror(exec_errno);
    if (WIFSIGNALED(wait_status))
        return "was killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" + strsignal(WTERMSIG(wait_status)) +
               ")";
    std::string text = "exited with status " + std::to_string(WEXITSTATUS(wait_status));
    if (finalized) return text + " after MPI_Finalize";
    return connected ? text + " without calling MPI_Finalize" : text;
}

}  // namespace

JobSupervisor::JobSupervisor(PmixHost &host, const JobMap &map, uint32_t node, const Topology &topology,
                             int signal_fd, JobLink *link)
    : host_(host), map_(map), node_(node), topology_(topology), signal_fd_(signal_fd), link_(link) {}

// "rank 1 (pid 1234)", and " on HOST" when the job spans nodes.
std::string JobSupervisor::where(uint32_t rank, int pid) const {
    std::string text = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
    if (map_.multi_node() && rank < map_.size() && pid >= 0) text += " on " + map_.nodes[map_.ranks[rank].node].name;
    return text;
}

// Starts one rank's process, forwards its output, and records it in ranks_.
bool JobSupervisor::start_rank(const SpawnRequest &request, Rank &entry, OutputStream::Sink sink,
                               std::string &error) {
    if (!spawn_rank(request, entry.process, error)) return false;
    if (plan_.janitor) plan_.janitor->watch_rank(entry.process.pid);
    entry.running = true;
    entry.out = std::make_unique<OutputStream>(std::move(entry.process.stdout_pipe), STDOUT_FILENO, entry.rank, false,
                                               sink);
    entry.err = std::make_unique<OutputStream>(std::move(entry.process.stderr_pipe), STDERR_FILENO, entry.rank, true,
                                               sink);
    ranks_.push_back(std::move(entry));
    return true;
}

std::string JobSupervisor::program_of(uint32_t rank) const {
    uint32_t app = rank < map_.size() ? map_.ranks[rank].app : 0;
    if (app < plan_.apps.size() && !plan_.apps[app].argv.empty()) return plan_.apps[app].argv.front();
    return "?";
}

// DIR/1/rank.N/stdout and stderr, N zero-padded to the number of digits of
// the job size, as Open MPI names them (DIR/rank.N with nojobid).
bool JobSupervisor::open_output_files(uint32_t rank, UniqueFd &out, UniqueFd &err, std::string &error) const {
    int digits = 1;
    for (uint32_t n = map_.size() / 10; n > 0; n /= 10) ++digits;
    char leaf[32];
    std::snprintf(leaf, sizeof leaf, "rank.%0*u", digits, rank);
    std::string dir = plan_.output_dir + (plan_.output_jobid ? "/1/" : "/") + leaf;
    // mkdir -p; an existing directory is fine (a rerun, or another rank's).
    for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
        std::string prefix = at == std::string::npos ? dir : dir.substr(0, at);
        if (mkdir(prefix.c_str(), 0750) != 0 && errno != EEXIST) {
            error = "cannot create " + prefix + ": " + std::strerror(errno);
            return false;
        }
        if (at == std::string::npos) break;
    }
    out.reset(open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    err.reset(open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!out || !err) {
        error = "cannot write " + dir + "/std{out,err}: " + std::strerror(errno);
        return false;
    }
    return true;
}

void JobSupervisor::launch(const LaunchPlan &plan) {
    plan_ = plan;
    tagging_ = plan.tagging;
    timeout_seconds_ = plan.timeout_seconds;
    timeout_origin_ = plan.timeout_origin;
    if (plan.timeout_seconds > 0) job_deadline_ = Clock::now() + std::chrono::seconds(plan.timeout_seconds);

    UniqueFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
    UniqueFd rank0_stdin;
    if (plan.forward_stdin) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) == 0) {
            rank0_stdin.reset(fds[0]);
            stdin_ = std::make_unique<StdinForwarder>(STDIN_FILENO, UniqueFd(fds[1]));
        }
    }

    if (node_ >= map_.nodes.size()) return;  // mpirun runs no rank itself
    const uint32_t local_size = static_cast<uint32_t>(map_.nodes[node_].ranks.size());
    ranks_.reserve(local_size);
    OutputStream::Sink sink = link_ ? link_->output_sink() : nullptr;
    for (uint32_t rank : map_.nodes[node_].ranks) {
        const RankPlan &placement = map_.ranks[rank];
        const AppLaunch &app = plan.apps.at(placement.app);
        SpawnRequest request;
        request.executable = app.executable;
        request.argv = app.argv;
        request.env = plan.base_env;
        for (const auto &entry : app.env) {
            auto eq = entry.find('=');
            if (eq != std::string::npos) env_set(request.env, entry.substr(0, eq), entry.substr(eq + 1));
        }
        request.working_dir = app.wdir;
        request.signal_mask = plan.rank_signal_mask;
        request.open_files_limit = plan.rank_open_files_limit;
        request.stdin_fd = (rank == 0 && rank0_stdin) ? rank0_stdin.get() : dev_null.get();

        std::string error;
        if (!host_.prepare_rank(rank, request.env, error)) {
            std::fprintf(stderr, "%s: cannot prepare rank %u: %s; ending the job\n", label_.c_str(), rank,
                         error.c_str());
            end_job(1);
            return;
        }
        // The hang doctor (src/diag/hang.h): where a rank answers, and whom it
        // asks for a report (this process: mpirun, or the node's daemon).
        if (!plan.tmpdir.empty()) env_set(request.env, "AXON_HANG_DIR", plan.tmpdir);
        env_set(request.env, "AXON_LAUNCHER_PID", std::to_string(getpid()));
        // Hydra's names; programs such as OSU's benchmarks read them to pick a GPU.
        env_set(request.env, "MPI_LOCALRANKID", std::to_string(placement.local_rank));
        env_set(request.env, "MPI_LOCALNRANKS", std::to_string(local_size));

        cpu_set_t affinity;
        if (placement.pinned && placement.cpuset) {
            CPU_ZERO(&affinity);
            hwloc_cpuset_to_glibc_sched_affinity(topology_.get(), placement.cpuset.get(), &affinity,
                                                 sizeof affinity);
            request.affinity = &affinity;
        }

        UniqueFd out_file, err_file;
        if (!plan.output_dir.empty() && !open_output_files(rank, out_file, err_file, error)) {
            std::fprintf(stderr, "%s: --output-filename: %s; ending the job\n", label_.c_str(), error.c_str());
            end_job(1);
            return;
        }
        Rank entry;
        entry.rank = rank;
        if (!start_rank(request, entry, sink, error)) {
            std::fprintf(stderr, "%s: cannot start rank %u: %s; ending the job\n", label_.c_str(), rank, error.c_str());
            end_job(1);
            return;
        }
        if (out_file) {
            ranks_.back().out->set_file(std::move(out_file), plan.output_copy);
            ranks_.back().err->set_file(std::move(err_file), plan.output_copy);
        }
    }
}

void JobSupervisor::signal_running(int signo) {
    if (link_) link_->forward_signal(signo);
    for (const auto &rank : ranks_) {
        if (!rank.running) continue;
        if (kill(-rank.process.pid, signo) != 0) kill(rank.process.pid, signo);
    }
}

// Every rank's process group, exited or not: catches what the ranks forked.
// Only used once every rank is reaped after a failed job, seconds after their
// exits, so a group id cannot have been reused yet.
void JobSupervisor::kill_all_groups() {
    for (const auto &rank : ranks_) kill(-rank.process.pid, SIGKILL);
}

void JobSupervisor::end_job(int exit_status) {
    if (ending_) return;
    ending_ = true;
    exit_status_ = exit_status;
    finalize_grace_deadline_.reset();
    if (link_) link_->end_job();
    for (const auto &rank : ranks_) {
        if (rank.running && kill(-rank.process.pid, SIGTERM) != 0) kill(rank.process.pid, SIGTERM);
    }
    kill_deadline_ = Clock::now() + kill_grace;
}

void JobSupervisor::on_signal(int signo, pid_t sender) {
    if (signo == SIGUSR1) {  // a hang report; the job goes on
        int asking = -1;     // a local rank of the job (AXON_HANG_REPORT_AFTER), or someone else
        for (const auto &rank : ranks_) {
            if (rank.running && rank.job == 0 && rank.process.pid == sender) asking = static_cast<int>(rank.rank);
        }
        if (link_ && link_->reports_to_head()) {
            link_->ask_head_for_report(asking);
        } else if (asking >= 0) {
            rank_asked_for_report(static_cast<uint32_t>(asking));
        } else {
            start_hang_report(label_ + " received SIGUSR1", AfterReport::nothing);
        }
        return;
    }
    if (signo == SIGUSR2) {  // passed on, the job goes on
        signal_running(signo);
        return;
    }
    if (signalled_) {
        std::fprintf(stderr, "%s: received signal %d (%s) again; killing the ranks\n", label_.c_str(), signo,
                     strsignal(signo));
        signal_running(SIGKILL);
        killed_ = true;
        return;
    }
    signalled_ = true;
    std::fprintf(stderr, "%s: received signal %d (%s); forwarding it to the ranks and ending the job\n",
                 label_.c_str(), signo, strsignal(signo));
    if (!ending_) {
        end_job(128 + signo);
    }
    signal_running(signo);
}

void JobSupervisor::kill_requested(bool at_once) {
    end_job(1);
    if (at_once && !killed_) {
        for (const auto &rank : ranks_) {
            if (rank.running) kill(-rank.process.pid, SIGKILL);
        }
        killed_ = true;
    }
}

void JobSupervisor::remote_abort(const AbortRequest &request, const std::string &host, int pid) {
    if (ending_) return;
    int status = request.status & 0xff;
    std::fprintf(stderr, "mpirun: rank %u (pid %d) on %s called MPI_Abort with status %d%s%s; ending the job\n",
                 request.rank, pid, host.c_str(), request.status, request.message.empty() ? "" : ": ",
                 request.message.c_str());
    end_job(status != 0 ? status : 1);
}

void JobSupervisor::on_abort(const AbortRequest &request) {
    pid_t pid = -1;
    for (const auto &rank : ranks_) {
        if (rank.rank == request.rank) pid = rank.process.pid;
    }
    if (link_ && link_->reports_to_head()) {
        link_->report_abort(request.rank, static_cast<int>(pid), request);
        return;
    }
    if (ending_) return;
    if (map_.multi_node()) {
        remote_abort(request, map_.nodes[node_].name, static_cast<int>(pid));
        return;
    }
    int status = request.status & 0xff;
    std::fprintf(stderr, "mpirun: rank %u (pid %d) called MPI_Abort with status %d%s%s; ending the job\n",
                 request.rank, static_cast<int>(pid), request.status, request.message.empty() ? "" : ": ",
                 request.message.c_str());
    end_job(status != 0 ? status : 1);  // an aborted job never reports success
}

void JobSupervisor::on_exit(Rank &rank, int wait_status) {
    rank.running = false;
    if (plan_.janitor) plan_.janitor->forget_rank(rank.process.pid);
    if (rank.rank == 0 && rank.job == 0 && stdin_) stdin_->stop();
    const int pid = static_cast<int>(rank.process.pid);
    const int failure = exec_failure(rank.process);
    if (rank.job > 0) {
        // A rank of a spawned job: the same policy, named as such.
        judge_exit(rank.rank,
                   "rank " + std::to_string(rank.rank) + " of spawned job " + std::to_string(rank.job) + " (pid " +
                       std::to_string(pid) + ")",
                   wait_status, failure, host_.connected(rank.nspace, rank.rank),
                   host_.finalized(rank.nspace, rank.rank));
        return;
    }
    const bool connected = host_.connected(rank.rank), finalized = host_.finalized(rank.rank);
    exited_[rank.rank] = exit_text(wait_status, failure, connected, finalized);
    if (link_ && link_->reports_to_head()) {
        link_->report_exit(rank.rank, pid, wait_status, failure, connected, finalized);
        return;
    }
    judge_exit(rank.rank, where(rank.rank, pid), wait_status, failure, connected, finalized);
}

void JobSupervisor::remote_exit(uint32_t rank, const std::string &host, int pid, int wait_status, int exec_errno,
                                bool connected, bool finalized) {
    exited_[rank] = exit_text(wait_status, exec_errno, connected, finalized);
    judge_exit(rank, "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") on " + host, wait_status,
               exec_errno, connected, finalized);
}

// The exit policy (see the header), for a rank of any node.
void JobSupervisor::judge_exit(uint32_t rank, const std::string &where, int wait_status, int exec_errno,
                               bool connected, bool finalized) {
    if (exec_errno != 0) {
        if (!ending_) {
            std::string host = map_.multi_node() && rank < map_.size()
                                   ? " on " + map_.nodes[map_.ranks[rank].node].name
                                   : std::string();
            std::fprintf(stderr, "mpirun: cannot run '%s' (rank %u%s): %s; ending the job\n",
                         program_of(rank).c_str(), rank, host.c_str(), std::strerror(exec_errno));
            end_job(exit_status_of_exec_failure(exec_errno));
        }
        return;
    }
    if (ending_) return;  // ended by mpirun, or going down with the job

    if (WIFSIGNALED(wait_status)) {
        int signo = WTERMSIG(wait_status);
        std::fprintf(stderr, "mpirun: %s was killed by signal %d (%s); ending the job\n", where.c_str(), signo,
                     strsignal(signo));
        end_job(128 + signo);
    } else if (int code = WEXITSTATUS(wait_status); code != 0) {
        std::fprintf(stderr, "mpirun: %s exited with status %d; ending the job\n", where.c_str(), code);
        end_job(code);
    } else if (connected && !finalized) {
        // Legal for some programs (OSU's osu_latency_mt): fine if the others
        // finish soon, a hang otherwise.
        unfinalized_.push_back(rank);
        unfinalized_where_.push_back(where);
        bool others = any_running() || (link_ && link_->active());
        if (others && !finalize_grace_deadline_) finalize_grace_deadline_ = Clock::now() + finalize_grace;
    }
}

void JobSupervisor::check_deadlines(Clock::time_point now) {
    if (job_deadline_ && now >= *job_deadline_) {
        job_deadline_.reset();
        if (!ending_) {
            // The report first (what the ranks are stuck in), then the end as before.
            if (plan_.hang_report_on_timeout) {
                start_hang_report("the job ran longer than " + timeout_origin_ + " " +
                                      std::to_string(timeout_seconds_) + " s",
                                  AfterReport::timeout);
            } else {
                end_after_report(AfterReport::timeout);
            }
        }
    }
    if (finalize_grace_deadline_ && now >= *finalize_grace_deadline_) {
        finalize_grace_deadline_.reset();
        if (!ending_ && (any_running() || (link_ && link_->active())) && !unfinalized_.empty()) {
            // The others most likely wait for it: say in what.
            start_hang_report(unfinalized_where_.front() + " exited without calling MPI_Finalize",
                              AfterReport::unfinalized);
        }
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
        kill_deadline_.reset();
        if (!killed_) {
            signal_running(SIGKILL);
            killed_ = true;
        }
    }
}

bool JobSupervisor::any_running() const {
    return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank &rank) { return rank.running; });
}

bool JobSupervisor::streams_open() const {
    return std::any_of(ranks_.begin(), ranks_.end(),
                       [](const Rank &rank) { return rank.out->open() || rank.err->open(); });
}

int JobSupervisor::poll_timeout_ms(Clock::time_point now) const {
    std::optional<Clock::time_point> next;
    std::optional<Clock::time_point> link_deadline = link_ ? link_->deadline() : std::nullopt;
    std::optional<Clock::time_point> hang_look = hang_collector_.next_look();
    if (hang_running_ && (!hang_look || (hang_deadline_ && *hang_deadline_ < *hang_look))) hang_look = hang_deadline_;
    for (const auto &deadline :
         {job_deadline_, kill_deadline_, finalize_grace_deadline_, drain_deadline_, link_deadline, hang_look}) {
        if (deadline && (!next || *deadline < *next)) next = deadline;
    }
    if (!next) return -1;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1;
    return static_cast<int>(std::clamp<long long>(wait, 0, 60'000));
}

void JobSupervisor::read_signals() {
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo != SIGCHLD) on_signal(static_cast<int>(info.ssi_signo), static_cast<pid_t>(info.ssi_pid));
    }
}

void JobSupervisor::on_spawn(const HostEvent &event) {
    auto refuse = [&](int status, const std::string &why) {
        std::fprintf(stderr, "%s: MPI_Comm_spawn from rank %u: %s\n", label_.c_str(), event.rank, why.c_str());
        host_.answer_spawn(event.id, status, "");
    };
    // Spawned jobs run on mpirun's node only: the daemons of other nodes are
    // started once, for the first job (docs/dpm.md).
    if (ending_) return refuse(PMIX_ERROR, "the job is ending");
    if (map_.multi_node() || node_ >= map_.nodes.size())
        return refuse(PMIX_ERROR, "spawning is supported only when the job runs on mpirun's node alone");
    uint32_t total = 0;
    std::vector<std::string> executables;
    for (const auto &app : event.apps) {
        std::string path = env_value(app.env, "PATH");
        if (path.empty()) path = env_value(plan_.base_env, "PATH");
        std::string resolved;
        // A relative program name with a working directory is looked up there.
        std::string program = app.command;
        if (!app.wdir.empty() && program.find('/') != std::string::npos && program.front() != '/')
            program = app.wdir + "/" + program;
        if (int failure = resolve_program(program, path, resolved); failure != 0)
            return refuse(PMIX_ERR_NOT_FOUND, "cannot run '" + app.command + "': " + std::strerror(failure));
        if (!app.wdir.empty() && resolved.front() != '/' && program.find('/') == std::string::npos)
            resolved = app.wdir + "/" + resolved;
        executables.push_back(resolved);
        total += app.maxprocs;
    }
    if (total == 0) return refuse(PMIX_ERR_BAD_PARAM, "no process to start");

    const uint32_t job = ++spawned_jobs_;
    const std::string nspace = event.nspace + "." + std::to_string(job);
    auto map = std::make_unique<JobMap>();
    map->nodes.push_back(NodePlan{map_.nodes[node_].name, {}, true, static_cast<int>(total), {}});
    map->head_node = 0;
    map->num_apps = static_cast<uint32_t>(event.apps.size());
    std::vector<uint32_t> appnums;
    for (uint32_t a = 0; a < event.apps.size(); ++a) {
        for (uint32_t k = 0; k < event.apps[a].maxprocs; ++k) {
            RankPlan plan;
            plan.rank = map->size();
            plan.node = 0;
            plan.app = a;
            plan.local_rank = static_cast<uint16_t>(plan.rank);
            map->nodes[0].ranks.push_back(plan.rank);
            map->ranks.push_back(std::move(plan));
            appnums.push_back(a);
        }
    }
    std::string error;
    if (!host_.register_spawned_job(nspace, *map, plan_.tmpdir, error)) return refuse(PMIX_ERROR, error);

    UniqueFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
    OutputStream::Sink sink = link_ ? link_->output_sink() : nullptr;
    for (uint32_t rank = 0; rank < map->size(); ++rank) {
        const auto &app = event.apps[appnums[rank]];
        SpawnRequest request;
        request.executable = executables[appnums[rank]];
        request.argv = app.argv;
        request.env = plan_.base_env;
        for (const auto &entry : app.env) {
            auto eq = entry.find('=');
            if (eq != std::string::npos) env_set(request.env, entry.substr(0, eq), entry.substr(eq + 1));
        }
        request.signal_mask = plan_.rank_signal_mask;
        request.open_files_limit = plan_.rank_open_files_limit;
        request.stdin_fd = dev_null.get();
        request.working_dir = app.wdir;
        if (!host_.prepare_rank(nspace, rank, request.env, error)) {
            // Ranks already started cannot connect to the parent: end the job.
            refuse(PMIX_ERROR, "cannot prepare a rank: " + error);
            end_job(1);
            return;
        }
        env_set(request.env, "MPI_LOCALRANKID", std::to_string(rank));
        env_set(request.env, "MPI_LOCALNRANKS", std::to_string(map->size()));
        Rank entry;
        entry.rank = rank;
        entry.job = job;
        entry.nspace = nspace;
        if (!start_rank(request, entry, sink, error)) {
            refuse(PMIX_ERROR, "cannot start a rank: " + error);
            end_job(1);
            return;
        }
    }
    spawned_maps_.push_back(std::move(map));
    host_.answer_spawn(event.id, PMIX_SUCCESS, nspace);
}

int JobSupervisor::run() {
    std::vector<pollfd> fds;
    std::vector<OutputStream *> polled_streams;
    while (true) {
        if (!any_running() && !(link_ && link_->active())) {
            if (!drain_deadline_) {
                // Whatever the ranks forked may still hold their pipes; after a
                // failure it is killed, after success it gets a moment to finish.
                if (ending_) kill_all_groups();
                drain_deadline_ = Clock::now() + (ending_ ? std::chrono::milliseconds(500) : drain_after_exit);
            }
            if (!streams_open() || Clock::now() >= *drain_deadline_) break;
        }

        fds.clear();
        polled_streams.clear();
        fds.push_back({signal_fd_, POLLIN, 0});
        fds.push_back({host_.wakeup_fd(), POLLIN, 0});
        int stdin_slot = -1, sink_slot = -1;
        if (stdin_ && stdin_->wants_input()) {
            stdin_slot = static_cast<int>(fds.size());
            fds.push_back({stdin_->source(), POLLIN, 0});
        }
        if (stdin_ && stdin_->wants_output()) {
            sink_slot = static_cast<int>(fds.size());
            fds.push_back({stdin_->sink(), POLLOUT, 0});
        }
        const size_t first_link = fds.size();
        if (link_) link_->add_poll_fds(fds);
        const size_t first_stream = fds.size();
        for (auto &rank : ranks_) {
            for (OutputStream *stream : {rank.out.get(), rank.err.get()}) {
                if (!stream->open()) continue;
                fds.push_back({stream->fd(), POLLIN, 0});
                polled_streams.push_back(stream);
            }
        }

        int ready = poll(fds.data(), fds.size(), poll_timeout_ms(Clock::now()));
        if (ready < 0 && errno != EINTR) {
            std::fprintf(stderr, "%s: poll: %s\n", label_.c_str(), std::strerror(errno));
            end_job(1);
            usleep(10000);  // the kill deadline still runs; do not spin meanwhile
        }

        // Output first, so a rank's last words come before mpirun's report on it.
        for (size_t i = 0; i < polled_streams.size(); ++i) {
            if (fds[first_stream + i].revents) polled_streams[i]->forward(tagging_);
        }
        if (stdin_slot >= 0 && fds[stdin_slot].revents) stdin_->on_input();
        if (sink_slot >= 0 && fds[sink_slot].revents) stdin_->on_output();
        if (fds[0].revents) read_signals();
        if (link_) link_->on_poll(*this, fds, first_link);

        // Reap before taking aborts: a rank's abort request reaches the queue
        // before its exit, so every abort of a reaped rank is seen below.
        std::vector<std::pair<pid_t, int>> exits;
        int wait_status;
        pid_t pid;
        while ((pid = waitpid(-1, &wait_status, WNOHANG)) > 0) exits.emplace_back(pid, wait_status);
        if (fds[1].revents) host_.clear_wakeup();
        for (const auto &request : host_.take_aborts()) on_abort(request);
        for (auto &event : host_.take_events()) {
            if (event.kind == HostEvent::Kind::spawn) {
                on_spawn(event);
            } else if (link_) {
                link_->on_host_event(event);
            }
        }
        for (const auto &[exited, status] : exits) {
            bool ours = false;
            for (auto &rank : ranks_) {
                if (rank.running && rank.process.pid == exited) {
                    on_exit(rank, status);
                    ours = true;
                }
            }
            if (!ours && link_) link_->on_child_exit(*this, exited, status);
        }
        check_deadlines(Clock::now());
        step_hang();
    }

    if (!ending_ && !unfinalized_.empty()) {
        std::string list;
        for (uint32_t rank : unfinalized_) list += (list.empty() ? "" : ", ") + std::to_string(rank);
        std::fprintf(stderr, "mpirun: warning: rank%s %s exited without calling MPI_Finalize\n",
                     unfinalized_.size() == 1 ? "" : "s", list.c_str());
    }
    return ending_ ? exit_status_ : 0;
}

// ---- the hang doctor (hang_report.hpp) ------------------------------------------

std::vector<HangCollector::Target> JobSupervisor::hang_targets() const {
    std::vector<HangCollector::Target> targets;
    for (const auto &rank : ranks_) {
        if (rank.running && rank.job == 0) targets.push_back({rank.rank, rank.process.pid});
    }
    return targets;
}

void JobSupervisor::start_hang_report(std::string why, AfterReport then) {
    if (ending_) return;
    if (hang_running_) {  // one report at a time; a timeout meanwhile still ends the job after it
        if (hang_then_ == AfterReport::nothing) hang_then_ = then;  // the first reason to end stands
        return;
    }
    hang_running_ = true;
    hang_why_ = std::move(why);
    hang_then_ = then;
    hang_answers_.clear();
    // Ranks answer within milliseconds unless stopped or stuck outside the
    // progress loop; the daemons' answers get one more second to arrive.
    hang_collector_.start(plan_.tmpdir, hang_targets(), std::chrono::seconds(1));
    hang_local_pending_ = true;
    hang_remote_pending_ = link_ ? link_->ask_hang() : 0;
    hang_deadline_ = Clock::now() + std::chrono::seconds(2);
    step_hang();
}

void JobSupervisor::rank_asked_for_report(uint32_t rank) {
    // The ranks of one hang ask within a watchdog tick (200 ms) of each
    // other: one report answers them all.
    if (hang_running_ || (last_report_end_ && Clock::now() - *last_report_end_ < std::chrono::seconds(1))) return;
    start_hang_report("rank " + std::to_string(rank) + " made no progress for AXON_HANG_REPORT_AFTER seconds",
                      AfterReport::nothing);
}

void JobSupervisor::collect_hang_for_head() {
    hang_for_head_ = true;
    if (hang_local_pending_) return;  // the running collection answers
    hang_collector_.start(plan_.tmpdir, hang_targets(), std::chrono::seconds(1));
    hang_local_pending_ = true;
    step_hang();
}

void JobSupervisor::remote_hang_answers(std::map<uint32_t, RankAnswer> answers) {
    if (!hang_running_) return;  // late: the report went out without them
    for (auto &[rank, answer] : answers) hang_answers_[rank] = std::move(answer);
    --hang_remote_pending_;
    step_hang();
}

void JobSupervisor::step_hang() {
    if (hang_local_pending_ && hang_collector_.poll()) {
        hang_local_pending_ = false;
        std::map<uint32_t, RankAnswer> answers = hang_collector_.take();
        if (hang_for_head_ && link_) {
            hang_for_head_ = false;
            link_->send_hang_answers(answers);
        } else {
            for (auto &[rank, answer] : answers) hang_answers_[rank] = std::move(answer);
        }
    }
    if (hang_running_ && !hang_local_pending_ &&
        (hang_remote_pending_ <= 0 || (hang_deadline_ && Clock::now() >= *hang_deadline_))) {
        finish_hang_report();
    }
}

void JobSupervisor::finish_hang_report() {
    hang_running_ = false;
    hang_deadline_.reset();
    last_report_end_ = Clock::now();
    AfterReport then = hang_then_;
    hang_then_ = AfterReport::nothing;
    if (ending_) return;  // the job failed meanwhile: that message says it
    HangReport report;
    report.why = hang_why_;
    report.size = map_.size();
    report.exited = exited_;
    report.answers = std::move(hang_answers_);
    hang_answers_.clear();
    for (uint32_t rank = 0; rank < map_.size(); ++rank) {
        if (report.exited.count(rank)) {
            report.answers.erase(rank);
        } else if (!report.answers.count(rank)) {
            report.answers[rank] = RankAnswer{};  // its node did not answer in time
        }
    }
    report.where = [this](uint32_t rank, int pid) { return pid > 0 ? where(rank, pid) : "rank " + std::to_string(rank); };
    if (worth_printing(report)) print_report(report, stderr);
    end_after_report(then);
}

void JobSupervisor::end_after_report(AfterReport then) {
    if (ending_) return;
    if (then == AfterReport::timeout) {
        std::fprintf(stderr, "mpirun: the job ran longer than %s %d s; ending it\n", timeout_origin_.c_str(),
                     timeout_seconds_);
        end_job(124);
    } else if (then == AfterReport::unfinalized && !unfinalized_.empty() &&
               (any_running() || (link_ && link_->active()))) {
        std::fprintf(stderr,
                     "mpirun: %s exited without calling MPI_Finalize while other ranks kept "
                     "running; ending the job\n",
                     unfinalized_where_.front().c_str());
        end_job(1);
    }
}

}  // namespace axon::launcher
