// job_map.cpp -- the topology of this node, and placing the ranks of every context on nodes.
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

std::string cpuset_list(const hwloc_bitmap_s *set) {
    char *text = nullptr;
    hwloc_bitmap_list_asprintf(&text, set);
    std::string result = text ? text : "?";
    std::free(text);
    return result;
}

bool names_this_node(const std::string &name, const std::string &this_host) {
    if (name == "localhost" || name == "127.0.0.1" || name == "::1" || name == this_host) return true;
    // Short and fully qualified forms of our own name.
    auto short_of = [](const std::string &n) { return n.substr(0, n.find('.')); };
    return short_of(name) == short_of(this_host) &&
           (name.find('.') == std::string::npos || this_host.find('.') == std::string::npos);
}

namespace {

// The job's hosts in order, a name given twice merged (its slots added up).
void merge_hosts(const std::vector<HostSlots> &list, const std::string &this_host, std::vector<HostSlots> &hosts) {
    for (const auto &host : list) {
        std::string name = names_this_node(host.name, this_host) ? this_host : host.name;
        auto same = std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots &h) { return h.name == name; });
        if (same != hosts.end()) {
            same->slots += host.slots;
        } else {
            hosts.push_back(HostSlots{name, host.slots});
        }
    }
}

const char *level_name(Level level) {
    switch (level) {
        case Level::node: return "node";
        case Level::socket: return "socket";
        case Level::numa: return "numa";
        case Level::l3cache: return "l3cache";
        case Level::core: return "core";
        case Level::hwthread: return "hwthread";
    }
    return "?";
}

// Renumbers one context's places (host indices in mapping order) per --rank-by.
std::vector<uint32_t> rank_order(const std::vector<uint32_t> &places, size_t num_hosts, RankBy rank_by) {
    if (rank_by == RankBy::mapping) return places;
    std::vector<uint32_t> remaining(num_hosts, 0);
    for (uint32_t host : places) ++remaining[host];
    std::vector<uint32_t> order;
    order.reserve(places.size());
    if (rank_by == RankBy::slot) {  // host by host: each host's ranks consecutive
        for (uint32_t host = 0; host < num_hosts; ++host) order.insert(order.end(), remaining[host], host);
        return order;
    }
    while (order.size() < places.size()) {  // by node: round-robin over the hosts that have places left
        for (uint32_t host = 0; host < num_hosts; ++host) {
            if (remaining[host] == 0) continue;
            --remaining[host];
            order.push_back(host);
        }
    }
    return order;
}

}  // namespace

bool place_ranks(const std::vector<HostSlots> &pool, const std::vector<AppContext> &apps, const MapPolicy &policy,
                 RankBy rank_by, int objects_per_node, const std::string &this_host, JobMap &map,
                 std::string &error) {
    std::vector<HostSlots> hosts;
    merge_hosts(pool, this_host, hosts);
    const bool pool_from_contexts = hosts.empty();
    if (pool_from_contexts) {
        for (const auto &app : apps) merge_hosts(app.hosts, this_host, hosts);
    }
    uint64_t requested = 0;
    for (const auto &app : apps) requested += static_cast<uint64_t>(app.num_ranks);
    if (hosts.empty()) hosts.push_back(HostSlots{this_host, static_cast<int>(std::max<uint64_t>(requested, 1))});

    // ppr: N per object, objects_per_node objects of that level on each host.
    const uint64_t ppr_cap = static_cast<uint64_t>(policy.per_object) *
                             static_cast<uint64_t>(policy.ppr_object == Level::node ? 1 : std::max(objects_per_node, 1));
    std::vector<uint32_t> used(hosts.size(), 0);
    std::vector<uint32_t> node_of, app_of;
    uint64_t cursor = 0;  // --map-by node and -ppn go on where the previous context stopped

    for (uint32_t a = 0; a < apps.size(); ++a) {
        const AppContext &app = apps[a];
        const std::string prefix = apps.size() > 1 ? app.origin + " (" + app.argv.front() + "): " : "";
        std::vector<uint32_t> candidates;
        std::vector<HostSlots> own;
        merge_hosts(app.hosts, this_host, own);
        for (const auto &host : own) {
            auto found = std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots &h) { return h.name == host.name; });
            if (found == hosts.end()) {
                error = prefix + "-H names host '" + host.name +
                        "', which is not among the job's hosts (--hostfile, -hosts or the Slurm allocation)";
                return false;
            }
            candidates.push_back(static_cast<uint32_t>(found - hosts.begin()));
        }
        if (candidates.empty()) {
            for (uint32_t h = 0; h < hosts.size(); ++h) candidates.push_back(h);
        }
        uint64_t slots = 0;
        for (uint32_t h : candidates) slots += static_cast<uint64_t>(hosts[h].slots);

        uint64_t count = static_cast<uint64_t>(app.num_ranks);
        if (count == 0) {
            switch (policy.kind) {
                case MapPolicy::Kind::ppr: count = ppr_cap * candidates.size(); break;
                case MapPolicy::Kind::block: count = static_cast<uint64_t>(policy.per_object) * candidates.size(); break;
                default: count = slots; break;
            }
        }
        if (policy.kind == MapPolicy::Kind::ppr && count > ppr_cap * candidates.size()) {
            error = prefix + std::to_string(count) + " ranks do not fit --map-by ppr:" +
                    std::to_string(policy.per_object) + ":" + level_name(policy.ppr_object) + " on " +
                    std::to_string(candidates.size()) + " node" + (candidates.size() == 1 ? "" : "s");
            if (policy.ppr_object != Level::node)
                error += " (" + std::to_string(objects_per_node) + " " + level_name(policy.ppr_object) + " per node)";
            return false;
        }

        std::vector<uint32_t> places;
        places.reserve(count);
        uint64_t oversubscribed = 0;
        for (uint64_t k = 0; k < count; ++k) {
            uint32_t host = candidates.front();
            switch (policy.kind) {
                case MapPolicy::Kind::node: host = candidates[cursor++ % candidates.size()]; break;
                case MapPolicy::Kind::ppr: host = candidates[k / ppr_cap]; break;
                case MapPolicy::Kind::block:
                    host = candidates[(cursor++ / static_cast<uint64_t>(policy.per_object)) % candidates.size()];
                    break;
                case MapPolicy::Kind::slot: {
                    // First host with a free slot; once all are full (oversubscribed), round-robin.
                    auto free = std::find_if(candidates.begin(), candidates.end(), [&](uint32_t h) {
                        return used[h] < static_cast<uint32_t>(hosts[h].slots);
                    });
                    host = free != candidates.end() ? *free : candidates[oversubscribed++ % candidates.size()];
                    break;
                }
            }
            places.push_back(host);
            ++used[host];
        }
        for (uint32_t host : rank_order(places, hosts.size(), rank_by)) {
            node_of.push_back(host);
            app_of.push_back(a);
        }
    }
    if (node_of.size() > UINT32_MAX / 2) {
        error = "too many ranks";
        return false;
    }

    // Hosts that got ranks become the job's nodes, in host order.
    std::vector<int> node_index(hosts.size(), -1);
    map = JobMap{};
    map.num_apps = static_cast<uint32_t>(apps.size());
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
    const uint32_t num_ranks = static_cast<uint32_t>(node_of.size());
    map.ranks.resize(num_ranks);
    for (uint32_t rank = 0; rank < num_ranks; ++rank) {
        RankPlan &plan = map.ranks[rank];
        plan.rank = rank;
        plan.app = app_of[rank];
        plan.node = static_cast<uint32_t>(node_index[node_of[rank]]);
        NodePlan &node = map.nodes[plan.node];
        plan.local_rank = static_cast<uint16_t>(node.ranks.size());
        node.ranks.push_back(rank);
    }
    return true;
}

void print_job_map(const JobMap &map, const std::string &nspace, std::FILE *out) {
    std::fprintf(out, "mpirun: job %s: %u rank%s on %zu node%s, %s\n", nspace.c_str(), map.size(),
                 map.size() == 1 ? "" : "s", map.nodes.size(), map.nodes.size() == 1 ? "" : "s",
                 map.bound ? ("bound to " + map.bound_level).c_str() : "not bound");
    for (const auto &node : map.nodes) {
        std::fprintf(out, "mpirun:   node %s%s: %zu rank%s (%s)\n", node.name.c_str(),
                     node.is_head ? " (mpirun's node)" : "", node.ranks.size(), node.ranks.size() == 1 ? "" : "s",
                     rank_list(node.ranks).c_str());
    }
    for (const auto &plan : map.ranks) {
        std::string where = map.nodes[plan.node].name;
        if (map.num_apps > 1) where += " (app " + std::to_string(plan.app) + ")";
        if (!plan.cpuset) {
            std::fprintf(out, "mpirun:   rank %u on %s\n", plan.rank, where.c_str());
        } else if (plan.bound) {
            std::fprintf(out, "mpirun:   rank %u on %s: %s (cpus %s)\n", plan.rank, where.c_str(),
                         plan.bound_to.c_str(), cpuset_list(plan.cpuset.get()).c_str());
        } else {
            std::fprintf(out, "mpirun:   rank %u on %s: not bound (cpus %s)\n", plan.rank, where.c_str(),
                         cpuset_list(plan.cpuset.get()).c_str());
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
