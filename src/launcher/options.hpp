// options.hpp -- the mpirun command line.
#pragma once

#include <string>
#include <vector>

namespace axon::launcher {

// One entry of -H or of a hostfile.
struct HostSlots {
    std::string name;
    int slots = 1;
};

enum class BindPolicy {
    core,  // one core per rank (round-robin when there are more ranks than cores)
    none,  // ranks inherit mpirun's own cpuset
};

// --map-by slot|node|ppr:N:node
struct MapPolicy {
    enum class Kind { slot, node, ppr } kind = Kind::slot;
    int per_node = 0;  // ppr: ranks per node
};

struct LaunchOptions {
    int num_ranks = 0;                        // 0: not given on the command line
    std::vector<std::string> exported_env;    // "NAME=value", from -x
    BindPolicy bind = BindPolicy::core;
    bool tag_output = false;
    bool display_map = false;
    bool oversubscribe = false;               // accepted; oversubscription is always allowed
    int timeout_seconds = 0;                  // 0: no limit
    std::string timeout_origin = "--timeout"; // or MPIEXEC_TIMEOUT: named in the message
    std::vector<HostSlots> hosts;             // from -H / --hostfile; empty: this node
    MapPolicy map_by;
    std::string launch_agent;                 // "CMD ... {} ..."; empty: ssh (or srun in Slurm)
    int launch_timeout_seconds = 30;          // daemons must connect back within this
    std::string head_address;                 // address daemons connect to; empty: chosen
    bool hosts_from_slurm = false;            // node list taken from the Slurm allocation
    std::vector<std::string> program;         // the application's argv
};

enum class ParseOutcome { run, exit_success, exit_failure };

// Parses argv into `options`. Prints help, version or the error itself; the
// outcome says whether to go on, or to exit with status 0 or 1.
ParseOutcome parse_options(int argc, char **argv, LaunchOptions &options);

}  // namespace axon::launcher
