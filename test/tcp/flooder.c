/* Floods every port of a range on 127.0.0.1 with connections, as a port
 * scan or a hostile user would, for flood.sh. Not an MPI program.
 * Usage: flooder PORT_MIN PORT_RANGE SECONDS PER_PORT GO_FILE [NAMESPACE]
 * Keeps up to PER_PORT connections open to every port that accepts; of
 * every 8 connections, 5 stay idle (they send nothing, ever), one sends the
 * first 12 bytes of a handshake and stalls, one sends a well-formed
 * handshake with a wrong secret (for this job when NAMESPACE is given) and
 * one sends garbage. A connection the other end closes is
 * replaced at once, so the flood stays at full strength until SECONDS have
 * passed. GO_FILE is written once some port got PER_PORT connections.
 * Prints what it did; exit 0 when some port accepted connections.
 * The handshake layout: src/btl/tcp/wire.h, docs/tcp.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "stranger_hello.h"

enum { kIdle, kConnecting, kOpen };

struct conn {
    int fd;
    int port;
    int state;
    int kind; /* 0 idle, 1 wrong-secret hello, 2 garbage, 3 stalled handshake */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: flooder PORT_MIN PORT_RANGE SECONDS PER_PORT GO_FILE [NAMESPACE]\n");
        return 2;
    }
    int first = atoi(argv[1]), range = atoi(argv[2]), per_port = atoi(argv[4]);
    double seconds = atof(argv[3]);
    const char *go = argv[5];
    uint64_t job = argc > 6 ? fnv1a(argv[6]) : 0;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if ((long)rl.rlim_cur < (long)range * per_port + 64) per_port = (int)(rl.rlim_cur - 64) / range;
    }
    size_t max = (size_t)range * (size_t)per_port;
    struct conn *c = calloc(max, sizeof *c);
    struct pollfd *p = calloc(max, sizeof *p);
    int *open_to = calloc((size_t)range, sizeof *open_to);
    int *accepting = calloc((size_t)range, sizeof *accepting);
    if (!c || !p || !open_to || !accepting) return 2;
    for (size_t i = 0; i < max; i++) {
        c[i].fd = -1;
        c[i].port = first + (int)(i % (size_t)range);
        size_t slot = (i / (size_t)range) % 8;
        c[i].kind = slot == 5 ? 3 : slot == 6 ? 1 : slot == 7 ? 2 : 0;
    }
    struct hello h = stranger_hello(job);
    srand((unsigned)getpid());
    for (int i = 0; i < 16; i++) h.token[i] = (uint8_t)rand();
    const char garbage[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
    long made = 0, closed = 0, refused = 0, hellos = 0;
    int go_written = 0;
    double start = now(), last_scan = 0;
    while (now() - start < seconds) {
        /* (Re)open connections: to ports known to accept, at once; to the
         * others every 50 ms (a rank may start listening any time). */
        int scan = now() - last_scan > 0.05;
        if (scan) last_scan = now();
        for (size_t i = 0; i < max; i++) {
            if (c[i].fd >= 0) continue;
            int k = c[i].port - first;
            if (!accepting[k] && !(scan && i < (size_t)range)) continue;
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (fd < 0) break;
            struct sockaddr_in sa = {0};
            sa.sin_family = AF_INET;
            sa.sin_port = htons((uint16_t)c[i].port);
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
            if (rc != 0 && errno != EINPROGRESS) {
                close(fd);
                refused++;
                accepting[k] = 0;
                continue;
            }
            c[i].fd = fd;
            c[i].state = kConnecting;
        }
        size_t n = 0;
        for (size_t i = 0; i < max; i++) {
            if (c[i].fd < 0) continue;
            p[n].fd = c[i].fd;
            p[n].events = c[i].state == kConnecting ? POLLOUT : POLLIN;
            p[n].revents = 0;
            n++;
        }
        if (poll(p, n, 10) < 0 && errno != EINTR) break;
        size_t j = 0;
        for (size_t i = 0; i < max && j < n; i++) {
            if (c[i].fd < 0) continue;
            struct pollfd *q = &p[j++];
            int k = c[i].port - first;
            if (!q->revents) continue;
            if (c[i].state == kConnecting) {
                int err = 0;
                socklen_t sl = sizeof err;
                getsockopt(c[i].fd, SOL_SOCKET, SO_ERROR, &err, &sl);
                if (err) {
                    close(c[i].fd);
                    c[i].fd = -1;
                    refused++;
                    accepting[k] = 0;
                    continue;
                }
                c[i].state = kOpen;
                made++;
                accepting[k] = 1;
                if (++open_to[k] >= per_port && !go_written) {
                    FILE *f = fopen(go, "w");
                    if (f) fclose(f);
                    go_written = 1;
                }
                if (c[i].kind == 1) {
                    h.to = k % 4;
                    if (write(c[i].fd, &h, sizeof h) == (ssize_t)sizeof h) hellos++;
                } else if (c[i].kind == 3) {
                    if (write(c[i].fd, &h, 12) < 0) { /* closed already */ }
                } else if (c[i].kind == 2) {
                    if (write(c[i].fd, garbage, sizeof garbage - 1) < 0) { /* closed already */ }
                }
                continue;
            }
            char buf[512];
            ssize_t r = read(c[i].fd, buf, sizeof buf);
            if (r > 0) continue;
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            close(c[i].fd);
            c[i].fd = -1;
            open_to[k]--;
            closed++;
        }
    }
    int ports = 0;
    for (int k = 0; k < range; k++) ports += open_to[k] > 0 || accepting[k];
    printf("flooder: %.1f s, %d port(s), %ld connections made (%ld junk handshakes), %ld closed by the other "
           "end, %ld refused\n",
           now() - start, ports, made, hellos, closed, refused);
    if (!go_written) {
        FILE *f = fopen(go, "w");
        if (f) fclose(f);
    }
    for (size_t i = 0; i < max; i++)
        if (c[i].fd >= 0) close(c[i].fd);
    free(c);
    free(p);
    free(open_to);
    free(accepting);
    return made > 0 ? 0 : 1;
}
