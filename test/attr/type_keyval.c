/* Datatype keyvals and attributes on a derived and a predefined type, the copy
 * callbacks MPI_Type_dup runs, delete callbacks on MPI_Type_free, bad keyvals
 * and bad types; window keyvals (create / free only: Axon has no windows yet). */
#include <stdint.h>

#include "../mpi/check.h"

static int copy_calls, delete_calls;
static intptr_t last_deleted;
static MPI_Datatype last_copy_type, last_delete_type;

static int type_delete(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)keyval, (void)extra;
    delete_calls++;
    last_deleted = (intptr_t)value;
    last_delete_type = type;
    return MPI_SUCCESS;
}

static int type_copy_plus_1000(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)keyval, (void)extra;
    copy_calls++;
    last_copy_type = type;
    *(void **)out = (void *)((intptr_t)in + 1000);
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_copy_refuse(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)type, (void)keyval, (void)extra, (void)in, (void)out;
    copy_calls++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int type_copy_fail(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)type, (void)keyval, (void)in, (void)out;
    *flag = 0;
    return (int)(intptr_t)extra;
}

static void *get(MPI_Datatype t, int keyval, int *flag)
{
    void *value = NULL;
    *flag = -1;
    CHECK_MPI(MPI_Type_get_attr(t, keyval, &value, flag));
    return value;
}

static void test_type_attributes(void)
{
    MPI_Datatype t, d;
    int k_null, k_dup, k_plus, k_refuse, flag;
    void *v;
    /* A derived, non-contiguous type. */
    CHECK_MPI(MPI_Type_vector(2, 2, 3, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete, &k_null, NULL));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_delete, &k_dup, NULL));
    CHECK_MPI(MPI_Type_create_keyval(type_copy_plus_1000, type_delete, &k_plus, NULL));
    CHECK_MPI(MPI_Type_create_keyval(type_copy_refuse, MPI_TYPE_NULL_DELETE_FN, &k_refuse, NULL));
    CHECK(k_null != MPI_KEYVAL_INVALID, "no keyval");

    get(t, k_dup, &flag);
    CHECK(flag == 0, "attribute present before set");
    CHECK_MPI(MPI_Type_set_attr(t, k_null, (void *)(intptr_t)1));
    CHECK_MPI(MPI_Type_set_attr(t, k_dup, (void *)(intptr_t)2));
    CHECK_MPI(MPI_Type_set_attr(t, k_plus, (void *)(intptr_t)3));
    CHECK_MPI(MPI_Type_set_attr(t, k_refuse, (void *)(intptr_t)4));
    v = get(t, k_plus, &flag);
    CHECK(flag == 1 && v == (void *)(intptr_t)3, "get: flag %d value %p", flag, v);

    /* Overwrite and delete run the delete callback with the old value. */
    delete_calls = 0;
    CHECK_MPI(MPI_Type_set_attr(t, k_null, (void *)(intptr_t)5));
    CHECK(delete_calls == 1 && last_deleted == 1 && last_delete_type == t, "overwrite: %d delete calls",
          delete_calls);
    CHECK_MPI(MPI_Type_delete_attr(t, k_null));
    CHECK(delete_calls == 2 && last_deleted == 5, "delete_attr: %d delete calls", delete_calls);
    get(t, k_null, &flag);
    CHECK(flag == 0, "attribute present after delete_attr");
    CHECK_MPI(MPI_Type_set_attr(t, k_null, (void *)(intptr_t)1));

    /* Type_dup copies. */
    copy_calls = delete_calls = 0;
    CHECK_MPI(MPI_Type_dup(t, &d));
    CHECK(copy_calls == 2 && last_copy_type == t, "Type_dup ran %d user copy callbacks", copy_calls);
    get(d, k_null, &flag);
    CHECK(flag == 0, "MPI_TYPE_NULL_COPY_FN copied");
    v = get(d, k_dup, &flag);
    CHECK(flag == 1 && v == (void *)(intptr_t)2, "MPI_TYPE_DUP_FN: flag %d value %p", flag, v);
    v = get(d, k_plus, &flag);
    CHECK(flag == 1 && v == (void *)(intptr_t)1003, "user copy: flag %d value %p", flag, v);
    get(d, k_refuse, &flag);
    CHECK(flag == 0, "copy callback with flag 0 still copied");
    /* The duplicate is a working type. */
    int size = 0;
    CHECK_MPI(MPI_Type_size(d, &size));
    CHECK(size == 4 * (int)sizeof(int), "size of the dup %d", size);

    /* Type_free of the dup deletes its two attributes, with the dup's handle. */
    MPI_Datatype d_handle = d;
    CHECK_MPI(MPI_Type_free(&d));
    CHECK(d == MPI_DATATYPE_NULL, "Type_free left the handle");
    CHECK(delete_calls == 2 && last_delete_type == d_handle, "Type_free of the dup ran %d delete callbacks",
          delete_calls);

    /* A freed keyval's attributes keep their callbacks. */
    CHECK_MPI(MPI_Type_free_keyval(&k_plus));
    CHECK(k_plus == MPI_KEYVAL_INVALID, "Type_free_keyval left %d", k_plus);
    delete_calls = 0;
    CHECK_MPI(MPI_Type_free(&t));
    CHECK(delete_calls == 3, "Type_free ran %d delete callbacks, expected 3", delete_calls);

    CHECK_MPI(MPI_Type_free_keyval(&k_null));
    CHECK_MPI(MPI_Type_free_keyval(&k_dup));
    CHECK_MPI(MPI_Type_free_keyval(&k_refuse));
}

/* Attributes may be cached on predefined datatypes too. */
static void test_predefined_type(void)
{
    int k, flag;
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete, &k, NULL));
    CHECK_MPI(MPI_Type_set_attr(MPI_INT, k, (void *)(intptr_t)77));
    void *v = get(MPI_INT, k, &flag);
    CHECK(flag == 1 && v == (void *)(intptr_t)77, "attribute on MPI_INT: flag %d value %p", flag, v);
    get(MPI_DOUBLE, k, &flag);
    CHECK(flag == 0, "attribute of MPI_INT visible on MPI_DOUBLE");
    delete_calls = 0;
    CHECK_MPI(MPI_Type_delete_attr(MPI_INT, k));
    CHECK(delete_calls == 1 && last_deleted == 77 && last_delete_type == MPI_INT, "delete on MPI_INT");
    CHECK_MPI(MPI_Type_free_keyval(&k));
}

/* A failing copy callback makes Type_dup fail with its code. */
static void test_dup_error(void)
{
    MPI_Datatype t, d = MPI_DATATYPE_NULL;
    int k, k_dup, cls, code;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &t));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_delete, &k_dup, NULL));
    CHECK_MPI(MPI_Type_create_keyval(type_copy_fail, MPI_TYPE_NULL_DELETE_FN, &k, (void *)(intptr_t)code));
    CHECK_MPI(MPI_Type_set_attr(t, k_dup, (void *)(intptr_t)8));
    CHECK_MPI(MPI_Type_set_attr(t, k, (void *)(intptr_t)9));
    for (int i = 0; i < 100; i++) {
        int rc = MPI_Type_dup(t, &d);
        CHECK(error_class_of(rc) == cls, "failing type copy callback: class %d, expected %d",
              error_class_of(rc), cls);
        if (rc == MPI_SUCCESS)
            MPI_Type_free(&d);
    }
    CHECK_MPI(MPI_Type_delete_attr(t, k));
    delete_calls = 0;
    CHECK_MPI(MPI_Type_free(&t));
    CHECK(delete_calls == 1, "%d delete callbacks", delete_calls);
    CHECK_MPI(MPI_Type_free_keyval(&k));
    CHECK_MPI(MPI_Type_free_keyval(&k_dup));
}

static void test_bad_arguments(void)
{
    int k_type, k_comm, rc, flag;
    void *v;
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &k_type, NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k_comm, NULL));

    rc = MPI_Type_set_attr(MPI_INT, k_comm, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "comm keyval on a type: class %d", error_class_of(rc));
    rc = MPI_Type_get_attr(MPI_INT, k_comm, &v, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "get with a comm keyval: class %d", error_class_of(rc));
    rc = MPI_Type_delete_attr(MPI_INT, k_comm);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "delete with a comm keyval: class %d", error_class_of(rc));
    rc = MPI_Type_get_attr(MPI_INT, MPI_TAG_UB, &v, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "MPI_TAG_UB on a type: class %d", error_class_of(rc));
    rc = MPI_Type_set_attr(MPI_INT, MPI_KEYVAL_INVALID, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID on a type: class %d", error_class_of(rc));

    rc = MPI_Type_set_attr(MPI_DATATYPE_NULL, k_type, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "set on MPI_DATATYPE_NULL: class %d", error_class_of(rc));
    rc = MPI_Type_get_attr(MPI_DATATYPE_NULL, k_type, &v, &flag);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "get on MPI_DATATYPE_NULL: class %d", error_class_of(rc));
    rc = MPI_Type_delete_attr(MPI_DATATYPE_NULL, k_type);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "delete on MPI_DATATYPE_NULL: class %d", error_class_of(rc));

    CHECK_MPI(MPI_Type_free_keyval(&k_type));
    CHECK_MPI(MPI_Comm_free_keyval(&k_comm));
}

static int win_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)value, (void)extra;
    return MPI_SUCCESS;
}

static void test_win_keyvals(void)
{
    int k1, k2, rc;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &k1, NULL));
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_DUP_FN, win_delete, &k2, NULL));
    CHECK(k1 != MPI_KEYVAL_INVALID && k2 != MPI_KEYVAL_INVALID && k1 != k2, "win keyvals %d %d", k1, k2);
    /* A window keyval is not a communicator keyval. */
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, k1, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "win keyval on a comm: class %d", error_class_of(rc));
    int copy = k1;
    rc = MPI_Comm_free_keyval(&copy);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "Comm_free_keyval of a win keyval: class %d", error_class_of(rc));
    int base = MPI_WIN_BASE;
    rc = MPI_Win_free_keyval(&base);
    CHECK(error_class_of(rc) == MPI_ERR_KEYVAL, "Win_free_keyval(MPI_WIN_BASE): class %d", error_class_of(rc));
    CHECK_MPI(MPI_Win_free_keyval(&k1));
    CHECK(k1 == MPI_KEYVAL_INVALID, "Win_free_keyval left %d", k1);
    CHECK_MPI(MPI_Win_free_keyval(&k2));
    CHECK(k2 == MPI_KEYVAL_INVALID, "Win_free_keyval left %d", k2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Datatype and keyval calls have no communicator: errors go to MPI_COMM_SELF. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_type_attributes();
    test_predefined_type();
    test_bad_arguments();
    test_win_keyvals();
    test_dup_error();
    MPI_Finalize();
    return report("attr_type_keyval");
}
