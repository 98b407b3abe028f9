// job_map.hpp -- where each rank runs: nodes -> ranks, and each local rank's cpuset.
//
// The map is built for many nodes (node 0 is always the node mpirun runs on),
// but only node 0 can be launched on for now.
#pragma once

#include "launcher/options.hpp"

#include <hwloc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace axon::launcher {

struct BitmapDeleter {
    void operator()(hwloc_bitmap_s *bitmap) const { hwloc_bitmap_free(bitmap); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

// The hardware topology of this node (hwloc), loaded once.
class Topology {
public:
    Topology() = default;
    Topology(const Topology &) = delete;
    Topology &operator=(const Topology &) = delete;
    ~Topology();

    bool load(std::string &error);
    hwloc_topology_t get() const { return topology_; }
    // The cpus mpirun itself may run on (its affinity mask).
    const hwloc_bitmap_s *own_cpuset() const { return own_cpuset_.get(); }

private:
    hwloc_topology_t topology_ = nullptr;
    Bitmap own_cpuset_;
};

struct NodePlan {
    std::string name;
    std::vector<uint32_t> ranks;  // global ranks placed on this node, ascending
};

struct RankPlan {
    uint32_t rank = 0;
    uint32_t node = 0;         // index into JobMap::nodes
    uint16_t local_rank = 0;   // index among the ranks of its node
    int core = -1;             // logical core index it is bound to; -1 when unbound
    Bitmap cpuset;             // cpus it may use (bound core, or mpirun's cpuset)
};

struct JobMap {
    std::vector<NodePlan> nodes;
    std::vector<RankPlan> ranks;  // indexed by rank
    bool bound = false;           // ranks are bound to cores

    uint32_t size() const { return static_cast<uint32_t>(ranks.size()); }
    const NodePlan &local_node() const { return nodes.front(); }
};

// Checks that every host in `hosts` names this node; prints an error otherwise.
bool hosts_are_local(const std::vector<HostSlots> &hosts, const std::string &this_host);

// Places `num_ranks` ranks on this node and binds them per `policy`.
JobMap build_job_map(uint32_t num_ranks, BindPolicy policy, const Topology &topology,
                     const std::string &this_host);

// Writes the --display-map report.
void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out);

// Comma-separated ranks "0,1,2" (the PMIx peer-list format).
std::string rank_list(const std::vector<uint32_t> &ranks);

}  // namespace axon::launcher
