// job_supervisor.hpp -- starts the ranks, watches them, decides the exit status.
//
// Exit-status policy (docs/launcher.md):
//   every rank exits 0 ............................ 0 (a warning names ranks that
//                                                   did not call MPI_Finalize)
//   first failure in time decides, then the job is ended (SIGTERM, SIGKILL
//   after a 3 s grace):
//     rank exits with N != 0 ..................... N
//     rank killed by signal N .................... 128+N
//     rank calls MPI_Abort / PMIx_Abort(S) ....... S & 255, or 1 when that is 0
//     rank cannot be executed .................... 127 (not found) / 126 (other)
//     rank exits 0 without finalizing while others
//       still run after a 2 s grace .............. 1
//     --timeout expires .......................... 124
//     mpirun receives SIGINT/SIGTERM/SIGHUP N .... 128+N (forwarded to the ranks)
//   mpirun's own errors (bad options, set-up) .... 1
#pragma once

#include "launcher/hang_report.hpp"
#include "launcher/io_forward.hpp"
#include "launcher/job_map.hpp"
#include "launcher/pmix_host.hpp"
#include "launcher/spawn.hpp"

#include <poll.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace axon::launcher {

class Janitor;

// One application context as this node starts it.
struct AppLaunch {
    std::string executable;             // resolved path of the program on this node
    std::vector<std::string> argv;      // the program's argv
    std::vector<std::string> env;       // NAME=value on top of the base environment (-genv, then -x/-env)
    std::string wdir;                   // chdir before exec; empty: stay where mpirun (the daemon) is
    bool wdir_required = false;         // -wdir given: a missing directory is an error (a daemon
                                        // otherwise stays where it is when mpirun's is not there)
};

struct LaunchPlan {
    std::vector<AppLaunch> apps;        // indexed by RankPlan::app
    std::vector<std::string> base_env;  // environment before the contexts' and the PMIx variables
    Tagging tagging;
    int timeout_seconds = 0;           // 0: none
    std::string timeout_origin;        // what set it (--timeout, MPIEXEC_TIMEOUT)
    bool hang_report_on_timeout = true;  // --no-hang-report: off
    bool forward_stdin = true;
    const sigset_t *rank_signal_mask = nullptr;
    const rlimit *rank_open_files_limit = nullptr;
    std::string tmpdir;                // the job's PMIx tmpdir (jobs started by MPI_Comm_spawn use it too)
    std::string output_dir;            // --output-filename DIR; empty: none
    bool output_copy = true;           // and to mpirun's stdout/stderr
    bool output_jobid = true;          // DIR/1/rank.N rather than DIR/rank.N
    Janitor *janitor = nullptr;        // told each rank's pid (see janitor.hpp)
};

class JobSupervisor;

// The other side of a multi-node job, polled by the supervisor's loop: in
// mpirun, the daemons of the other nodes (RemoteNodes); in a daemon, its
// connection to mpirun (Uplink).
class JobLink {
public:
    virtual ~JobLink() = default;
    virtual void add_poll_fds(std::vector<pollfd> &fds) = 0;
    // Handles readiness of the fds it added, starting at fds[first].
    virtual void on_poll(JobSupervisor &supervisor, const std::vector<pollfd> &fds, size_t first) = 0;
    // A fence or direct-modex request from the local PMIx server.
    virtual void on_host_event(HostEvent &event) = 0;
    // A child that is not a local rank exited (a launch agent).
    virtual void on_child_exit(JobSupervisor &supervisor, pid_t pid, int wait_status) = 0;
    virtual void forward_signal(int signo) = 0;
    virtual void end_job() = 0;
    // Keeps the loop running: remote ranks or daemons still active.
    virtual bool active() = 0;
    // When the loop must look at the link again even if nothing arrives.
    virtual std::optional<std::chrono::steady_clock::time_point> deadline() const { return std::nullopt; }
    // Daemon side: exits and aborts are reported to mpirun, which decides.
    virtual bool reports_to_head() const { return false; }
    virtual void report_exit(uint32_t, int, int, int, bool, bool) {}
    virtual void report_abort(uint32_t, int, const AbortRequest &) {}
    virtual OutputStream::Sink output_sink() { return nullptr; }
    // The hang doctor (hang_report.hpp). mpirun side: asks every daemon for
    // its ranks' answers; returns how many will answer.
    virtual int ask_hang() { return 0; }
    // Daemon side: the answers of this node's ranks; a local rank asking for a report.
    virtual void send_hang_answers(const std::map<uint32_t, RankAnswer> &) {}
    virtual void ask_head_for_report(int) {}
};

class JobSupervisor {
public:
    using Clock = std::chrono::steady_clock;

    // `node` is the map's node whose ranks this process starts; `link` is
    // null in a single-node job.
    JobSupervisor(PmixHost &host, const JobMap &map, uint32_t node, const Topology &topology, int signal_fd,
                  JobLink *link = nullptr);

    // Starts every rank. On a failure part-way it reports it and ends the job;
    // run() then collects the ranks that did start.
    void launch(const LaunchPlan &plan);

    // Forwards I/O and signals until every rank is gone; returns the exit status.
    int run();

    // True when the job ended without any failure and every rank that
    // connected to PMIx also finalized: only then is library teardown safe.
    bool ended_cleanly() const { return !ending_ && unfinalized_.empty(); }

    // From the link (mpirun side): what happened to a rank on another node.
    void remote_exit(uint32_t rank, const std::string &host, int pid, int wait_status, int exec_errno,
                     bool connected, bool finalized);
    void remote_abort(const AbortRequest &request, const std::string &host, int pid);
    // Ends the job with `exit_status` (the caller printed why).
    void fail(int exit_status) { end_job(exit_status); }
    bool ending() const { return ending_; }
    // Daemon side: mpirun ended the job, or vanished (then no grace).
    void kill_requested(bool at_once);
    void forward_to_ranks(int signo) { signal_running(signo); }
    // The hang doctor. mpirun: asks every node and prints the report when the
    // answers are in, then ends the job as `then` says (124 after --timeout,
    // 1 after a rank left without MPI_Finalize).
    enum class AfterReport { nothing, timeout, unfinalized };
    void start_hang_report(std::string why, AfterReport then);
    void remote_hang_answers(std::map<uint32_t, RankAnswer> answers);
    // A rank made no progress for AXON_HANG_REPORT_AFTER seconds.
    void rank_asked_for_report(uint32_t rank);
    // Daemon: mpirun asked; the answers go back through the link.
    void collect_hang_for_head();
    // How its own messages start ("mpirun", or "mpirun daemon on HOST").
    void set_label(std::string label) { label_ = std::move(label); }

private:
    struct Rank {
        uint32_t rank = 0;
        uint32_t job = 0;       // 0: the job mpirun started; k: the k-th job started by MPI_Comm_spawn
        std::string nspace;     // spawned jobs only
        RankProcess process;
        bool running = false;
        std::unique_ptr<OutputStream> out;
        std::unique_ptr<OutputStream> err;
    };

    bool start_rank(const SpawnRequest &request, Rank &entry, OutputStream::Sink sink, std::string &error);
    // --output-filename: the rank's stdout and stderr files, opened on this node.
    bool open_output_files(uint32_t rank, UniqueFd &out, UniqueFd &err, std::string &error) const;
    // The program a rank of the first job runs, as the user named it.
    std::string program_of(uint32_t rank) const;
    void end_job(int exit_status);
    void signal_running(int signo);
    void kill_all_groups();
    void on_signal(int signo, pid_t sender);
    // The hang doctor's collection, each loop round.
    void step_hang();
    void finish_hang_report();
    void end_after_report(AfterReport then);
    std::vector<HangCollector::Target> hang_targets() const;
    void on_abort(const AbortRequest &request);
    void on_exit(Rank &rank, int wait_status);
    void judge_exit(uint32_t rank, const std::string &where, int wait_status, int exec_errno, bool connected,
                    bool finalized);
    std::string where(uint32_t rank, int pid) const;
    void check_deadlines(Clock::time_point now);
    bool any_running() const;
    bool streams_open() const;
    int poll_timeout_ms(Clock::time_point now) const;
    void read_signals();
    // MPI_Comm_spawn (a PMIx spawn request): starts the new job's ranks on
    // this node and answers the request with its nspace or a failure.
    void on_spawn(const HostEvent &event);

    PmixHost &host_;
    const JobMap &map_;
    uint32_t node_;
    const Topology &topology_;
    int signal_fd_;
    JobLink *link_;
    std::string label_ = "mpirun";
    Tagging tagging_;
    int timeout_seconds_ = 0;
    std::string timeout_origin_;
    std::vector<Rank> ranks_;
    LaunchPlan plan_;             // kept for the jobs MPI_Comm_spawn starts
    uint32_t spawned_jobs_ = 0;
    std::vector<std::unique_ptr<JobMap>> spawned_maps_;
    std::unique_ptr<StdinForwarder> stdin_;

    bool ending_ = false;
    int exit_status_ = 0;
    bool signalled_ = false;
    bool killed_ = false;  // SIGKILL already sent
    std::vector<uint32_t> unfinalized_;
    std::vector<std::string> unfinalized_where_;
    std::optional<Clock::time_point> job_deadline_;
    std::optional<Clock::time_point> kill_deadline_;
    std::optional<Clock::time_point> finalize_grace_deadline_;
    std::optional<Clock::time_point> drain_deadline_;

    // The hang doctor (hang_report.hpp).
    HangCollector hang_collector_;
    bool hang_for_head_ = false;   // daemon: the collection answers mpirun
    bool hang_running_ = false;    // mpirun: a report is being collected
    AfterReport hang_then_ = AfterReport::nothing;
    bool hang_local_pending_ = false;  // this node's collection is running
    std::string hang_why_;
    int hang_remote_pending_ = 0;  // daemons yet to answer
    std::optional<Clock::time_point> hang_deadline_;
    std::optional<Clock::time_point> last_report_end_;
    std::map<uint32_t, RankAnswer> hang_answers_;
    std::map<uint32_t, std::string> exited_;  // ranks of the job gone, and how
};

}  // namespace axon::launcher
