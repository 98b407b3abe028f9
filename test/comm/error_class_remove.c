/* MPI_Remove_error_class / _code / _string (MPI-4.1 9.5): a user class that
 * still has user codes cannot be removed (MPI_ERR_ARG, and the class stays
 * as it was: its codes still map to it, its string is kept, codes can still
 * be added to it); once its codes are removed, removing the class succeeds
 * and the class is gone (adding a code to it or removing it again is
 * MPI_ERR_ARG). Predefined classes and codes cannot be removed, and a class
 * is not removed through MPI_Remove_error_code nor a code through
 * MPI_Remove_error_class. MPI_LASTUSEDCODE follows. */
#include <string.h>

#include "../mpi/check.h"

#define EXPECT_CLASS(call, cls)                                                                   \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        CHECK(error_class_of(rc_) == (cls), "%s returned class %d, expected %s (%d)", #call,      \
              error_class_of(rc_), #cls, (cls));                                                  \
    } while (0)

static int last_used_code(void) {
    int *value = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &flag);
    return flag && value ? *value : -1;
}

static void expect_string(int code, const char *want, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, want) == 0 && len == (int)strlen(want), "%s: string \"%s\" (%d), expected \"%s\"", what,
          text, len, want);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    int cls = -1, code1 = -1, code2 = -1, got = -1;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_string(cls, "my class"));
    CHECK_MPI(MPI_Add_error_code(cls, &code1));
    CHECK_MPI(MPI_Add_error_code(cls, &code2));
    CHECK_MPI(MPI_Add_error_string(code1, "my first code"));
    CHECK(last_used_code() == code2, "MPI_LASTUSEDCODE %d, expected %d", last_used_code(), code2);

    /* Codes still belong to the class: it cannot go, and nothing changes. */
    EXPECT_CLASS(MPI_Remove_error_class(cls), MPI_ERR_ARG);
    CHECK_MPI(MPI_Error_class(code1, &got));
    CHECK(got == cls, "after the refused removal, code1's class is %d, not %d", got, cls);
    CHECK_MPI(MPI_Error_class(cls, &got));
    CHECK(got == cls, "after the refused removal, the class's class is %d, not %d", got, cls);
    expect_string(cls, "my class", "the class after the refused removal");
    expect_string(code1, "my first code", "code1 after the refused removal");
    int code3 = -1;
    CHECK_MPI(MPI_Add_error_code(cls, &code3));  /* the class still takes codes */
    CHECK(last_used_code() == code3, "MPI_LASTUSEDCODE %d, expected %d", last_used_code(), code3);

    /* The wrong call for the kind of value. */
    EXPECT_CLASS(MPI_Remove_error_class(code1), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Remove_error_code(cls), MPI_ERR_ARG);
    CHECK_MPI(MPI_Error_class(code1, &got));
    CHECK(got == cls, "code1 changed class after MPI_Remove_error_class(code1)");
    /* Predefined ones. */
    EXPECT_CLASS(MPI_Remove_error_class(MPI_ERR_ARG), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Remove_error_class(MPI_SUCCESS), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Remove_error_code(MPI_ERR_OTHER), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Remove_error_string(MPI_ERR_OTHER), MPI_ERR_ARG);

    /* One code removed: still refused. */
    CHECK_MPI(MPI_Remove_error_code(code1));
    EXPECT_CLASS(MPI_Remove_error_class(cls), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Remove_error_code(code1), MPI_ERR_ARG);  /* already gone */
    CHECK_MPI(MPI_Remove_error_code(code3));
    EXPECT_CLASS(MPI_Remove_error_class(cls), MPI_ERR_ARG);
    CHECK(last_used_code() == code2, "MPI_LASTUSEDCODE %d, expected %d", last_used_code(), code2);

    /* The last code removed: now the class goes. */
    CHECK_MPI(MPI_Remove_error_string(code2));
    CHECK_MPI(MPI_Remove_error_code(code2));
    CHECK_MPI(MPI_Remove_error_class(cls));
    EXPECT_CLASS(MPI_Remove_error_class(cls), MPI_ERR_ARG);
    int code4 = -1;
    EXPECT_CLASS(MPI_Add_error_code(cls, &code4), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Add_error_string(cls, "again"), MPI_ERR_ARG);
    CHECK(last_used_code() == MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d after removing everything, expected %d",
          last_used_code(), MPI_ERR_LASTCODE);

    /* A class with no codes at all goes at once. */
    int lone = -1;
    CHECK_MPI(MPI_Add_error_class(&lone));
    CHECK(lone != cls, "a removed class number was handed out again");
    CHECK_MPI(MPI_Remove_error_class(lone));

    MPI_Finalize();
    return report("comm_error_class_remove");
}
