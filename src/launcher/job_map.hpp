// job_map.hpp -- where each rank runs: nodes -> ranks, and each local rank's cpuset.
//
// Nodes are the job's hosts (--hostfile, -hosts, a Slurm allocation, or the
// contexts' -H lists) in the order given (hosts that get no rank are
// dropped); the node that names this machine, if any, is run by mpirun
// itself, every other node by a daemon (remote.hpp). Placement is decided by
// mpirun (here); binding per node, from that node's resources (binding.hpp).
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

// The cpus of one node as binding sees them: what ranks may use, and the
// objects of each level inside it (each reduced to the usable cpus; objects
// with none are left out), in hwloc's logical order. mpirun's node reads its
// own topology; a daemon reports its node's in HELLO.
struct NodeResources {
    enum Kind { hwthread, core, l3cache, numa, socket, kinds };
    Bitmap usable;
    std::vector<Bitmap> objects[kinds];
    std::vector<unsigned> ids[kinds];  // each object's hwloc logical index (named in messages)
    bool restricted = false;  // --cpu-set took cpus away: unbound ranks are pinned to `usable`
};

struct NodePlan {
    std::string name;
    std::vector<uint32_t> ranks;  // global ranks placed on this node, ascending
    bool is_head = false;         // mpirun's own node (no daemon)
    int slots = 0;
    NodeResources resources;      // set when the node is bound (mpirun side only)
};

struct RankPlan {
    uint32_t rank = 0;
    uint32_t node = 0;         // index into JobMap::nodes
    uint16_t local_rank = 0;   // index among the ranks of its node
    uint32_t app = 0;          // application context (PMIX_APPNUM, MPI_APPNUM)
    bool bound = false;        // bound per --bind-to (cpuset is that binding)
    bool pinned = false;       // cpuset is applied with sched_setaffinity (bound, or --cpu-set)
    std::string bound_to;      // "core 0", "cores 2-3", "socket 1", ... (messages, --display-map)
    Bitmap cpuset;             // cpus it may use
};

struct JobMap {
    std::vector<NodePlan> nodes;
    std::vector<RankPlan> ranks;  // indexed by rank
    uint32_t num_apps = 1;
    bool bound = false;           // every rank is bound
    std::string bound_level;      // "cores", "sockets", ... when bound
    int head_node = -1;           // index of mpirun's own node; -1 when it runs no rank

    uint32_t size() const { return static_cast<uint32_t>(ranks.size()); }
    bool multi_node() const { return nodes.size() > 1 || head_node < 0; }
};

// True when `name` is this machine: "localhost", a loopback address, or its
// host name, short or fully qualified.
bool names_this_node(const std::string &name, const std::string &this_host);

// Places the ranks of every application context, app after app (ranks are
// numbered in that order), on `pool` (empty: the union of the contexts' -H
// hosts, else this node alone) per `policy`: slot fills each host's slots in
// order (then round-robin when every slot is taken), node deals ranks
// round-robin, ppr puts N per object on each host (`objects_per_node`
// objects of the ppr level per host), block (-ppn) deals blocks of N.
// `rank_by` renumbers the ranks of each context over the places chosen.
// Returns false with `error` when the request cannot be met.
bool place_ranks(const std::vector<HostSlots> &pool, const std::vector<AppContext> &apps, const MapPolicy &policy,
                 RankBy rank_by, int objects_per_node, const std::string &this_host, JobMap &map,
                 std::string &error);

// A cpuset as an hwloc list string ("0", "2-3,6").
std::string cpuset_list(const hwloc_bitmap_s *set);

// Writes the --display-map report.
void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out);

// Comma-separated ranks "0,1,2" (the PMIx peer-list format).
std::string rank_list(const std::vector<uint32_t> &ranks);

}  // namespace axon::launcher
