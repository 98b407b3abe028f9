/* LD_PRELOAD shim for test/security/shm.sh: watches every shm_open and
 * every open of a path under /dev/shm a process makes, logs each (one line)
 * to $AXON_SHIM_LOG and, by $AXON_SHIM_MODE:
 *   check   (default) a creating call without O_EXCL fails with EPERM and
 *           is logged "NONEXCL";
 *   plant   also plants a file of an Axon name (/axon.*) just before this
 *           process creates it -- mode 0666, 4 KiB of junk, owned by nobody
 *           when run as root -- as an attacker who guessed the name would:
 *           the creation must fail (EEXIST) and nobody may use the file.
 *           $AXON_SHIM_PLANT: "alternate" (default) plants before every
 *           other creation (the first try of each segment collides, the
 *           next one does not), "always" before every one;
 *   swap    also, before this process opens an existing Axon name, replaces
 *           the file with such a planted one: the opener must refuse it.
 * Log lines: "create NAME -> ok|ERROR", "open NAME -> ok|ERROR",
 * "planted NAME", "swapped NAME", "NONEXCL NAME". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int planted; /* Axon creations seen so far in this process (plant mode) */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*shm_open_fn)(const char *, int, mode_t);

static open_fn real_open_fn(void)
{
    static open_fn f;
    if (!f) f = (open_fn)dlsym(RTLD_NEXT, "open");
    return f;
}

static void note(const char *fmt, ...)
{
    const char *path = getenv("AXON_SHIM_LOG");
    if (!path) return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    int saved = errno;
    int fd = real_open_fn()(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) { /* nothing to do */ }
        close(fd);
    }
    errno = saved;
}

static const char *mode_is(void)
{
    const char *m = getenv("AXON_SHIM_MODE");
    return m ? m : "check";
}

/* The shm_open name of a path under /dev/shm ("/dev/shm/x" -> "/x"), or NULL. */
static const char *shm_name_of(const char *path)
{
    if (!path || strncmp(path, "/dev/shm/", 9) != 0) return NULL;
    return path + 8;
}

static int axon_name(const char *name) { return name && strncmp(name, "/axon.", 6) == 0; }

/* A stranger's file where the name leads: mode 0666, junk, owned by nobody. */
static void plant(const char *name, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    int fd = real_open_fn()(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        note("could not plant %s: %s", name, strerror(errno));
        return;
    }
    char junk[4096];
    memset(junk, 0xA5, sizeof junk);
    if (write(fd, junk, sizeof junk) < 0) { /* the size matters little */ }
    if (fchmod(fd, 0666) != 0) { /* best effort */ }
    if (geteuid() == 0 && fchown(fd, 65534, 65534) != 0) { /* best effort */ }
    close(fd);
    note("%s %s", what, name);
}

static int creating(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

static int refused(const char *name, int flags)
{
    if (!creating(flags) || (flags & O_EXCL)) return 0;
    note("NONEXCL %s (flags %#x)", name, (unsigned)flags);
    errno = EPERM;
    return 1;
}

int shm_open(const char *name, int flags, mode_t mode)
{
    static shm_open_fn real;
    if (!real) real = (shm_open_fn)dlsym(RTLD_NEXT, "shm_open");
    if (refused(name, flags)) return -1;
    if (creating(flags)) {
        const char *how = getenv("AXON_SHIM_PLANT");
        int always = how && !strcmp(how, "always");
        if (!strcmp(mode_is(), "plant") && axon_name(name) && (always || planted++ % 2 == 0))
            plant(name, "planted");
    } else if (!strcmp(mode_is(), "swap") && axon_name(name)) {
        char path[512];
        snprintf(path, sizeof path, "/dev/shm%s", name);
        unlink(path);
        plant(name, "swapped");
    }
    int fd = real(name, flags, mode);
    note("%s %s (mode %04o) -> %s", creating(flags) ? "create" : "open", name, (unsigned)mode,
         fd >= 0 ? "ok" : strerror(errno));
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return creating(flags) ? (mode_t)va_arg(ap, int) : 0;
}

static int watched_open(const char *path, int flags, mode_t mode, int (*call)(const char *, int, mode_t, void *),
                        void *ctx)
{
    const char *name = shm_name_of(path);
    if (name && refused(name, flags)) return -1;
    int fd = call(path, flags, mode, ctx);
    if (name) note("%s %s (open) -> %s", creating(flags) ? "create" : "open", name, fd >= 0 ? "ok" : strerror(errno));
    return fd;
}

static int call_open(const char *path, int flags, mode_t mode, void *ctx)
{
    return ((open_fn)ctx)(path, flags, mode);
}

struct at_ctx {
    openat_fn fn;
    int dirfd;
};

static int call_openat(const char *path, int flags, mode_t mode, void *ctx)
{
    struct at_ctx *c = ctx;
    return c->fn(c->dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return watched_open(path, flags, mode, call_open, (void *)real_open_fn());
}

int open64(const char *path, int flags, ...)
{
    static open_fn real;
    if (!real) real = (open_fn)dlsym(RTLD_NEXT, "open64");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return watched_open(path, flags, mode, call_open, (void *)real);
}

static int at(const char *sym, int dirfd, const char *path, int flags, mode_t mode)
{
    struct at_ctx c = {(openat_fn)dlsym(RTLD_NEXT, sym), dirfd};
    /* Only absolute paths are watched (Axon opens nothing relative to /dev/shm). */
    return watched_open(path, flags, mode, call_openat, &c);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return at("openat", dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return at("openat64", dirfd, path, flags, mode);
}
