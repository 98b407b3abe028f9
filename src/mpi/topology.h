// Virtual topologies (MPI-4.1 chapter 8): cartesian, graph and distributed
// graph. A communicator holds its topology through a shared pointer to an
// immutable object, so MPI_Comm_dup shares it; the object belongs to this
// process (cartesian neighbours depend on the rank). The entry points are in
// src/mpi/topology.cpp, neighbourhood collectives in src/mpi/neighbor.cpp.
// See docs/communicators.md.
#pragma once

#include <mpi.h>

#include <vector>

namespace axon::mpi {

struct Topology {
  int kind = MPI_UNDEFINED;  // MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH
  // MPI_CART: extent and periodicity of each dimension (row-major ranks).
  std::vector<int> dims, periods;
  // MPI_GRAPH: the whole graph, as MPI_Graph_create took it.
  std::vector<int> index, edges;
  // MPI_DIST_GRAPH: this process's edges; weights empty when unweighted.
  bool weighted = false;
  std::vector<int> source_weights, dest_weights;
  // Every kind: this process's neighbours in the order the neighbourhood
  // collectives use them (MPI_PROC_NULL allowed for cartesian edges).
  std::vector<int> sources, destinations;

  // Cartesian helpers (kind == MPI_CART).
  int cart_size() const;
  void cart_coords(int rank, int* coords) const;
  // Rank of `coords`; periodic coordinates wrap, others must be in range
  // (returns MPI_PROC_NULL when one is not).
  int cart_rank(const int* coords) const;
};

}  // namespace axon::mpi
