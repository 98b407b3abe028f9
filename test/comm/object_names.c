/* Object names (MPI-4.1 7.8 "Naming Objects"): MPI_Comm_get_name,
 * MPI_Type_get_name and MPI_Win_get_name accept the null handles and return
 * MPI_SUCCESS with the handle's name ("MPI_COMM_NULL", "MPI_DATATYPE_NULL",
 * "MPI_WIN_NULL"); predefined objects carry their own names; objects the
 * program created have an empty name until it sets one (which is then
 * returned, truncated to MPI_MAX_OBJECT_NAME - 1 characters); setting a name
 * on a null handle is still an error. */
#include <stdio.h>
#include <string.h>

#include "../mpi/check.h"

static void expect_name(int rc, const char *got, int len, const char *want, const char *what) {
    CHECK(error_class_of(rc) == MPI_SUCCESS, "%s: returned error class %d, not MPI_SUCCESS", what,
          error_class_of(rc));
    if (rc != MPI_SUCCESS) return;
    CHECK(strcmp(got, want) == 0, "%s: name \"%s\", expected \"%s\"", what, got, want);
    CHECK(len == (int)strlen(want), "%s: resultlen %d, expected %d", what, len, (int)strlen(want));
}

static void comm_name(MPI_Comm comm, const char *want, const char *what) {
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    int rc = MPI_Comm_get_name(comm, name, &len);
    name[MPI_MAX_OBJECT_NAME - 1] = '\0';
    expect_name(rc, name, len, want, what);
}

static void type_name(MPI_Datatype type, const char *want) {
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    int rc = MPI_Type_get_name(type, name, &len);
    name[MPI_MAX_OBJECT_NAME - 1] = '\0';
    expect_name(rc, name, len, want, want[0] ? want : "a new derived type");
}

static void win_name(MPI_Win win, const char *want, const char *what) {
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    int rc = MPI_Win_get_name(win, name, &len);
    name[MPI_MAX_OBJECT_NAME - 1] = '\0';
    expect_name(rc, name, len, want, what);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* ---- communicators ---- */
    comm_name(MPI_COMM_NULL, "MPI_COMM_NULL", "MPI_Comm_get_name(MPI_COMM_NULL)");
    comm_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "MPI_Comm_get_name(MPI_COMM_WORLD)");
    comm_name(MPI_COMM_SELF, "MPI_COMM_SELF", "MPI_Comm_get_name(MPI_COMM_SELF)");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    comm_name(dup, "", "a duplicate of MPI_COMM_WORLD");
    CHECK_MPI(MPI_Comm_set_name(dup, "my communicator"));
    comm_name(dup, "my communicator", "a named duplicate");
    char longname[2 * MPI_MAX_OBJECT_NAME];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_MPI(MPI_Comm_set_name(dup, longname));
    longname[MPI_MAX_OBJECT_NAME - 1] = '\0';
    comm_name(dup, longname, "a communicator with a too long name");
    MPI_Comm_free(&dup);
    CHECK(error_class_of(MPI_Comm_set_name(MPI_COMM_NULL, "x")) == MPI_ERR_COMM,
          "MPI_Comm_set_name(MPI_COMM_NULL) did not fail with MPI_ERR_COMM");

    /* ---- datatypes ---- */
    type_name(MPI_DATATYPE_NULL, "MPI_DATATYPE_NULL");
    type_name(MPI_CHAR, "MPI_CHAR");
    type_name(MPI_INT, "MPI_INT");
    type_name(MPI_UNSIGNED, "MPI_UNSIGNED");
    type_name(MPI_LONG, "MPI_LONG");
    type_name(MPI_DOUBLE, "MPI_DOUBLE");
    type_name(MPI_FLOAT, "MPI_FLOAT");
    type_name(MPI_BYTE, "MPI_BYTE");
    type_name(MPI_PACKED, "MPI_PACKED");
    type_name(MPI_INT64_T, "MPI_INT64_T");
    type_name(MPI_UINT8_T, "MPI_UINT8_T");
    type_name(MPI_C_BOOL, "MPI_C_BOOL");
    type_name(MPI_AINT, "MPI_AINT");
    type_name(MPI_COUNT, "MPI_COUNT");
    type_name(MPI_OFFSET, "MPI_OFFSET");
    type_name(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    type_name(MPI_2INT, "MPI_2INT");
    type_name(MPI_INTEGER, "MPI_INTEGER");
    type_name(MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION");
    MPI_Datatype derived;
    MPI_Type_contiguous(2, MPI_INT, &derived);
    type_name(derived, "");
    CHECK_MPI(MPI_Type_set_name(derived, "pair of ints"));
    type_name(derived, "pair of ints");
    MPI_Type_free(&derived);
    CHECK(error_class_of(MPI_Type_set_name(MPI_DATATYPE_NULL, "x")) == MPI_ERR_TYPE,
          "MPI_Type_set_name(MPI_DATATYPE_NULL) did not fail with MPI_ERR_TYPE");

    /* ---- windows ---- */
    win_name(MPI_WIN_NULL, "MPI_WIN_NULL", "MPI_Win_get_name(MPI_WIN_NULL)");
    int memory = 0;
    MPI_Win win;
    MPI_Win_create(&memory, sizeof memory, sizeof memory, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    win_name(win, "", "a new window");
    CHECK_MPI(MPI_Win_set_name(win, "my window"));
    win_name(win, "my window", "a named window");
    MPI_Win_free(&win);
    CHECK(error_class_of(MPI_Win_set_name(MPI_WIN_NULL, "x")) == MPI_ERR_WIN,
          "MPI_Win_set_name(MPI_WIN_NULL) did not fail with MPI_ERR_WIN");

    MPI_Finalize();
    return report("object_names");
}
