// axon_info --explain (src/tools/explain.cpp): the point-to-point paths of
// this node without running a job.
#pragma once

#include <string>

// Prints, per peer class, size class and memory kind, the transport and
// protocol a message would take and why: the words AXON_EXPLAIN=1 prints in
// a job (src/diag/path.h). `ranks_per_node` sets the job size the defaults
// depend on (0: this node's online CPUs). Returns the exit status.
int run_explain(int ranks_per_node);

// axon_info.cpp's single-copy probe: whether a process of ours may read our
// memory with process_vm_readv, as sm's ranks do; the text says why not.
std::string cma_probe(bool* ok);
