// daemon.cpp -- `mpirun --daemon ADDR PORT NODE`: mpirun's helper on one
// other node, started by the launch agent (remote.hpp has the design).
//
// Life: read the job's secret (environment or stdin), connect to mpirun and
// say HELLO with this node's usable cores, receive the job, become the PMIx
// server of this node's ranks, start them, then run the same event loop as
// mpirun with an Uplink that reports to mpirun instead of deciding. Losing
// mpirun kills the ranks at once. The ranks' shared-memory files and the
// tmpdir are removed on every exit path the daemon controls.
#include "launcher/job_files.hpp"
#include "launcher/remote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace axon::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// The daemon's connection to mpirun, as the supervisor's link.
class Uplink : public JobLink {
public:
    Uplink(wire::Channel &channel, PmixHost &host, const JobMap &map, uint32_t node)
        : channel_(channel), host_(host), map_(map), node_(node) {}

    void add_poll_fds(std::vector<pollfd> &fds) override {
        if (channel_.open()) {
            fds.push_back({channel_.fd(), static_cast<short>(POLLIN | (channel_.wants_write() ? POLLOUT : 0)), 0});
        }
    }

    void on_poll(JobSupervisor &supervisor, const std::vector<pollfd> &fds, size_t first) override {
        if (!channel_.open() || first >= fds.size()) return;
        const pollfd &ready = fds[first];
        if (ready.revents & POLLOUT) channel_.flush();
        if (!(ready.revents & (POLLIN | POLLHUP | POLLERR))) return;
        std::vector<wire::Message> messages;
        bool alive = channel_.receive(messages);
        for (const auto &message : messages) handle(supervisor, message);
        if (!alive) {
            if (!lost_) {
                std::fprintf(stderr, "mpirun daemon on %s: lost the connection to mpirun; killing the local ranks\n",
                             map_.nodes[node_].name.c_str());
            }
            lost_ = true;
            supervisor.kill_requested(true);
        }
    }

    void on_host_event(HostEvent &event) override {
        switch (event.kind) {
            case HostEvent::Kind::fence: {
                std::string key = names_.next(event);
                fences_[key] = event.id;
                uint32_t expected = static_cast<uint32_t>(fence_nodes(map_, event).size());
                channel_.send(wire::Type::fence,
                              wire::Writer().str(key).u32(expected).bytes(event.data.data(), event.data.size()));
                break;
            }
            case HostEvent::Kind::modex_request:
                channel_.send(wire::Type::dmodex_req,
                              wire::Writer().u32(node_).u32(static_cast<uint32_t>(event.id)).u32(event.rank));
                break;
            case HostEvent::Kind::modex_answer: {
                auto found = answers_.find(event.id);
                if (found == answers_.end()) break;
                auto [origin, request] = found->second;
                answers_.erase(found);
                channel_.send(wire::Type::dmodex_resp, wire::Writer().u32(origin).u32(request).i32(event.status).bytes(
                                                           event.data.data(), event.data.size()));
                break;
            }
            case HostEvent::Kind::spawn:  // JobSupervisor::on_spawn takes these
                break;
        }
    }

    void on_child_exit(JobSupervisor &, pid_t, int) override {}
    void forward_signal(int) override {}
    void end_job() override {}
    bool active() override { return false; }
    bool reports_to_head() const override { return true; }

    void report_exit(uint32_t rank, int pid, int wait_status, int exec_errno, bool connected,
                     bool finalized) override {
        channel_.send(wire::Type::exit, wire::Writer()
                                            .u32(rank)
                                            .i32(pid)
                                            .i32(wait_status)
                                            .i32(exec_errno)
                                            .u8(connected ? 1 : 0)
                                            .u8(finalized ? 1 : 0));
    }
    void report_abort(uint32_t rank, int pid, const AbortRequest &request) override {
        channel_.send(wire::Type::abort, wire::Writer().u32(rank).i32(pid).i32(request.status).str(request.message));
    }
    OutputStream::Sink output_sink() override {
        return [this](uint32_t rank, bool is_stderr, const char *data, size_t size) {
            channel_.send(wire::Type::output, wire::Writer().u32(rank).u8(is_stderr ? 2 : 1).bytes(data, size));
        };
    }

private:
    void handle(JobSupervisor &supervisor, const wire::Message &message) {
        wire::Reader in(message.payload);
        switch (message.type) {
            case wire::Type::fence_done: {
                std::string key = in.str();
                int status = in.i32();
                std::string data = in.str();
                auto found = fences_.find(key);
                if (in.failed() || found == fences_.end()) break;
                uint64_t id = found->second;
                fences_.erase(found);
                host_.release_fence(id, status, data);
                break;
            }
            case wire::Type::dmodex_req: {
                uint32_t origin = in.u32(), request = in.u32(), rank = in.u32();
                if (in.failed()) break;
                uint64_t token = next_token_++;
                answers_[token] = {origin, request};
                host_.request_local_modex(rank, token);
                break;
            }
            case wire::Type::dmodex_resp: {
                in.u32();
                uint32_t request = in.u32();
                int status = in.i32();
                std::string data = in.str();
                if (!in.failed()) host_.answer_modex(request, status, data);
                break;
            }
            case wire::Type::signal: {
                int signo = in.i32();
                if (!in.failed() && signo > 0 && signo < NSIG) supervisor.forward_to_ranks(signo);
                break;
            }
            case wire::Type::kill:
                supervisor.kill_requested(false);
                break;
            default:
                break;
        }
    }

    wire::Channel &channel_;
    PmixHost &host_;
    const JobMap &map_;
    uint32_t node_;
    FenceNames names_;
    std::map<std::string, uint64_t> fences_;                       // key -> PMIx fence handle
    std::map<uint64_t, std::pair<uint32_t, uint32_t>> answers_;    // token -> (origin, request)
    uint64_t next_token_ = 1;
    bool lost_ = false;
};

// The secret: from the environment (srun, ip netns exec pass it) or the first
// line of stdin (ssh), within a bound. Removed from the environment so the
// ranks never see it.
std::string read_secret() {
    if (const char *value = std::getenv("MPIRUN_DAEMON_SECRET"); value && *value) {
        std::string secret = value;
        unsetenv("MPIRUN_DAEMON_SECRET");
        return secret;
    }
    std::string secret;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
        pollfd readable{STDIN_FILENO, POLLIN, 0};
        if (poll(&readable, 1, 200) <= 0) continue;
        char c;
        ssize_t got = read(STDIN_FILENO, &c, 1);
        if (got <= 0 || c == '\n') break;
        secret += c;
        if (secret.size() > 256) break;
    }
    return secret;
}

// Waits for one message (the JOB) while watching signals; false on EOF/signal.
bool wait_for_message(wire::Channel &channel, int signal_fd, wire::Message &out) {
    std::vector<wire::Message> messages;
    while (messages.empty()) {
        pollfd fds[2] = {{channel.fd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return false;
        if (fds[1].revents) {
            signalfd_siginfo info;
            while (read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                if (info.ssi_signo != SIGCHLD && info.ssi_signo != SIGUSR1 && info.ssi_signo != SIGUSR2) return false;
            }
        }
        if (fds[0].revents && !channel.receive(messages) && messages.empty()) return false;
    }
    out = std::move(messages.front());
    return true;
}

}  // namespace

int run_daemon(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "mpirun --daemon: internal mode, started by mpirun (usage: --daemon ADDR PORT NODE)\n");
        return 1;
    }
    const std::string head = argv[2], port = argv[3];
    const uint32_t node = static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10));

    // As in mpirun: signals through a signalfd, blocked before libpmix's thread.
    sigset_t handled, original_mask;
    sigemptyset(&handled);
    for (int signo : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&handled, signo);
    sigprocmask(SIG_BLOCK, &handled, &original_mask);
    UniqueFd signal_fd(signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // the agent (ssh session, srun step) went away: end

    std::string secret = read_secret();
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        close(null_fd);
    }
    std::string error;
    Topology topology;
    if (!topology.load(error)) {
        std::fprintf(stderr, "mpirun daemon: cannot read the hardware topology: %s\n", error.c_str());
        return 1;
    }
    std::vector<Bitmap> cores = usable_cores(topology);

    UniqueFd socket_fd = wire::connect_to(head, port, 10000, error);
    if (!socket_fd) {
        std::fprintf(stderr, "mpirun daemon: %s\n", error.c_str());
        return 1;
    }
    wire::Channel channel(std::move(socket_fd));
    channel.send(wire::Type::hello,
                 wire::Writer().u32(wire::hello_magic).u32(node).str(secret).strings(core_lists(cores)));

    wire::Message message;
    if (!wait_for_message(channel, signal_fd.get(), message) || message.type != wire::Type::job) return 1;
    wire::Reader in(message.payload);
    JobMap map;
    const std::string nspace = in.str();
    uint32_t num_nodes = in.u32();
    for (uint32_t i = 0; i < num_nodes && !in.failed(); ++i) {
        NodePlan plan;
        plan.name = in.str();
        map.nodes.push_back(std::move(plan));
    }
    uint32_t num_ranks = in.u32();
    for (uint32_t rank = 0; rank < num_ranks && !in.failed(); ++rank) {
        RankPlan plan;
        plan.rank = rank;
        plan.node = in.u32();
        plan.local_rank = static_cast<uint16_t>(in.u32());
        plan.core = in.i32();
        if (plan.node >= map.nodes.size()) break;
        map.nodes[plan.node].ranks.push_back(rank);
        map.ranks.push_back(std::move(plan));
    }
    std::vector<std::string> program = in.strings();
    std::vector<std::string> exported = in.strings();
    bool tag_output = in.u32() != 0;
    if (in.failed() || node >= map.nodes.size() || map.ranks.size() != num_ranks || program.empty()) {
        std::fprintf(stderr, "mpirun daemon: malformed job from mpirun\n");
        return 1;
    }
    map.head_node = -1;  // as seen from here: every node is a "multi-node" peer
    for (uint32_t rank : map.nodes[node].ranks) {
        RankPlan &plan = map.ranks[rank];
        plan.cpuset.reset(hwloc_bitmap_alloc());
        if (plan.core >= 0 && static_cast<size_t>(plan.core) < cores.size()) {
            hwloc_bitmap_copy(plan.cpuset.get(), cores[static_cast<size_t>(plan.core)].get());
        } else {
            plan.core = -1;
            hwloc_bitmap_copy(plan.cpuset.get(), topology.own_cpuset());
        }
    }
    finish_binding(map);

    auto refuse = [&](int status, const std::string &why) {
        channel.send(wire::Type::error, wire::Writer().i32(status).str(why));
        channel.send(wire::Type::done, wire::Writer());
        channel.drain(2000);
        return 0;
    };

    setenv("PMIX_MCA_gds", "hash", 1);  // see main.cpp
    std::vector<std::string> base_env;
    for (char **entry = environ; entry && *entry; ++entry) base_env.emplace_back(*entry);
    for (const auto &assignment : exported) {
        auto eq = assignment.find('=');
        env_set(base_env, assignment.substr(0, eq), assignment.substr(eq + 1));
    }
    std::string executable;
    if (int failure = resolve_program(program.front(), env_value(base_env, "PATH"), executable); failure != 0) {
        return refuse(failure == ENOENT ? 127 : 126,
                      "cannot run '" + program.front() + "': " + std::strerror(failure));
    }

    JobFiles files(nspace);
    if (!files.create_tmpdir(error)) return refuse(1, error);

    rlimit original_open_files{};
    getrlimit(RLIMIT_NOFILE, &original_open_files);
    rlimit raised_open_files = original_open_files;
    raised_open_files.rlim_cur = raised_open_files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &raised_open_files);

    PmixHost pmix(map.size());
    pmix.set_multi_node(true);
    if (!pmix.start(files.tmpdir(), map.nodes[node].name, topology, error) ||
        !pmix.register_job(nspace, map, node, files.tmpdir(), error)) {
        refuse(1, error);
        files.remove_all();
        std::fflush(nullptr);
        _exit(1);  // libpmix may be half up: no teardown
    }

    LaunchPlan plan;
    plan.executable = executable;
    plan.argv = program;
    plan.base_env = std::move(base_env);
    plan.tag_output = tag_output;
    plan.forward_stdin = false;  // mpirun's stdin goes to rank 0 only when it runs on mpirun's node
    plan.rank_signal_mask = &original_mask;
    plan.rank_open_files_limit = &original_open_files;

    Uplink uplink(channel, pmix, map, node);
    JobSupervisor supervisor(pmix, map, node, topology, signal_fd.get(), &uplink);
    supervisor.set_label("mpirun daemon on " + map.nodes[node].name);
    supervisor.launch(plan);
    if (supervisor.ending()) {  // a rank could not be started (the reason is on stderr)
        channel.send(wire::Type::error, wire::Writer().i32(1).str("cannot start the ranks of this node"));
    }
    supervisor.run();

    channel.send(wire::Type::done, wire::Writer());
    channel.drain(2000);
    bool torn_down = supervisor.ended_cleanly() && pmix.shutdown(std::chrono::seconds(2));
    files.remove_all();
    std::fflush(nullptr);
    if (!torn_down) _exit(0);
    return 0;
}

}  // namespace axon::launcher
