/* Error classes and strings, user error classes / codes / strings
 * (MPI_Add_error_*, MPI-4.1 MPI_Remove_error_*), user error handlers on
 * communicators (called with the right code and communicator), 
 * MPI_Comm_call_errhandler, handler reference counting, and errors of calls
 * without a communicator reaching MPI_COMM_SELF's handler. */
#include <stdint.h>

#include "../mpi/check.h"

static void expect_class(int rc, int cls, const char *what)
{
    CHECK(error_class_of(rc) == cls, "%s: class %d, expected %d", what, error_class_of(rc), cls);
}

static const int predefined_classes[] = {
    MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM, MPI_ERR_RANK,
    MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_ARG,
    MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_INTERN, MPI_ERR_PENDING, MPI_ERR_IN_STATUS,
    MPI_ERR_ACCESS, MPI_ERR_AMODE, MPI_ERR_ASSERT, MPI_ERR_BAD_FILE, MPI_ERR_BASE, MPI_ERR_CONVERSION,
    MPI_ERR_DISP, MPI_ERR_DUP_DATAREP, MPI_ERR_FILE_EXISTS, MPI_ERR_FILE_IN_USE, MPI_ERR_FILE,
    MPI_ERR_INFO_KEY, MPI_ERR_INFO_NOKEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO, MPI_ERR_IO, MPI_ERR_KEYVAL,
    MPI_ERR_LOCKTYPE, MPI_ERR_NAME, MPI_ERR_NO_MEM, MPI_ERR_NOT_SAME, MPI_ERR_NO_SPACE, MPI_ERR_NO_SUCH_FILE,
    MPI_ERR_PORT, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY, MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_CONFLICT,
    MPI_ERR_RMA_RANGE, MPI_ERR_RMA_SHARED, MPI_ERR_RMA_SYNC, MPI_ERR_SERVICE, MPI_ERR_SIZE, MPI_ERR_SPAWN,
    MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_WIN, MPI_ERR_RMA_FLAVOR,
    MPI_ERR_PROC_ABORTED, MPI_ERR_VALUE_TOO_LARGE, MPI_ERR_SESSION,
#ifdef AXON_MPI_H
    MPI_ERR_ERRHANDLER, MPI_ERR_ABI, MPI_T_ERR_NOT_ACCESSIBLE,
#endif
    MPI_T_ERR_CANNOT_INIT, MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_NOT_SUPPORTED,
    MPI_T_ERR_MEMORY, MPI_T_ERR_INVALID, MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID_ITEM,
    MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID_NAME, MPI_T_ERR_OUT_OF_HANDLES,
    MPI_T_ERR_OUT_OF_SESSIONS, MPI_T_ERR_CVAR_SET_NOT_NOW, MPI_T_ERR_CVAR_SET_NEVER, MPI_T_ERR_PVAR_NO_WRITE,
    MPI_T_ERR_PVAR_NO_STARTSTOP, MPI_T_ERR_PVAR_NO_ATOMIC,
};
#define NCLASSES ((int)(sizeof predefined_classes / sizeof predefined_classes[0]))

static void test_predefined_classes(void)
{
    static char strings[NCLASSES][MPI_MAX_ERROR_STRING];
    for (int i = 0; i < NCLASSES; i++) {
        int c = predefined_classes[i], cls = -1, len = -1;
        CHECK_MPI(MPI_Error_class(c, &cls));
        CHECK(cls == c, "MPI_Error_class(%d) = %d", c, cls);
        strings[i][0] = '\0';
        CHECK_MPI(MPI_Error_string(c, strings[i], &len));
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(strings[i]) == len,
              "MPI_Error_string(%d): length %d for '%s'", c, len, strings[i]);
        CHECK(c == MPI_SUCCESS || c <= MPI_ERR_LASTCODE, "class %d above MPI_ERR_LASTCODE", c);
#ifdef AXON_MPI_H /* MPICH 4.0 has no strings for the MPI_T classes */
        for (int j = 0; j < i; j++)
            CHECK(strcmp(strings[i], strings[j]) != 0, "classes %d and %d have the same string '%s'", c,
                  predefined_classes[j], strings[i]);
#endif
    }
#ifdef AXON_MPI_H /* MPICH 4.0 does not check the code */
    int cls, len;
    char s[MPI_MAX_ERROR_STRING];
    expect_class(MPI_Error_class(-7, &cls), MPI_ERR_ARG, "MPI_Error_class(-7)");
    expect_class(MPI_Error_string(-7, s, &len), MPI_ERR_ARG, "MPI_Error_string(-7)");
#endif
}

static void test_user_errors(void)
{
    int cls, code, code_other, got, len, last, flag;
    char s[MPI_MAX_ERROR_STRING];
    int *lastp;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK(cls > MPI_ERR_LASTCODE, "user class %d not above MPI_ERR_LASTCODE %d", cls, MPI_ERR_LASTCODE);
    CHECK_MPI(MPI_Error_class(cls, &got));
    CHECK(got == cls, "class of a user class %d is %d", cls, got);
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    CHECK(code > MPI_ERR_LASTCODE && code != cls, "user code %d", code);
    CHECK_MPI(MPI_Error_class(code, &got));
    CHECK(got == cls, "class of a user code: %d, expected %d", got, cls);
    CHECK_MPI(MPI_Add_error_code(MPI_ERR_OTHER, &code_other));
    CHECK_MPI(MPI_Error_class(code_other, &got));
    CHECK(got == MPI_ERR_OTHER, "code added to MPI_ERR_OTHER has class %d", got);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastp, &flag));
    last = flag ? *lastp : -1;
    CHECK(flag && last >= cls, "MPI_LASTUSEDCODE %d", last);
#ifdef AXON_MPI_H
    CHECK(last == code_other, "MPI_LASTUSEDCODE %d, expected %d", last, code_other);
#endif

    /* Strings. */
    CHECK_MPI(MPI_Add_error_string(code, "my code"));
    CHECK_MPI(MPI_Add_error_string(cls, "my class"));
    CHECK_MPI(MPI_Error_string(code, s, &len));
    CHECK(strcmp(s, "my code") == 0 && len == 7, "string of the user code: '%s' (%d)", s, len);
    CHECK_MPI(MPI_Error_string(cls, s, &len));
    CHECK(strcmp(s, "my class") == 0 && len == 8, "string of the user class: '%s' (%d)", s, len);
    CHECK_MPI(MPI_Add_error_string(code, "changed")); /* replaces */
    CHECK_MPI(MPI_Error_string(code, s, &len));
    CHECK(strcmp(s, "changed") == 0, "replaced string: '%s'", s);
#ifdef AXON_MPI_H /* MPICH 4.0 truncates strings and does not check these */
    /* Longest allowed: MPI_MAX_ERROR_STRING - 1 characters. */
    char long_string[MPI_MAX_ERROR_STRING + 1];
    memset(long_string, 'e', MPI_MAX_ERROR_STRING - 1);
    long_string[MPI_MAX_ERROR_STRING - 1] = '\0';
    CHECK_MPI(MPI_Add_error_string(code_other, long_string));
    CHECK_MPI(MPI_Error_string(code_other, s, &len));
    CHECK(len == MPI_MAX_ERROR_STRING - 1 && strcmp(s, long_string) == 0, "longest string: length %d", len);

    /* Bad arguments: a string for a predefined class, a code added to a code. */
    expect_class(MPI_Add_error_string(MPI_ERR_OTHER, "no"), MPI_ERR_ARG, "string for a predefined class");
    int bad;
    expect_class(MPI_Add_error_code(code, &bad), MPI_ERR_ARG, "code added to a user code");
    expect_class(MPI_Add_error_code(-3, &bad), MPI_ERR_ARG, "code added to class -3");
    long_string[MPI_MAX_ERROR_STRING - 1] = 'e';
    long_string[MPI_MAX_ERROR_STRING] = '\0';
    expect_class(MPI_Add_error_string(code, long_string), MPI_ERR_ARG, "string of MPI_MAX_ERROR_STRING chars");
    CHECK_MPI(MPI_Error_string(code, s, &len));
    CHECK(strcmp(s, "changed") == 0, "failed Add_error_string changed the string to '%.20s'", s);

    /* MPI-4.1: MPI_Remove_error_string / _code / _class. */
    expect_class(MPI_Remove_error_class(cls), MPI_ERR_ARG, "removing a class that still has codes");
    expect_class(MPI_Remove_error_class(MPI_ERR_OTHER), MPI_ERR_ARG, "removing a predefined class");
    expect_class(MPI_Remove_error_code(cls), MPI_ERR_ARG, "Remove_error_code of a class");
    CHECK_MPI(MPI_Remove_error_string(code));
    CHECK_MPI(MPI_Error_string(code, s, &len));
    CHECK(len == 0 && s[0] == '\0', "string after Remove_error_string: '%s'", s);
    CHECK_MPI(MPI_Remove_error_code(code));
    expect_class(MPI_Error_class(code, &got), MPI_ERR_ARG, "class of a removed code");
    expect_class(MPI_Remove_error_code(code), MPI_ERR_ARG, "removing a code twice");
    CHECK_MPI(MPI_Remove_error_class(cls));
    expect_class(MPI_Error_class(cls, &got), MPI_ERR_ARG, "class of a removed class");
    CHECK_MPI(MPI_Remove_error_code(code_other));
    /* Removed values are not handed out again. */
    int cls2;
    CHECK_MPI(MPI_Add_error_class(&cls2));
    CHECK(cls2 != cls && cls2 != code && cls2 != code_other, "removed value %d reused", cls2);
    CHECK_MPI(MPI_Remove_error_class(cls2));
#endif
}

/* What the user handler saw. */
static int handler_calls, handler_code;
static MPI_Comm handler_comm;

static void user_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    handler_code = *code;
}

static int other_calls;
static void other_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
    other_calls++;
}

static void test_user_handler(int size)
{
    MPI_Comm c, d;
    MPI_Errhandler eh, got;
    int value = 0, rc;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_create_errhandler(user_handler, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL, "create_errhandler gave MPI_ERRHANDLER_NULL");
    CHECK_MPI(MPI_Comm_set_errhandler(c, eh));
    /* The communicator holds its own reference: freeing ours is fine. */
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");

    handler_calls = 0;
    rc = MPI_Send(&value, 1, MPI_INT, size + 5, 0, c);
    CHECK(handler_calls == 1, "handler called %d times for a bad rank", handler_calls);
    CHECK(handler_comm == c, "handler got another communicator");
    CHECK(error_class_of(handler_code) == MPI_ERR_RANK, "handler got class %d", error_class_of(handler_code));
    CHECK(rc == handler_code, "the call returned %d, the handler saw %d", rc, handler_code);

    /* MPI_Comm_call_errhandler passes the code through unchanged. */
    int cls, code;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    handler_calls = 0;
    CHECK_MPI(MPI_Comm_call_errhandler(c, code));
    CHECK(handler_calls == 1 && handler_code == code && handler_comm == c,
          "call_errhandler: %d calls, code %d (expected %d)", handler_calls, handler_code, code);

    /* get_errhandler returns a new reference to the same handler. */
    CHECK_MPI(MPI_Comm_get_errhandler(c, &got));
    CHECK(got != MPI_ERRHANDLER_NULL, "get_errhandler gave MPI_ERRHANDLER_NULL");
    /* A duplicate inherits the handler. */
    CHECK_MPI(MPI_Comm_dup(c, &d));
    CHECK_MPI(MPI_Comm_free(&c));
    handler_calls = 0;
    CHECK_MPI(MPI_Comm_call_errhandler(d, MPI_ERR_OTHER));
    CHECK(handler_calls == 1 && handler_comm == d && handler_code == MPI_ERR_OTHER,
          "dup's inherited handler: %d calls", handler_calls);
    /* Our reference still works after the first communicator is gone. */
    MPI_Comm e;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &e));
    CHECK_MPI(MPI_Comm_set_errhandler(e, got));
    CHECK_MPI(MPI_Errhandler_free(&got));
    handler_calls = 0;
    CHECK_MPI(MPI_Comm_call_errhandler(e, MPI_ERR_TAG));
    CHECK(handler_calls == 1 && handler_comm == e, "handler after all user references were freed");
    /* Replacing the handler drops the communicator's reference. */
    CHECK_MPI(MPI_Comm_set_errhandler(e, MPI_ERRORS_RETURN));
    handler_calls = 0;
    rc = MPI_Comm_call_errhandler(e, MPI_ERR_TAG);
    CHECK(rc == MPI_SUCCESS && handler_calls == 0, "MPI_ERRORS_RETURN: rc %d, %d handler calls", rc,
          handler_calls);
    CHECK_MPI(MPI_Comm_free(&e));
    CHECK_MPI(MPI_Comm_free(&d));

    /* Predefined handlers: get returns them, and the handle may be freed. */
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == MPI_ERRORS_RETURN, "MPI_COMM_WORLD's handler is not MPI_ERRORS_RETURN");
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK(got == MPI_ERRHANDLER_NULL, "freeing a predefined handle did not set MPI_ERRHANDLER_NULL");
    rc = MPI_Send(&value, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_RANK, "MPI_COMM_WORLD still returns errors after freeing the handle");

#ifdef AXON_MPI_H
    /* An invalid handler (MPICH 4.0: MPI_ERR_ARG). */
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL);
    expect_class(rc, MPI_ERR_ERRHANDLER, "set_errhandler(MPI_ERRHANDLER_NULL)");
    /* MPI_ERRORS_ABORT is a valid handler to set and get back (MPICH 4.0.2
     * fails an internal assertion here). */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_ABORT));
    CHECK_MPI(MPI_Comm_get_errhandler(c, &got));
    CHECK(got == MPI_ERRORS_ABORT, "get after set MPI_ERRORS_ABORT");
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK_MPI(MPI_Comm_free(&c));
#endif
}

/* Errors of calls without a communicator go to MPI_COMM_SELF's handler,
 * never to MPI_COMM_WORLD's (MPI-4.1 9.3). */
static void test_self_handler(void)
{
    MPI_Errhandler self_eh, world_eh;
    CHECK_MPI(MPI_Comm_create_errhandler(user_handler, &self_eh));
    CHECK_MPI(MPI_Comm_create_errhandler(other_handler, &world_eh));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh));
    handler_calls = other_calls = 0;

    MPI_Datatype t = MPI_INT; /* predefined: cannot be freed */
    int rc = MPI_Type_free(&t);
    CHECK(handler_calls == 1 && handler_comm == MPI_COMM_SELF, "Type_free error: %d calls on MPI_COMM_SELF",
          handler_calls);
    CHECK(error_class_of(handler_code) == MPI_ERR_TYPE && rc == handler_code, "Type_free error: class %d",
          error_class_of(handler_code));
    t = MPI_DATATYPE_NULL;
    rc = MPI_Type_free(&t);
    CHECK(handler_calls == 2 && error_class_of(rc) == MPI_ERR_TYPE, "Type_free(MPI_DATATYPE_NULL): class %d",
          error_class_of(rc));

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    rc = MPI_Info_delete(info, "absent");
    CHECK(handler_calls == 3 && handler_comm == MPI_COMM_SELF && error_class_of(rc) == MPI_ERR_INFO_NOKEY,
          "Info_delete error: %d calls, class %d", handler_calls, error_class_of(rc));
    CHECK_MPI(MPI_Info_free(&info));

    int bad_keyval = MPI_KEYVAL_INVALID;
    rc = MPI_Comm_free_keyval(&bad_keyval);
    CHECK(handler_calls == 4 && error_class_of(rc) == MPI_ERR_KEYVAL, "free_keyval error: %d calls, class %d",
          handler_calls, error_class_of(rc));

    CHECK(other_calls == 0, "MPI_COMM_WORLD's handler was called %d times", other_calls);

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&self_eh));
    CHECK_MPI(MPI_Errhandler_free(&world_eh));
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_predefined_classes();
    test_user_errors();
    test_user_handler(size);
#ifdef AXON_MPI_H /* MPICH 4.0 still raises these on MPI_COMM_WORLD (MPI-3 rule) */
    test_self_handler();
#else
    (void)test_self_handler;
#endif
    MPI_Finalize();
    return report("attr_errors");
}
