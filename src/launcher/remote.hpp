// remote.hpp -- the multi-node part of mpirun: one daemon per other node.
//
// mpirun (the head) starts `mpirun --daemon ADDR PORT NODE` on each node
// other than its own through the launch agent (ssh, srun, ip netns exec, ...),
// hands it a per-job secret on the agent's stdin (and in its environment for
// agents that forward the environment but not stdin), and waits for it to
// connect back over TCP. After the handshake the daemon receives the job
// (the contexts, the map) and is the PMIx server of its node's ranks.
// Fences that span nodes go to the head, which concatenates every node's
// contribution and releases them all (a star); direct-modex requests are
// routed through the head to the node of the rank asked for. Output, exits
// and aborts flow to the head, which alone decides the job's fate.
#pragma once

#include "launcher/job_supervisor.hpp"
#include "launcher/wire.hpp"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace axon::launcher {

// Names each fence the same way on every node: the member set, then how many
// fences with that member set this node has seen. Every node sees the fences
// of a member set in the same order, so the names agree.
class FenceNames {
public:
    std::string next(const HostEvent &fence);

private:
    std::map<std::string, uint32_t> seen_;
};

// The nodes a fence spans (indices into map.nodes).
std::vector<uint32_t> fence_nodes(const JobMap &map, const HostEvent &fence);

// The daemon's command line: the agent's words with {} replaced by the host
// (or the host appended after the agent's first word when there is no {}),
// then the daemon's own words.
std::vector<std::string> agent_command(const std::string &agent, const std::string &host,
                                       const std::vector<std::string> &daemon_words);

struct RemoteStartOptions {
    std::string launch_agent;        // as given; empty: ssh or srun
    int launch_timeout_seconds = 30;
    std::vector<std::string> head_addresses;  // given by the user; empty: chosen per host
    std::string daemon_prefix;       // the daemon is PREFIX/bin/mpirun; empty: mpirun's own path
    std::string cpu_set;             // --cpu-set, applied to every node's resources
    MapPolicy map_by;
    BindTo bind = BindTo::core;
};

class RemoteNodes : public JobLink {
public:
    RemoteNodes(JobMap &map, PmixHost &host, int signal_fd);
    ~RemoteNodes() override;

    // Starts a daemon on every node but mpirun's and waits until each has
    // connected and authenticated; then binds each node's ranks from the
    // resources it reported. Returns 0, or the exit status after printing why
    // not (no daemon or agent is left running then).
    int start(const RemoteStartOptions &options);
    // Sends the job to every daemon (after the map is final): the contexts'
    // argv, environment and working directory (each daemon resolves the
    // programs itself), output settings, and every rank's place and cpuset.
    void send_job(const std::string &nspace, const LaunchPlan &plan);
    // After the event loop: waits (bounded) for the agents, then kills what is left.
    void finish();

    // JobLink
    void add_poll_fds(std::vector<pollfd> &fds) override;
    void on_poll(JobSupervisor &supervisor, const std::vector<pollfd> &fds, size_t first) override;
    void on_host_event(HostEvent &event) override;
    void on_child_exit(JobSupervisor &supervisor, pid_t pid, int wait_status) override;
    void forward_signal(int signo) override;
    void end_job() override;
    int ask_hang() override;
    bool active() override;
    std::optional<std::chrono::steady_clock::time_point> deadline() const override { return give_up_; }

private:
    struct Daemon {
        uint32_t node = 0;
        std::string host;
        pid_t agent = -1;           // the launch agent's process (own process group)
        std::string agent_text;     // for messages
        wire::Channel channel;
        bool hello = false;
        bool done = false;          // DONE received, or lost
        NodeResources resources;    // from HELLO
    };
    // Connections refused while the daemons start (strangers): the first few
    // are said one by one, then a count every few seconds, so a port scan
    // cannot flood the terminal.
    struct RefusedLog {
        unsigned said = 0, unsaid = 0;
        std::chrono::steady_clock::time_point last{};
        void note();
        void report(std::chrono::steady_clock::time_point now);
    };
    struct Collect {
        size_t expected = 0;
        std::map<uint32_t, std::string> data;  // node -> contribution
        uint64_t local_id = 0;                  // our own PMIx server's request, if we take part
        bool local = false;
    };

    Daemon *daemon_of_node(uint32_t node);
    void stop_all_now();
    void reap_agent(Daemon &daemon, std::chrono::steady_clock::time_point deadline);
    bool handle_hello(wire::Channel &channel, const wire::Message &message);
    void handle(JobSupervisor &supervisor, Daemon &daemon, const wire::Message &message);
    void add_fence_part(const std::string &key, size_t expected, uint32_t node, std::string data,
                        std::optional<uint64_t> local_id);
    void lost(JobSupervisor &supervisor, Daemon &daemon, const char *why);

    JobMap &map_;
    PmixHost &host_;
    int signal_fd_;
    RemoteStartOptions options_;
    std::vector<Daemon> daemons_;
    UniqueFd listener_;
    RefusedLog refused_;
    std::string secret_;
    FenceNames fence_names_;
    std::map<std::string, Collect> collects_;
    std::map<uint64_t, std::pair<uint32_t, uint32_t>> local_modex_;  // token -> (origin node, request id)
    uint64_t next_token_ = 1;
    bool ending_ = false;
    // Once the job ends, daemons get this long to report DONE before mpirun
    // gives up on them (a stopped or wedged node must not hang mpirun).
    std::optional<std::chrono::steady_clock::time_point> give_up_;
    void give_up_on_late_daemons();
};

// `mpirun --daemon ADDR PORT NODE`: the daemon's whole life.
int run_daemon(int argc, char **argv);

}  // namespace axon::launcher
