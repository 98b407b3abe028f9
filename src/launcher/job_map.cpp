// job_map.cpp -- placing ranks on nodes and binding them to cores (hwloc).
#include "launcher/job_map.hpp"

#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace axon::launcher {

Topology::~Topology() {
    if (topology_) hwloc_topology_destroy(topology_);
}

bool Topology::load(std::string &error) {
    if (hwloc_topology_init(&topology_) != 0) {
        topology_ = nullptr;
        error = "hwloc_topology_init failed";
        return false;
    }
    // Only cpus and caches matter for binding; skipping I/O discovery keeps start-up fast.
    hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (hwloc_topology_load(topology_) != 0) {
        error = std::string("hwloc_topology_load failed: ") + std::strerror(errno);
        return false;
    }
    own_cpuset_.reset(hwloc_bitmap_alloc());
    if (hwloc_get_cpubind(topology_, own_cpuset_.get(), HWLOC_CPUBIND_PROCESS) != 0 ||
        hwloc_bitmap_iszero(own_cpuset_.get())) {
        hwloc_bitmap_copy(own_cpuset_.get(), hwloc_topology_get_allowed_cpuset(topology_));
    }
    return true;
}

namespace {

bool names_this_node(const std::string &name, const std::string &this_host) {
    if (name == "localhost" || name == "127.0.0.1" || name == "::1" || name == this_host) return true;
    // Short and fully qualified forms of our own name.
    auto short_of = [](const std::string &n) { return n.substr(0, n.find('.')); };
    return short_of(name) == short_of(this_host) &&
           (name.find('.') == std::string::npos || this_host.find('.') == std::string::npos);
}

// Cores that intersect mpirun's cpuset, each reduced to the cpus mpirun may use.
std::vector<Bitmap> usable_cores(const Topology &topology) {
    std::vector<Bitmap> cores;
    hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
    if (hwloc_get_nbobjs_by_type(topology.get(), HWLOC_OBJ_CORE) <= 0) unit = HWLOC_OBJ_PU;
    hwloc_obj_t object = nullptr;
    while ((object = hwloc_get_next_obj_by_type(topology.get(), unit, object)) != nullptr) {
        if (!object->cpuset || !hwloc_bitmap_intersects(object->cpuset, topology.own_cpuset())) continue;
        Bitmap usable(hwloc_bitmap_alloc());
        hwloc_bitmap_and(usable.get(), object->cpuset, topology.own_cpuset());
        cores.push_back(std::move(usable));
    }
    return cores;
}

std::string cpuset_list(const hwloc_bitmap_s *set) {
    char *text = nullptr;
    hwloc_bitmap_list_asprintf(&text, set);
    std::string result = text ? text : "?";
    std::free(text);
    return result;
}

}  // namespace

bool hosts_are_local(const std::vector<HostSlots> &hosts, const std::string &this_host) {
    for (const auto &host : hosts) {
        if (!names_this_node(host.name, this_host)) {
            std::fprintf(stderr,
                         "mpirun: host '%s' is not this node ('%s'); running on other nodes is not "
                         "supported yet\n",
                         host.name.c_str(), this_host.c_str());
            return false;
        }
    }
    return true;
}

JobMap build_job_map(uint32_t num_ranks, BindPolicy policy, const Topology &topology,
                     const std::string &this_host) {
    JobMap map;
    map.nodes.push_back(NodePlan{this_host, {}});
    std::vector<Bitmap> cores = usable_cores(topology);
    bool bind = false;
    switch (policy) {
        case BindPolicy::core: bind = !cores.empty(); break;
        case BindPolicy::none: bind = false; break;
        case BindPolicy::automatic: bind = !cores.empty() && num_ranks <= cores.size(); break;
    }
    map.bound = bind;
    map.ranks.resize(num_ranks);
    for (uint32_t rank = 0; rank < num_ranks; ++rank) {
        RankPlan &plan = map.ranks[rank];
        plan.rank = rank;
        plan.node = 0;
        plan.local_rank = static_cast<uint16_t>(rank);
        plan.cpuset.reset(hwloc_bitmap_alloc());
        if (bind) {
            plan.core = static_cast<int>(rank % cores.size());  // round-robin when oversubscribed
            hwloc_bitmap_copy(plan.cpuset.get(), cores[plan.core].get());
        } else {
            hwloc_bitmap_copy(plan.cpuset.get(), topology.own_cpuset());
        }
        map.nodes[0].ranks.push_back(rank);
    }
    return map;
}

void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out) {
    std::fprintf(out, "mpirun: job %s: %u rank%s on %zu node%s, %s\n", nspace.c_str(), map.size(),
                 map.size() == 1 ? "" : "s", map.nodes.size(), map.nodes.size() == 1 ? "" : "s",
                 map.bound ? "bound to cores" : "not bound");
    for (const auto &plan : map.ranks) {
        if (plan.core >= 0) {
            std::fprintf(out, "mpirun:   rank %u on %s: core %d (cpus %s)\n", plan.rank,
                         map.nodes[plan.node].name.c_str(), plan.core, cpuset_list(plan.cpuset.get()).c_str());
        } else {
            std::fprintf(out, "mpirun:   rank %u on %s: not bound (cpus %s)\n", plan.rank,
                         map.nodes[plan.node].name.c_str(), cpuset_list(plan.cpuset.get()).c_str());
        }
    }
    std::fflush(out);
}

std::string rank_list(const std::vector<uint32_t> &ranks) {
    std::string text;
    for (uint32_t rank : ranks) {
        if (!text.empty()) text += ',';
        text += std::to_string(rank);
    }
    return text;
}

}  // namespace axon::launcher
