// remote.cpp -- mpirun's side of a multi-node job: starting the daemons,
// their handshake, and routing fences, direct modex, output and exits.
#include "launcher/remote.hpp"

#include "launcher/binding.hpp"
#include "launcher/head_address.hpp"
#include "launcher/io_forward.hpp"
#include "launcher/spawn.hpp"

#include <pmix.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

extern char **environ;

namespace axon::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// 128 random bits as hex, or "" when the kernel has no randomness to give.
std::string random_secret() {
    unsigned char bytes[16];
    if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return {};
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (unsigned char b : bytes) {
        text += digits[b >> 4];
        text += digits[b & 15];
    }
    return text;
}

std::string join(const std::vector<std::string> &words) {
    std::string text;
    for (const auto &word : words) text += (text.empty() ? "" : " ") + word;
    return text;
}

std::string self_executable() {
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return "mpirun";
    path[length] = '\0';
    return path;
}

void read_signals_but_sigchld(int signal_fd, std::vector<int> &signals) {
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo != SIGCHLD) signals.push_back(static_cast<int>(info.ssi_signo));
    }
}


// The address a connection came from, without its port (the unit of the
// per-source limit while the daemons start).
std::string peer_address(const sockaddr_storage &from) {
    if (from.ss_family == AF_INET) {
        const auto &in4 = reinterpret_cast<const sockaddr_in &>(from);
        return std::string(reinterpret_cast<const char *>(&in4.sin_addr), sizeof in4.sin_addr);
    }
    if (from.ss_family == AF_INET6) {
        const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(from);
        return std::string(reinterpret_cast<const char *>(&in6.sin6_addr), sizeof in6.sin6_addr);
    }
    return std::string();
}
}  // namespace

std::string FenceNames::next(const HostEvent &fence) {
    std::string members;
    if (fence.wildcard) {
        members = "*";
    } else {
        std::vector<uint32_t> ranks = fence.ranks;
        std::sort(ranks.begin(), ranks.end());
        members = rank_list(ranks);
    }
    return members + "#" + std::to_string(seen_[members]++);
}

std::vector<uint32_t> fence_nodes(const JobMap &map, const HostEvent &fence) {
    std::set<uint32_t> nodes;
    if (fence.wildcard) {
        for (uint32_t node = 0; node < map.nodes.size(); ++node) nodes.insert(node);
    } else {
        for (uint32_t rank : fence.ranks) {
            if (rank < map.size()) nodes.insert(map.ranks[rank].node);
        }
    }
    return {nodes.begin(), nodes.end()};
}

std::vector<std::string> agent_command(const std::string &agent, const std::string &host,
                                       const std::vector<std::string> &daemon_words) {
    std::vector<std::string> words;
    std::istringstream stream(agent);
    std::string word;
    bool placed = false;
    while (stream >> word) {
        for (size_t at = word.find("{}"); at != std::string::npos; at = word.find("{}", at + host.size())) {
            word.replace(at, 2, host);
            placed = true;
        }
        words.push_back(word);
    }
    if (!placed) words.insert(words.begin() + (words.empty() ? 0 : 1), host);
    words.insert(words.end(), daemon_words.begin(), daemon_words.end());
    return words;
}

RemoteNodes::RemoteNodes(JobMap &map, PmixHost &host, int signal_fd)
    : map_(map), host_(host), signal_fd_(signal_fd) {}

RemoteNodes::~RemoteNodes() = default;

RemoteNodes::Daemon *RemoteNodes::daemon_of_node(uint32_t node) {
    for (auto &daemon : daemons_) {
        if (daemon.node == node) return &daemon;
    }
    return nullptr;
}

// Waits for a daemon's agent (ssh, srun, ...) to exit until `deadline`, then
// kills its process group; the agent is reaped either way.
void RemoteNodes::reap_agent(Daemon &daemon, Clock::time_point deadline) {
    while (daemon.agent > 0) {
        int status;
        pid_t got = waitpid(daemon.agent, &status, WNOHANG);
        if (got == daemon.agent || (got < 0 && errno == ECHILD)) {
            daemon.agent = -1;
        } else if (Clock::now() >= deadline) {
            kill(-daemon.agent, SIGKILL);
            waitpid(daemon.agent, &status, 0);
            daemon.agent = -1;
        } else {
            usleep(5000);
        }
    }
}

// Kills every agent's process group and drops every connection (a daemon
// that loses mpirun kills its ranks and exits), then reaps the agents.
void RemoteNodes::stop_all_now() {
    for (auto &daemon : daemons_) {
        daemon.channel.close();
        daemon.done = true;
        if (daemon.agent > 0) kill(-daemon.agent, SIGTERM);
    }
    auto deadline = Clock::now() + std::chrono::seconds(2);
    for (auto &daemon : daemons_) reap_agent(daemon, deadline);
}

int RemoteNodes::start(const RemoteStartOptions &options) {
    options_ = options;
    secret_ = random_secret();
    if (secret_.empty()) {
        std::fprintf(stderr, "mpirun: cannot make the daemons' secret: getrandom: %s\n", std::strerror(errno));
        return 1;
    }
    for (uint32_t node = 0; node < map_.nodes.size(); ++node) {
        if (map_.nodes[node].is_head) continue;
        Daemon daemon;
        daemon.node = node;
        daemon.host = map_.nodes[node].name;
        daemons_.push_back(std::move(daemon));
    }

    // The listener, on every address; each daemon is told the addresses to
    // try, best first (head_address.hpp).
    listener_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t length = sizeof address;
    if (!listener_ || bind(listener_.get(), reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
        listen(listener_.get(), 128) != 0 ||
        getsockname(listener_.get(), reinterpret_cast<sockaddr *>(&address), &length) != 0) {
        std::fprintf(stderr, "mpirun: cannot listen for daemons: %s\n", std::strerror(errno));
        return 1;
    }
    const std::string port = std::to_string(ntohs(address.sin_port));

    std::string agent = options.launch_agent;
    if (agent.empty()) {
        agent = std::getenv("SLURM_JOB_ID") && std::getenv("SLURM_JOB_NODELIST")
                    ? "srun --ntasks=1 --nodes=1 --nodelist={} --overlap --kill-on-bad-exit=1 --quiet"
                    : "ssh -x -T -o BatchMode=yes -o StrictHostKeyChecking=accept-new {}";
    }
    // The daemon is mpirun itself, at the same path on every node (or under --prefix).
    const std::string exe = options.daemon_prefix.empty() ? self_executable() : options.daemon_prefix + "/bin/mpirun";

    // The agents' environment: ours plus the secret, for agents that pass the
    // environment (srun, ip netns exec); ssh gets it on stdin.
    std::vector<std::string> agent_env;
    for (char **entry = environ; entry && *entry; ++entry) agent_env.emplace_back(*entry);
    env_set(agent_env, "MPIRUN_DAEMON_SECRET", secret_);
    std::vector<char *> envp;
    for (auto &entry : agent_env) envp.push_back(entry.data());
    envp.push_back(nullptr);

    for (auto &daemon : daemons_) {
        std::string addresses;
        for (const auto &head : head_addresses_for(daemon.host, options.head_addresses))
            addresses += (addresses.empty() ? "" : ",") + head;
        std::vector<std::string> words =
            agent_command(agent, daemon.host, {exe, "--daemon", addresses, port, std::to_string(daemon.node)});
        daemon.agent_text = join(words);
        std::vector<char *> argv;
        for (auto &word : words) argv.push_back(word.data());
        argv.push_back(nullptr);
        int secret_pipe[2];
        if (pipe2(secret_pipe, O_CLOEXEC) != 0) {
            std::fprintf(stderr, "mpirun: pipe: %s\n", std::strerror(errno));
            stop_all_now();
            return 1;
        }
        sigset_t none;
        sigemptyset(&none);
        const pid_t parent = getpid();
        pid_t pid = fork();
        if (pid == 0) {
            // Async-signal-safe calls only (libpmix may run a thread).
            setpgid(0, 0);  // a terminal's Ctrl-C reaches mpirun only, which ends the job
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent) _exit(127);
            dup2(secret_pipe[0], STDIN_FILENO);
            signal(SIGPIPE, SIG_DFL);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            execvpe(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        close(secret_pipe[0]);
        if (pid < 0) {
            close(secret_pipe[1]);
            std::fprintf(stderr, "mpirun: fork: %s\n", std::strerror(errno));
            stop_all_now();
            return 1;
        }
        setpgid(pid, pid);
        daemon.agent = pid;
        std::string line = secret_ + "\n";
        ssize_t written = write(secret_pipe[1], line.data(), line.size());  // fits the pipe: never blocks
        (void)written;
        close(secret_pipe[1]);
    }

    // Wait for every daemon's HELLO, an agent's failure, a signal, or the timeout.
    const auto deadline = Clock::now() + std::chrono::seconds(options.launch_timeout_seconds);
    // Connections that have not proved to be a daemon (a HELLO with the
    // job's secret). Strangers (a port scan, another user) must not hang or
    // flood the launch: at most kMaxPending of them are kept, kPerSource from
    // one address, each for kHelloDeadline, with frames of at most
    // kHelloLimit bytes. When full, a newcomer pushes out the oldest
    // connection of the address that holds the most, unless that is its own
    // address and it has kPerSource already: a flood from one address
    // cannot keep a daemon from another out, and a daemon, which sends its
    // HELLO as soon as it connects, is read before it could be pushed out.
    struct Pending {
        wire::Channel channel;
        Clock::time_point since;
        std::string source;
    };
    constexpr size_t kMaxPending = 64, kPerSource = 16;
    constexpr uint32_t kHelloLimit = 1u << 20;
    constexpr auto kHelloDeadline = std::chrono::seconds(10);
    std::vector<Pending> pending;
    auto held_by = [&](const std::string &source) {
        return static_cast<size_t>(
            std::count_if(pending.begin(), pending.end(), [&](const Pending &p) { return p.source == source; }));
    };
    refused_ = RefusedLog{};
    auto all_hello = [&] {
        return std::all_of(daemons_.begin(), daemons_.end(), [](const Daemon &d) { return d.hello; });
    };
    while (!all_hello()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            for (auto &daemon : daemons_) {
                if (daemon.hello) continue;
                std::fprintf(stderr,
                             "mpirun: the daemon on host %s did not connect back within %d s (--launch-timeout); "
                             "started with: %s\n",
                             daemon.host.c_str(), options.launch_timeout_seconds, daemon.agent_text.c_str());
            }
            stop_all_now();
            return 1;
        }
        std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}, {listener_.get(), POLLIN, 0}};
        for (auto &p : pending) fds.push_back({p.channel.fd(), POLLIN, 0});
        poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000)));

        std::vector<int> signals;
        if (fds[0].revents) read_signals_but_sigchld(signal_fd_, signals);
        for (int signo : signals) {
            if (signo == SIGUSR1 || signo == SIGUSR2) continue;
            std::fprintf(stderr, "mpirun: received signal %d (%s) while starting the daemons; ending the job\n",
                         signo, strsignal(signo));
            stop_all_now();
            return 128 + signo;
        }
        for (auto &daemon : daemons_) {
            if (daemon.agent <= 0 || daemon.hello) continue;
            int status;
            if (waitpid(daemon.agent, &status, WNOHANG) != daemon.agent) continue;
            daemon.agent = -1;
            std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
            std::fprintf(stderr,
                         "mpirun: cannot start the daemon on host %s: the launch agent %s before the daemon "
                         "connected (command: %s)\n",
                         daemon.host.c_str(), how.c_str(), daemon.agent_text.c_str());
            stop_all_now();
            return 1;
        }
        const auto now = Clock::now();
        if (fds[1].revents) {
            for (int accepted = 0; accepted < 16; ++accepted) {
                sockaddr_storage from{};
                socklen_t from_len = sizeof from;
                int fd = accept4(listener_.get(), reinterpret_cast<sockaddr *>(&from), &from_len,
                                 SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                    // Out of descriptors: the listener stays readable, so free
                    // one (the oldest stranger) rather than spin on it.
                    if ((errno == EMFILE || errno == ENFILE) && !pending.empty()) {
                        pending.erase(pending.begin());
                        refused_.note();
                    } else if (errno == EMFILE || errno == ENFILE) {
                        poll(nullptr, 0, 10);
                    }
                    break;
                }
                std::string source = peer_address(from);
                if (held_by(source) >= kPerSource) {
                    ::close(fd);
                    refused_.note();
                    continue;
                }
                if (pending.size() >= kMaxPending) {
                    // The oldest connection of the address that holds the most.
                    auto victim = pending.begin();
                    size_t most = 0;
                    for (auto it = pending.begin(); it != pending.end(); ++it) {
                        size_t held = held_by(it->source);
                        if (held > most) most = held, victim = it;
                    }
                    pending.erase(victim);
                    refused_.note();
                }
                pending.push_back(Pending{wire::Channel(UniqueFd(fd)), now, std::move(source)});
                pending.back().channel.limit_messages(kHelloLimit);
            }
        }
        for (size_t i = 0; i < pending.size();) {
            std::vector<wire::Message> messages;
            bool alive = pending[i].channel.receive(messages);
            bool used = false;
            if (!messages.empty()) used = handle_hello(pending[i].channel, messages.front());
            bool expired = now - pending[i].since > kHelloDeadline;
            if (!used && (expired || !alive || !messages.empty())) refused_.note();
            if (used || expired || !alive || !messages.empty()) {
                pending.erase(pending.begin() + static_cast<long>(i));
            } else {
                ++i;
            }
        }
        refused_.report(now);
    }

    for (auto &daemon : daemons_) {
        std::string error;
        if (!restrict_resources(daemon.resources, options.cpu_set, error)) {
            std::fprintf(stderr, "mpirun: on host %s: %s\n", daemon.host.c_str(), error.c_str());
            stop_all_now();
            return 1;
        }
        bind_node(map_, daemon.node, options.map_by, options.bind, std::move(daemon.resources));
    }
    listener_.reset();  // every daemon is in: no more connections
    host_.set_multi_node(true);
    return 0;
}

void RemoteNodes::RefusedLog::note() {
    if (said < 3) {
        ++said;
        std::fprintf(stderr, "mpirun: refused a connection that is not one of this job's daemons\n");
        last = std::chrono::steady_clock::now();
    } else {
        ++unsaid;
    }
}

void RemoteNodes::RefusedLog::report(std::chrono::steady_clock::time_point now) {
    if (unsaid == 0 || now - last < std::chrono::seconds(5)) return;
    std::fprintf(stderr, "mpirun: refused %u more connection(s) that are not this job's daemons\n", unsaid);
    unsaid = 0;
    last = now;
}

// Takes a daemon's first message: a HELLO with the right magic, a node that
// still waits for its daemon, and the job's secret. Anything else is dropped.
bool RemoteNodes::handle_hello(wire::Channel &channel, const wire::Message &message) {
    if (message.type != wire::Type::hello) return false;
    wire::Reader in(message.payload);
    uint32_t magic = in.u32(), node = in.u32();
    std::string secret = in.str();
    NodeResources resources;
    bool readable = magic == wire::hello_magic && read_resources(in, resources);
    Daemon *daemon = in.failed() || !readable ? nullptr : daemon_of_node(node);
    bool secret_ok = secret.size() == secret_.size();
    unsigned char difference = 0;  // compare in constant time
    for (size_t i = 0; secret_ok && i < secret.size(); ++i) difference |= secret[i] ^ secret_[i];
    if (!daemon || daemon->hello || !secret_ok || difference != 0) return false;  // counted by the caller
    daemon->hello = true;
    daemon->resources = std::move(resources);
    daemon->channel = std::move(channel);
    daemon->channel.limit_messages(wire::max_message);
    daemon->channel.send(wire::Type::welcome, wire::Writer());  // the daemon stops trying other addresses
    return true;
}

void RemoteNodes::send_job(const std::string &nspace, const LaunchPlan &plan) {
    wire::Writer job;
    job.str(nspace).u32(static_cast<uint32_t>(map_.nodes.size()));
    for (const auto &node : map_.nodes) job.str(node.name);
    job.u32(map_.size()).u32(map_.num_apps);
    for (const auto &rank : map_.ranks) {
        job.u32(rank.node).u32(rank.local_rank).u32(rank.app).u8(rank.bound ? 1 : 0).u8(rank.pinned ? 1 : 0);
        job.str(rank.cpuset ? cpuset_list(rank.cpuset.get()) : std::string()).str(rank.bound_to);
    }
    job.u32(static_cast<uint32_t>(plan.apps.size()));
    for (const auto &app : plan.apps) job.strings(app.argv).strings(app.env).str(app.wdir).u8(app.wdir_required ? 1 : 0);
    job.i32(plan.tagging.job).u8(plan.tagging.hydra ? 1 : 0);
    job.str(plan.output_dir).u8(plan.output_copy ? 1 : 0).u8(plan.output_jobid ? 1 : 0);
    for (auto &daemon : daemons_) daemon.channel.send(wire::Type::job, job);
}

void RemoteNodes::add_poll_fds(std::vector<pollfd> &fds) {
    for (auto &daemon : daemons_) {
        if (!daemon.channel.open()) continue;
        fds.push_back({daemon.channel.fd(), static_cast<short>(POLLIN | (daemon.channel.wants_write() ? POLLOUT : 0)),
                       0});
    }
}

void RemoteNodes::lost(JobSupervisor &supervisor, Daemon &daemon, const char *why) {
    daemon.channel.close();
    if (daemon.done) return;
    daemon.done = true;
    if (!supervisor.ending()) {
        std::fprintf(stderr, "mpirun: %s the daemon on host %s%s; ending the job\n", why, daemon.host.c_str(),
                     std::strcmp(why, "lost the connection to") == 0 ? " (it died or was killed)" : "");
        supervisor.fail(1);
    }
}

void RemoteNodes::on_poll(JobSupervisor &supervisor, const std::vector<pollfd> &fds, size_t first) {
    size_t slot = first;
    for (auto &daemon : daemons_) {
        if (!daemon.channel.open()) continue;
        const pollfd &ready = fds[slot++];
        if (ready.revents & POLLOUT) daemon.channel.flush();
        if (!(ready.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        std::vector<wire::Message> messages;
        bool alive = daemon.channel.receive(messages);
        for (const auto &message : messages) handle(supervisor, daemon, message);
        if (!alive) lost(supervisor, daemon, "lost the connection to");
    }
}

void RemoteNodes::add_fence_part(const std::string &key, size_t expected, uint32_t node, std::string data,
                                 std::optional<uint64_t> local_id) {
    Collect &collect = collects_[key];
    collect.expected = expected;
    collect.data[node] = std::move(data);
    if (local_id) {
        collect.local = true;
        collect.local_id = *local_id;
    }
    if (collect.data.size() < collect.expected) return;
    std::string all;
    for (const auto &part : collect.data) all += part.second;  // node order
    wire::Writer done;
    done.str(key).i32(0).bytes(all.data(), all.size());
    for (const auto &part : collect.data) {
        if (Daemon *daemon = daemon_of_node(part.first)) daemon->channel.send(wire::Type::fence_done, done);
    }
    if (collect.local) host_.release_fence(collect.local_id, 0, all);
    collects_.erase(key);
}

void RemoteNodes::handle(JobSupervisor &supervisor, Daemon &daemon, const wire::Message &message) {
    wire::Reader in(message.payload);
    switch (message.type) {
        case wire::Type::output: {
            in.u32();
            uint8_t stream = in.u8();
            std::string bytes = in.str();
            if (!in.failed()) write_fully(stream == 2 ? STDERR_FILENO : STDOUT_FILENO, bytes.data(), bytes.size());
            break;
        }
        case wire::Type::exit: {
            uint32_t rank = in.u32();
            int pid = in.i32(), status = in.i32(), exec_errno = in.i32();
            bool connected = in.u8() != 0, finalized = in.u8() != 0;
            if (!in.failed()) supervisor.remote_exit(rank, daemon.host, pid, status, exec_errno, connected, finalized);
            break;
        }
        case wire::Type::abort: {
            AbortRequest request;
            request.rank = in.u32();
            int pid = in.i32();
            request.status = in.i32();
            request.message = in.str();
            if (!in.failed()) supervisor.remote_abort(request, daemon.host, pid);
            break;
        }
        case wire::Type::error: {
            int status = in.i32();
            std::string text = in.str();
            if (!supervisor.ending()) {
                std::fprintf(stderr, "mpirun: on host %s: %s; ending the job\n", daemon.host.c_str(), text.c_str());
                supervisor.fail(status != 0 ? status : 1);
            }
            break;
        }
        case wire::Type::fence: {
            std::string key = in.str();
            uint32_t expected = in.u32();
            std::string data = in.str();
            if (!in.failed()) add_fence_part(key, expected, daemon.node, std::move(data), std::nullopt);
            break;
        }
        case wire::Type::dmodex_req: {
            uint32_t origin = in.u32(), request = in.u32(), rank = in.u32();
            if (in.failed() || rank >= map_.size()) break;
            uint32_t owner = map_.ranks[rank].node;
            if (static_cast<int>(owner) == map_.head_node) {
                uint64_t token = next_token_++;
                local_modex_[token] = {origin, request};
                host_.request_local_modex(rank, token);
            } else if (Daemon *target = daemon_of_node(owner)) {
                target->channel.send(wire::Type::dmodex_req, wire::Writer().u32(origin).u32(request).u32(rank));
            }
            break;
        }
        case wire::Type::dmodex_resp: {
            uint32_t origin = in.u32(), request = in.u32();
            int status = in.i32();
            std::string data = in.str();
            if (in.failed()) break;
            if (static_cast<int>(origin) == map_.head_node) {
                host_.answer_modex(request, status, data);
            } else if (Daemon *target = daemon_of_node(origin)) {
                wire::Writer answer;
                answer.u32(origin).u32(request).i32(status).bytes(data.data(), data.size());
                target->channel.send(wire::Type::dmodex_resp, answer);
            }
            break;
        }
        case wire::Type::done:
            daemon.done = true;
            break;
        case wire::Type::hang_answers: {
            std::map<uint32_t, RankAnswer> answers;
            if (read_answers(in, answers)) supervisor.remote_hang_answers(std::move(answers));
            break;
        }
        case wire::Type::hang_ask: {
            int rank = in.i32();
            if (in.failed()) break;
            if (rank >= 0) {
                supervisor.rank_asked_for_report(static_cast<uint32_t>(rank));
            } else {
                supervisor.start_hang_report("the daemon on " + daemon.host + " received SIGUSR1",
                                             JobSupervisor::AfterReport::nothing);
            }
            break;
        }
        default:
            lost(supervisor, daemon, "protocol error from");
            break;
    }
}

void RemoteNodes::on_host_event(HostEvent &event) {
    switch (event.kind) {
        case HostEvent::Kind::fence: {
            std::string key = fence_names_.next(event);
            size_t expected = fence_nodes(map_, event).size();
            add_fence_part(key, expected, static_cast<uint32_t>(map_.head_node), std::move(event.data), event.id);
            break;
        }
        case HostEvent::Kind::modex_request: {
            uint32_t owner = event.rank < map_.size() ? map_.ranks[event.rank].node : 0;
            Daemon *target = daemon_of_node(owner);
            if (!target || !target->channel.open()) {
                host_.answer_modex(event.id, PMIX_ERR_NOT_FOUND, {});
                break;
            }
            target->channel.send(wire::Type::dmodex_req, wire::Writer()
                                                             .u32(static_cast<uint32_t>(map_.head_node))
                                                             .u32(static_cast<uint32_t>(event.id))
                                                             .u32(event.rank));
            break;
        }
        case HostEvent::Kind::modex_answer: {
            auto found = local_modex_.find(event.id);
            if (found == local_modex_.end()) break;
            auto [origin, request] = found->second;
            local_modex_.erase(found);
            if (Daemon *target = daemon_of_node(origin)) {
                wire::Writer answer;
                answer.u32(origin).u32(request).i32(event.status).bytes(event.data.data(), event.data.size());
                target->channel.send(wire::Type::dmodex_resp, answer);
            }
            break;
        }
        case HostEvent::Kind::spawn:  // JobSupervisor::on_spawn takes these
            break;
    }
}

void RemoteNodes::on_child_exit(JobSupervisor &supervisor, pid_t pid, int wait_status) {
    for (auto &daemon : daemons_) {
        if (daemon.agent != pid) continue;
        daemon.agent = -1;
        // A daemon that finished sent DONE first; an agent that ends while
        // its daemon is connected is judged by the connection's EOF.
        (void)wait_status;
        if (!daemon.done && !daemon.channel.open()) lost(supervisor, daemon, "lost the connection to");
    }
}

void RemoteNodes::forward_signal(int signo) {
    for (auto &daemon : daemons_) daemon.channel.send(wire::Type::signal, wire::Writer().i32(signo));
}

int RemoteNodes::ask_hang() {
    int asked = 0;
    for (auto &daemon : daemons_) {
        if (daemon.done || !daemon.channel.open()) continue;
        daemon.channel.send(wire::Type::hang_request, wire::Writer());
        ++asked;
    }
    return asked;
}

void RemoteNodes::end_job() {
    ending_ = true;
    // The daemons' own grace (SIGTERM, SIGKILL 3 s later) plus time to report.
    if (!give_up_) give_up_ = Clock::now() + std::chrono::seconds(8);
    for (auto &daemon : daemons_) daemon.channel.send(wire::Type::kill, wire::Writer());
}

void RemoteNodes::give_up_on_late_daemons() {
    for (auto &daemon : daemons_) {
        if (daemon.done) continue;
        std::fprintf(stderr, "mpirun: the daemon on host %s did not finish after the job ended; giving up on it\n",
                     daemon.host.c_str());
        daemon.done = true;
        daemon.channel.close();  // a daemon that sees this kills its ranks at once
        if (daemon.agent > 0) kill(-daemon.agent, SIGKILL);
    }
}

bool RemoteNodes::active() {
    bool waiting = std::any_of(daemons_.begin(), daemons_.end(), [](const Daemon &d) { return !d.done; });
    if (waiting && give_up_ && Clock::now() >= *give_up_) {
        give_up_on_late_daemons();
        return false;
    }
    return waiting;
}

void RemoteNodes::finish() {
    // Daemons exit right after DONE; give their agents (ssh) a moment to end.
    auto deadline = Clock::now() + std::chrono::seconds(3);
    for (auto &daemon : daemons_) {
        daemon.channel.drain(200);
        reap_agent(daemon, deadline);
        daemon.channel.close();
    }
}

}  // namespace axon::launcher
