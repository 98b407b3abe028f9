/* Graph and distributed-graph topologies: Graph_create / Graph_get /
 * Graphdims_get / Graph_neighbors(_count) / Graph_map,
 * Dist_graph_create(_adjacent) / Dist_graph_neighbors(_count) with and
 * without weights, Topo_test, Comm_dup keeping the topology, and the error
 * classes of bad input. */
#include "../mpi/check.h"

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are small non-null pointers; GCC
 * takes them for arrays of size 0 passed to `const int[]` parameters. */
#pragma GCC diagnostic ignored "-Wstringop-overread"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, status, n, m;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* --- graph: a ring where node i links to i+1 and i-1 (and node 0 also
     * to itself); index/edges as MPI_Graph_create takes them ------------- */
    int index[64], edges[256], ne = 0;
    for (int i = 0; i < size; i++) {
        edges[ne++] = (i + 1) % size;
        edges[ne++] = (i + size - 1) % size;
        if (i == 0) edges[ne++] = 0;
        index[i] = ne;
    }
    MPI_Comm graph;
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph));
    CHECK_MPI(MPI_Topo_test(graph, &status));
    CHECK(status == MPI_GRAPH, "Topo_test(graph) = %d", status);
    CHECK_MPI(MPI_Graphdims_get(graph, &n, &m));
    CHECK(n == size && m == ne, "Graphdims_get %d %d", n, m);
    int gi[64], ge[256];
    CHECK_MPI(MPI_Graph_get(graph, size, ne, gi, ge));
    for (int i = 0; i < size; i++) CHECK(gi[i] == index[i], "Graph_get index[%d] = %d", i, gi[i]);
    for (int i = 0; i < ne; i++) CHECK(ge[i] == edges[i], "Graph_get edges[%d] = %d", i, ge[i]);
    for (int r = 0; r < size; r++) {
        CHECK_MPI(MPI_Graph_neighbors_count(graph, r, &n));
        CHECK(n == (r == 0 ? 3 : 2), "neighbors_count(%d) = %d", r, n);
        int nb[3] = {-1, -1, -1};
        CHECK_MPI(MPI_Graph_neighbors(graph, r, 3, nb));
        CHECK(nb[0] == (r + 1) % size && nb[1] == (r + size - 1) % size && (r != 0 || nb[2] == 0),
              "neighbors(%d) = %d %d %d", r, nb[0], nb[1], nb[2]);
    }
    {
        MPI_Comm dup;
        CHECK_MPI(MPI_Comm_dup(graph, &dup));
        CHECK_MPI(MPI_Topo_test(dup, &status));
        CHECK(status == MPI_GRAPH, "Topo_test(dup of graph) = %d", status);
        CHECK_MPI(MPI_Graph_neighbors_count(dup, 0, &n));
        CHECK(n == 3, "dup: neighbors_count(0) = %d", n);
        MPI_Comm_free(&dup);
    }
    {
        int src = -1, dst = -1;
        CHECK(error_class_of(MPI_Graph_neighbors_count(graph, size, &n)) == MPI_ERR_RANK, "neighbors_count(size)");
        CHECK(error_class_of(MPI_Graph_neighbors(graph, -1, 3, edges)) == MPI_ERR_RANK, "neighbors(-1)");
        CHECK(error_class_of(MPI_Graph_get(graph, size - 1 > 0 ? size - 1 : 0, ne, gi, ge)) == MPI_ERR_ARG,
              "Graph_get with maxindex too small");
        CHECK(error_class_of(MPI_Cart_shift(graph, 0, 1, &src, &dst)) == MPI_ERR_TOPOLOGY, "Cart_shift on a graph");
        CHECK(error_class_of(MPI_Dist_graph_neighbors_count(graph, &n, &m, &status)) == MPI_ERR_TOPOLOGY,
              "Dist_graph_neighbors_count on a graph");
    }
    MPI_Comm_free(&graph);

    /* A graph over fewer nodes than processes; Graph_map agrees. */
    if (size >= 2) {
        int idx1[1] = {1}, e1[1] = {0};
        CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, 1, idx1, e1, 1, &graph));
        if (rank == 0) {
            CHECK_MPI(MPI_Comm_size(graph, &n));
            CHECK(n == 1, "1-node graph size %d", n);
            MPI_Comm_free(&graph);
        } else {
            CHECK(graph == MPI_COMM_NULL, "rank outside a 1-node graph got a communicator");
        }
        int nr;
        CHECK_MPI(MPI_Graph_map(MPI_COMM_WORLD, 1, idx1, e1, &nr));
        CHECK(nr == (rank == 0 ? 0 : MPI_UNDEFINED), "Graph_map: %d", nr);
    }
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, 0, index, edges, 0, &graph));
    CHECK(graph == MPI_COMM_NULL, "0-node graph gave a communicator");
    {
        MPI_Comm bad;
        int idx1[1] = {1}, e1[1] = {-1};
        CHECK(error_class_of(MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &bad)) == MPI_ERR_ARG,
              "Graph_create with nnodes > size");
        CHECK(error_class_of(MPI_Graph_create(MPI_COMM_WORLD, 1, idx1, e1, 0, &bad)) == MPI_ERR_ARG,
              "Graph_create with edge -1");
        idx1[0] = -1;
        CHECK(error_class_of(MPI_Graph_create(MPI_COMM_WORLD, 1, idx1, e1, 0, &bad)) == MPI_ERR_ARG,
              "Graph_create with index -1");
        CHECK(error_class_of(MPI_Graph_map(MPI_COMM_WORLD, size + 1, index, edges, &n)) == MPI_ERR_ARG,
              "Graph_map with nnodes > size");
        CHECK(error_class_of(MPI_Graphdims_get(MPI_COMM_WORLD, &n, &m)) == MPI_ERR_TOPOLOGY, "Graphdims_get on world");
        CHECK(error_class_of(MPI_Graph_neighbors_count(MPI_COMM_WORLD, 0, &n)) == MPI_ERR_TOPOLOGY,
              "Graph_neighbors_count on world");
    }

    /* --- dist graph, adjacent form: i receives from i-1 and i-2, sends to
     * i+1 and i+2 (mod size), weights = 10 * peer + 1 ------------------- */
    {
        int srcs[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
        int dsts[2] = {(rank + 1) % size, (rank + 2) % size};
        int sw[2] = {10 * srcs[0] + 1, 10 * srcs[1] + 1}, dw[2] = {10 * dsts[0] + 1, 10 * dsts[1] + 1};
        MPI_Comm dg;
        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Topo_test(dg, &status));
        CHECK(status == MPI_DIST_GRAPH, "Topo_test(dist graph) = %d", status);
        int in, out, weighted;
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        CHECK(in == 2 && out == 2 && weighted, "adjacent counts %d %d %d", in, out, weighted);
        int s[2], sws[2], d[2], dws[2];
        CHECK_MPI(MPI_Dist_graph_neighbors(dg, 2, s, sws, 2, d, dws));
        for (int i = 0; i < 2; i++) {
            CHECK(s[i] == srcs[i] && sws[i] == sw[i], "adjacent source %d: %d w %d", i, s[i], sws[i]);
            CHECK(d[i] == dsts[i] && dws[i] == dw[i], "adjacent dest %d: %d w %d", i, d[i], dws[i]);
        }
        MPI_Comm dup;
        CHECK_MPI(MPI_Comm_dup(dg, &dup));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dup, &in, &out, &weighted));
        CHECK(in == 2 && out == 2 && weighted, "dup: adjacent counts %d %d %d", in, out, weighted);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&dg);
        /* unweighted, and an empty neighbourhood */
        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED,
                                                 MPI_INFO_NULL, 1, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        CHECK(in == 2 && out == 2 && !weighted, "unweighted counts %d %d %d", in, out, weighted);
        MPI_Comm_free(&dg);
        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL,
                                                 MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        CHECK(in == 0 && out == 0 && weighted, "empty counts %d %d %d", in, out, weighted);
        MPI_Comm_free(&dg);
    }

    /* --- dist graph, general form: rank 0 describes every edge i -> i+1
     * (weight i), every rank describes its own edge i -> 0 (weight 100+i) - */
    {
        int srcs[64], degs[64], dsts[128], ws[128], k = 0, e = 0;
        if (rank == 0) {
            for (int i = 0; i < size; i++) {
                srcs[k] = i;
                degs[k++] = 1;
                dsts[e] = (i + 1) % size;
                ws[e++] = i;
            }
        }
        srcs[k] = rank;
        degs[k++] = 1;
        dsts[e] = 0;
        ws[e++] = 100 + rank;
        MPI_Comm dg;
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, k, srcs, degs, dsts, ws, MPI_INFO_NULL, 0, &dg));
        int in, out, weighted;
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        int expect_in = 1 + (rank == 0 ? size : 0), expect_out = 2;
        CHECK(in == expect_in && out == expect_out && weighted, "general counts %d %d %d", in, out, weighted);
        int s[80], sw[80], d[80], dw[80];
        CHECK_MPI(MPI_Dist_graph_neighbors(dg, 80, s, sw, 80, d, dw));
        /* out-edges: to rank+1 with weight rank, to 0 with weight 100+rank (in any order) */
        int seen_ring = 0, seen_zero = 0;
        for (int i = 0; i < out && i < 80; i++) {
            if (d[i] == (rank + 1) % size && dw[i] == rank && !seen_ring) seen_ring = 1;
            else if (d[i] == 0 && dw[i] == 100 + rank) seen_zero = 1;
        }
        CHECK(seen_ring && seen_zero, "general out-edges wrong (%d %d)", seen_ring, seen_zero);
        /* in-edges: from rank-1 with weight rank-1; rank 0 also from every i (100+i) */
        int from_prev = 0, from_all = 0;
        for (int i = 0; i < in && i < 80; i++) {
            int p = (rank + size - 1) % size;
            if (s[i] == p && sw[i] == p && !from_prev) from_prev = 1;
            else if (rank == 0 && sw[i] == 100 + s[i]) from_all++;
        }
        CHECK(from_prev && from_all == (rank == 0 ? size : 0), "general in-edges wrong (%d %d)", from_prev, from_all);
        MPI_Comm_free(&dg);
        /* unweighted general form */
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, k, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        CHECK(in == expect_in && out == expect_out && !weighted, "unweighted general counts %d %d %d", in, out,
              weighted);
        MPI_Comm_free(&dg);
        /* nobody describes anything */
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 0, NULL, NULL, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        CHECK(in == 0 && out == 0, "empty general counts %d %d", in, out);
        MPI_Comm_free(&dg);
    }

    /* --- dist graph bad input ------------------------------------------------ */
    {
        MPI_Comm bad;
        int one = 1, minus = -1, big = size, zero = 0;
        CHECK(error_class_of(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, &zero, MPI_UNWEIGHTED, 0, &zero,
                                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "adjacent with indegree -1");
        CHECK(error_class_of(MPI_Dist_graph_create(MPI_COMM_WORLD, -1, &zero, &one, &zero, MPI_UNWEIGHTED,
                                                   MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "general with n -1");
#ifndef MPICH /* MPICH does not check these */
        CHECK(error_class_of(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &big, MPI_UNWEIGHTED, 0, &zero,
                                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "adjacent with source == size");
        CHECK(error_class_of(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &zero, &minus, 1, &zero, &one,
                                                            MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "adjacent with weight -1");
        CHECK(error_class_of(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &minus, &zero, MPI_UNWEIGHTED,
                                                   MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "general with degree -1");
        CHECK(error_class_of(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &one, &big, MPI_UNWEIGHTED,
                                                   MPI_INFO_NULL, 0, &bad)) == MPI_ERR_ARG,
              "general with destination == size");
#endif
        (void)big; (void)minus;
        int in, out, w;
        CHECK(error_class_of(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &in, &out, &w)) == MPI_ERR_TOPOLOGY,
              "Dist_graph_neighbors_count on world");
    }

    MPI_Finalize();
    return report("topo_graph");
}
