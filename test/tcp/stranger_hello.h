/* The btl/tcp handshake as a stranger writes it (test/tcp/intruder.c and
 * flooder.c): the layout of src/btl/tcp/wire.h and docs/tcp.md, for tools
 * that are no MPI program and do not link Axon. */
#ifndef AXON_TEST_TCP_STRANGER_HELLO_H
#define AXON_TEST_TCP_STRANGER_HELLO_H

#include <stdint.h>

struct hello {
    uint32_t magic;  /* 0x41584853 */
    uint16_t version, kind;
    uint32_t length; /* 36 */
    int32_t from, to;
    uint32_t link;
    uint64_t job;    /* FNV-1a of the namespace */
    uint8_t token[16];
};

/* A well-formed first handshake of job JOB (its token is the caller's). */
static inline struct hello stranger_hello(uint64_t job)
{
    struct hello h = {0x41584853u, 1, 1, 36, 0, 0, 0, job, {0}};
    return h;
}

/* The job id of a namespace: FNV-1a, as btl/tcp computes it. */
static inline uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

#endif
