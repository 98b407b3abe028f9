// options.hpp -- the mpirun command line: the job's options and its
// application contexts (MPMD: "prog1 : prog2", --app FILE, -configfile FILE).
#pragma once

#include <string>
#include <vector>

namespace axon::launcher {

// One entry of -H, -hosts or of a hostfile.
struct HostSlots {
    std::string name;
    int slots = 1;
};

// hwloc levels a rank can be mapped over or bound to.
enum class Level { node, socket, numa, l3cache, core, hwthread };

// --bind-to: what each rank's cpuset is (none: mpirun's own cpuset).
enum class BindTo { core, hwthread, socket, numa, l3cache, none };

// --map-by: which node each rank goes to and, inside the node, where.
struct MapPolicy {
    enum class Kind {
        slot,   // fill each host's slots in order, then round-robin (the default)
        node,   // round-robin over the hosts
        ppr,    // ppr:N:OBJECT (--npernode, -N): N per object of every host; more is an error
        block,  // Hydra's -ppn N: blocks of N consecutive ranks per host, wrapping around
    } kind = Kind::slot;
    int per_object = 0;            // ppr / block: N
    Level ppr_object = Level::node;  // ppr: the object N ranks go to (node, socket, numa, l3cache, core)
    Level within = Level::core;    // inside a node: fill cores (hwthreads), or round-robin over
                                   // sockets / NUMA nodes / L3 caches (--map-by socket, ...)
    int cores_per_rank = 1;        // :PE=n, --cpus-per-rank n
};

// --rank-by: how ranks are numbered over the places the mapping chose.
enum class RankBy { mapping, slot, node };

// One application context: one program of an MPMD job, with its own count,
// environment, working directory and hosts.
struct AppContext {
    int num_ranks = 0;                   // 0: not given
    std::vector<std::string> argv;       // the program and its arguments
    std::vector<std::string> env;        // NAME=value for this context (-x, -env, -envlist, -envall)
    std::string wdir;                    // -wdir, absolute; empty: mpirun's working directory
    std::vector<HostSlots> hosts;        // -H / -host: the only hosts it may use; empty: all
    std::string origin;                  // where it was given ("context 2", "FILE:LINE"), for messages
};

struct LaunchOptions {
    std::vector<AppContext> apps;             // in order: the app number (MPI_APPNUM) is the index
    std::vector<std::string> global_env;      // NAME=value for every context (-genv, -genvall, --mca)
    BindTo bind = BindTo::core;
    MapPolicy map_by;
    RankBy rank_by = RankBy::mapping;
    std::string cpu_set;                      // --cpu-set LIST: the only cpus ranks may use; empty: all
    bool report_bindings = false;
    bool tag_output = false;                  // --tag-output, or -l (Hydra)
    bool hydra_tags = false;                  // -l / -prepend-rank: "[rank] " instead of "[1,rank]<stdout>: "
    bool display_map = false;
    bool oversubscribe = false;               // accepted; oversubscription is always allowed
    int timeout_seconds = 0;                  // 0: no limit
    std::string timeout_origin = "--timeout"; // or MPIEXEC_TIMEOUT: named in the message
    bool hang_report_on_timeout = true;       // --no-hang-report: the timeout prints no hang report
    std::vector<HostSlots> hosts;             // -f / --hostfile / -hosts; empty: Slurm, -H, or this node
    std::string output_dir;                   // --output-filename DIR (absolute); empty: none
    bool output_copy = true;                  // also to mpirun's stdout/stderr (DIR:nocopy: not)
    bool output_jobid = true;                 // DIR/1/rank.N (DIR:nojobid: DIR/rank.N)
    std::string launch_agent;                 // "CMD ... {} ..."; empty: ssh (or srun in Slurm)
    int launch_timeout_seconds = 30;          // daemons must connect back within this
    std::vector<std::string> head_addresses;  // --head-addr / -iface: addresses daemons try, in order
    std::string daemon_prefix;                // --prefix DIR: the daemon is DIR/bin/mpirun on other hosts
    std::string cwd;                          // mpirun's working directory
};

enum class ParseOutcome { run, exit_success, exit_failure };

// Parses argv into `options`. Prints help, version or the error itself; the
// outcome says whether to go on, or to exit with status 0 or 1.
ParseOutcome parse_options(int argc, char **argv, LaunchOptions &options);

// The help text (help.cpp).
extern const char *const mpirun_help_text;

}  // namespace axon::launcher
