/* Connects to every port in a range on 127.0.0.1 and misbehaves; a port where
 * an Axon rank listens must close the connection (within 5 s) without the job
 * noticing anything else. Not an MPI program.
 * Usage: intruder MODE PORT_MIN PORT_RANGE NAMESPACE
 *   garbage    bytes that are no handshake at all
 *   secret     a well-formed handshake for this job with a wrong secret
 *   oversized  a handshake header announcing a huge length
 * Exit 0 when at least one port accepted and every accepting port closed.
 * The handshake layout (src/btl/tcp/tcp.cpp, docs/tcp.md): magic u32
 * 0x41584853, version u16 1, kind u16 1, length u32 36, from i32, to i32,
 * link u32, job u64 (FNV-1a of the namespace), token 16 bytes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "stranger_hello.h"

/* Waits up to 5 s for the peer to close; 1 if it did. */
static int closed_by_peer(int fd)
{
    char buf[256];
    for (int waited = 0; waited < 5000;) {
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, 100);
        if (n == 0) {
            waited += 100;
            continue;
        }
        ssize_t r = read(fd, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) return 1;
        if (r < 0 && errno != EINTR) return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: intruder garbage|secret|oversized PORT_MIN PORT_RANGE NAMESPACE\n");
        return 2;
    }
    const char *mode = argv[1];
    int first = atoi(argv[2]), range = atoi(argv[3]);
    unsigned char msg[256];
    size_t len;
    struct hello h = stranger_hello(fnv1a(argv[4]));
    srand((unsigned)time(NULL));
    for (int i = 0; i < 16; i++) h.token[i] = (uint8_t)rand();
    if (!strcmp(mode, "garbage")) {
        len = (size_t)snprintf((char *)msg, sizeof msg, "GET / HTTP/1.0\r\nHost: axon\r\n\r\n");
    } else if (!strcmp(mode, "secret")) {
        memcpy(msg, &h, sizeof h);
        len = sizeof h;
    } else if (!strcmp(mode, "oversized")) {
        h.length = 0x7fffffffu;
        memcpy(msg, &h, sizeof h);
        len = 12; /* the header alone: the length must be refused at once */
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    int accepted = 0, stayed_open = 0;
    for (int port = first; port < first + range; port++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {0};
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd);
            continue;
        }
        accepted++;
        if (write(fd, msg, len) != (ssize_t)len) perror("write");
        if (!closed_by_peer(fd)) {
            fprintf(stderr, "intruder: port %d kept the %s connection open\n", port, mode);
            stayed_open++;
        }
        close(fd);
    }
    printf("intruder %s: %d port(s) accepted, %d stayed open\n", mode, accepted, stayed_open);
    return accepted > 0 && stayed_open == 0 ? 0 : 1;
}
