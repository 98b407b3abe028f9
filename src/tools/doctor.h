// axon_info --doctor (src/tools/doctor.cpp): RDMA and GPU readiness of this node.
#pragma once

#include <string>

// Prints devices, ports, GIDs, MTU, locked-memory limit, huge pages and NUMA
// distances, then the GPUs (driver, peer access, dma-buf, nvidia_peermem,
// MPS, ranks per GPU, GPU-NIC PCIe/NUMA distances), with [WARN] lines for
// problems. Returns the exit status.
int run_doctor();

// One line for axon_info's summary: the RDMA devices libibverbs finds here and
// their ACTIVE ports ("rxe0:1 (Ethernet)"), or why there are none. *usable is
// set when at least one port is ACTIVE. Only in builds with verbs.
std::string verbs_here(bool* usable);
