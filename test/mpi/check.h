/* Shared helpers for the MPI-level tests in test/mpi/.
 *
 * CHECK(cond, fmt, ...) prints "[rank R] file:line: failed: cond -- message"
 * and counts the failure instead of stopping, so one run reports every broken
 * behaviour. A test ends with `return report("name");` after MPI_Finalize: the
 * exit status is non-zero when this rank saw any failure, which makes mpirun
 * exit non-zero.
 *
 * fill_pattern/first_mismatch give every message a deterministic content that
 * depends on a seed and on the byte position (not periodic in 256), so shifted,
 * truncated or mixed-up messages are caught and the first bad byte is named. */
#ifndef AXON_TEST_MPI_CHECK_H
#define AXON_TEST_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

/* The rank is looked up at failure time so CHECK works before MPI_Init and
 * after MPI_Finalize too (it then prints rank -1). */
static inline int check_my_rank(void)
{
    int initialized = 0, finalized = 0, rank = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

__attribute__((format(printf, 4, 5)))
static inline void check_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    fprintf(stderr, "[rank %d] %s:%d: failed: %s -- %s\n", check_my_rank(), file, line, cond,
            message);
    fflush(stderr);
    check_failures++;
}

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond))                                                       \
            check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);            \
    } while (0)

/* An MPI call that must succeed; on failure the error string is printed. */
#define CHECK_MPI(call)                                                    \
    do {                                                                   \
        int check_rc_ = (call);                                            \
        if (check_rc_ != MPI_SUCCESS) {                                    \
            char check_msg_[MPI_MAX_ERROR_STRING] = "";                    \
            int check_len_ = 0;                                            \
            MPI_Error_string(check_rc_, check_msg_, &check_len_);          \
            check_fail(__FILE__, __LINE__, #call, "returned %d (%s)",      \
                       check_rc_, check_msg_);                             \
        }                                                                  \
    } while (0)

/* The error class an MPI call returned (MPI_SUCCESS stays MPI_SUCCESS). */
static inline int error_class_of(int rc)
{
    int error_class = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &error_class);
    return error_class;
}

/* Byte i of a message with this seed: a cheap integer hash, so neighbouring
 * bytes and neighbouring seeds differ. */
static inline unsigned char pattern_byte(size_t i, unsigned seed)
{
    uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + 0x9e3779b9u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return (unsigned char)x;
}

static inline void fill_pattern(void *buffer, size_t bytes, unsigned seed)
{
    unsigned char *p = (unsigned char *)buffer;
    for (size_t i = 0; i < bytes; i++)
        p[i] = pattern_byte(i, seed);
}

/* Index of the first byte that differs from the pattern, or -1 if all match. */
static inline long first_mismatch(const void *buffer, size_t bytes, unsigned seed)
{
    const unsigned char *p = (const unsigned char *)buffer;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != pattern_byte(i, seed))
            return (long)i;
    return -1;
}

#define CHECK_PATTERN(buffer, bytes, seed, ...)                                          \
    do {                                                                                 \
        long check_bad_ = first_mismatch((buffer), (bytes), (seed));                     \
        if (check_bad_ >= 0) {                                                           \
            char check_what_[256];                                                       \
            snprintf(check_what_, sizeof check_what_, __VA_ARGS__);                      \
            check_fail(__FILE__, __LINE__, "data matches pattern",                       \
                       "%s: first bad byte %ld of %zu: got 0x%02x, expected 0x%02x",     \
                       check_what_, check_bad_, (size_t)(bytes),                         \
                       ((const unsigned char *)(buffer))[check_bad_],                    \
                       pattern_byte((size_t)check_bad_, (seed)));                        \
        }                                                                                \
    } while (0)

/* malloc that never returns NULL for size 0 and aborts the test when memory
 * runs out (a test that cannot allocate cannot say anything useful). */
static inline void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        exit(2);
    }
    return p;
}

/* Partner for pairwise tests: 0<->1, 2<->3, ...; a rank without a partner
 * (odd size, or size 1) talks to itself. */
static inline int pair_partner(int rank, int size)
{
    int partner = rank ^ 1;
    return partner < size ? partner : rank;
}

/* Call after MPI_Finalize: prints the verdict and gives the exit status. */
static inline int report(const char *test_name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", test_name, check_failures);
        return 1;
    }
    printf("%s: ok\n", test_name);
    return 0;
}

/* Allocates and starts a handle on the MPI_T counter `name` in session `s`,
 * or returns MPI_T_PVAR_HANDLE_NULL when this MPI has no such counter (tests
 * that also run under MPICH / Open MPI then skip their counter checks). */
static inline MPI_T_pvar_handle check_pvar_start(MPI_T_pvar_session s, const char *name)
{
    int index, count;
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS) return h;
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, index, NULL, &h, &count));
    MPI_T_pvar_start(s, h);
    return h;
}

#endif
