// job_map.hpp -- where each rank runs: nodes -> ranks, and each local rank's cpuset.
//
// Nodes are the hosts of -H / --hostfile in the order given (hosts that get
// no rank are dropped); the node that names this machine, if any, is run by
// mpirun itself, every other node by a daemon (remote.hpp). Placement is
// decided by mpirun; binding per node, from that node's cores.
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
    bool is_head = false;         // mpirun's own node (no daemon)
    int slots = 0;
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
    bool bound = false;           // every rank is bound to a core
    int head_node = -1;           // index of mpirun's own node; -1 when it runs no rank

    uint32_t size() const { return static_cast<uint32_t>(ranks.size()); }
    bool multi_node() const { return nodes.size() > 1 || head_node < 0; }
};

// True when `name` is this machine: "localhost", a loopback address, or its
// host name, short or fully qualified.
bool names_this_node(const std::string &name, const std::string &this_host);

// Places `num_ranks` ranks on `hosts` (empty: this node only) per `policy`:
// slot fills each host's slots in order (then round-robin when every slot is
// taken), node deals ranks round-robin, ppr:N:node puts N on each host.
// Returns false with `error` when the request cannot be met.
bool place_ranks(const std::vector<HostSlots> &hosts, uint32_t num_ranks, const MapPolicy &policy,
                 const std::string &this_host, JobMap &map, std::string &error);

// The cores of this node that mpirun's cpuset may use, each reduced to those
// cpus (PUs on machines without core objects).
std::vector<Bitmap> usable_cores(const Topology &topology);
// The same as hwloc list strings ("0", "2-3"), as a daemon reports them.
std::vector<std::string> core_lists(const std::vector<Bitmap> &cores);
std::vector<Bitmap> parse_core_lists(const std::vector<std::string> &lists);

// Binds the ranks of `node` per `policy` to `cores` (that node's usable
// cores); `whole` is the cpuset of unbound ranks (nullptr: the union of cores).
void bind_node(JobMap &map, uint32_t node, BindPolicy policy, const std::vector<Bitmap> &cores,
               const hwloc_bitmap_s *whole);
// Sets map.bound once every node is bound.
void finish_binding(JobMap &map);

// Writes the --display-map report.
void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out);

// Comma-separated ranks "0,1,2" (the PMIx peer-list format).
std::string rank_list(const std::vector<uint32_t> &ranks);

}  // namespace axon::launcher
