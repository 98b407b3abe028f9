/* Cartesian topologies and MPI_Dims_create: create (periods, reorder),
 * coords / rank / shift (MPI_PROC_NULL at non-periodic edges), sub, map,
 * Cartdim_get / Cart_get, Topo_test, the topology surviving Comm_dup, and the
 * error classes of bad input. */
#include "../mpi/check.h"

static void dims_case(int nnodes, int ndims, const int *in, const int *expect)
{
    int d[8];
    for (int i = 0; i < ndims; i++) d[i] = in ? in[i] : 0;
    int rc = MPI_Dims_create(nnodes, ndims, d);
    CHECK(rc == MPI_SUCCESS, "Dims_create(%d, %d) failed", nnodes, ndims);
    for (int i = 0; i < ndims; i++)
        CHECK(d[i] == expect[i], "Dims_create(%d, %d): dims[%d] = %d, expected %d", nnodes, ndims, i, d[i],
              expect[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, status, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* --- Dims_create: MPICH's results ------------------------------------ */
    dims_case(12, 2, NULL, (int[]){4, 3});
    dims_case(7, 3, NULL, (int[]){7, 1, 1});
    dims_case(16, 3, NULL, (int[]){4, 2, 2});
    dims_case(72, 2, NULL, (int[]){9, 8});
    dims_case(72, 3, NULL, (int[]){6, 4, 3});
    dims_case(180, 2, NULL, (int[]){15, 12});
    dims_case(30, 4, NULL, (int[]){5, 3, 2, 1});
    dims_case(60, 4, NULL, (int[]){5, 3, 2, 2});
    dims_case(256, 4, NULL, (int[]){4, 4, 4, 4});
    dims_case(1, 3, NULL, (int[]){1, 1, 1});
    /* Ties of the smallest spread: the largest smallest factor wins, then
       the largest second smallest (MPICH's choices; the sum of squares
       would pick 20x18x14, 24x20x13, 23x20x12x10, 59x12x6x6x6,
       14x12x12x7x7 and 13x12x12x11x7). */
    dims_case(5040, 3, NULL, (int[]){21, 16, 15});
    dims_case(6240, 3, NULL, (int[]){26, 16, 15});
    dims_case(55200, 4, NULL, (int[]){23, 16, 15, 10});
    dims_case(152928, 5, NULL, (int[]){59, 9, 8, 6, 6});
    dims_case(98784, 5, NULL, (int[]){14, 14, 9, 8, 7});
    dims_case(144144, 5, NULL, (int[]){14, 13, 11, 9, 8});
    dims_case(16, 3, (int[]){0, 2, 0}, (int[]){4, 2, 2});
    dims_case(24, 3, (int[]){3, 0, 0}, (int[]){3, 4, 2});
    dims_case(100, 3, (int[]){0, 0, 5}, (int[]){5, 4, 5});
    dims_case(72, 4, (int[]){0, 3, 0, 0}, (int[]){4, 3, 3, 2});
    dims_case(6, 2, (int[]){2, 3}, (int[]){2, 3});
    dims_case(1, 0, NULL, NULL);
    {
        int d[3] = {4, 0, 0};
        CHECK(error_class_of(MPI_Dims_create(6, 2, d)) == MPI_ERR_DIMS, "Dims_create(6) with a fixed 4");
        int e[2] = {2, 2};
        CHECK(error_class_of(MPI_Dims_create(6, 2, e)) == MPI_ERR_DIMS, "Dims_create(6) with fixed 2x2");
        int f[2] = {0, -1};
        CHECK(error_class_of(MPI_Dims_create(6, 2, f)) == MPI_ERR_DIMS, "Dims_create with a negative entry");
        CHECK(error_class_of(MPI_Dims_create(7, -1, f)) == MPI_ERR_ARG, "Dims_create with ndims -1");
        CHECK(error_class_of(MPI_Dims_create(-1, 2, f)) == MPI_ERR_ARG, "Dims_create with nnodes -1");
    }

    /* --- a 2-D grid, periodic in dimension 0 only ------------------------- */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    CHECK_MPI(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "Topo_test(cart) = %d", status);
    CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test(world) = %d", status);
    CHECK_MPI(MPI_Cartdim_get(cart, &n));
    CHECK(n == 2, "Cartdim_get = %d", n);
    int crank;
    MPI_Comm_rank(cart, &crank);
    CHECK(crank == rank, "cart rank %d (no reorder)", crank);
    int gd[2], gp[2], gc[2];
    CHECK_MPI(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "Cart_get dims %dx%d periods %d%d",
          gd[0], gd[1], gp[0], gp[1]);
    CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1], "Cart_get coords (%d,%d)", gc[0], gc[1]);
    for (int r = 0; r < size; r++) {
        int c[2], back = -1;
        CHECK_MPI(MPI_Cart_coords(cart, r, 2, c));
        CHECK(c[0] == r / dims[1] && c[1] == r % dims[1], "coords of %d: (%d,%d)", r, c[0], c[1]);
        CHECK_MPI(MPI_Cart_rank(cart, c, &back));
        CHECK(back == r, "rank of coords of %d: %d", r, back);
    }
    {
        /* periodic dimension wraps; out of range in the other is an error */
        int c[2] = {-1, 0}, r = -1;
        CHECK_MPI(MPI_Cart_rank(cart, c, &r));
        CHECK(r == (dims[0] - 1) * dims[1], "wrapped coords (-1,0) -> %d", r);
        c[0] = dims[0] + 1;
        CHECK_MPI(MPI_Cart_rank(cart, c, &r));
        CHECK(r == (1 % dims[0]) * dims[1], "wrapped coords (d0+1,0) -> %d", r);
        int bad[2] = {0, dims[1]};
        CHECK(error_class_of(MPI_Cart_rank(cart, bad, &r)) == MPI_ERR_ARG, "coordinate beyond a non-periodic edge");
        bad[1] = -1;
        CHECK(error_class_of(MPI_Cart_rank(cart, bad, &r)) == MPI_ERR_ARG, "negative non-periodic coordinate");
    }
    {
        /* shifts */
        int src, dst;
        CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        int up = ((gc[0] + 1) % dims[0]) * dims[1] + gc[1];
        int down = ((gc[0] - 1 + dims[0]) % dims[0]) * dims[1] + gc[1];
        CHECK(dst == up && src == down, "shift dim 0 by 1: src %d dst %d, expected %d %d", src, dst, down, up);
        CHECK_MPI(MPI_Cart_shift(cart, 1, 1, &src, &dst));
        int right = gc[1] + 1 < dims[1] ? rank + 1 : MPI_PROC_NULL;
        int left = gc[1] > 0 ? rank - 1 : MPI_PROC_NULL;
        CHECK(dst == right && src == left, "shift dim 1 by 1: src %d dst %d, expected %d %d", src, dst, left, right);
        CHECK_MPI(MPI_Cart_shift(cart, 1, -2, &src, &dst));
        int r2 = gc[1] + 2 < dims[1] ? rank + 2 : MPI_PROC_NULL;
        int l2 = gc[1] - 2 >= 0 ? rank - 2 : MPI_PROC_NULL;
        CHECK(dst == l2 && src == r2, "shift dim 1 by -2: src %d dst %d", src, dst);
        CHECK_MPI(MPI_Cart_shift(cart, 0, 0, &src, &dst));
        CHECK(src == rank && dst == rank, "shift by 0: %d %d", src, dst);
        CHECK_MPI(MPI_Cart_shift(cart, 0, 3 * dims[0], &src, &dst));
        CHECK(src == rank && dst == rank, "periodic shift by 3*extent: %d %d", src, dst);
        CHECK(error_class_of(MPI_Cart_shift(cart, 2, 1, &src, &dst)) == MPI_ERR_ARG, "shift direction 2");
        CHECK(error_class_of(MPI_Cart_shift(cart, -1, 1, &src, &dst)) == MPI_ERR_ARG, "shift direction -1");
        /* a shift exchange: data flows along dimension 0 */
        CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        int out = 100 + rank, in = -1;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, dst, 0, &in, 1, MPI_INT, src, 0, cart, MPI_STATUS_IGNORE));
        CHECK(in == 100 + src, "shift exchange got %d from %d", in, src);
    }

    /* --- the topology survives Comm_dup ------------------------------------- */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(cart, &dup));
    CHECK_MPI(MPI_Topo_test(dup, &status));
    CHECK(status == MPI_CART, "Topo_test(dup of cart) = %d", status);
    CHECK_MPI(MPI_Cart_get(dup, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "dup Cart_get");
    MPI_Comm_free(&dup);
    CHECK_MPI(MPI_Comm_split(cart, 0, rank, &dup));
    CHECK_MPI(MPI_Topo_test(dup, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test(split of cart) = %d", status);
    MPI_Comm_free(&dup);

    /* --- Cart_sub: rows (keep dim 1) and columns (keep dim 0) --------------- */
    {
        MPI_Comm row, col, none;
        CHECK_MPI(MPI_Cart_sub(cart, (int[]){0, 1}, &row));
        CHECK_MPI(MPI_Comm_size(row, &n));
        CHECK(n == dims[1], "row size %d", n);
        CHECK_MPI(MPI_Comm_rank(row, &n));
        CHECK(n == gc[1], "row rank %d", n);
        CHECK_MPI(MPI_Cartdim_get(row, &n));
        CHECK(n == 1, "row ndims %d", n);
        int sd, sp, sc;
        CHECK_MPI(MPI_Cart_get(row, 1, &sd, &sp, &sc));
        CHECK(sd == dims[1] && sp == 0 && sc == gc[1], "row Cart_get %d %d %d", sd, sp, sc);
        int sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row);
        int expect = 0;
        for (int j = 0; j < dims[1]; j++) expect += gc[0] * dims[1] + j;
        CHECK(sum == expect, "row sum %d, expected %d", sum, expect);
        CHECK_MPI(MPI_Cart_sub(cart, (int[]){1, 0}, &col));
        CHECK_MPI(MPI_Comm_size(col, &n));
        CHECK(n == dims[0], "column size %d", n);
        CHECK_MPI(MPI_Cart_get(col, 1, &sd, &sp, &sc));
        CHECK(sd == dims[0] && sp == 1 && sc == gc[0], "column Cart_get %d %d %d", sd, sp, sc);
        int csrc, cdst;
        CHECK_MPI(MPI_Cart_shift(col, 0, 1, &csrc, &cdst));
        CHECK(cdst == (gc[0] + 1) % dims[0], "column shift dest %d", cdst);
        /* keep nothing: a 0-dimensional grid of one process (rank 0), as
         * Cart_create with ndims 0 gives; the others get MPI_COMM_NULL */
        CHECK_MPI(MPI_Cart_sub(cart, (int[]){0, 0}, &none));
        if (rank != 0) {
            CHECK(none == MPI_COMM_NULL, "Cart_sub keeping nothing: rank %d got a communicator", rank);
        } else if (none == MPI_COMM_NULL) {
            CHECK(none != MPI_COMM_NULL, "Cart_sub keeping nothing: rank 0 got MPI_COMM_NULL");
        } else {
            CHECK_MPI(MPI_Comm_size(none, &n));
            CHECK(n == 1, "Cart_sub keeping nothing has size %d", n);
            CHECK_MPI(MPI_Topo_test(none, &status));
            CHECK(status == MPI_CART, "Cart_sub keeping nothing: topo %d", status);
            CHECK_MPI(MPI_Cartdim_get(none, &n));
            CHECK(n == 0, "Cart_sub keeping nothing: ndims %d", n);
            MPI_Comm_free(&none);
        }
        MPI_Comm_free(&col);
        MPI_Comm_free(&row);
    }
    MPI_Comm_free(&cart);

    /* --- a grid smaller than the communicator: the rest get COMM_NULL ------- */
    if (size >= 2) {
        int d1 = size - 1, p1 = 1;
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 1, &cart));
        if (rank == size - 1) {
            CHECK(cart == MPI_COMM_NULL, "rank outside the grid got a communicator");
        } else {
            CHECK_MPI(MPI_Comm_size(cart, &n));
            CHECK(n == size - 1, "smaller grid size %d", n);
            MPI_Comm_free(&cart);
        }
        int newrank;
        CHECK_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, &d1, &p1, &newrank));
        CHECK(newrank == (rank == size - 1 ? MPI_UNDEFINED : rank), "Cart_map: %d", newrank);
    }
    /* 3-D fully periodic, reorder = true */
    {
        int d3[3] = {0, 0, 0}, p3[3] = {1, 1, 1};
        MPI_Dims_create(size, 3, d3);
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 1, &cart));
        int c3[3];
        CHECK_MPI(MPI_Cart_coords(cart, rank, 3, c3));
        CHECK(c3[0] * d3[1] * d3[2] + c3[1] * d3[2] + c3[2] == rank, "3-D coords of %d", rank);
        for (int dim = 0; dim < 3; dim++) {
            int src, dst;
            MPI_Cart_shift(cart, dim, 1, &src, &dst);
            CHECK(src != MPI_PROC_NULL && dst != MPI_PROC_NULL, "periodic shift gave MPI_PROC_NULL");
        }
        MPI_Comm_free(&cart);
    }
    /* 0 dimensions: rank 0 gets a 1-process cartesian communicator */
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &cart));
    if (rank == 0) {
        CHECK(cart != MPI_COMM_NULL, "0-D cart: rank 0 got MPI_COMM_NULL");
        if (cart != MPI_COMM_NULL) {
            MPI_Comm_size(cart, &n);
            CHECK(n == 1, "0-D cart size %d", n);
            MPI_Cartdim_get(cart, &n);
            CHECK(n == 0, "0-D cart ndims %d", n);
            int r = -1;
            CHECK_MPI(MPI_Cart_rank(cart, NULL, &r));
            CHECK(r == 0, "0-D Cart_rank %d", r);
            MPI_Comm_free(&cart);
        }
    } else {
        CHECK(cart == MPI_COMM_NULL, "0-D cart: rank %d got a communicator", rank);
    }

    /* --- bad input ------------------------------------------------------------ */
    {
        int d[2] = {size + 1, 1}, p[2] = {0, 0}, c[2], r, src, dst;
        MPI_Comm bad;
        CHECK(error_class_of(MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &bad)) == MPI_ERR_ARG,
              "Cart_create with more processes than the communicator");
        CHECK(error_class_of(MPI_Cart_create(MPI_COMM_WORLD, -1, d, p, 0, &bad)) == MPI_ERR_ARG,
              "Cart_create with ndims -1");
#ifndef MPICH /* MPICH does not check dims for positive values */
        d[0] = 0;
        CHECK(error_class_of(MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &bad)) == MPI_ERR_DIMS,
              "Cart_create with a zero dimension");
        d[0] = -1;
        CHECK(error_class_of(MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &bad)) == MPI_ERR_DIMS,
              "Cart_create with a negative dimension");
#endif
        CHECK(error_class_of(MPI_Cart_create(MPI_COMM_NULL, 1, d, p, 0, &bad)) == MPI_ERR_COMM,
              "Cart_create on MPI_COMM_NULL");
        d[0] = size + 1;
        CHECK(error_class_of(MPI_Cart_map(MPI_COMM_WORLD, 1, d, p, &r)) == MPI_ERR_DIMS,
              "Cart_map with more processes than the communicator");
        CHECK(error_class_of(MPI_Cart_map(MPI_COMM_WORLD, -1, d, p, &r)) == MPI_ERR_ARG, "Cart_map with ndims -1");
        /* calls that need a cartesian topology on one without */
        CHECK(error_class_of(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst)) == MPI_ERR_TOPOLOGY,
              "Cart_shift on world");
        CHECK(error_class_of(MPI_Cartdim_get(MPI_COMM_WORLD, &n)) == MPI_ERR_TOPOLOGY, "Cartdim_get on world");
        CHECK(error_class_of(MPI_Cart_coords(MPI_COMM_WORLD, 0, 2, c)) == MPI_ERR_TOPOLOGY, "Cart_coords on world");
        CHECK(error_class_of(MPI_Cart_sub(MPI_COMM_WORLD, (int[]){1}, &bad)) == MPI_ERR_TOPOLOGY,
              "Cart_sub on world");
        CHECK(error_class_of(MPI_Topo_test(MPI_COMM_NULL, &status)) == MPI_ERR_COMM, "Topo_test on COMM_NULL");
        d[0] = size;
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &cart));
        CHECK(error_class_of(MPI_Cart_coords(cart, size, 1, c)) == MPI_ERR_RANK, "Cart_coords of rank == size");
        CHECK(error_class_of(MPI_Cart_coords(cart, -1, 1, c)) == MPI_ERR_RANK, "Cart_coords of rank -1");
        CHECK(error_class_of(MPI_Cart_coords(cart, 0, 0, c)) == MPI_ERR_ARG, "Cart_coords with maxdims 0");
        CHECK(error_class_of(MPI_Graphdims_get(cart, &n, &r)) == MPI_ERR_TOPOLOGY, "Graphdims_get on a cart");
        MPI_Comm_free(&cart);
    }

    MPI_Finalize();
    return report("topo_cart");
}
