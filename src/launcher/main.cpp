// main.cpp -- mpirun / mpiexec: run one job of N ranks on this node and on
// other nodes (through one daemon per node, remote.hpp).
//
// Order of start-up: options, signals blocked, topology, placement, program
// lookup (so a typo fails before anything starts), binding, daemons (they
// report their resources, and their nodes are bound), janitor, tmpdir, PMIx
// server, job sent to the daemons, local ranks, event loop. `mpirun --daemon
// ...` is the daemon (daemon.cpp), `mpirun --janitor ...` the janitor.
#include "launcher/binding.hpp"
#include "launcher/janitor.hpp"
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
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// What a context's ranks get on top of their node's environment: the job's
// variables (-genv, --mca), then the context's own (-x, -env).
std::vector<std::string> context_environment(const LaunchOptions &options, const AppContext &app) {
    std::vector<std::string> env = options.global_env;
    for (const auto &entry : app.env) {
        auto eq = entry.find('=');
        env_set(env, entry.substr(0, eq), entry.substr(eq + 1));
    }
    return env;
}

// Checks the working directory and finds the program of every context that
// has ranks on mpirun's node. Returns 0, or the exit status after saying why.
int prepare_local_contexts(const JobMap &map, const std::vector<std::string> &base_env, LaunchPlan &plan) {
    for (uint32_t a = 0; a < plan.apps.size(); ++a) {
        AppLaunch &app = plan.apps[a];
        bool here = std::any_of(map.ranks.begin(), map.ranks.end(), [&](const RankPlan &rank) {
            return rank.app == a && static_cast<int>(rank.node) == map.head_node;
        });
        if (!here) continue;
        if (!app.wdir.empty()) {
            struct stat info {};
            int failure = stat(app.wdir.c_str(), &info) != 0 ? errno : S_ISDIR(info.st_mode) ? 0 : ENOTDIR;
            if (failure != 0) {
                std::fprintf(stderr, "mpirun: cannot use the working directory '%s' of %s: %s\n", app.wdir.c_str(),
                             app.argv.front().c_str(), std::strerror(failure));
                return setup_failure;
            }
        }
        std::string path = env_value(app.env, "PATH");
        if (path.empty()) path = env_value(base_env, "PATH");
        // A relative program path is relative to the working directory, as after chdir.
        std::string program = app.argv.front();
        if (!app.wdir.empty() && program.find('/') != std::string::npos && program.front() != '/')
            program = app.wdir + "/" + program;
        if (int failure = resolve_program(program, path, app.executable); failure != 0) {
            std::fprintf(stderr, "mpirun: cannot run '%s': %s\n", app.argv.front().c_str(), std::strerror(failure));
            return failure == ENOENT ? 127 : 126;
        }
    }
    return 0;
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
    std::vector<std::string> base_env;
    for (char **entry = environ; entry && *entry; ++entry) base_env.emplace_back(*entry);

    std::string error;
    Topology topology;
    if (!topology.load(error)) {
        std::fprintf(stderr, "mpirun: cannot read the hardware topology: %s\n", error.c_str());
        return setup_failure;
    }
    NodeResources head_resources = local_resources(topology);
    if (!restrict_resources(head_resources, options.cpu_set, error)) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        return setup_failure;
    }

    // ppr:N:socket and the like count this node's objects, and take every
    // node to have as many (the daemons report theirs only later).
    JobMap map;
    if (!place_ranks(hosts, options.apps, options.map_by, options.rank_by,
                     count_objects(head_resources, options.map_by.ppr_object), host_name, map, error)) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        return setup_failure;
    }
    const bool runs_here = map.head_node >= 0;

    LaunchPlan plan;
    for (const auto &app : options.apps) {
        AppLaunch launch;
        launch.argv = app.argv;
        launch.env = context_environment(options, app);
        launch.wdir = app.wdir;
        launch.wdir_required = !app.wdir.empty();
        plan.apps.push_back(std::move(launch));
    }
    // The programs must exist here when ranks run here (a typo fails before
    // anything starts); other nodes check for themselves (their daemons report it).
    if (int status = prepare_local_contexts(map, base_env, plan); status != 0) return status;

    if (runs_here) bind_node(map, static_cast<uint32_t>(map.head_node), options.map_by, options.bind,
                             std::move(head_resources));

    PmixHost pmix(map.size());
    std::unique_ptr<RemoteNodes> remote;
    if (map.multi_node()) {
        remote = std::make_unique<RemoteNodes>(map, pmix, signal_fd.get());
        RemoteStartOptions start;
        start.launch_agent = options.launch_agent;
        start.launch_timeout_seconds = options.launch_timeout_seconds;
        start.head_addresses = options.head_addresses;
        start.daemon_prefix = options.daemon_prefix;
        start.cpu_set = options.cpu_set;
        start.map_by = options.map_by;
        start.bind = options.bind;
        if (int status = remote->start(start); status != 0) return status;
    }
    finish_binding(map, options.bind);
    const std::string nspace = make_nspace();
    if (options.display_map) print_job_map(map, nspace, stdout);
    if (options.report_bindings) report_bindings(map, stderr);

    // Before any file of the job exists: what cleans up if mpirun is SIGKILLed.
    Janitor janitor;
    if (!janitor.start(nspace, error))
        std::fprintf(stderr, "mpirun: warning: no janitor (%s); a SIGKILL would leave files behind\n", error.c_str());
    JobFiles files(nspace);
    if (!files.create_tmpdir(error)) {
        std::fprintf(stderr, "mpirun: %s\n", error.c_str());
        return setup_failure;
    }
    janitor.watch_dir(files.tmpdir());

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
        janitor.dismiss();
        std::fflush(nullptr);
        _exit(setup_failure);  // libpmix may be half up: no teardown (the daemons see us vanish)
    }

    plan.base_env = std::move(base_env);
    plan.tagging.job = options.tag_output ? 1 : 0;  // like Open MPI: the first job of this mpirun is 1
    plan.tagging.hydra = options.hydra_tags;
    plan.timeout_seconds = options.timeout_seconds;
    plan.timeout_origin = options.timeout_origin;
    plan.hang_report_on_timeout = options.hang_report_on_timeout;
    plan.output_dir = options.output_dir;
    plan.output_copy = options.output_copy;
    plan.output_jobid = options.output_jobid;
    if (remote) {
        // Ranks elsewhere start in mpirun's directory too when it exists there
        // (a shared file system), as with Open MPI and Hydra.
        LaunchPlan sent = plan;
        for (auto &app : sent.apps) {
            if (app.wdir.empty()) app.wdir = options.cwd;
        }
        remote->send_job(nspace, sent);
    }
    // Rank 0 gets mpirun's stdin only when it runs here.
    plan.forward_stdin = runs_here && map.ranks[0].node == static_cast<uint32_t>(map.head_node) &&
                         stdin_is_forwardable();
    plan.rank_signal_mask = &original_mask;
    plan.rank_open_files_limit = &original_open_files;
    plan.tmpdir = files.tmpdir();
    plan.janitor = &janitor;

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
    janitor.dismiss();
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
    if (argc >= 2 && std::strcmp(argv[1], "--janitor") == 0) return run_janitor(argc, argv);
    LaunchOptions options;
    switch (parse_options(argc, argv, options)) {
        case ParseOutcome::exit_success: return 0;
        case ParseOutcome::exit_failure: return 1;
        case ParseOutcome::run: break;
    }
    return run_job(options);
}
