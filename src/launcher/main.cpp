// main.cpp -- mpirun / mpiexec: run one job of N ranks on this node and on
// other nodes (through one daemon per node, remote.hpp).
//
// Order of start-up: options, signals blocked, program lookup (so a typo fails
// before anything starts), topology, placement, daemons (they report their
// cores), binding, tmpdir, PMIx server, job sent to the daemons, local ranks,
// event loop. `mpirun --daemon ...` is the daemon (daemon.cpp).
#include "launcher/job_files.hpp"
#include "launcher/job_map.hpp"
#include "launcher/job_supervisor.hpp"
#include "launcher/options.hpp"
#include "launcher/pmix_host.hpp"
#include "launcher/remote.hpp"
#include "launcher/slurm.hpp"
#include "launcher/spawn.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>

extern char **environ;

namespace axon::launcher {
namespace {

constexpr int setup_failure = 1;

std::string this_host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

// mpirun's environment, with -x entries applied on top.
std::vector<std::string> rank_base_environment(const LaunchOptions &options) {
    std::vector<std::string> env;
    for (char **entry = environ; entry && *entry; ++entry) env.emplace_back(*entry);
    for (const auto &assignment : options.exported_env) {
        auto eq = assignment.find('=');
        env_set(env, assignment.substr(0, eq), assignment.substr(eq + 1));
    }
    return env;
}

int run_job(const LaunchOptions &options) {
    // Signals arrive through a signalfd read by the event loop. They are
    // blocked first: before any file of the job exists (so a signal cannot
    // leave one behind) and before libpmix starts its thread (which inherits
    // the mask, so no thread of ours takes them).
    sigset_t handled, original_mask;
    sigemptyset(&handled);
    for (int signo : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&handled, signo);
    sigprocmask(SIG_BLOCK, &handled, &original_mask);
    UniqueFd signal_fd(signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
    signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill mpirun and orphan the job
    if (!signal_fd) {
        std::fprintf(stderr, "mpirun: signalfd: %s\n", std::strerror(errno));
        return setup_failure;
    }

    const std::string host_name = this_host_name();
    std::vector<HostSlots> hosts = options.hosts;
    if (hosts.empty() && !hosts_from_slurm(hosts)) return setup_failure;

    // libpmix's shared-memory datastore (ds21) loses gets and hangs when
    // clients die; "hash" is the one that works. Set before the environment
    // is copied so the ranks' libpmix uses it too.
    setenv("PMIX_MCA_gds", "hash", 1);
    std::vector<std::string> base_env = rank_base_environment(options);

    std::string error;
    JobMap map;
    if (!place_ranks(hosts, static_cast<uint32_t>(options.num_ranks), options.map_by, host_name, map, error)) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        return setup_failure;
    }
    const bool runs_here = map.head_node >= 0;

    // The program must exist here when ranks run here; other nodes check
    // for themselves (their daemons report it).
    std::string executable;
    if (runs_here) {
        if (int failure = resolve_program(options.program.front(), env_value(base_env, "PATH"), executable);
            failure != 0) {
            std::fprintf(stderr, "mpirun: cannot run '%s': %s\n", options.program.front().c_str(),
                         std::strerror(failure));
            return failure == ENOENT ? 127 : 126;
        }
    }

    Topology topology;
    if (!topology.load(error)) {
        std::fprintf(stderr, "mpirun: cannot read the hardware topology: %s\n", error.c_str());
        return setup_failure;
    }
    if (runs_here) {
        bind_node(map, static_cast<uint32_t>(map.head_node), options.bind, usable_cores(topology),
                  topology.own_cpuset());
    }

    PmixHost pmix(map.size());
    std::unique_ptr<RemoteNodes> remote;
    if (map.multi_node()) {
        remote = std::make_unique<RemoteNodes>(map, pmix, signal_fd.get());
        RemoteStartOptions start;
        start.launch_agent = options.launch_agent;
        start.launch_timeout_seconds = options.launch_timeout_seconds;
        start.head_address = options.head_address;
        start.exported_env = options.exported_env;
        start.tag_output = options.tag_output;
        if (int status = remote->start(start, options.bind); status != 0) return status;
    }
    finish_binding(map);
    const std::string nspace = make_nspace();
    if (options.display_map) print_job_map(map, nspace, stdout);

    JobFiles files(nspace);
    if (!files.create_tmpdir(error)) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        return setup_failure;
    }

    // Three descriptors per rank (stdout, stderr, exec status) plus libpmix's
    // socket: lift the soft limit for large jobs; ranks get the original back.
    rlimit original_open_files{};
    getrlimit(RLIMIT_NOFILE, &original_open_files);
    rlimit raised_open_files = original_open_files;
    raised_open_files.rlim_cur = raised_open_files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &raised_open_files);

    // mpirun is the PMIx server of its own node's ranks, if it runs any.
    if (runs_here && (!pmix.start(files.tmpdir(), host_name, topology, error) ||
                      !pmix.register_job(nspace, map, static_cast<uint32_t>(map.head_node), files.tmpdir(), error))) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        files.remove_all();
        std::fflush(nullptr);
        _exit(setup_failure);  // libpmix may be half up: no teardown (the daemons see us vanish)
    }
    if (remote) remote->send_job(nspace, options.program);

    LaunchPlan plan;
    plan.executable = executable;
    plan.argv = options.program;
    plan.base_env = std::move(base_env);
    plan.tag_output = options.tag_output;
    plan.timeout_seconds = options.timeout_seconds;
    plan.timeout_origin = options.timeout_origin;
    // Rank 0 gets mpirun's stdin only when it runs here.
    plan.forward_stdin = runs_here && map.ranks[0].node == static_cast<uint32_t>(map.head_node) &&
                         stdin_is_forwardable();
    plan.rank_signal_mask = &original_mask;
    plan.rank_open_files_limit = &original_open_files;
    plan.tmpdir = files.tmpdir();

    JobSupervisor supervisor(pmix, map, runs_here ? static_cast<uint32_t>(map.head_node) : UINT32_MAX, topology,
                             signal_fd.get(), remote.get());
    supervisor.launch(plan);
    int exit_status = supervisor.run();
    if (remote) remote->finish();

    // libpmix 4.2.2 can hang in deregister or crash in finalize after a
    // client died without PMIx_Finalize: tear it down only after a clean
    // end, and even then give up after a bound.
    bool torn_down = supervisor.ended_cleanly() && pmix.shutdown(std::chrono::seconds(2));
    files.remove_all();
    if (!torn_down) {
        std::fflush(nullptr);
        _exit(exit_status);
    }
    return exit_status;
}

}  // namespace
}  // namespace axon::launcher

int main(int argc, char **argv) {
    using namespace axon::launcher;
    if (argc >= 2 && std::strcmp(argv[1], "--daemon") == 0) return run_daemon(argc, argv);
    LaunchOptions options;
    switch (parse_options(argc, argv, options)) {
        case ParseOutcome::exit_success: return 0;
        case ParseOutcome::exit_failure: return 1;
        case ParseOutcome::run: break;
    }
    return run_job(options);
}
