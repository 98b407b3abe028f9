/* Info objects (MPI-4.1 chapter 10): set/get/get_string/get_valuelen,
 * nkeys/nthkey in insertion order, delete, dup, free, the length limits,
 * MPI_INFO_ENV and MPI_Info_create_env, and a hint through
 * MPI_Comm_set_info / MPI_Comm_get_info. Run with arguments "alpha beta". */
#include <limits.h>
#include <unistd.h>

#include "../mpi/check.h"

static void expect_class(int rc, int cls, const char *what)
{
    CHECK(error_class_of(rc) == cls, "%s: class %d, expected %d", what, error_class_of(rc), cls);
}

/* The value of key in info ("" with flag 0 when absent). */
static const char *value_of(MPI_Info info, const char *key, int *flag)
{
    static char buf[MPI_MAX_INFO_VAL + 1];
    int buflen = (int)sizeof buf;
    buf[0] = '\0';
    CHECK_MPI(MPI_Info_get_string(info, key, &buflen, buf, flag));
    return buf;
}

static void test_basics(void)
{
    MPI_Info info, copy;
    int nkeys = -1, flag, len;
    char key[MPI_MAX_INFO_KEY + 1];
    CHECK_MPI(MPI_Info_create(&info));
    CHECK(info != MPI_INFO_NULL, "MPI_Info_create gave MPI_INFO_NULL");
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 0, "new info has %d keys", nkeys);

    CHECK_MPI(MPI_Info_set(info, "zeta", "1"));
    CHECK_MPI(MPI_Info_set(info, "alpha", "two"));
    CHECK_MPI(MPI_Info_set(info, "mid", "three 3"));
    CHECK_MPI(MPI_Info_set(info, "alpha", "replaced")); /* keeps its place */
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 3, "%d keys, expected 3", nkeys);
    static const char *expected[] = {"zeta", "alpha", "mid"};
    for (int i = 0; i < 3; i++) {
        key[0] = '\0';
        CHECK_MPI(MPI_Info_get_nthkey(info, i, key));
        CHECK(strcmp(key, expected[i]) == 0, "key %d is '%s', expected '%s'", i, key, expected[i]);
    }
    expect_class(MPI_Info_get_nthkey(info, 3, key), MPI_ERR_ARG, "nthkey past the end");
    expect_class(MPI_Info_get_nthkey(info, -1, key), MPI_ERR_ARG, "nthkey -1");

    const char *v = value_of(info, "alpha", &flag);
    CHECK(flag == 1 && strcmp(v, "replaced") == 0, "alpha = '%s' (flag %d)", v, flag);
    v = value_of(info, "nothere", &flag);
    CHECK(flag == 0, "missing key found");

    CHECK_MPI(MPI_Info_get_valuelen(info, "mid", &len, &flag));
    CHECK(flag == 1 && len == 7, "valuelen of 'three 3': %d (flag %d)", len, flag);
    CHECK_MPI(MPI_Info_get_valuelen(info, "nothere", &len, &flag));
    CHECK(flag == 0, "valuelen of a missing key: flag %d", flag);

    /* MPI_Info_get_string: buflen in = size of value, out = length + 1;
     * a short buffer gets a truncated, terminated value. */
    char small[8];
    int buflen = 0;
    memset(small, 'X', sizeof small);
    CHECK_MPI(MPI_Info_get_string(info, "mid", &buflen, small, &flag));
    CHECK(flag == 1 && buflen == 8 && small[0] == 'X', "buflen 0: flag %d buflen %d, value touched", flag,
          buflen);
    buflen = 4;
    CHECK_MPI(MPI_Info_get_string(info, "mid", &buflen, small, &flag));
    CHECK(flag == 1 && buflen == 8 && strcmp(small, "thr") == 0, "buflen 4: '%s' buflen %d", small, buflen);
    buflen = 8;
    CHECK_MPI(MPI_Info_get_string(info, "mid", &buflen, small, &flag));
    CHECK(flag == 1 && buflen == 8 && strcmp(small, "three 3") == 0, "buflen 8: '%s' buflen %d", small, buflen);

    /* Deprecated MPI_Info_get: valuelen excludes the terminator; a longer
     * value is truncated (MPICH 4.0 returns an error instead). */
    char got[16];
#ifdef AXON_MPI_H
    memset(got, 'X', sizeof got);
    CHECK_MPI(MPI_Info_get(info, "mid", 3, got, &flag));
    CHECK(flag == 1 && strcmp(got, "thr") == 0, "Info_get valuelen 3: '%.3s'", got);
#endif
    CHECK_MPI(MPI_Info_get(info, "mid", (int)sizeof got - 1, got, &flag));
    CHECK(flag == 1 && strcmp(got, "three 3") == 0, "Info_get: '%s'", got);

    /* dup is a deep copy. */
    CHECK_MPI(MPI_Info_dup(info, &copy));
    CHECK_MPI(MPI_Info_set(copy, "extra", "x"));
    CHECK_MPI(MPI_Info_delete(info, "zeta"));
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 2, "original has %d keys after delete", nkeys);
    CHECK_MPI(MPI_Info_get_nkeys(copy, &nkeys));
    CHECK(nkeys == 4, "copy has %d keys", nkeys);
    CHECK_MPI(MPI_Info_get_nthkey(copy, 0, key));
    CHECK(strcmp(key, "zeta") == 0, "copy's first key '%s'", key);
    CHECK_MPI(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "alpha") == 0, "after deleting the first key, first is '%s'", key);
    v = value_of(copy, "zeta", &flag);
    CHECK(flag == 1 && strcmp(v, "1") == 0, "copy lost zeta");
    value_of(info, "extra", &flag);
    CHECK(flag == 0, "set on the copy changed the original");

    /* Deleting a missing key. */
    expect_class(MPI_Info_delete(info, "zeta"), MPI_ERR_INFO_NOKEY, "delete of a missing key");

    CHECK_MPI(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "Info_free did not set MPI_INFO_NULL");
    CHECK_MPI(MPI_Info_free(&copy));
    CHECK(copy == MPI_INFO_NULL, "Info_free did not set MPI_INFO_NULL");
}

static void test_limits(void)
{
    MPI_Info info;
    static char key[MPI_MAX_INFO_KEY + 8], value[MPI_MAX_INFO_VAL + 8];
    int flag, len;
    CHECK_MPI(MPI_Info_create(&info));

    /* Keys: up to MPI_MAX_INFO_KEY - 1 characters, so that any key fits a
     * char[MPI_MAX_INFO_KEY] buffer with its terminator. */
    memset(key, 'k', MPI_MAX_INFO_KEY - 1);
    key[MPI_MAX_INFO_KEY - 1] = '\0';
    CHECK_MPI(MPI_Info_set(info, key, "v"));
    char nth[MPI_MAX_INFO_KEY + 1];
    CHECK_MPI(MPI_Info_get_nthkey(info, 0, nth));
    CHECK(strcmp(nth, key) == 0, "longest key came back different");
    memset(key, 'k', MPI_MAX_INFO_KEY + 1);
    key[MPI_MAX_INFO_KEY + 1] = '\0';
    expect_class(MPI_Info_set(info, key, "v"), MPI_ERR_INFO_KEY, "set with a key of MPI_MAX_INFO_KEY+1");
    expect_class(MPI_Info_get_valuelen(info, key, &len, &flag), MPI_ERR_INFO_KEY, "valuelen of a too long key");
    expect_class(MPI_Info_delete(info, key), MPI_ERR_INFO_KEY, "delete of a too long key");
#ifdef AXON_MPI_H
    key[MPI_MAX_INFO_KEY] = '\0';
    expect_class(MPI_Info_set(info, key, "v"), MPI_ERR_INFO_KEY, "set with a key of MPI_MAX_INFO_KEY");
    expect_class(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY, "set with an empty key");
#endif

    /* Values: up to MPI_MAX_INFO_VAL characters. */
    memset(value, 'v', MPI_MAX_INFO_VAL);
    value[MPI_MAX_INFO_VAL] = '\0';
    CHECK_MPI(MPI_Info_set(info, "long", value));
    CHECK_MPI(MPI_Info_get_valuelen(info, "long", &len, &flag));
    CHECK(flag == 1 && len == MPI_MAX_INFO_VAL, "valuelen of the longest value: %d", len);
    memset(value, 'v', MPI_MAX_INFO_VAL + 1);
    value[MPI_MAX_INFO_VAL + 1] = '\0';
    expect_class(MPI_Info_set(info, "long", value), MPI_ERR_INFO_VALUE, "set with a value of MPI_MAX_INFO_VAL+1");
    CHECK_MPI(MPI_Info_get_valuelen(info, "long", &len, &flag));
    CHECK(flag == 1 && len == MPI_MAX_INFO_VAL, "failed set changed the value (length %d)", len);

    /* Bad handles and arguments. */
#ifdef AXON_MPI_H
    /* MPI_ERR_INFO: "invalid info argument" (MPICH 4.0 says MPI_ERR_ARG). */
    int nkeys;
    expect_class(MPI_Info_set(MPI_INFO_NULL, "a", "b"), MPI_ERR_INFO, "set on MPI_INFO_NULL");
    expect_class(MPI_Info_get_nkeys(MPI_INFO_NULL, &nkeys), MPI_ERR_INFO, "nkeys of MPI_INFO_NULL");
    MPI_Info null_info = MPI_INFO_NULL;
    expect_class(MPI_Info_free(&null_info), MPI_ERR_INFO, "free of MPI_INFO_NULL");
#endif
    expect_class(MPI_Info_set(info, NULL, "b"), MPI_ERR_INFO_KEY, "NULL key"); /* as MPICH */
    CHECK_MPI(MPI_Info_free(&info));
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* MPI-4.1 11.2.4: command, argv, maxprocs, soft, host, arch, wdir, file,
 * thread_level; an implementation sets those it knows. */
static void test_env(int argc, char **argv, int size)
{
    int flag, nkeys;
    const char *v;
    char expect[64];
#ifndef AXON_MPI_H
    /* MPICH 4.0 under Hydra leaves MPI_INFO_ENV empty. */
    return;
#endif
    v = value_of(MPI_INFO_ENV, "command", &flag);
    CHECK(flag == 1 && ends_with(v, "info"), "MPI_INFO_ENV command = '%s' (flag %d)", v, flag);
    v = value_of(MPI_INFO_ENV, "argv", &flag);
    CHECK(flag == 1 && strcmp(v, "alpha beta") == 0, "MPI_INFO_ENV argv = '%s' (flag %d)", v, flag);
    v = value_of(MPI_INFO_ENV, "maxprocs", &flag);
    snprintf(expect, sizeof expect, "%d", size);
    CHECK(flag == 1 && strcmp(v, expect) == 0, "MPI_INFO_ENV maxprocs = '%s', expected %s", v, expect);
#ifdef AXON_MPI_H
    char cwd[PATH_MAX], host[256];
    v = value_of(MPI_INFO_ENV, "wdir", &flag);
    CHECK(flag == 1 && getcwd(cwd, sizeof cwd) && strcmp(v, cwd) == 0, "MPI_INFO_ENV wdir = '%s'", v);
    v = value_of(MPI_INFO_ENV, "host", &flag);
    CHECK(flag == 1 && gethostname(host, sizeof host) == 0 && strcmp(v, host) == 0, "MPI_INFO_ENV host = '%s'",
          v);
    v = value_of(MPI_INFO_ENV, "arch", &flag);
    CHECK(flag == 1 && v[0], "MPI_INFO_ENV arch missing");
    v = value_of(MPI_INFO_ENV, "thread_level", &flag);
    CHECK(flag == 1 && strcmp(v, "MPI_THREAD_SINGLE") == 0, "MPI_INFO_ENV thread_level = '%s'", v);
    /* The predefined object cannot be changed or freed. */
    expect_class(MPI_Info_set(MPI_INFO_ENV, "x", "y"), MPI_ERR_INFO, "set on MPI_INFO_ENV");
    MPI_Info env = MPI_INFO_ENV;
    expect_class(MPI_Info_free(&env), MPI_ERR_INFO, "free of MPI_INFO_ENV");
#endif
    CHECK_MPI(MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys));
    CHECK(nkeys >= 3, "MPI_INFO_ENV has %d keys", nkeys);

    /* A copy of MPI_INFO_ENV is an ordinary, modifiable object. */
    MPI_Info copy;
    CHECK_MPI(MPI_Info_dup(MPI_INFO_ENV, &copy));
    CHECK_MPI(MPI_Info_set(copy, "command", "changed"));
    v = value_of(MPI_INFO_ENV, "command", &flag);
    CHECK(flag == 1 && ends_with(v, "info"), "changing a dup changed MPI_INFO_ENV");
    CHECK_MPI(MPI_Info_free(&copy));

#if MPI_VERSION >= 4
    /* MPI_Info_create_env with this process's own arguments. */
    MPI_Info made;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &made));
    v = value_of(made, "command", &flag);
    CHECK(flag == 1 && strcmp(v, argv[0]) == 0, "create_env command = '%s', expected '%s'", v, argv[0]);
    v = value_of(made, "argv", &flag);
    CHECK(flag == 1 && strcmp(v, "alpha beta") == 0, "create_env argv = '%s'", v);
    CHECK_MPI(MPI_Info_set(made, "mine", "1")); /* a new object: modifiable */
    CHECK_MPI(MPI_Info_free(&made));
#else
    (void)argc, (void)argv;
#endif
    (void)starts_with;
}

/* A hint set on a communicator comes back from MPI_Comm_get_info. */
static void test_comm_info(void)
{
    MPI_Comm c;
    MPI_Info in, out;
    int flag;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Info_create(&in));
    CHECK_MPI(MPI_Info_set(in, "mpi_assert_no_any_tag", "true"));
    CHECK_MPI(MPI_Comm_set_info(c, in));
    CHECK_MPI(MPI_Info_free(&in)); /* the communicator keeps its own copy */
    CHECK_MPI(MPI_Comm_get_info(c, &out));
    const char *v = value_of(out, "mpi_assert_no_any_tag", &flag);
    CHECK(flag == 1 && strcmp(v, "true") == 0, "hint came back as '%s' (flag %d)", v, flag);
    /* The returned object belongs to the caller. */
    CHECK_MPI(MPI_Info_set(out, "mpi_assert_no_any_tag", "false"));
    CHECK_MPI(MPI_Info_free(&out));
    CHECK_MPI(MPI_Comm_get_info(c, &out));
    v = value_of(out, "mpi_assert_no_any_tag", &flag);
    CHECK(flag == 1 && strcmp(v, "true") == 0, "changing the returned info changed the hint: '%s'", v);
    CHECK_MPI(MPI_Info_free(&out));
    CHECK_MPI(MPI_Comm_free(&c));
}

/* MPI-4 allows the info calls before MPI_Init. */
static void test_before_init(int argc, char **argv)
{
    MPI_Info info;
    int flag, nkeys;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "early", "yes"));
    const char *v = value_of(info, "early", &flag);
    CHECK(flag == 1 && strcmp(v, "yes") == 0, "info before MPI_Init: '%s'", v);
    CHECK_MPI(MPI_Info_free(&info));
#if MPI_VERSION >= 4
    CHECK_MPI(MPI_Info_create_env(argc, argv, &info));
    CHECK_MPI(MPI_Info_get_nkeys(info, &nkeys));
#ifdef AXON_MPI_H
    v = value_of(info, "command", &flag);
    CHECK(flag == 1 && strcmp(v, argv[0]) == 0, "create_env before MPI_Init: command '%s'", v);
    value_of(info, "maxprocs", &flag);
    CHECK(flag == 0, "create_env before MPI_Init knows maxprocs");
#endif
    CHECK_MPI(MPI_Info_free(&info));
#else
    (void)argc, (void)argv, (void)nkeys;
#endif
}

int main(int argc, char **argv)
{
    int size;
    test_before_init(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Info calls have no communicator: their errors go to MPI_COMM_SELF. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_basics();
    test_limits();
    test_env(argc, argv, size);
    test_comm_info();
    MPI_Finalize();
    return report("attr_info");
}
