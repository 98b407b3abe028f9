// mca_params.hpp -- Open MPI's "--mca NAME VALUE" on Axon's mpirun.
//
// Scripts written for Open MPI pass MCA parameters. The few with an Axon
// equivalent are translated (to AXON_* variables of the ranks, or to mpirun's
// own settings); every other one is reported on one line and ignored. An MCA
// parameter never fails the job.
#pragma once

#include <string>
#include <vector>

namespace axon::launcher {

// What --mca parameters asked for; the command line's own options win.
struct McaSettings {
    std::vector<std::string> env;  // AXON_*=value for every rank
    std::string bind_to, map_by, rank_by;
    std::string launch_agent;
    std::vector<std::string> head_interfaces;  // oob_tcp_if_include
};

// Applies one parameter. Returns "" when it was translated, else the line to
// print (without "mpirun: ") saying it is ignored.
std::string apply_mca(const std::string &name, const std::string &value, McaSettings &settings);

}  // namespace axon::launcher
