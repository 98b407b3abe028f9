/* MPI_BOTTOM as both the send and the receive buffer of MPI_Alltoallw and
 * MPI_Neighbor_alltoallw (blocking, nonblocking, persistent; int and large-count
 * bindings). The blocks are described by absolute addresses (MPI_Get_address):
 *   - derived types: MPI_Type_create_struct (two ints and a double, each in a
 *     separate allocation) and MPI_Type_create_hindexed (ints in separate
 *     allocations), displacement 0;
 *   - predefined types: MPI_INT with the absolute address as the displacement.
 * sendbuf == recvbuf == MPI_BOTTOM is neither MPI_IN_PLACE nor aliasing: every
 * call must succeed and every receiver see exactly the values its peer sent,
 * with untouched guard words around each received value. Gather, scatter,
 * allgather and alltoall from MPI_BOTTOM to MPI_BOTTOM work too. A real buffer
 * given as both with the same displacements is still MPI_ERR_BUFFER. */
#include "../mpi/check.h"

#define GUARD (-7777)
#define MAXP 8

/* What rank `from` sends to rank `to`: ints 0 and 1, a double, and the two
 * ints of the predefined-type block. */
static int int_value(int from, int to, int k) { return 100000 * (from + 1) + 100 * to + k; }
static double double_value(int from, int to) { return from + to / 8.0 + 0.5; }

/* One block's storage: each value in its own allocation with guards on both
 * sides, so the absolute addresses are scattered and overruns show. */
struct Cell {
    int *ints[2];   /* [guard, value, guard] each */
    double *dbl;    /* [guard, value, guard] */
    int *plain;     /* [guard, v0, v1, guard]: the predefined MPI_INT block */
};

static int *new_ints(int n)
{
    int *p = (int *)xmalloc((size_t)(n + 2) * sizeof(int));
    for (int i = 0; i < n + 2; ++i) p[i] = GUARD;
    return p;
}
static double *new_double(void)
{
    double *p = (double *)xmalloc(3 * sizeof(double));
    p[0] = p[1] = p[2] = GUARD;
    return p;
}
static void cell_init(struct Cell *c)
{
    c->ints[0] = new_ints(1), c->ints[1] = new_ints(1), c->dbl = new_double(), c->plain = new_ints(2);
}
static void cell_free(struct Cell *c) { free(c->ints[0]), free(c->ints[1]), free(c->dbl), free(c->plain); }
static void cell_fill(struct Cell *c, int from, int to)
{
    c->ints[0][1] = int_value(from, to, 0);
    c->ints[1][1] = int_value(from, to, 1);
    c->dbl[1] = double_value(from, to);
    c->plain[1] = int_value(from, to, 2);
    c->plain[2] = int_value(from, to, 3);
}
static void cell_clear(struct Cell *c)
{
    c->ints[0][1] = c->ints[1][1] = GUARD;
    c->dbl[1] = GUARD;
    c->plain[1] = c->plain[2] = GUARD;
}
static MPI_Aint addr(const void *p)
{
    MPI_Aint a;
    MPI_Get_address(p, &a);
    return a;
}
/* The struct type of the two ints and the double, at absolute addresses. */
static MPI_Datatype struct_type(const struct Cell *c)
{
    int lens[3] = {1, 1, 1};
    MPI_Aint disps[3] = {addr(&c->ints[0][1]), addr(&c->ints[1][1]), addr(&c->dbl[1])};
    MPI_Datatype types[3] = {MPI_INT, MPI_INT, MPI_DOUBLE}, t;
    CHECK_MPI(MPI_Type_create_struct(3, lens, disps, types, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}
/* The two ints alone, as an hindexed type at absolute addresses. */
static MPI_Datatype hindexed_type(const struct Cell *c)
{
    int lens[2] = {1, 1};
    MPI_Aint disps[2] = {addr(&c->ints[0][1]), addr(&c->ints[1][1])};
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_create_hindexed(2, lens, disps, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}
/* Checks a received cell of shape 0 (struct: two ints and the double),
 * 1 (hindexed: the two ints) or 2 (MPI_INT block: the plain ints). */
static void cell_check(const struct Cell *c, int from, int to, int shape, const char *what)
{
    int ok = 1;
    for (int k = 0; k < 2; ++k) ok &= c->ints[k][0] == GUARD && c->ints[k][2] == GUARD;
    ok &= c->dbl[0] == GUARD && c->dbl[2] == GUARD && c->plain[0] == GUARD && c->plain[3] == GUARD;
    CHECK(ok, "%s: a guard next to the block from %d was overwritten", what, from);
    if (shape == 2) {
        CHECK(c->plain[1] == int_value(from, to, 2) && c->plain[2] == int_value(from, to, 3),
              "%s: from %d got plain %d %d, want %d %d", what, from, c->plain[1], c->plain[2],
              int_value(from, to, 2), int_value(from, to, 3));
        CHECK(c->ints[0][1] == GUARD && c->dbl[1] == GUARD, "%s: from %d wrote outside its block", what, from);
        return;
    }
    CHECK(c->ints[0][1] == int_value(from, to, 0) && c->ints[1][1] == int_value(from, to, 1),
          "%s: from %d got ints %d %d, want %d %d", what, from, c->ints[0][1], c->ints[1][1],
          int_value(from, to, 0), int_value(from, to, 1));
    if (shape == 0)
        CHECK(c->dbl[1] == double_value(from, to), "%s: from %d got double %g, want %g", what, from, c->dbl[1],
              double_value(from, to));
    else
        CHECK(c->dbl[1] == GUARD, "%s: from %d wrote the double outside the hindexed block", what, from);
    CHECK(c->plain[1] == GUARD, "%s: from %d wrote outside its block", what, from);
}

/* Per-peer (or per-neighbour) arguments of one alltoallw call. */
struct Plan {
    int n;
    struct Cell send[MAXP], recv[MAXP];
    int counts[MAXP];
    MPI_Count large_counts[MAXP];
    MPI_Aint sdispls[MAXP], rdispls[MAXP];
    MPI_Datatype stypes[MAXP], rtypes[MAXP];
};

/* shape 0: struct types, 1: hindexed types, 2: MPI_INT with absolute
 * displacements. dest[k] / src[k]: the peer of send / receive slot k. */
static void plan_make(struct Plan *p, int n, int me, const int *dest, int shape)
{
    p->n = n;
    for (int k = 0; k < n; ++k) {
        cell_init(&p->send[k]), cell_init(&p->recv[k]);
        cell_fill(&p->send[k], me, dest[k]);
        if (shape == 2) {
            p->counts[k] = 2;
            p->sdispls[k] = addr(&p->send[k].plain[1]);
            p->rdispls[k] = addr(&p->recv[k].plain[1]);
            p->stypes[k] = p->rtypes[k] = MPI_INT;
        } else {
            p->counts[k] = 1;
            p->sdispls[k] = p->rdispls[k] = 0;
            p->stypes[k] = shape == 0 ? struct_type(&p->send[k]) : hindexed_type(&p->send[k]);
            p->rtypes[k] = shape == 0 ? struct_type(&p->recv[k]) : hindexed_type(&p->recv[k]);
        }
        p->large_counts[k] = p->counts[k];
    }
}
static void plan_check(struct Plan *p, int me, const int *src, int shape, const char *what)
{
    for (int k = 0; k < p->n; ++k) {
        cell_check(&p->recv[k], src[k], me, shape, what);
        cell_clear(&p->recv[k]);
    }
}
static void plan_free(struct Plan *p)
{
    for (int k = 0; k < p->n; ++k) {
        if (p->stypes[k] != MPI_INT) MPI_Type_free(&p->stypes[k]), MPI_Type_free(&p->rtypes[k]);
        cell_free(&p->send[k]), cell_free(&p->recv[k]);
    }
}

static const char *shape_name[3] = {"struct", "hindexed", "MPI_INT+address"};

/* Runs form `form` of alltoallw (world) or neighbor alltoallw with MPI_BOTTOM
 * on both sides: 0 blocking, 1 blocking _c, 2 nonblocking, 3 nonblocking _c,
 * 4 persistent (started twice), 5 persistent _c. The int binding of
 * MPI_Alltoallw has int displacements, which cannot hold an address: those
 * forms run only with displacement 0 (derived types). */
static int run_form(struct Plan *p, MPI_Comm comm, int neighbor, int form, int *int_displs)
{
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS, starts = form >= 4 ? 2 : 1;
    void *sb = MPI_BOTTOM, *rb = MPI_BOTTOM;
    if (neighbor) {
        switch (form) {
            case 0: return MPI_Neighbor_alltoallw(sb, p->counts, p->sdispls, p->stypes, rb, p->counts, p->rdispls,
                                                  p->rtypes, comm);
            case 1: return MPI_Neighbor_alltoallw_c(sb, p->large_counts, p->sdispls, p->stypes, rb, p->large_counts,
                                                    p->rdispls, p->rtypes, comm);
            case 2: rc = MPI_Ineighbor_alltoallw(sb, p->counts, p->sdispls, p->stypes, rb, p->counts, p->rdispls,
                                                 p->rtypes, comm, &r); break;
            case 3: rc = MPI_Ineighbor_alltoallw_c(sb, p->large_counts, p->sdispls, p->stypes, rb, p->large_counts,
                                                   p->rdispls, p->rtypes, comm, &r); break;
            case 4: rc = MPI_Neighbor_alltoallw_init(sb, p->counts, p->sdispls, p->stypes, rb, p->counts, p->rdispls,
                                                     p->rtypes, comm, MPI_INFO_NULL, &r); break;
            default: rc = MPI_Neighbor_alltoallw_init_c(sb, p->large_counts, p->sdispls, p->stypes, rb,
                                                        p->large_counts, p->rdispls, p->rtypes, comm, MPI_INFO_NULL,
                                                        &r); break;
        }
    } else {
        switch (form) {
            case 0: return MPI_Alltoallw(sb, p->counts, int_displs, p->stypes, rb, p->counts, int_displs, p->rtypes,
                                         comm);
            case 1: return MPI_Alltoallw_c(sb, p->large_counts, p->sdispls, p->stypes, rb, p->large_counts,
                                           p->rdispls, p->rtypes, comm);
            case 2: rc = MPI_Ialltoallw(sb, p->counts, int_displs, p->stypes, rb, p->counts, int_displs, p->rtypes,
                                        comm, &r); break;
            case 3: rc = MPI_Ialltoallw_c(sb, p->large_counts, p->sdispls, p->stypes, rb, p->large_counts,
                                          p->rdispls, p->rtypes, comm, &r); break;
            case 4: rc = MPI_Alltoallw_init(sb, p->counts, int_displs, p->stypes, rb, p->counts, int_displs,
                                            p->rtypes, comm, MPI_INFO_NULL, &r); break;
            default: rc = MPI_Alltoallw_init_c(sb, p->large_counts, p->sdispls, p->stypes, rb, p->large_counts,
                                               p->rdispls, p->rtypes, comm, MPI_INFO_NULL, &r); break;
        }
    }
    if (rc != MPI_SUCCESS) return rc;
    if (form < 4) return MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int s = 0; s < starts && rc == MPI_SUCCESS; ++s) {
        rc = MPI_Start(&r);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    int free_rc = MPI_Request_free(&r);
    return rc != MPI_SUCCESS ? rc : free_rc;
}

static const char *form_name[6] = {"blocking", "blocking _c", "nonblocking", "nonblocking _c", "persistent",
                                   "persistent _c"};

/* All forms and shapes on `comm`: peers are every rank (world) or the
 * topology's neighbours (dest[k], src[k] of slot k). */
static void run_all(MPI_Comm comm, int neighbor, int n, const int *dest, const int *src, const char *where)
{
    int me, zeros[MAXP] = {0};
    MPI_Comm_rank(comm, &me);
    for (int shape = 0; shape < 3; ++shape) {
        struct Plan p;
        plan_make(&p, n, me, dest, shape);
        for (int form = 0; form < 6; ++form) {
            if (shape == 2 && !neighbor && (form % 2) == 0) continue; /* int displacements: no addresses */
            char what[128];
            snprintf(what, sizeof what, "%s %s, %s types", where, form_name[form], shape_name[shape]);
            int rc = run_form(&p, comm, neighbor, form, zeros);
            CHECK(rc == MPI_SUCCESS, "%s: returned error class %d", what, error_class_of(rc));
            if (rc == MPI_SUCCESS) plan_check(&p, me, src, shape, what);
            else for (int k = 0; k < n; ++k) cell_clear(&p.recv[k]);
        }
        plan_free(&p);
    }
}

/* One int at an absolute address (extent 4): from MPI_BOTTOM, block i of a
 * per-rank buffer lands at that address + 4 i. */
static MPI_Datatype int_at(const void *p)
{
    int one = 1;
    MPI_Aint d = addr(p);
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_create_hindexed(1, &one, &d, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

/* Gather, scatter, allgather and alltoall with MPI_BOTTOM on both sides are
 * not aliasing either (nor MPI_IN_PLACE at the root). */
static void other_collectives(int me, int n)
{
    int sv[MAXP], rv[MAXP + 1], rc;
    for (int i = 0; i < n; ++i) sv[i] = 1000 * (me + 1) + i;
    MPI_Datatype st = int_at(sv), rt = int_at(rv);
    MPI_Comm w = MPI_COMM_WORLD;
    for (int root = 0; root < n; ++root) {
        for (int i = 0; i <= n; ++i) rv[i] = GUARD;
        rc = MPI_Gather(MPI_BOTTOM, 1, st, MPI_BOTTOM, 1, rt, root, w);
        CHECK(rc == MPI_SUCCESS, "Gather(MPI_BOTTOM, MPI_BOTTOM) root %d: class %d", root, error_class_of(rc));
        for (int i = 0; me == root && i < n; ++i)
            CHECK(rv[i] == 1000 * (i + 1), "Gather root %d: block %d = %d", root, i, rv[i]);
        CHECK(rv[me == root ? n : 0] == GUARD, "Gather root %d wrote past its blocks", root);
        for (int i = 0; i <= n; ++i) rv[i] = GUARD;
        rc = MPI_Scatter(MPI_BOTTOM, 1, st, MPI_BOTTOM, 1, rt, root, w);
        CHECK(rc == MPI_SUCCESS, "Scatter(MPI_BOTTOM, MPI_BOTTOM) root %d: class %d", root, error_class_of(rc));
        CHECK(rv[0] == 1000 * (root + 1) + me && rv[1] == GUARD, "Scatter root %d: got %d %d", root, rv[0], rv[1]);
    }
    for (int i = 0; i <= n; ++i) rv[i] = GUARD;
    rc = MPI_Allgather(MPI_BOTTOM, 1, st, MPI_BOTTOM, 1, rt, w);
    CHECK(rc == MPI_SUCCESS, "Allgather(MPI_BOTTOM, MPI_BOTTOM): class %d", error_class_of(rc));
    for (int i = 0; i < n; ++i) CHECK(rv[i] == 1000 * (i + 1), "Allgather: block %d = %d", i, rv[i]);
    CHECK(rv[n] == GUARD, "Allgather wrote past its blocks");
    for (int i = 0; i <= n; ++i) rv[i] = GUARD;
    rc = MPI_Alltoall(MPI_BOTTOM, 1, st, MPI_BOTTOM, 1, rt, w);
    CHECK(rc == MPI_SUCCESS, "Alltoall(MPI_BOTTOM, MPI_BOTTOM): class %d", error_class_of(rc));
    for (int i = 0; i < n; ++i) CHECK(rv[i] == 1000 * (i + 1) + me, "Alltoall: block %d = %d", i, rv[i]);
    CHECK(rv[n] == GUARD, "Alltoall wrote past its blocks");
    MPI_Type_free(&st), MPI_Type_free(&rt);
}

int main(int argc, char **argv)
{
    int me, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (n > MAXP) {
        if (me == 0) fprintf(stderr, "coll_bottom: at most %d ranks\n", MAXP);
        MPI_Finalize();
        return 1;
    }

    /* MPI_Alltoallw over the world: slot k is rank k both ways. */
    int all[MAXP];
    for (int k = 0; k < n; ++k) all[k] = k;
    run_all(MPI_COMM_WORLD, 0, n, all, all, "Alltoallw");

    /* Neighbour alltoallw on a periodic ring (slots: left, right; at one or
     * two ranks both are the same process) ... */
    int dims[1] = {n}, periods[1] = {1};
    MPI_Comm ring;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    int left = (me - 1 + n) % n, right = (me + 1) % n;
    /* what arrives in slot 0 (from the left) is what the left sent right */
    int ring_dest[2] = {left, right}, ring_src[2] = {left, right};
    run_all(ring, 1, 2, ring_dest, ring_src, "Neighbor_alltoallw (ring)");
    MPI_Comm_free(&ring);

    /* ... and on a complete distributed graph (self included). */
    MPI_Comm graph;
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, all, MPI_UNWEIGHTED, n, all, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &graph));
    MPI_Comm_set_errhandler(graph, MPI_ERRORS_RETURN);
    run_all(graph, 1, n, all, all, "Neighbor_alltoallw (graph)");
    MPI_Comm_free(&graph);

    other_collectives(me, n);

    /* A real buffer as both sides with the same blocks is still aliasing. */
    int buf[MAXP] = {0}, counts[MAXP], displs[MAXP];
    MPI_Datatype types[MAXP];
    for (int k = 0; k < n; ++k) counts[k] = 1, displs[k] = k * (int)sizeof(int), types[k] = MPI_INT;
    int rc = MPI_Alltoallw(buf, counts, displs, types, buf, counts, displs, types, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_BUFFER, "Alltoallw(buf, buf): class %d, want MPI_ERR_BUFFER",
          error_class_of(rc));
    MPI_Finalize();
    return report("coll_bottom");
}
