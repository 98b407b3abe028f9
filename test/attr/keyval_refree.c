/* Freeing a keyval that attributes still use, more than once.
 *
 * MPI_Comm_free_keyval only retires the handle: attributes set with it keep
 * their callbacks until they are deleted. While such an attribute exists,
 * freeing the same keyval value again (for instance from its own delete
 * callback, or from two copies of the handle) succeeds and sets the argument
 * to MPI_KEYVAL_INVALID, as in MPICH. Once the last attribute is gone, the
 * value names nothing and freeing it is MPI_ERR_KEYVAL. The delete callback
 * still runs for every attribute, including MPI_COMM_SELF's at finalize. */
#include "../mpi/check.h"

static int deletes;

static int delete_and_free(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)value; (void)extra;
    deletes++;
    int k = keyval;
    int rc = MPI_Comm_free_keyval(&k); /* the keyval was freed already */
    CHECK(rc == MPI_SUCCESS, "free_keyval from the delete callback: %d", rc);
    CHECK(k == MPI_KEYVAL_INVALID, "free_keyval left the handle %d", k);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm dup;
    int key = MPI_KEYVAL_INVALID, copy1;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &dup));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_and_free, &key, NULL));
    copy1 = key;
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL));
    CHECK_MPI(MPI_Comm_set_attr(dup, key, NULL));

    /* First free; the attributes keep the keyval alive. */
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "first free left %d", key);
    /* The dup's attribute goes: its callback frees the keyval again. */
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK(deletes == 1, "delete callback ran %d times", deletes);
    /* MPI_COMM_SELF still has the attribute: another free is harmless. */
    CHECK_MPI(MPI_Comm_free_keyval(&copy1));
    CHECK(copy1 == MPI_KEYVAL_INVALID, "refree left %d", copy1);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc, cls = -1;

    /* Once the last attribute using a freed keyval is gone, the value names
     * nothing. Axon never reuses keyval numbers and detects this; MPICH does
     * not. */
    MPI_Comm d3;
    int key3, copy3;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &d3));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_and_free, &key3, NULL));
    copy3 = key3;
    CHECK_MPI(MPI_Comm_set_attr(d3, key3, NULL));
    CHECK_MPI(MPI_Comm_free_keyval(&key3));
    CHECK_MPI(MPI_Comm_free(&d3));
    CHECK(deletes == 2, "delete callback ran %d times", deletes);
#ifdef AXON_MPI_H
    rc = MPI_Comm_free_keyval(&copy3);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "free of a keyval with no attributes left: class %d", cls);
#else
    (void)rc; (void)cls; (void)copy3;
#endif

    /* MPI_COMM_SELF's attribute (the first keyval) is deleted at finalize. */
    MPI_Finalize();
    CHECK(deletes == 3, "delete callback at finalize: %d calls", deletes);
    return report("attr_keyval_refree");
}
