/* Every datatype constructor: size, lb, extent, true_lb, true_extent (int,
 * _x and _c queries) as MPICH reports them, the exact data the type selects
 * (checked through MPI_Pack of an int array whose element i holds i), and the
 * envelope/contents round trip (int and _c bindings). Run at any np: every
 * rank checks the same things (darray uses its own rank arguments). */
#include "../mpi/check.h"

#define N 256
static int src[N];

/* Checks the bounds of `t` through every query binding. */
static void check_bounds(const char *what, MPI_Datatype t, MPI_Count size, MPI_Count lb, MPI_Count extent,
                         MPI_Count true_lb, MPI_Count true_extent)
{
    int isize = -1;
    MPI_Count csize = -1, clb = -1, cext = -1, ctlb = -1, ctext = -1;
    MPI_Aint alb = -1, aext = -1, atlb = -1, atext = -1;
    CHECK_MPI(MPI_Type_size(t, &isize));
    CHECK(isize == size, "%s: MPI_Type_size %d, expected %lld", what, isize, (long long)size);
    CHECK_MPI(MPI_Type_size_x(t, &csize));
    CHECK(csize == size, "%s: MPI_Type_size_x %lld", what, (long long)csize);
    csize = -1;
    CHECK_MPI(MPI_Type_size_c(t, &csize));
    CHECK(csize == size, "%s: MPI_Type_size_c %lld", what, (long long)csize);
    CHECK_MPI(MPI_Type_get_extent(t, &alb, &aext));
    CHECK(alb == lb && aext == extent, "%s: lb/extent %ld/%ld, expected %lld/%lld", what, (long)alb, (long)aext,
          (long long)lb, (long long)extent);
    CHECK_MPI(MPI_Type_get_extent_x(t, &clb, &cext));
    CHECK(clb == lb && cext == extent, "%s: _x lb/extent %lld/%lld", what, (long long)clb, (long long)cext);
    clb = cext = -1;
    CHECK_MPI(MPI_Type_get_extent_c(t, &clb, &cext));
    CHECK(clb == lb && cext == extent, "%s: _c lb/extent %lld/%lld", what, (long long)clb, (long long)cext);
    CHECK_MPI(MPI_Type_get_true_extent(t, &atlb, &atext));
    CHECK(atlb == true_lb && atext == true_extent, "%s: true lb/extent %ld/%ld, expected %lld/%lld", what,
          (long)atlb, (long)atext, (long long)true_lb, (long long)true_extent);
    CHECK_MPI(MPI_Type_get_true_extent_x(t, &ctlb, &ctext));
    CHECK(ctlb == true_lb && ctext == true_extent, "%s: true _x %lld/%lld", what, (long long)ctlb,
          (long long)ctext);
    ctlb = ctext = -1;
    CHECK_MPI(MPI_Type_get_true_extent_c(t, &ctlb, &ctext));
    CHECK(ctlb == true_lb && ctext == true_extent, "%s: true _c %lld/%lld", what, (long long)ctlb,
          (long long)ctext);
}

/* Packs `count` items of `t` (committed here) starting at src[base] and
 * compares with the expected ints. */
static void check_data(const char *what, MPI_Datatype t, int base, int count, const int *expected, int n)
{
    int packed[N], position = 0, bytes = 0;
    memset(packed, 0xff, sizeof packed);
    CHECK_MPI(MPI_Pack_size(count, t, MPI_COMM_WORLD, &bytes));
    CHECK(bytes == n * (int)sizeof(int), "%s: pack size %d, expected %d", what, bytes, n * (int)sizeof(int));
    CHECK_MPI(MPI_Pack(src + base, count, t, packed, (int)sizeof packed, &position, MPI_COMM_WORLD));
    CHECK(position == n * (int)sizeof(int), "%s: position %d after pack, expected %d", what, position,
          n * (int)sizeof(int));
    for (int i = 0; i < n; i++)
        CHECK(packed[i] == expected[i], "%s: packed int %d is %d, expected %d", what, i, packed[i], expected[i]);
    /* Unpack into a clean array: exactly the selected ints come back, the
     * holes stay untouched. */
    int back[N];
    for (int i = 0; i < N; i++) back[i] = -1;
    position = 0;
    CHECK_MPI(MPI_Unpack(packed, n * (int)sizeof(int), &position, back + base, count, t, MPI_COMM_WORLD));
    int touched = 0;
    for (int i = 0; i < N; i++) {
        if (back[i] == -1) continue;
        touched++;
        CHECK(back[i] == i, "%s: unpacked element %d holds %d", what, i, back[i]);
    }
    CHECK(touched == n, "%s: unpack wrote %d ints, expected %d", what, touched, n);
}

/* Envelope in both bindings; contents in the int binding must match `ints`,
 * `addrs` and `types` (large-count constructors are checked separately). */
static void check_contents(const char *what, MPI_Datatype t, int combiner, int ni, const int *ints, int na,
                           const MPI_Aint *addrs, int nt, const MPI_Datatype *types)
{
    int n_i = -1, n_a = -1, n_t = -1, comb = -1;
    CHECK_MPI(MPI_Type_get_envelope(t, &n_i, &n_a, &n_t, &comb));
    CHECK(comb == combiner && n_i == ni && n_a == na && n_t == nt,
          "%s: envelope combiner %d ints %d addrs %d types %d, expected %d %d %d %d", what, comb, n_i, n_a, n_t,
          combiner, ni, na, nt);
    MPI_Count c_i = -1, c_a = -1, c_l = -1, c_t = -1;
    comb = -1;
    CHECK_MPI(MPI_Type_get_envelope_c(t, &c_i, &c_a, &c_l, &c_t, &comb));
    CHECK(comb == combiner && c_i == ni && c_a == na && c_l == 0 && c_t == nt,
          "%s: envelope_c %d %lld %lld %lld %lld", what, comb, (long long)c_i, (long long)c_a, (long long)c_l,
          (long long)c_t);
    if (comb != combiner || n_i != ni || n_a != na || n_t != nt || comb == MPI_COMBINER_NAMED) return;
    int gi[64];
    MPI_Aint ga[64];
    MPI_Datatype gt[64];
    CHECK_MPI(MPI_Type_get_contents(t, 64, 64, 64, gi, ga, gt));
    for (int i = 0; i < ni; i++) CHECK(gi[i] == ints[i], "%s: integer %d is %d, expected %d", what, i, gi[i], ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(ga[i] == addrs[i], "%s: address %d is %ld, expected %ld", what, i, (long)ga[i], (long)addrs[i]);
    for (int i = 0; i < nt; i++) {
        CHECK(gt[i] == types[i], "%s: type %d differs", what, i);
        /* Returned derived types are new references the caller frees. */
        int e_i, e_a, e_t, e_c;
        MPI_Type_get_envelope(gt[i], &e_i, &e_a, &e_t, &e_c);
        if (e_c != MPI_COMBINER_NAMED) CHECK_MPI(MPI_Type_free(&gt[i]));
    }
    /* The _c binding reports the same numbers. */
    int ci[64];
    MPI_Aint ca[64];
    MPI_Count cl[4];
    MPI_Datatype ct[64];
    CHECK_MPI(MPI_Type_get_contents_c(t, 64, 64, 4, 64, ci, ca, cl, ct));
    for (int i = 0; i < ni; i++) CHECK(ci[i] == ints[i], "%s: _c integer %d is %d", what, i, ci[i]);
    for (int i = 0; i < na; i++) CHECK(ca[i] == addrs[i], "%s: _c address %d", what, i);
    for (int i = 0; i < nt; i++) {
        CHECK(ct[i] == types[i], "%s: _c type %d differs", what, i);
        int e_i, e_a, e_t, e_c;
        MPI_Type_get_envelope(ct[i], &e_i, &e_a, &e_t, &e_c);
        if (e_c != MPI_COMBINER_NAMED) CHECK_MPI(MPI_Type_free(&ct[i]));
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < N; i++) src[i] = i;
    MPI_Datatype t, t2;

    /* contiguous */
    CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("contiguous", t, 12, 0, 12, 0, 12);
    check_data("contiguous x2", t, 0, 2, (const int[]){0, 1, 2, 3, 4, 5}, 6);
    check_contents("contiguous", t, MPI_COMBINER_CONTIGUOUS, 1, (const int[]){3}, 0, NULL, 1,
                   (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free sets the handle to MPI_DATATYPE_NULL");

    /* vector */
    CHECK_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("vector", t, 24, 0, 40, 0, 40);
    check_data("vector x2", t, 0, 2, (const int[]){0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19}, 12);
    check_contents("vector", t, MPI_COMBINER_VECTOR, 3, (const int[]){3, 2, 4}, 0, NULL, 1,
                   (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* vector with a negative stride: blocks go backwards */
    CHECK_MPI(MPI_Type_vector(3, 1, -2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("vector stride -2", t, 12, -16, 20, -16, 20);
    check_data("vector stride -2", t, 10, 1, (const int[]){10, 8, 6}, 3);
    MPI_Type_free(&t);

    /* hvector */
    CHECK_MPI(MPI_Type_create_hvector(2, 1, 12, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("hvector", t, 8, 0, 16, 0, 16);
    check_data("hvector x2", t, 0, 2, (const int[]){0, 3, 4, 7}, 4);
    check_contents("hvector", t, MPI_COMBINER_HVECTOR, 2, (const int[]){2, 1}, 1, (const MPI_Aint[]){12}, 1,
                   (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* indexed (out of order blocks) */
    CHECK_MPI(MPI_Type_indexed(3, (const int[]){2, 1, 3}, (const int[]){4, 0, 8}, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("indexed", t, 24, 0, 44, 0, 44);
    check_data("indexed", t, 0, 1, (const int[]){4, 5, 0, 8, 9, 10}, 6);
    check_contents("indexed", t, MPI_COMBINER_INDEXED, 7, (const int[]){3, 2, 1, 3, 4, 0, 8}, 0, NULL, 1,
                   (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* indexed with a negative displacement: negative lb */
    CHECK_MPI(MPI_Type_indexed(2, (const int[]){1, 1}, (const int[]){-1, 2}, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("indexed negative", t, 8, -4, 16, -4, 16);
    check_data("indexed negative x2", t, 4, 2, (const int[]){3, 6, 7, 10}, 4);
    MPI_Type_free(&t);

    /* hindexed */
    CHECK_MPI(MPI_Type_create_hindexed(2, (const int[]){1, 2}, (const MPI_Aint[]){8, 20}, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("hindexed", t, 12, 8, 20, 8, 20);
    check_data("hindexed x2", t, 0, 2, (const int[]){2, 5, 6, 7, 10, 11}, 6);
    check_contents("hindexed", t, MPI_COMBINER_HINDEXED, 3, (const int[]){2, 1, 2}, 2, (const MPI_Aint[]){8, 20},
                   1, (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* indexed_block */
    CHECK_MPI(MPI_Type_create_indexed_block(3, 2, (const int[]){0, 5, 2}, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("indexed_block", t, 24, 0, 28, 0, 28);
    check_data("indexed_block", t, 0, 1, (const int[]){0, 1, 5, 6, 2, 3}, 6);
    check_contents("indexed_block", t, MPI_COMBINER_INDEXED_BLOCK, 5, (const int[]){3, 2, 0, 5, 2}, 0, NULL, 1,
                   (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* hindexed_block */
    CHECK_MPI(MPI_Type_create_hindexed_block(2, 1, (const MPI_Aint[]){12, 0}, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("hindexed_block", t, 8, 0, 16, 0, 16);
    check_data("hindexed_block", t, 0, 1, (const int[]){3, 0}, 2);
    check_contents("hindexed_block", t, MPI_COMBINER_HINDEXED_BLOCK, 2, (const int[]){2, 1}, 2,
                   (const MPI_Aint[]){12, 0}, 1, (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* struct of ints at odd places: the extent is rounded to the int alignment */
    CHECK_MPI(MPI_Type_create_struct(2, (const int[]){1, 2}, (const MPI_Aint[]){0, 9}, (const MPI_Datatype[]){MPI_INT, MPI_CHAR}, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("struct int+2char", t, 6, 0, 12, 0, 11);
    check_contents("struct", t, MPI_COMBINER_STRUCT, 3, (const int[]){2, 1, 2}, 2, (const MPI_Aint[]){0, 9}, 2,
                   (const MPI_Datatype[]){MPI_INT, MPI_CHAR});
    MPI_Type_free(&t);

    /* struct {char; double; int[2]} as C lays it out: size 17, extent 24 */
    CHECK_MPI(MPI_Type_create_struct(3, (const int[]){1, 1, 2}, (const MPI_Aint[]){0, 8, 16},
                                     (const MPI_Datatype[]){MPI_CHAR, MPI_DOUBLE, MPI_INT}, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("struct char,double,int[2]", t, 17, 0, 24, 0, 24);
    MPI_Type_free(&t);
    /* struct {double; char}: true extent 9, extent 16 */
    CHECK_MPI(MPI_Type_create_struct(2, (const int[]){1, 1}, (const MPI_Aint[]){0, 8},
                                     (const MPI_Datatype[]){MPI_DOUBLE, MPI_CHAR}, &t));
    check_bounds("struct double,char", t, 9, 0, 16, 0, 9);
    MPI_Type_free(&t);

    /* struct of int blocks in reverse order */
    CHECK_MPI(MPI_Type_create_struct(2, (const int[]){2, 1}, (const MPI_Aint[]){20, 4},
                                     (const MPI_Datatype[]){MPI_INT, MPI_INT}, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("struct reversed", t, 12, 4, 24, 4, 24);
    check_data("struct reversed x2", t, 0, 2, (const int[]){5, 6, 1, 11, 12, 7}, 6);
    MPI_Type_free(&t);

    /* subarray, C order: rows 1..2, cols 2..4 of a 4x5 array */
    CHECK_MPI(MPI_Type_create_subarray(2, (const int[]){4, 5}, (const int[]){2, 3}, (const int[]){1, 2},
                                       MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("subarray C", t, 24, 0, 80, 28, 32);
    check_data("subarray C", t, 0, 1, (const int[]){7, 8, 9, 12, 13, 14}, 6);
    check_contents("subarray C", t, MPI_COMBINER_SUBARRAY, 8, (const int[]){2, 4, 5, 2, 3, 1, 2, MPI_ORDER_C}, 0,
                   NULL, 1, (const MPI_Datatype[]){MPI_INT});
    /* Two items: the second array starts one whole array (80 bytes) later. */
    check_data("subarray C x2", t, 0, 2, (const int[]){7, 8, 9, 12, 13, 14, 27, 28, 29, 32, 33, 34}, 12);
    MPI_Type_free(&t);

    /* subarray, Fortran order: element (i,j) is at i + 4*j */
    CHECK_MPI(MPI_Type_create_subarray(2, (const int[]){4, 5}, (const int[]){2, 3}, (const int[]){1, 2},
                                       MPI_ORDER_FORTRAN, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("subarray Fortran", t, 24, 0, 80, 36, 40);
    check_data("subarray Fortran", t, 0, 1, (const int[]){9, 10, 13, 14, 17, 18}, 6);
    MPI_Type_free(&t);

    /* 3-d subarray */
    CHECK_MPI(MPI_Type_create_subarray(3, (const int[]){3, 4, 5}, (const int[]){2, 1, 2}, (const int[]){1, 3, 0},
                                       MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("subarray 3d", t, 16, 0, 240, 140, 88);
    check_data("subarray 3d", t, 0, 1, (const int[]){35, 36, 55, 56}, 4);
    MPI_Type_free(&t);

    /* darray: 4x6 array, 2x2 process grid, block x block, C order, rank 3 */
    CHECK_MPI(MPI_Type_create_darray(4, 3, 2, (const int[]){4, 6},
                                     (const int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
                                     (const int[]){MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
                                     (const int[]){2, 2}, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("darray block", t, 24, 0, 96, 60, 36);
    check_data("darray block", t, 0, 1, (const int[]){15, 16, 17, 21, 22, 23}, 6);
    check_contents("darray block", t, MPI_COMBINER_DARRAY, 12,
                   (const int[]){4, 3, 2, 4, 6, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG,
                                 MPI_DISTRIBUTE_DFLT_DARG, 2, 2, MPI_ORDER_C},
                   0, NULL, 1, (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* darray: rank 0 of the same grid */
    CHECK_MPI(MPI_Type_create_darray(4, 0, 2, (const int[]){4, 6},
                                     (const int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
                                     (const int[]){MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
                                     (const int[]){2, 2}, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("darray block rank 0", t, 24, 0, 96, 0, 36);
    check_data("darray block rank 0", t, 0, 1, (const int[]){0, 1, 2, 6, 7, 8}, 6);
    MPI_Type_free(&t);

    /* darray: 1-d cyclic(2) over 2 processes, 7 elements, rank 1: 2,3,6 */
    CHECK_MPI(MPI_Type_create_darray(2, 1, 1, (const int[]){7}, (const int[]){MPI_DISTRIBUTE_CYCLIC},
                                     (const int[]){2}, (const int[]){2}, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("darray cyclic(2)", t, 12, 0, 28, 8, 20);
    check_data("darray cyclic(2)", t, 0, 1, (const int[]){2, 3, 6}, 3);
    MPI_Type_free(&t);

    /* darray: none x cyclic(1), 2x6 over 1x3, rank 1, C order: columns 1 and 4 */
    CHECK_MPI(MPI_Type_create_darray(3, 1, 2, (const int[]){2, 6},
                                     (const int[]){MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC},
                                     (const int[]){MPI_DISTRIBUTE_DFLT_DARG, 1}, (const int[]){1, 3}, MPI_ORDER_C,
                                     MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("darray none x cyclic", t, 16, 0, 48, 4, 40);
    check_data("darray none x cyclic", t, 0, 1, (const int[]){1, 4, 7, 10}, 4);
    MPI_Type_free(&t);

    /* darray: Fortran order, block(3) x cyclic(1) on a 6x4 array over 2x2, rank 2
     * (coords (1,0)): rows 3..5, columns 0 and 2; element (i,j) at i + 6*j */
    CHECK_MPI(MPI_Type_create_darray(4, 2, 2, (const int[]){6, 4},
                                     (const int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
                                     (const int[]){3, 1}, (const int[]){2, 2}, MPI_ORDER_FORTRAN, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("darray fortran", t, 24, 0, 96, 12, 60);
    check_data("darray fortran", t, 0, 1, (const int[]){3, 4, 5, 15, 16, 17}, 6);
    MPI_Type_free(&t);

    /* resized: lb -4, extent 16; contiguous of it strides by 16 bytes */
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -4, 16, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("resized", t, 4, -4, 16, 0, 4);
    check_data("resized x3", t, 0, 3, (const int[]){0, 4, 8}, 3);
    check_contents("resized", t, MPI_COMBINER_RESIZED, 0, NULL, 2, (const MPI_Aint[]){-4, 16}, 1,
                   (const MPI_Datatype[]){MPI_INT});
    CHECK_MPI(MPI_Type_contiguous(2, t, &t2));
    CHECK_MPI(MPI_Type_commit(&t2));
    check_bounds("contiguous of resized", t2, 8, -4, 32, 0, 20);
    check_data("contiguous of resized", t2, 0, 2, (const int[]){0, 4, 8, 12}, 4);
    check_contents("contiguous of resized", t2, MPI_COMBINER_CONTIGUOUS, 1, (const int[]){2}, 0, NULL, 1,
                   (const MPI_Datatype[]){t});
    /* The inner type may be freed: the outer one keeps it alive. */
    MPI_Type_free(&t);
    check_data("contiguous of freed resized", t2, 0, 1, (const int[]){0, 4}, 2);
    MPI_Type_free(&t2);

    /* resized to a smaller extent than the data: items overlap in memory */
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &t2));
    CHECK_MPI(MPI_Type_create_resized(t2, 0, 4, &t));
    MPI_Type_free(&t2);
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("resized overlapping", t, 8, 0, 4, 0, 8);
    {
        int packed[8], position = 0;
        CHECK_MPI(MPI_Pack(src, 3, t, packed, (int)sizeof packed, &position, MPI_COMM_WORLD));
        const int expect[6] = {0, 1, 1, 2, 2, 3};
        CHECK(position == 24, "resized overlapping: position %d", position);
        for (int i = 0; i < 6; i++) CHECK(packed[i] == expect[i], "resized overlapping int %d: %d", i, packed[i]);
    }
    MPI_Type_free(&t);

    /* vector of a struct with holes (nested) */
    CHECK_MPI(MPI_Type_create_struct(2, (const int[]){1, 1}, (const MPI_Aint[]){0, 8}, (const MPI_Datatype[]){MPI_INT, MPI_INT}, &t2));
    CHECK_MPI(MPI_Type_vector(2, 2, 3, t2, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    /* t2: ints 0 and 2, extent 12; vector: blocks of 2 items, stride 3 items */
    check_bounds("vector of struct", t, 32, 0, 60, 0, 60);
    check_data("vector of struct", t, 0, 1, (const int[]){0, 2, 3, 5, 9, 11, 12, 14}, 8);
    MPI_Type_free(&t2);
    MPI_Type_free(&t);

    /* dup: same layout, combiner DUP, committed state inherited */
    CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &t2));
    CHECK_MPI(MPI_Type_commit(&t2));
    CHECK_MPI(MPI_Type_dup(t2, &t));
    check_bounds("dup", t, 8, 0, 16, 0, 16);
    check_data("dup", t, 0, 1, (const int[]){0, 3}, 2);
    check_contents("dup", t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, (const MPI_Datatype[]){t2});
    MPI_Type_free(&t2);
    MPI_Type_free(&t);
    CHECK_MPI(MPI_Type_dup(MPI_INT, &t));
    check_bounds("dup of MPI_INT", t, 4, 0, 4, 0, 4);
    check_contents("dup of MPI_INT", t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, (const MPI_Datatype[]){MPI_INT});
    MPI_Type_free(&t);

    /* zero-count types */
    CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("contiguous 0", t, 0, 0, 0, 0, 0);
    MPI_Type_free(&t);

    /* predefined types: envelope NAMED; pair types */
    check_contents("MPI_INT", MPI_INT, MPI_COMBINER_NAMED, 0, NULL, 0, NULL, 0, NULL);
    check_bounds("MPI_DOUBLE_INT", MPI_DOUBLE_INT, 12, 0, 16, 0, 12);
    check_bounds("MPI_SHORT_INT", MPI_SHORT_INT, 6, 0, 8, 0, 8);
    check_bounds("MPI_2INT", MPI_2INT, 8, 0, 8, 0, 8);
    check_bounds("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, 20, 0, 32, 0, 20);

    /* large-count constructors: contents come back as large counts */
    CHECK_MPI(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_bounds("vector_c", t, 24, 0, 40, 0, 40);
    {
        MPI_Count c_i = -1, c_a = -1, c_l = -1, c_t = -1;
        int comb = -1;
        CHECK_MPI(MPI_Type_get_envelope_c(t, &c_i, &c_a, &c_l, &c_t, &comb));
        CHECK(comb == MPI_COMBINER_VECTOR && c_i == 0 && c_a == 0 && c_l == 3 && c_t == 1,
              "vector_c envelope_c %d %lld %lld %lld %lld", comb, (long long)c_i, (long long)c_a, (long long)c_l,
              (long long)c_t);
        MPI_Count lc[3] = {0, 0, 0};
        MPI_Datatype ty = MPI_DATATYPE_NULL;
        CHECK_MPI(MPI_Type_get_contents_c(t, 0, 0, 3, 1, NULL, NULL, lc, &ty));
        CHECK(lc[0] == 3 && lc[1] == 2 && lc[2] == 4 && ty == MPI_INT, "vector_c contents %lld %lld %lld",
              (long long)lc[0], (long long)lc[1], (long long)lc[2]);
    }
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_create_subarray_c(2, (const MPI_Count[]){4, 5}, (const MPI_Count[]){2, 3},
                                         (const MPI_Count[]){1, 2}, MPI_ORDER_C, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_data("subarray_c", t, 0, 1, (const int[]){7, 8, 9, 12, 13, 14}, 6);
    {
        MPI_Count c_i = -1, c_a = -1, c_l = -1, c_t = -1;
        int comb = -1;
        CHECK_MPI(MPI_Type_get_envelope_c(t, &c_i, &c_a, &c_l, &c_t, &comb));
        CHECK(comb == MPI_COMBINER_SUBARRAY && c_i == 2 && c_a == 0 && c_l == 6 && c_t == 1,
              "subarray_c envelope_c %d %lld %lld %lld %lld", comb, (long long)c_i, (long long)c_a,
              (long long)c_l, (long long)c_t);
    }
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_create_struct_c(2, (const MPI_Count[]){1, 2}, (const MPI_Count[]){0, 8},
                                       (const MPI_Datatype[]){MPI_INT, MPI_INT}, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    check_data("struct_c", t, 0, 1, (const int[]){0, 2, 3}, 3);
    {
        MPI_Count c_i = -1, c_a = -1, c_l = -1, c_t = -1;
        int comb = -1;
        CHECK_MPI(MPI_Type_get_envelope_c(t, &c_i, &c_a, &c_l, &c_t, &comb));
        CHECK(comb == MPI_COMBINER_STRUCT && c_i == 0 && c_a == 0 && c_l == 5 && c_t == 2,
              "struct_c envelope_c %d %lld %lld %lld %lld", comb, (long long)c_i, (long long)c_a, (long long)c_l,
              (long long)c_t);
        MPI_Count lc[5];
        MPI_Datatype ty[2];
        CHECK_MPI(MPI_Type_get_contents_c(t, 0, 0, 5, 2, NULL, NULL, lc, ty));
        CHECK(lc[0] == 2 && lc[1] == 1 && lc[2] == 2 && lc[3] == 0 && lc[4] == 8 && ty[0] == MPI_INT &&
                  ty[1] == MPI_INT,
              "struct_c contents");
    }
    MPI_Type_free(&t);

    /* A size beyond int: MPI_Type_size says MPI_UNDEFINED, the _x/_c
     * queries give the value; nothing is expanded (one block). */
    {
        MPI_Datatype big1, big2;
        CHECK_MPI(MPI_Type_contiguous(65536, MPI_DOUBLE, &big1));
        CHECK_MPI(MPI_Type_contiguous(65536, big1, &big2));
        int isize = 0;
        MPI_Count csize = 0, lb = -1, extent = -1;
        CHECK_MPI(MPI_Type_size(big2, &isize));
        CHECK(isize == MPI_UNDEFINED, "MPI_Type_size of 32 GiB: %d", isize);
        CHECK_MPI(MPI_Type_size_x(big2, &csize));
        CHECK(csize == ((MPI_Count)1 << 35), "MPI_Type_size_x of 32 GiB: %lld", (long long)csize);
        CHECK_MPI(MPI_Type_get_extent_x(big2, &lb, &extent));
        CHECK(lb == 0 && extent == ((MPI_Count)1 << 35), "extent_x of 32 GiB: %lld", (long long)extent);
        MPI_Type_free(&big1);
        MPI_Type_free(&big2);
    }

    /* Operations on a dup of a predefined type behave like the original. */
    CHECK_MPI(MPI_Type_dup(MPI_INT, &t));
    check_data("dup of MPI_INT x3", t, 5, 3, (const int[]){5, 6, 7}, 3);
    MPI_Type_free(&t);

    /* names */
    {
        char name[MPI_MAX_OBJECT_NAME];
        int len = 0;
        CHECK_MPI(MPI_Type_get_name(MPI_DOUBLE, name, &len));
        CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "name of MPI_DOUBLE: %s", name);
#ifdef AXON_MPI_H
        /* One handle for two names: the older one (as MPICH). */
        CHECK_MPI(MPI_Type_get_name(MPI_LONG_LONG, name, &len));
        CHECK(strcmp(name, "MPI_LONG_LONG_INT") == 0 && len == 17, "name of MPI_LONG_LONG: %s", name);
        CHECK_MPI(MPI_Type_get_name(MPI_C_FLOAT_COMPLEX, name, &len));
        CHECK(strcmp(name, "MPI_C_COMPLEX") == 0 && len == 13, "name of MPI_C_FLOAT_COMPLEX: %s", name);
#endif
        CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &t));
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK(len == 0 && name[0] == '\0', "a new type has an empty name: %s", name);
        CHECK_MPI(MPI_Type_set_name(t, "pair of ints"));
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK(strcmp(name, "pair of ints") == 0 && len == 12, "set name: %s", name);
        MPI_Type_free(&t);
    }

    (void)rank;
    (void)size;
    MPI_Finalize();
    return report("datatype_constructors");
}
