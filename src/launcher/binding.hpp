// binding.hpp -- where inside its node each rank runs, and what it is bound to.
//
// Per node, from that node's resources (NodeResources: the usable cpus and
// the hwloc objects of each level). Local rank i gets a location, the
// cores (or hardware threads) --map-by gives it (:PE=n of them), round-robin
// when ranks outnumber them; --bind-to then widens the location to the
// objects of its level that contain it (none: every usable cpu).
#pragma once

#include "launcher/job_map.hpp"
#include "launcher/wire.hpp"

#include <cstdio>
#include <string>

namespace axon::launcher {

// This node's resources: mpirun's (or the daemon's) own cpuset and the
// objects inside it. Machines without core objects use hardware threads.
NodeResources local_resources(const Topology &topology);

// Keeps only the cpus of `cpu_set` (an hwloc list such as "0-3,8"). Returns
// false, with `error`, when the list cannot be read or leaves no cpu.
bool restrict_resources(NodeResources &resources, const std::string &cpu_set, std::string &error);

// In a daemon's HELLO, and back.
void write_resources(wire::Writer &out, const NodeResources &resources);
bool read_resources(wire::Reader &in, NodeResources &resources);

// Binds the ranks of `node` per `map_by` (location) and `bind` (level), and
// keeps `resources` in the node for --report-bindings.
void bind_node(JobMap &map, uint32_t node, const MapPolicy &map_by, BindTo bind, NodeResources resources);
// Sets map.bound once every node is bound.
void finish_binding(JobMap &map, BindTo bind);

// How many objects of `level` the resources have (at least 1), for ppr:N:level.
int count_objects(const NodeResources &resources, Level level);

// --report-bindings: one line per rank, as Open MPI prints them:
//   [host:pid] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B/.]
//   [host:pid] MCW rank 1 is not bound (or bound to all available processors)
void report_bindings(const JobMap &map, std::FILE *out);

}  // namespace axon::launcher
