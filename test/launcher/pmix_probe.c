/* pmix_probe -- a PMIx client that mpirun's tests launch.
 *
 * Runs PMIx_Init, then each argument as an action, in order, then
 * PMIx_Finalize. Actions that name a rank (R:...) act on that rank only.
 *   info             print what PMIx tells about this rank and job
 *   appinfo          print this rank's application: appnum, app_rank, app_size, app_ldr, num_apps
 *   wireup           put a card, commit, fence (collect), get and check every peer's card
 *   dmodex           the same with a fence that collects nothing: remote cards come
 *                    through the servers' direct modex
 *   exit=R:CODE      rank R exits with CODE (no finalize)
 *   signal=R:SIG     rank R raises signal SIG
 *   abort=R:STATUS   rank R calls PMIx_Abort(STATUS), then _exit(STATUS) like MPI_Abort
 *   nofinalize=R     rank R returns from main without PMIx_Finalize
 *   sleep=SECS       every rank sleeps (sleep=R:SECS: rank R only); fractions allowed
 *   stdin            rank 0 copies its stdin to stdout; others check theirs is empty
 *   env=NAME         print NAME's value
 *   shm              create /dev/shm/axon.<sanitized nspace>.probe.<rank>
 *   cpus             print this process's Cpus_allowed_list
 *   say=TEXT         print TEXT on stdout;  err=TEXT  on stderr
 *   partial=TEXT     print TEXT in two writes 100 ms apart, newline at the end
 *   marker=ANY       ignored: lets a test find its processes with pgrep -f
 * Exit status: 0, or 2 when a check failed, 3 when PMIx failed. */
#define _GNU_SOURCE
#include <pmix.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pmix_proc_t me;

static int rank_matches(const char *spec, const char **rest) {
    char *colon;
    long rank = strtol(spec, &colon, 10);
    if (*colon != ':') return 0;
    *rest = colon + 1;
    return rank == (long)me.rank;
}

static int get_value(const pmix_proc_t *proc, const char *key, pmix_value_t **value) {
    return PMIx_Get(proc, key, NULL, 0, value) == PMIX_SUCCESS && *value;
}

static long get_number(const pmix_proc_t *proc, const char *key) {
    pmix_value_t *value = NULL;
    long result = -1;
    if (!get_value(proc, key, &value)) return -1;
    switch (value->type) {
        case PMIX_UINT32: result = value->data.uint32; break;
        case PMIX_UINT16: result = value->data.uint16; break;
        case PMIX_PROC_RANK: result = value->data.rank; break;
        case PMIX_INT: result = value->data.integer; break;
        default: break;
    }
    PMIX_VALUE_RELEASE(value);
    return result;
}

static void print_string(const pmix_proc_t *proc, const char *key, const char *label) {
    pmix_value_t *value = NULL;
    if (get_value(proc, key, &value) && value->type == PMIX_STRING) {
        printf(" %s=%s", label, value->data.string);
    } else {
        printf(" %s=-", label);
    }
    if (value) PMIX_VALUE_RELEASE(value);
}

static void action_info(void) {
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    printf("rank=%u size=%ld univ=%ld local_rank=%ld node_rank=%ld local_size=%ld nodeid=%ld num_nodes=%ld"
           " localldr=%ld appnum=%ld",
           me.rank, get_number(&job, PMIX_JOB_SIZE), get_number(&job, PMIX_UNIV_SIZE),
           get_number(&me, PMIX_LOCAL_RANK), get_number(&me, PMIX_NODE_RANK), get_number(&job, PMIX_LOCAL_SIZE),
           get_number(&me, PMIX_NODEID), get_number(&job, PMIX_NUM_NODES), get_number(&job, PMIX_LOCALLDR),
           get_number(&me, PMIX_APPNUM));
    print_string(&job, PMIX_LOCAL_PEERS, "peers");
    print_string(&job, PMIX_JOBID, "jobid");
    print_string(&job, PMIX_TMPDIR, "tmpdir");
    print_string(&me, PMIX_HOSTNAME, "host");
    print_string(&me, PMIX_LOCALITY_STRING, "locality");
    printf(" nspace=%s\n", me.nspace);
}

/* An application-level key of application `appnum` (PMIX_APP_INFO qualifier). */
static long get_app_number(uint32_t appnum, const char *key) {
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t qualifiers[2];
    bool yes = true;
    PMIX_INFO_LOAD(&qualifiers[0], PMIX_APP_INFO, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&qualifiers[1], PMIX_APPNUM, &appnum, PMIX_UINT32);
    pmix_value_t *value = NULL;
    long result = -1;
    if (PMIx_Get(&job, key, qualifiers, 2, &value) == PMIX_SUCCESS && value) {
        if (value->type == PMIX_UINT32) result = value->data.uint32;
        if (value->type == PMIX_PROC_RANK) result = value->data.rank;
        PMIX_VALUE_RELEASE(value);
    }
    PMIX_INFO_DESTRUCT(&qualifiers[0]);
    PMIX_INFO_DESTRUCT(&qualifiers[1]);
    return result;
}

static void action_appinfo(void) {
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    long appnum = get_number(&me, PMIX_APPNUM);
    printf("rank %u appnum=%ld app_rank=%ld app_size=%ld app_ldr=%ld num_apps=%ld\n", me.rank, appnum,
           get_number(&me, PMIX_APP_RANK), get_app_number((uint32_t)appnum, PMIX_APP_SIZE),
           get_app_number((uint32_t)appnum, PMIX_APPLDR), get_number(&job, PMIX_JOB_NUM_APPS));
}

static int action_wireup(bool collect_data) {
    pmix_proc_t job, peer;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    long size = get_number(&job, PMIX_JOB_SIZE);
    char card[512];
    snprintf(card, sizeof card, "card of rank %u in %s", me.rank, me.nspace);
    pmix_value_t value;
    pmix_byte_object_t bytes = {.bytes = card, .size = strlen(card) + 1};
    PMIX_VALUE_LOAD(&value, &bytes, PMIX_BYTE_OBJECT);
    if (PMIx_Put(PMIX_GLOBAL, "probe.card", &value) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS) return 3;
    PMIX_VALUE_DESTRUCT(&value);
    pmix_info_t collect;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &collect_data, PMIX_BOOL);
    pmix_status_t status = PMIx_Fence(NULL, 0, &collect, 1);
    PMIX_INFO_DESTRUCT(&collect);
    if (status != PMIX_SUCCESS) {
        fprintf(stderr, "rank %u: PMIx_Fence: %s\n", me.rank, PMIx_Error_string(status));
        return 3;
    }
    long good = 0;
    for (long r = 0; r < size; r++) {
        char expected[512];
        pmix_value_t *got = NULL;
        snprintf(expected, sizeof expected, "card of rank %ld in %s", r, me.nspace);
        PMIX_LOAD_PROCID(&peer, me.nspace, (pmix_rank_t)r);
        if (get_value(&peer, "probe.card", &got) && got->type == PMIX_BYTE_OBJECT &&
            got->data.bo.size == strlen(expected) + 1 && memcmp(got->data.bo.bytes, expected, got->data.bo.size) == 0) {
            good++;
        } else {
            fprintf(stderr, "rank %u: wrong or missing card of rank %ld\n", me.rank, r);
        }
        if (got) PMIX_VALUE_RELEASE(got);
    }
    printf("rank %u %s %ld/%ld\n", me.rank, collect_data ? "wireup" : "dmodex", good, size);
    return good == size ? 0 : 2;
}

static int action_stdin(void) {
    char buffer[4096];
    ssize_t got;
    if (me.rank == 0) {
        while ((got = read(STDIN_FILENO, buffer, sizeof buffer)) > 0) fwrite(buffer, 1, (size_t)got, stdout);
        printf("rank 0 stdin eof\n");
        return got == 0 ? 0 : 2;
    }
    got = read(STDIN_FILENO, buffer, sizeof buffer);
    printf("rank %u stdin %s\n", me.rank, got == 0 ? "empty" : "NOT EMPTY");
    return got == 0 ? 0 : 2;
}

static void sanitize(char *text) {
    for (; *text; text++) {
        char c = *text;
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                   c == '_' || c == '-';
        if (!keep) *text = '_';
    }
}

static int action_shm(void) {
    char name[PMIX_MAX_NSLEN + 1], path[PMIX_MAX_NSLEN + 64];
    snprintf(name, sizeof name, "%s", me.nspace);
    sanitize(name);
    snprintf(path, sizeof path, "/dev/shm/axon.%s.probe.%u", name, me.rank);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) return 2;
    close(fd);
    printf("rank %u shm %s\n", me.rank, path);
    return 0;
}

static void action_cpus(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[1024];
    while (status && fgets(line, sizeof line, status)) {
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *list = line + 18;
            while (*list == ' ' || *list == '\t') list++;
            printf("rank %u cpus %s", me.rank, list);
        }
    }
    if (status) fclose(status);
}

static void sleep_seconds(double seconds) {
    struct timespec wait = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pmix_status_t status = PMIx_Init(&me, NULL, 0);
    if (status != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(status));
        return 3;
    }
    int finalize = 1, result = 0;
    for (int i = 1; i < argc && result == 0; i++) {
        const char *arg = argv[i], *rest = NULL;
        if (strcmp(arg, "info") == 0) {
            action_info();
        } else if (strcmp(arg, "appinfo") == 0) {
            action_appinfo();
        } else if (strcmp(arg, "wireup") == 0) {
            result = action_wireup(true);
        } else if (strcmp(arg, "dmodex") == 0) {
            result = action_wireup(false);
        } else if (strncmp(arg, "exit=", 5) == 0) {
            if (rank_matches(arg + 5, &rest)) exit(atoi(rest));
        } else if (strncmp(arg, "signal=", 7) == 0) {
            if (rank_matches(arg + 7, &rest)) {
                fflush(NULL);
                signal(atoi(rest), SIG_DFL);
                raise(atoi(rest));
            }
        } else if (strncmp(arg, "abort=", 6) == 0) {
            if (rank_matches(arg + 6, &rest)) {
                PMIx_Abort(atoi(rest), "probe called abort", NULL, 0);
                _exit(atoi(rest));
            }
        } else if (strncmp(arg, "nofinalize=", 11) == 0) {
            if (atoi(arg + 11) == (int)me.rank) finalize = 0;
        } else if (strncmp(arg, "sleep=", 6) == 0) {
            if (strchr(arg, ':')) {
                if (rank_matches(arg + 6, &rest)) sleep_seconds(atof(rest));
            } else {
                sleep_seconds(atof(arg + 6));
            }
        } else if (strcmp(arg, "stdin") == 0) {
            result = action_stdin();
        } else if (strncmp(arg, "env=", 4) == 0) {
            const char *value = getenv(arg + 4);
            printf("rank %u %s=%s\n", me.rank, arg + 4, value ? value : "(unset)");
        } else if (strcmp(arg, "shm") == 0) {
            result = action_shm();
        } else if (strcmp(arg, "cpus") == 0) {
            action_cpus();
        } else if (strncmp(arg, "say=", 4) == 0) {
            printf("%s\n", arg + 4);
        } else if (strncmp(arg, "err=", 4) == 0) {
            fprintf(stderr, "%s\n", arg + 4);
        } else if (strncmp(arg, "partial=", 8) == 0) {
            size_t half = strlen(arg + 8) / 2;
            fwrite(arg + 8, 1, half, stdout);
            fflush(stdout);
            sleep_seconds(0.1);
            printf("%s\n", arg + 8 + half);
        } else if (strncmp(arg, "marker=", 7) == 0) {
            /* nothing: only for pgrep */
        } else {
            fprintf(stderr, "pmix_probe: unknown action '%s'\n", arg);
            result = 2;
        }
    }
    fflush(NULL);
    if (!finalize) return result;
    status = PMIx_Finalize(NULL, 0);
    if (status != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Finalize: %s\n", PMIx_Error_string(status));
        return 3;
    }
    return result;
}
