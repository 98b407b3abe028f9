// binding.cpp -- mapping local ranks onto a node's cores and binding them.
#include "launcher/binding.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace axon::launcher {
namespace {

Bitmap copy_of(const hwloc_bitmap_s *set) {
    Bitmap copy(hwloc_bitmap_alloc());
    hwloc_bitmap_copy(copy.get(), set);
    return copy;
}

// The objects of one level, as an index into NodeResources::objects; -1: the node itself.
int kind_of(Level level) {
    switch (level) {
        case Level::hwthread: return NodeResources::hwthread;
        case Level::core: return NodeResources::core;
        case Level::l3cache: return NodeResources::l3cache;
        case Level::numa: return NodeResources::numa;
        case Level::socket: return NodeResources::socket;
        case Level::node: return -1;
    }
    return -1;
}

int kind_of(BindTo bind) {
    switch (bind) {
        case BindTo::hwthread: return NodeResources::hwthread;
        case BindTo::core: return NodeResources::core;
        case BindTo::l3cache: return NodeResources::l3cache;
        case BindTo::numa: return NodeResources::numa;
        case BindTo::socket: return NodeResources::socket;
        case BindTo::none: return -1;
    }
    return -1;
}

const char *singular[NodeResources::kinds] = {"hwthread", "core", "l3cache", "numa", "socket"};
const char *plural[NodeResources::kinds] = {"hwthreads", "cores", "l3caches", "numas", "sockets"};

// The logical indices of the objects of `kind` that intersect `set`, as a
// list ("0", "2-3").
std::string indices_within(const NodeResources &resources, int kind, const hwloc_bitmap_s *set, size_t &count) {
    Bitmap indices(hwloc_bitmap_alloc());
    count = 0;
    const auto &objects = resources.objects[kind];
    for (size_t i = 0; i < objects.size(); ++i) {
        if (!hwloc_bitmap_intersects(objects[i].get(), set)) continue;
        hwloc_bitmap_set(indices.get(), i < resources.ids[kind].size() ? resources.ids[kind][i] : static_cast<unsigned>(i));
        ++count;
    }
    return cpuset_list(indices.get());
}

// The units (cores or hardware threads) inside `object`, or every unit.
std::vector<size_t> units_inside(const std::vector<Bitmap> &units, const hwloc_bitmap_s *object) {
    std::vector<size_t> inside;
    for (size_t u = 0; u < units.size(); ++u) {
        if (!object || hwloc_bitmap_isincluded(units[u].get(), object)) inside.push_back(u);
    }
    if (inside.empty()) {
        for (size_t u = 0; u < units.size(); ++u) inside.push_back(u);
    }
    return inside;
}

}  // namespace

NodeResources local_resources(const Topology &topology) {
    NodeResources resources;
    resources.usable = copy_of(topology.own_cpuset());
    auto collect = [&](hwloc_obj_type_t type, int kind) {
        hwloc_obj_t object = nullptr;
        while ((object = hwloc_get_next_obj_by_type(topology.get(), type, object)) != nullptr) {
            if (!object->cpuset) continue;
            Bitmap usable(hwloc_bitmap_alloc());
            hwloc_bitmap_and(usable.get(), object->cpuset, resources.usable.get());
            if (hwloc_bitmap_iszero(usable.get())) continue;
            resources.objects[kind].push_back(std::move(usable));
            resources.ids[kind].push_back(object->logical_index);
        }
    };
    collect(HWLOC_OBJ_PU, NodeResources::hwthread);
    collect(HWLOC_OBJ_CORE, NodeResources::core);
    if (resources.objects[NodeResources::core].empty()) {  // no core objects: hardware threads stand in
        for (const auto &pu : resources.objects[NodeResources::hwthread])
            resources.objects[NodeResources::core].push_back(copy_of(pu.get()));
        resources.ids[NodeResources::core] = resources.ids[NodeResources::hwthread];
    }
    collect(HWLOC_OBJ_L3CACHE, NodeResources::l3cache);
    collect(HWLOC_OBJ_NUMANODE, NodeResources::numa);
    collect(HWLOC_OBJ_PACKAGE, NodeResources::socket);
    return resources;
}

bool restrict_resources(NodeResources &resources, const std::string &cpu_set, std::string &error) {
    if (cpu_set.empty()) return true;
    Bitmap wanted(hwloc_bitmap_alloc());
    if (hwloc_bitmap_list_sscanf(wanted.get(), cpu_set.c_str()) != 0 || hwloc_bitmap_iszero(wanted.get())) {
        error = "cannot read --cpu-set '" + cpu_set + "' (a list such as 0-3,8)";
        return false;
    }
    Bitmap usable(hwloc_bitmap_alloc());
    hwloc_bitmap_and(usable.get(), resources.usable.get(), wanted.get());
    if (hwloc_bitmap_iszero(usable.get())) {
        error = "--cpu-set " + cpu_set + " names no cpu ranks may use here (usable: " +
                cpuset_list(resources.usable.get()) + ")";
        return false;
    }
    resources.restricted = !hwloc_bitmap_isequal(usable.get(), resources.usable.get());
    resources.usable = std::move(usable);
    for (int kind = 0; kind < NodeResources::kinds; ++kind) {
        std::vector<Bitmap> kept;
        std::vector<unsigned> kept_ids;
        auto &level = resources.objects[kind];
        for (size_t i = 0; i < level.size(); ++i) {
            hwloc_bitmap_and(level[i].get(), level[i].get(), resources.usable.get());
            if (hwloc_bitmap_iszero(level[i].get())) continue;
            kept.push_back(std::move(level[i]));
            kept_ids.push_back(i < resources.ids[kind].size() ? resources.ids[kind][i] : static_cast<unsigned>(i));
        }
        level = std::move(kept);
        resources.ids[kind] = std::move(kept_ids);
    }
    return true;
}

// Each object as "ID=cpulist" ("3=6-7"), level by level.
void write_resources(wire::Writer &out, const NodeResources &resources) {
    out.str(cpuset_list(resources.usable.get()));
    for (int kind = 0; kind < NodeResources::kinds; ++kind) {
        std::vector<std::string> lists;
        const auto &level = resources.objects[kind];
        for (size_t i = 0; i < level.size(); ++i) {
            unsigned id = i < resources.ids[kind].size() ? resources.ids[kind][i] : static_cast<unsigned>(i);
            lists.push_back(std::to_string(id) + "=" + cpuset_list(level[i].get()));
        }
        out.strings(lists);
    }
}

bool read_resources(wire::Reader &in, NodeResources &resources) {
    auto parse = [](const std::string &list) {
        Bitmap set(hwloc_bitmap_alloc());
        if (hwloc_bitmap_list_sscanf(set.get(), list.c_str()) != 0) hwloc_bitmap_zero(set.get());
        return set;
    };
    resources.usable = parse(in.str());
    for (int kind = 0; kind < NodeResources::kinds; ++kind) {
        resources.objects[kind].clear();
        resources.ids[kind].clear();
        for (const auto &entry : in.strings()) {
            auto eq = entry.find('=');
            if (eq == std::string::npos) return false;
            Bitmap set = parse(entry.substr(eq + 1));
            if (hwloc_bitmap_iszero(set.get())) continue;
            resources.objects[kind].push_back(std::move(set));
            resources.ids[kind].push_back(static_cast<unsigned>(std::strtoul(entry.c_str(), nullptr, 10)));
        }
    }
    return !in.failed() && !hwloc_bitmap_iszero(resources.usable.get());
}

int count_objects(const NodeResources &resources, Level level) {
    int kind = kind_of(level);
    if (kind < 0) return 1;
    return std::max<int>(1, static_cast<int>(resources.objects[kind].size()));
}

void bind_node(JobMap &map, uint32_t node, const MapPolicy &map_by, BindTo bind, NodeResources resources) {
    // Locations are made of hardware threads when those are what ranks are
    // bound to or mapped over, else of cores.
    const bool by_thread = bind == BindTo::hwthread || map_by.within == Level::hwthread ||
                           (map_by.kind == MapPolicy::Kind::ppr && map_by.ppr_object == Level::hwthread);
    const auto &units = resources.objects[by_thread ? NodeResources::hwthread : NodeResources::core];
    const size_t pe = static_cast<size_t>(std::max(map_by.cores_per_rank, 1));

    // The objects ranks are dealt over inside the node: ppr:N:OBJECT packs
    // N per object, --map-by socket|numa|l3cache goes round-robin.
    int group_kind = -1;
    size_t per_group = 0;  // 0: round-robin
    if (map_by.kind == MapPolicy::Kind::ppr && map_by.ppr_object != Level::node &&
        map_by.ppr_object != Level::hwthread) {
        group_kind = kind_of(map_by.ppr_object);
        per_group = static_cast<size_t>(map_by.per_object);
    } else if (map_by.within == Level::socket || map_by.within == Level::numa || map_by.within == Level::l3cache) {
        group_kind = kind_of(map_by.within);
    }
    if (group_kind >= 0 && resources.objects[group_kind].empty()) group_kind = -1;

    // --bind-to LEVEL, falling back to the next larger level a machine has
    // (a VM may show no L3 cache or NUMA node): l3cache, numa, socket, node.
    int bind_kind = kind_of(bind);
    while (bind_kind >= NodeResources::l3cache && resources.objects[bind_kind].empty()) {
        bind_kind = bind_kind == NodeResources::socket ? -2 : bind_kind + 1;
    }

    for (uint32_t rank : map.nodes[node].ranks) {
        RankPlan &plan = map.ranks[rank];
        const size_t i = plan.local_rank;
        Bitmap location(hwloc_bitmap_alloc());
        std::vector<size_t> chosen;
        if (!units.empty()) {
            std::vector<size_t> pool;
            size_t slot = i;
            if (group_kind >= 0) {
                const auto &groups = resources.objects[group_kind];
                size_t group = per_group ? (i / per_group) % groups.size() : i % groups.size();
                slot = per_group ? i % per_group + (i / (per_group * groups.size())) * per_group : i / groups.size();
                pool = units_inside(units, groups[group].get());
            } else {
                pool = units_inside(units, nullptr);
            }
            for (size_t t = 0; t < pe; ++t) chosen.push_back(pool[(slot * pe + t) % pool.size()]);
            for (size_t u : chosen) hwloc_bitmap_or(location.get(), location.get(), units[u].get());
        }

        plan.cpuset.reset(hwloc_bitmap_alloc());
        plan.bound = bind != BindTo::none && !units.empty();
        if (!plan.bound) {
            hwloc_bitmap_copy(plan.cpuset.get(), resources.usable.get());
            plan.bound_to.clear();
        } else if (bind_kind == -2) {  // no object of the level or above: the whole node
            hwloc_bitmap_copy(plan.cpuset.get(), resources.usable.get());
            plan.bound_to = "the node's cpus";
        } else if (bind_kind == NodeResources::core || bind_kind == NodeResources::hwthread) {
            hwloc_bitmap_copy(plan.cpuset.get(), location.get());
            size_t count = 0;
            std::string list = indices_within(resources, bind_kind, location.get(), count);
            plan.bound_to = std::string(count == 1 ? singular[bind_kind] : plural[bind_kind]) + " " + list;
        } else {
            const auto &objects = resources.objects[bind_kind];
            for (const auto &object : objects) {
                if (hwloc_bitmap_intersects(object.get(), location.get()))
                    hwloc_bitmap_or(plan.cpuset.get(), plan.cpuset.get(), object.get());
            }
            size_t count = 0;
            std::string list = indices_within(resources, bind_kind, location.get(), count);
            plan.bound_to = std::string(count == 1 ? singular[bind_kind] : plural[bind_kind]) + " " + list;
        }
        plan.pinned = plan.bound || resources.restricted;
    }
    map.nodes[node].resources = std::move(resources);
}

void finish_binding(JobMap &map, BindTo bind) {
    map.bound = !map.ranks.empty() &&
                std::all_of(map.ranks.begin(), map.ranks.end(), [](const RankPlan &plan) { return plan.bound; });
    int kind = kind_of(bind);
    map.bound_level = kind >= 0 ? plural[kind] : "";
}

void report_bindings(const JobMap &map, std::FILE *out) {
    const int pid = static_cast<int>(getpid());
    for (const auto &plan : map.ranks) {
        const NodePlan &node = map.nodes[plan.node];
        const NodeResources &resources = node.resources;
        if (!plan.bound || !plan.cpuset || !resources.usable) {
            std::fprintf(out, "[%s:%d] MCW rank %u is not bound (or bound to all available processors)\n",
                         node.name.c_str(), pid, plan.rank);
            continue;
        }
        // Sockets, their cores, the cores' hardware threads: 'B' where bound.
        const auto &sockets = resources.objects[NodeResources::socket];
        const auto &cores = resources.objects[NodeResources::core];
        const auto &threads = resources.objects[NodeResources::hwthread];
        std::vector<const hwloc_bitmap_s *> socket_sets;
        for (const auto &socket : sockets) socket_sets.push_back(socket.get());
        if (socket_sets.empty()) socket_sets.push_back(resources.usable.get());
        std::string text, picture;
        for (size_t s = 0; s < socket_sets.size(); ++s) {
            picture += '[';
            bool first_core = true;
            for (size_t c = 0; c < cores.size(); ++c) {
                if (!hwloc_bitmap_isincluded(cores[c].get(), socket_sets[s])) continue;
                if (!first_core) picture += '/';
                first_core = false;
                Bitmap bound_threads(hwloc_bitmap_alloc());
                size_t within = 0;
                for (const auto &thread : threads) {
                    if (!hwloc_bitmap_isincluded(thread.get(), cores[c].get())) continue;
                    bool bound = hwloc_bitmap_intersects(thread.get(), plan.cpuset.get());
                    picture += bound ? 'B' : '.';
                    if (bound) hwloc_bitmap_set(bound_threads.get(), static_cast<unsigned>(within));
                    ++within;
                }
                if (hwloc_bitmap_iszero(bound_threads.get())) continue;
                auto id = [&](int kind, size_t i) {
                    return std::to_string(i < resources.ids[kind].size() ? resources.ids[kind][i] : i);
                };
                text += (text.empty() ? "" : ", ") + std::string("socket ") +
                        (sockets.empty() ? std::string("0") : id(NodeResources::socket, s)) + "[core " +
                        id(NodeResources::core, c) + "[hwt " + cpuset_list(bound_threads.get()) + "]]";
            }
            picture += ']';
        }
        std::fprintf(out, "[%s:%d] MCW rank %u bound to %s: %s\n", node.name.c_str(), pid, plan.rank, text.c_str(),
                     picture.c_str());
    }
    std::fflush(out);
}

}  // namespace axon::launcher
