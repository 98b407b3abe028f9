// job_map.cpp -- placing ranks on nodes and binding them to cores (hwloc).
#include "launcher/job_map.hpp"

#include <netdb.h>
#include <unistd.h>

#include <algorithm>
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

std::string cpuset_list(const hwloc_bitmap_s *set) {
    char *text = nullptr;
    hwloc_bitmap_list_asprintf(&text, set);
    std::string result = text ? text : "?";
    std::free(text);
    return result;
}

}  // namespace

bool names_this_node(const std::string &name, const std::string &this_host) {
    if (name == "localhost" || name == "127.0.0.1" || name == "::1" || name == this_host) return true;
    // Short and fully qualified forms of our own name.
    auto short_of = [](const std::string &n) { return n.substr(0, n.find('.')); };
    return short_of(name) == short_of(this_host) &&
           (name.find('.') == std::string::npos || this_host.find('.') == std::string::npos);
}

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

std::vector<std::string> core_lists(const std::vector<Bitmap> &cores) {
    std::vector<std::string> lists;
    for (const auto &core : cores) lists.push_back(cpuset_list(core.get()));
    return lists;
}

std::vector<Bitmap> parse_core_lists(const std::vector<std::string> &lists) {
    std::vector<Bitmap> cores;
    for (const auto &list : lists) {
        Bitmap core(hwloc_bitmap_alloc());
        if (hwloc_bitmap_list_sscanf(core.get(), list.c_str()) == 0 && !hwloc_bitmap_iszero(core.get())) {
            cores.push_back(std::move(core));
        }
    }
    return cores;
}

bool place_ranks(const std::vector<HostSlots> &hosts_in, uint32_t num_ranks, const MapPolicy &policy,
                 const std::string &this_host, JobMap &map, std::string &error) {
    // Hosts in order, the same name twice merged (its slots added up).
    std::vector<HostSlots> hosts;
    for (const auto &host : hosts_in) {
        std::string name = names_this_node(host.name, this_host) ? this_host : host.name;
        auto same = std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots &h) { return h.name == name; });
        if (same != hosts.end()) {
            same->slots += host.slots;
        } else {
            hosts.push_back(HostSlots{name, host.slots});
        }
    }
    if (hosts.empty()) hosts.push_back(HostSlots{this_host, static_cast<int>(num_ranks)});

    uint64_t total_slots = 0;
    for (const auto &host : hosts) total_slots += static_cast<uint64_t>(host.slots);
    if (num_ranks == 0) {
        num_ranks = policy.kind == MapPolicy::Kind::ppr ? static_cast<uint32_t>(policy.per_node * hosts.size())
                                                         : static_cast<uint32_t>(total_slots);
    }
    if (policy.kind == MapPolicy::Kind::ppr &&
        static_cast<uint64_t>(num_ranks) > static_cast<uint64_t>(policy.per_node) * hosts.size()) {
        error = std::to_string(num_ranks) + " ranks do not fit --map-by ppr:" + std::to_string(policy.per_node) +
                ":node on " + std::to_string(hosts.size()) + " node" + (hosts.size() == 1 ? "" : "s");
        return false;
    }

    std::vector<uint32_t> node_of(num_ranks);
    std::vector<uint32_t> used(hosts.size(), 0);
    for (uint32_t rank = 0; rank < num_ranks; ++rank) {
        size_t node = 0;
        switch (policy.kind) {
            case MapPolicy::Kind::node: node = rank % hosts.size(); break;
            case MapPolicy::Kind::ppr: node = rank / static_cast<uint32_t>(policy.per_node); break;
            case MapPolicy::Kind::slot: {
                // First host with a free slot; once all are full (oversubscribed), round-robin.
                node = hosts.size();
                for (size_t i = 0; i < hosts.size(); ++i) {
                    if (used[i] < static_cast<uint32_t>(hosts[i].slots)) {
                        node = i;
                        break;
                    }
                }
                if (node == hosts.size()) node = (rank - total_slots) % hosts.size();
                break;
            }
        }
        node_of[rank] = static_cast<uint32_t>(node);
        ++used[node];
    }

    // Hosts that got ranks become the job's nodes, in host order.
    std::vector<int> node_index(hosts.size(), -1);
    map = JobMap{};
    for (size_t i = 0; i < hosts.size(); ++i) {
        if (used[i] == 0) continue;
        node_index[i] = static_cast<int>(map.nodes.size());
        NodePlan plan;
        plan.name = hosts[i].name;
        plan.slots = hosts[i].slots;
        plan.is_head = hosts[i].name == this_host;
        if (plan.is_head) map.head_node = node_index[i];
        map.nodes.push_back(std::move(plan));
    }
    map.ranks.resize(num_ranks);
    for (uint32_t rank = 0; rank < num_ranks; ++rank) {
        RankPlan &plan = map.ranks[rank];
        plan.rank = rank;
        plan.node = static_cast<uint32_t>(node_index[node_of[rank]]);
        NodePlan &node = map.nodes[plan.node];
        plan.local_rank = static_cast<uint16_t>(node.ranks.size());
        node.ranks.push_back(rank);
    }
    return true;
}

void bind_node(JobMap &map, uint32_t node, BindPolicy policy, const std::vector<Bitmap> &cores,
               const hwloc_bitmap_s *whole) {
    const auto &ranks = map.nodes[node].ranks;
    // Also when ranks outnumber cores: left to the kernel, 4 ranks on 2 cores
    // ran 3 on one core and 1 on the other in about half the runs, for a
    // second or more, and a small allreduce took 2-3x as long there
    // (docs/performance.md, "Binding oversubscribed ranks").
    bool bind = policy == BindPolicy::core && !cores.empty();
    Bitmap all(hwloc_bitmap_alloc());
    if (whole) {
        hwloc_bitmap_copy(all.get(), whole);
    } else {
        for (const auto &core : cores) hwloc_bitmap_or(all.get(), all.get(), core.get());
    }
    for (uint32_t rank : ranks) {
        RankPlan &plan = map.ranks[rank];
        plan.cpuset.reset(hwloc_bitmap_alloc());
        if (bind) {
            plan.core = static_cast<int>(plan.local_rank % cores.size());  // round-robin when oversubscribed
            hwloc_bitmap_copy(plan.cpuset.get(), cores[plan.core].get());
        } else {
            plan.core = -1;
            hwloc_bitmap_copy(plan.cpuset.get(), all.get());
        }
    }
}

void finish_binding(JobMap &map) {
    map.bound = !map.ranks.empty() &&
                std::all_of(map.ranks.begin(), map.ranks.end(), [](const RankPlan &plan) { return plan.core >= 0; });
}

void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out) {
    std::fprintf(out, "mpirun: job %s: %u rank%s on %zu node%s, %s\n", nspace.c_str(), map.size(),
                 map.size() == 1 ? "" : "s", map.nodes.size(), map.nodes.size() == 1 ? "" : "s",
                 map.bound ? "bound to cores" : "not bound");
    for (const auto &node : map.nodes) {
        std::fprintf(out, "mpirun:   node %s%s: %zu rank%s (%s)\n", node.name.c_str(),
                     node.is_head ? " (mpirun's node)" : "", node.ranks.size(), node.ranks.size() == 1 ? "" : "s",
                     rank_list(node.ranks).c_str());
    }
    for (const auto &plan : map.ranks) {
        if (!plan.cpuset) {
            std::fprintf(out, "mpirun:   rank %u on %s\n", plan.rank, map.nodes[plan.node].name.c_str());
        } else if (plan.core >= 0) {
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
