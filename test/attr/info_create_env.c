/* MPI_Info_create_env describes this process's command line whatever argc/argv
 * it is handed: main's own vector, argc 0 with argv NULL, and an argc/argv
 * pair that does not describe an argument vector (MPICH's info/infocreateenv
 * passes &argc and &argv) must all give the same "command" and "argv" as
 * MPI_INFO_ENV, before MPI_Init, after it and after MPI_Finalize, without
 * an error and without reading through the bogus pointers. The whole object
 * (every key and value) is the same whenever it is created: MPICH's
 * info/infocreateenv compares one made before MPI_Init with ones made after
 * MPI_Init and after MPI_Finalize. Run with arguments "one two". */
#include <stdint.h>

#include "../mpi/check.h"

static char command_env[MPI_MAX_INFO_VAL], argv_env[MPI_MAX_INFO_VAL];
static int command_flag, argv_flag; /* whether MPI_INFO_ENV has the key at all */

static void value_of(MPI_Info info, const char *key, char *out, int *flag)
{
    int buflen = MPI_MAX_INFO_VAL;
    out[0] = '\0';
    CHECK_MPI(MPI_Info_get_string(info, key, &buflen, out, flag));
}

static MPI_Info first = MPI_INFO_NULL; /* the first MPI_Info_create_env result */

/* Every key of `a` is in `b` with the same value, and both have as many keys. */
static void expect_same_object(MPI_Info a, MPI_Info b, const char *what)
{
    int na = -1, nb = -2;
    CHECK_MPI(MPI_Info_get_nkeys(a, &na));
    CHECK_MPI(MPI_Info_get_nkeys(b, &nb));
    CHECK(na == nb, "%s: %d keys, the first MPI_Info_create_env had %d", what, nb, na);
    for (int i = 0; i < na; i++) {
        char key[MPI_MAX_INFO_KEY], va[MPI_MAX_INFO_VAL], vb[MPI_MAX_INFO_VAL];
        int fa = 0, fb = 0;
        CHECK_MPI(MPI_Info_get_nthkey(a, i, key));
        value_of(a, key, va, &fa);
        value_of(b, key, vb, &fb);
        CHECK(fa && fb && strcmp(va, vb) == 0, "%s: key %s is '%s' (flag %d), first had '%s'", what, key, vb, fb, va);
    }
}

static void expect_same_as_env(int argc, char **argv, const char *what)
{
    MPI_Info info = MPI_INFO_NULL;
    char v[MPI_MAX_INFO_VAL];
    int flag = 0;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &info));
    if (info == MPI_INFO_NULL) return;
    value_of(info, "command", v, &flag);
    CHECK(flag == command_flag && strcmp(v, command_env) == 0, "%s: command '%s' (flag %d), expected '%s'", what, v,
          flag, command_env);
    value_of(info, "argv", v, &flag);
    CHECK(flag == argv_flag && strcmp(v, argv_env) == 0, "%s: argv '%s' (flag %d), expected '%s'", what, v, flag,
          argv_env);
    if (first == MPI_INFO_NULL) {
        first = info;
        return;
    }
    expect_same_object(first, info, what);
    CHECK_MPI(MPI_Info_free(&info));
}

static void all_forms(int argc, char **argv, const char *when)
{
    char what[128];
    snprintf(what, sizeof what, "%s, main's argc/argv", when);
    expect_same_as_env(argc, argv, what);
    snprintf(what, sizeof what, "%s, argc 0 and argv NULL", when);
    expect_same_as_env(0, NULL, what);
    /* Not an argument vector at all: the address of argv, and argc a huge or a
     * negative number. */
    snprintf(what, sizeof what, "%s, bogus pair (huge argc)", when);
    expect_same_as_env((int)0x7fff0000, (char **)&argv, what);
    snprintf(what, sizeof what, "%s, bogus pair (negative argc)", when);
    expect_same_as_env(-12345, (char **)&argv, what);
}

int main(int argc, char **argv)
{
    /* Reference values: the ones MPI_INFO_ENV has, also readable before MPI_Init.
     * The keys are optional (MPICH leaves them out); Axon sets both. */
    value_of(MPI_INFO_ENV, "command", command_env, &command_flag);
    CHECK(!command_flag || strcmp(command_env, argv[0]) == 0, "MPI_INFO_ENV command '%s', expected '%s'",
          command_env, argv[0]);
    value_of(MPI_INFO_ENV, "argv", argv_env, &argv_flag);
    CHECK(!argv_flag || strcmp(argv_env, "one two") == 0, "MPI_INFO_ENV argv '%s', expected 'one two'", argv_env);

    all_forms(argc, argv, "before MPI_Init");
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    all_forms(argc, argv, "after MPI_Init");
    MPI_Finalize();
    all_forms(argc, argv, "after MPI_Finalize");
    MPI_Info_free(&first);
    return report("attr_info_create_env");
}
