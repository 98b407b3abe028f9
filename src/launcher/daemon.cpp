// daemon.cpp -- `mpirun --daemon ADDR PORT NODE`: mpirun's helper on one
// other node, started by the launch agent (remote.hpp has the design).
//
// Life: read the job's secret (environment or stdin), try mpirun's addresses
// in turn until one answers our HELLO (this node's resources) with WELCOME,
// receive the job, become the PMIx server of this node's ranks, start them,
// then run the same event loop as mpirun with an Uplink that reports to
// mpirun instead of deciding. Losing mpirun kills the ranks at once. The
// ranks' shared-memory files and the tmpdir are removed on every exit path
// the daemon controls, and by its janitor (janitor.hpp) when it is SIGKILLed.
#include "launcher/binding.hpp"
#include "launcher/janitor.hpp"
#include "launcher/job_files.hpp"
#include "launcher/option_values.hpp"
#include "launcher/remote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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
    void send_hang_answers(const std::map<uint32_t, RankAnswer> &answers) override {
        wire::Writer payload;
        write_answers(payload, answers);
        channel_.send(wire::Type::hang_answers, payload);
    }
    void ask_head_for_report(int rank) override { channel_.send(wire::Type::hang_ask, wire::Writer().i32(rank)); }
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
            case wire::Type::hang_request:
                supervisor.collect_hang_for_head();
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

// Waits until `queue` holds a message, at most `timeout_ms` (-1: no bound),
// watching signals. false with `why` on EOF, timeout or an ending signal.
bool next_message(wire::Channel &channel, int signal_fd, int timeout_ms, std::vector<wire::Message> &queue,
                  std::string &why) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (queue.empty()) {
        int wait = -1;
        if (timeout_ms >= 0) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) {
                why = "no answer within " + std::to_string(timeout_ms / 1000) + " s";
                return false;
            }
            wait = static_cast<int>(left);
        }
        pollfd fds[2] = {{channel.fd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
        if (poll(fds, 2, wait) < 0 && errno != EINTR) {
            why = std::string("poll: ") + std::strerror(errno);
            return false;
        }
        if (fds[1].revents) {
            signalfd_siginfo info;
            while (read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                if (info.ssi_signo != SIGCHLD && info.ssi_signo != SIGUSR1 && info.ssi_signo != SIGUSR2) {
                    why = "received signal " + std::to_string(info.ssi_signo);
                    return false;
                }
            }
        }
        if (fds[0].revents && !channel.receive(queue) && queue.empty()) {
            why = "the connection was closed";
            return false;
        }
    }
    return true;
}

// Per address: the connection, and mpirun's WELCOME to our HELLO. A head
// with several networks gives several addresses; some may be unreachable
// from this node, or reach something that is not this job's mpirun.
constexpr int attempt_timeout_ms = 5000;

// Tries mpirun's addresses in order: connects, says HELLO, waits for
// WELCOME. Returns the connection (messages after WELCOME stay in `queue`);
// when none answers, `tried` lists each address and why it failed.
bool reach_mpirun(const std::vector<std::string> &addresses, const std::string &port, const wire::Writer &hello,
                  int signal_fd, wire::Channel &channel, std::vector<wire::Message> &queue, std::string &tried) {
    for (const auto &address : addresses) {
        std::string why;
        UniqueFd fd = wire::connect_to(address, port, attempt_timeout_ms, why);
        if (fd) {
            channel = wire::Channel(std::move(fd));
            channel.send(wire::Type::hello, hello);
            queue.clear();
            if (next_message(channel, signal_fd, attempt_timeout_ms, queue, why)) {
                if (queue.front().type == wire::Type::welcome) {
                    queue.erase(queue.begin());
                    return true;
                }
                why = "an unexpected answer";
            }
            channel.close();
            if (why.rfind("received signal", 0) == 0) return false;  // ended: no more tries
        } else if (auto colon = why.rfind(": "); colon != std::string::npos) {
            why = why.substr(colon + 2);  // connect_to names the address itself
        }
        const std::string shown = address.find(':') != std::string::npos ? "[" + address + "]" : address;  // IPv6
        tried += (tried.empty() ? "" : ", ") + shown + ":" + port + " (" + why + ")";
    }
    return false;
}

std::string this_host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "?";
    return name;
}

}  // namespace

int run_daemon(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr,
                     "mpirun --daemon: internal mode, started by mpirun (usage: --daemon ADDR[,ADDR...] PORT NODE)\n");
        return 1;
    }
    const std::vector<std::string> heads = split_list(argv[2]);
    const std::string port = argv[3];
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

    wire::Writer hello;
    hello.u32(wire::hello_magic).u32(node).str(secret);
    write_resources(hello, local_resources(topology));
    wire::Channel channel;
    std::vector<wire::Message> queue;
    std::string tried;
    if (!reach_mpirun(heads, port, hello, signal_fd.get(), channel, queue, tried)) {
        if (!tried.empty()) {
            std::fprintf(stderr, "mpirun daemon on %s: cannot reach mpirun at any of its addresses: %s\n",
                         this_host_name().c_str(), tried.c_str());
        }
        return 1;
    }

    std::string why;
    if (!next_message(channel, signal_fd.get(), -1, queue, why) || queue.front().type != wire::Type::job) return 1;
    const wire::Message message = std::move(queue.front());
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
    map.num_apps = in.u32();
    for (uint32_t rank = 0; rank < num_ranks && !in.failed(); ++rank) {
        RankPlan plan;
        plan.rank = rank;
        plan.node = in.u32();
        plan.local_rank = static_cast<uint16_t>(in.u32());
        plan.app = in.u32();
        plan.bound = in.u8() != 0;
        plan.pinned = in.u8() != 0;
        std::string cpus = in.str();
        plan.bound_to = in.str();
        if (plan.node >= map.nodes.size()) break;
        if (plan.node == node) {
            plan.cpuset.reset(hwloc_bitmap_alloc());
            if (cpus.empty() || hwloc_bitmap_list_sscanf(plan.cpuset.get(), cpus.c_str()) != 0) {
                hwloc_bitmap_copy(plan.cpuset.get(), topology.own_cpuset());
                plan.bound = plan.pinned = false;
            }
        }
        map.nodes[plan.node].ranks.push_back(rank);
        map.ranks.push_back(std::move(plan));
    }
    LaunchPlan plan;
    const uint32_t num_contexts = in.u32();
    for (uint32_t a = 0; a < num_contexts && !in.failed(); ++a) {
        AppLaunch app;
        app.argv = in.strings();
        app.env = in.strings();
        app.wdir = in.str();
        app.wdir_required = in.u8() != 0;
        plan.apps.push_back(std::move(app));
    }
    plan.tagging.job = in.i32();
    plan.tagging.hydra = in.u8() != 0;
    plan.output_dir = in.str();
    plan.output_copy = in.u8() != 0;
    plan.output_jobid = in.u8() != 0;
    bool contexts_ok = !plan.apps.empty();
    for (const auto &app : plan.apps) contexts_ok = contexts_ok && !app.argv.empty();
    for (const auto &rank : map.ranks) contexts_ok = contexts_ok && rank.app < plan.apps.size();
    if (in.failed() || node >= map.nodes.size() || map.ranks.size() != num_ranks || !contexts_ok) {
        std::fprintf(stderr, "mpirun daemon: malformed job from mpirun\n");
        return 1;
    }
    map.head_node = -1;  // as seen from here: every node is a "multi-node" peer
    finish_binding(map, BindTo::core);

    auto refuse = [&](int status, const std::string &why) {
        channel.send(wire::Type::error, wire::Writer().i32(status).str(why));
        channel.send(wire::Type::done, wire::Writer());
        channel.drain(2000);
        return 0;
    };

    setenv("PMIX_MCA_gds", "hash", 1);  // see main.cpp
    for (char **entry = environ; entry && *entry; ++entry) plan.base_env.emplace_back(*entry);
    // Each context's program, found with the PATH its ranks will have, in
    // its working directory; only contexts with ranks here matter.
    for (uint32_t a = 0; a < plan.apps.size(); ++a) {
        AppLaunch &app = plan.apps[a];
        bool here = std::any_of(map.nodes[node].ranks.begin(), map.nodes[node].ranks.end(),
                                [&](uint32_t r) { return map.ranks[r].app == a; });
        if (!here) continue;
        if (!app.wdir.empty() && !std::filesystem::is_directory(app.wdir)) {
            if (app.wdir_required)
                return refuse(1, "cannot use the working directory '" + app.wdir + "' of " + app.argv.front() +
                                     ": " + std::strerror(ENOENT));
            app.wdir.clear();  // mpirun's directory does not exist here: the daemon's will do
        }
        std::string path = env_value(app.env, "PATH");
        if (path.empty()) path = env_value(plan.base_env, "PATH");
        std::string program = app.argv.front();
        if (!app.wdir.empty() && program.find('/') != std::string::npos && program.front() != '/')
            program = app.wdir + "/" + program;
        if (int failure = resolve_program(program, path, app.executable); failure != 0) {
            return refuse(failure == ENOENT ? 127 : 126,
                          "cannot run '" + app.argv.front() + "': " + std::strerror(failure));
        }
    }

    Janitor janitor;
    if (!janitor.start(nspace, error))
        std::fprintf(stderr, "mpirun daemon: no janitor (%s); a SIGKILL would leave files behind\n", error.c_str());
    JobFiles files(nspace);
    if (!files.create_tmpdir(error)) return refuse(1, error);
    janitor.watch_dir(files.tmpdir());

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
        janitor.dismiss();
        std::fflush(nullptr);
        _exit(1);  // libpmix may be half up: no teardown
    }

    plan.forward_stdin = false;  // mpirun's stdin goes to rank 0 only when it runs on mpirun's node
    plan.rank_signal_mask = &original_mask;
    plan.rank_open_files_limit = &original_open_files;
    plan.tmpdir = files.tmpdir();
    plan.janitor = &janitor;

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
    janitor.dismiss();
    std::fflush(nullptr);
    if (!torn_down) _exit(0);
    return 0;
}

}  // namespace axon::launcher
