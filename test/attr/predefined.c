/* The predefined attributes of MPI_COMM_WORLD (MPI-4.1 11.1.2, 11.10.1,
 * 9.5): MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL, MPI_APPNUM,
 * MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE, and that users cannot change them. */
#include <limits.h>
#include <stdint.h>

#include "../mpi/check.h"

static int get_int_attr(MPI_Comm comm, int keyval, int *flag)
{
    int *value = NULL;
    *flag = -1;
    CHECK_MPI(MPI_Comm_get_attr(comm, keyval, &value, flag));
    if (*flag != 1 || !value)
        return INT_MIN;
    return *value;
}

int main(int argc, char **argv)
{
    int rank, size, flag, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* MPI_TAG_UB: at least 32767, and exactly the largest tag a send accepts. */
    int tag_ub = get_int_attr(MPI_COMM_WORLD, MPI_TAG_UB, &flag);
    CHECK(flag == 1 && tag_ub >= 32767, "MPI_TAG_UB: flag %d value %d", flag, tag_ub);
    int peer = pair_partner(rank, size);
    int out = 1000 + rank, in = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, peer, tag_ub, &in, 1, MPI_INT, peer, tag_ub, MPI_COMM_WORLD, &st));
    CHECK(in == 1000 + peer && st.MPI_TAG == tag_ub, "message with tag MPI_TAG_UB: got %d tag %d", in,
          st.MPI_TAG);
    if (tag_ub < INT_MAX) {
        rc = MPI_Send(&out, 1, MPI_INT, MPI_PROC_NULL, tag_ub + 1, MPI_COMM_WORLD);
        CHECK(error_class_of(rc) == MPI_ERR_TAG, "tag MPI_TAG_UB+1: class %d", error_class_of(rc));
    }
    rc = MPI_Send(&out, 1, MPI_INT, peer, -5, MPI_COMM_WORLD);
    CHECK(error_class_of(rc) == MPI_ERR_TAG, "negative tag: class %d", error_class_of(rc));

    /* MPI_HOST: no host process. */
    int host = get_int_attr(MPI_COMM_WORLD, MPI_HOST, &flag);
    CHECK(flag == 1 && host == MPI_PROC_NULL, "MPI_HOST: flag %d value %d", flag, host);

    /* MPI_IO: every process can do I/O (MPI_ANY_SOURCE). */
    int io = get_int_attr(MPI_COMM_WORLD, MPI_IO, &flag);
    CHECK(flag == 1 && io == MPI_ANY_SOURCE, "MPI_IO: flag %d value %d", flag, io);

    /* MPI_WTIME_IS_GLOBAL: 0 or 1, the same everywhere. */
    int global = get_int_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &flag);
    CHECK(flag == 1 && (global == 0 || global == 1), "MPI_WTIME_IS_GLOBAL: flag %d value %d", flag, global);
    int min_g = -1, max_g = -1;
    CHECK_MPI(MPI_Allreduce(&global, &min_g, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Allreduce(&global, &max_g, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(min_g == max_g, "MPI_WTIME_IS_GLOBAL differs between ranks");

    /* MPI_APPNUM: mpirun starts one application, number 0. A singleton (run
     * without mpirun, argument "singleton") has no process specification:
     * Axon leaves it unset. */
    int singleton = argc > 1 && strcmp(argv[1], "singleton") == 0;
    int appnum = get_int_attr(MPI_COMM_WORLD, MPI_APPNUM, &flag);
    if (singleton)
        CHECK(flag == 0 || appnum == 0, "singleton MPI_APPNUM: flag %d value %d", flag, appnum);
    else
        CHECK(flag == 1 && appnum == 0, "MPI_APPNUM: flag %d value %d", flag, appnum);
#ifdef AXON_MPI_H
    if (singleton)
        CHECK(flag == 0 && size == 1, "singleton: MPI_APPNUM flag %d, size %d", flag, size);
#endif

    /* MPI_UNIVERSE_SIZE: optional in MPI (MPICH's mpiexec leaves it unset
     * without -usize); Axon sets it to the job's size. */
    int universe = get_int_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &flag);
#ifdef AXON_MPI_H
    CHECK(flag == 1 && universe == size, "MPI_UNIVERSE_SIZE: flag %d value %d (size %d)", flag, universe, size);
#else
    CHECK(flag == 0 || universe >= size, "MPI_UNIVERSE_SIZE: flag %d value %d (size %d)", flag, universe, size);
#endif

    /* MPI_LASTUSEDCODE: follows MPI_Add_error_class / _code. */
    int last = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    CHECK(flag == 1, "MPI_LASTUSEDCODE not set");
    int cls, code1, code2;
    CHECK_MPI(MPI_Add_error_class(&cls));
    last = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    CHECK(flag == 1 && last >= cls, "MPI_LASTUSEDCODE %d after Add_error_class gave %d", last, cls);
    CHECK_MPI(MPI_Add_error_code(cls, &code1));
    CHECK_MPI(MPI_Add_error_code(cls, &code2));
    int last2 = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
#ifdef AXON_MPI_H
    /* MPI_LASTUSEDCODE is the largest code in use (MPICH 4.0 only tracks
     * classes). Axon numbers user classes and codes consecutively above
     * MPI_ERR_LASTCODE. */
    CHECK(cls > MPI_ERR_LASTCODE && code1 == cls + 1 && code2 == cls + 2 && last2 == code2,
          "class %d codes %d %d last used %d", cls, code1, code2, last2);
#else
    (void)last2, (void)code1;
#endif

    /* Users cannot set, delete or free predefined attributes. */
    static const int keys[] = {MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
                               MPI_APPNUM, MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int before = get_int_attr(MPI_COMM_WORLD, keys[i], &flag);
        int had = flag;
        static int fake = 12345;
        rc = MPI_Comm_set_attr(MPI_COMM_WORLD, keys[i], &fake);
        CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "set predefined keyval %d: class %d", keys[i],
              error_class_of(rc));
        rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, keys[i]);
        CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "delete predefined keyval %d: class %d", keys[i],
              error_class_of(rc));
        int k = keys[i];
        rc = MPI_Comm_free_keyval(&k);
        CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "free predefined keyval %d: class %d", keys[i],
              error_class_of(rc));
        int after = get_int_attr(MPI_COMM_WORLD, keys[i], &flag);
        CHECK(flag == had && after == before, "predefined keyval %d changed from %d to %d", keys[i], before, after);
    }

    /* The deprecated MPI_Attr_get sees them too. */
    int *p = NULL;
    CHECK_MPI(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag == 1 && p && *p == tag_ub, "MPI_Attr_get(MPI_TAG_UB)");

    MPI_Finalize();
    return report("attr_predefined");
}
