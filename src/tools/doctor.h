// axon_info --doctor (src/tools/doctor.cpp): RDMA readiness of this node.
#pragma once

// Prints devices, ports, GIDs, MTU, locked-memory limit, huge pages and NUMA
// distances, with [WARN] lines for problems. Returns the exit status.
int run_doctor();
