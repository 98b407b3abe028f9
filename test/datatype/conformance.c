/* Datatype corner cases found by running a third-party conformance suite
 * against Axon; each case states the behaviour MPI-4.1 (and MPICH / Open MPI)
 * require, with exact values.
 *
 * pair_elements: MPI_Get_elements counts the basic elements of the type map,
 *   so a MINLOC/MAXLOC pair type (MPI_DOUBLE_INT, MPI_2INT, ...) is two
 *   elements: a value and an index. 20 bytes of MPI_DOUBLE_INT data (a pair,
 *   then a lone double) are 3 elements, not MPI_UNDEFINED; a whole pair is 2
 *   elements but still 1 for MPI_Get_count. MPI-4.1 defines the pair types
 *   "as if" built with MPI_Type_create_struct of the two members, and MPICH
 *   counts them that way (Open MPI counts a pair as one element).
 *   MPI_Status_set_elements uses the same count, so it round-trips. */
#include "../mpi/check.h"

static void pair_elements(void)
{
    struct { double d; int i; double d2; } src = { 1.5, 7, 2.5 };
    struct { double d; int i; } dst[2];
    int blocklens[3] = { 1, 1, 1 };
    MPI_Aint displs[3] = { 0, (MPI_Aint) offsetof(__typeof__(src), i), (MPI_Aint) offsetof(__typeof__(src), d2) };
    MPI_Datatype types[3] = { MPI_DOUBLE, MPI_INT, MPI_DOUBLE }, triple;
    MPI_Status st;
    int count = -1, elements = -1;

    CHECK_MPI(MPI_Type_create_struct(3, blocklens, displs, types, &triple));
    CHECK_MPI(MPI_Type_commit(&triple));
    CHECK_MPI(MPI_Sendrecv(&src, 1, triple, 0, 5, dst, 2, MPI_DOUBLE_INT, 0, 5, MPI_COMM_SELF, &st));
    CHECK_MPI(MPI_Get_elements(&st, MPI_DOUBLE_INT, &elements));
    CHECK(elements == 3, "elements of double,int,double as MPI_DOUBLE_INT: %d (want 3)", elements);
    CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE_INT, &count));
    CHECK(count == MPI_UNDEFINED, "count of 1.5 MPI_DOUBLE_INT: %d (want MPI_UNDEFINED)", count);
    CHECK(dst[0].d == 1.5 && dst[0].i == 7, "data: %g %d", dst[0].d, dst[0].i);
    CHECK_MPI(MPI_Type_free(&triple));

    /* Whole pairs: 2 MPI_2INT are 2 items and 4 elements. */
    int pairs[4] = { 1, 2, 3, 4 }, got[4] = { 0 };
    MPI_Count elements_c = -1;
    CHECK_MPI(MPI_Sendrecv(pairs, 2, MPI_2INT, 0, 6, got, 2, MPI_2INT, 0, 6, MPI_COMM_SELF, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_2INT, &count));
    CHECK(count == 2, "count of 2 MPI_2INT: %d", count);
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_2INT, &elements_c));
    CHECK(elements_c == 4, "elements of 2 MPI_2INT: %lld (want 4)", (long long) elements_c);
    /* 3 ints as MPI_2INT: one pair and a value: 3 elements. */
    CHECK_MPI(MPI_Sendrecv(pairs, 3, MPI_INT, 0, 7, got, 2, MPI_2INT, 0, 7, MPI_COMM_SELF, &st));
    CHECK_MPI(MPI_Get_elements(&st, MPI_2INT, &elements));
    CHECK(elements == 3, "elements of 3 ints as MPI_2INT: %d (want 3)", elements);
    /* 2 bytes received as MPI_2INT end inside an int: MPI_UNDEFINED. */
    CHECK_MPI(MPI_Sendrecv(pairs, 2, MPI_BYTE, 0, 8, got, 2, MPI_2INT, 0, 8, MPI_COMM_SELF, &st));
    CHECK_MPI(MPI_Get_elements(&st, MPI_2INT, &elements));
    CHECK(elements == MPI_UNDEFINED, "elements of 2 bytes as MPI_2INT: %d", elements);

    /* MPI_Status_set_elements counts the same way, so MPI_Get_elements
     * returns what was set: 3 elements of MPI_DOUBLE_INT are a pair and a
     * double (20 bytes), not 3 pairs. */
    MPI_Status set;
    CHECK_MPI(MPI_Status_set_elements(&set, MPI_DOUBLE_INT, 3));
    CHECK_MPI(MPI_Get_elements(&set, MPI_DOUBLE_INT, &elements));
    CHECK(elements == 3, "set_elements(DOUBLE_INT, 3) then get_elements: %d", elements);
    CHECK_MPI(MPI_Get_elements(&set, MPI_BYTE, &elements));
    CHECK(elements == (int)(2 * sizeof(double) + sizeof(int)), "set_elements(DOUBLE_INT, 3) is %d bytes", elements);
    CHECK_MPI(MPI_Status_set_elements(&set, MPI_2INT, 4));
    CHECK_MPI(MPI_Get_count(&set, MPI_2INT, &count));
    CHECK(count == 2, "set_elements(2INT, 4) then get_count: %d (want 2)", count);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    pair_elements();
    MPI_Finalize();
    return report("datatype_conformance");
}
