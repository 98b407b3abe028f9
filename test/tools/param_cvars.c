/* param_cvars: Axon's parameters as MPI_T control variables.
 *
 *   param_cvars          (under mpirun) the collective algorithm choices are
 *                        writable enums of scope MPI_T_SCOPE_ALL_EQ: their
 *                        enumeration lists "auto" and the algorithms; a write
 *                        is read back and used by the next call (rank 0
 *                        prints "marker: bcast ALG" before each forced
 *                        MPI_Bcast, so that test/tools/params.sh can match
 *                        the AXON_COLL_EXPLAIN line that follows); a value
 *                        that is no item gives MPI_T_ERR_INVALID and changes
 *                        nothing; read-only parameters give
 *                        MPI_T_ERR_CVAR_SET_NEVER; data are exact throughout.
 *   param_cvars report   (under mpirun) every rank reads
 *                        AXON_COLL_KNOMIAL_RADIX and AXON_COLL_BCAST_ALGORITHM
 *                        through MPI_T and makes one bcast; rank 0 prints
 *                        "radix=R bcast=NAME" on stdout.
 *   param_cvars threads  (no MPI_Init) 8 threads read every control variable
 *                        for the first time at the same moment (a barrier
 *                        before each): all must read the same value, and a
 *                        variable set in the environment its value; then one
 *                        thread writes an algorithm choice while others read
 *                        it: every read is a valid item. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../mpi/check.h"
#include "cvar.h"

enum { THREADS = 8, MAX_CVARS = 512, TEXT = 1024 };

/* ---- cvars: metadata, writes and their effect ---------------------------------- */

static int cvar_index(const char *name)
{
    int index = -1;
    CHECK_MPI(MPI_T_cvar_get_index(name, &index));
    return index;
}

static int read_int(int index)
{
    MPI_T_cvar_handle h;
    int count = 0, v = -1;
    CHECK_MPI(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    CHECK(count == 1, "count %d", count);
    CHECK_MPI(MPI_T_cvar_read(h, &v));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    return v;
}

static void check_enumeration(int index)
{
    static const char *const bcast_items[] = {"auto", "binomial", "knomial", "scatter_allgather", "pipeline",
                                              "shm",  "hierarchical"};
    const int n_items = (int)(sizeof bcast_items / sizeof bcast_items[0]);
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    int scope = -1, num = -1;
    char name[256], desc[2048];
    int name_len = sizeof name, desc_len = sizeof desc;
    CHECK_MPI(MPI_T_cvar_get_info(index, NULL, NULL, NULL, &type, &enumtype, desc, &desc_len, NULL, &scope));
    CHECK(type == MPI_INT && enumtype != MPI_T_ENUM_NULL && scope == MPI_T_SCOPE_ALL_EQ,
          "AXON_COLL_BCAST_ALGORITHM: type %s, enum %s, scope %d (want MPI_INT, an enum, MPI_T_SCOPE_ALL_EQ)",
          type == MPI_INT ? "MPI_INT" : "other", enumtype ? "yes" : "none", scope);
    CHECK(strstr(desc, "[one of: auto, binomial, knomial, scatter_allgather, pipeline, shm, hierarchical] "
                       "(default: auto)") != NULL, "description: %s", desc);
    if (enumtype == MPI_T_ENUM_NULL) return;
    CHECK_MPI(MPI_T_enum_get_info(enumtype, &num, name, &name_len));
    CHECK(num == n_items && strcmp(name, "AXON_COLL_BCAST_ALGORITHM") == 0, "enumeration '%s' of %d items", name,
          num);
    for (int i = 0; i < num && i < n_items; i++) {
        int value = -1;
        name_len = sizeof name;
        CHECK_MPI(MPI_T_enum_get_item(enumtype, i, &value, name, &name_len));
        CHECK(value == i && strcmp(name, bcast_items[i]) == 0, "item %d: %d '%s', want '%s'", i, value, name,
              bcast_items[i]);
    }
    int value = -1;
    CHECK(MPI_T_enum_get_item(enumtype, num, &value, NULL, NULL) == MPI_T_ERR_INVALID_INDEX, "item %d", num);
    CHECK(MPI_T_enum_get_item(enumtype, -1, &value, NULL, NULL) == MPI_T_ERR_INVALID_INDEX, "item -1");
    CHECK(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &num, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE, "MPI_T_ENUM_NULL");
}

static void check_read_only(void)
{
    /* An integer with a range, and a boolean: no enumeration, not writable. */
    static const char *const names[] = {"AXON_COLL_KNOMIAL_RADIX", "AXON_COLL_EXPLAIN"};
    for (int k = 0; k < 2; k++) {
        int index = cvar_index(names[k]), scope = -1, count = 0;
        MPI_T_enum enumtype = MPI_T_ENUM_NULL;
        char desc[2048];
        int desc_len = sizeof desc;
        CHECK_MPI(MPI_T_cvar_get_info(index, NULL, NULL, NULL, NULL, &enumtype, desc, &desc_len, NULL, &scope));
        CHECK(enumtype == MPI_T_ENUM_NULL && scope == MPI_T_SCOPE_READONLY, "%s: enum %p scope %d", names[k],
              (void *)enumtype, scope);
        if (k == 0) CHECK(strstr(desc, "[2 to 1024] (default: 4)") != NULL, "%s: %s", names[k], desc);
        MPI_T_cvar_handle h;
        long long v[2] = {0, 0};
        CHECK_MPI(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
        CHECK_MPI(MPI_T_cvar_read(h, v));
        CHECK(MPI_T_cvar_write(h, v) == MPI_T_ERR_CVAR_SET_NEVER, "%s written", names[k]);
        CHECK_MPI(MPI_T_cvar_handle_free(&h));
    }
}

static int rank, size;

/* Forces bcast's algorithm (rank 0 prints the marker), then a bcast of
 * 1000 ints from the last rank, blocking or not; exact data. */
static void bcast_with(const char *algorithm, int nonblocking)
{
    enum { N = 1000 };
    int buf[N], root = size - 1;
    force_algorithm("bcast", algorithm);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        fprintf(stderr, "marker: %s %s\n", nonblocking ? "ibcast" : "bcast", algorithm);
        fflush(stderr);
    }
    for (int i = 0; i < N; i++) buf[i] = rank == root ? i * 7 + 3 : -1;
    if (nonblocking) {
        MPI_Request request;
        CHECK_MPI(MPI_Ibcast(buf, N, MPI_INT, root, MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Bcast(buf, N, MPI_INT, root, MPI_COMM_WORLD));
    }
    int bad = 0;
    for (int i = 0; i < N; i++) bad += buf[i] != i * 7 + 3;
    CHECK(bad == 0, "bcast forced to %s: %d ints wrong", algorithm, bad);
    /* Every rank is past its bcast before the next marker is printed. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void cvars(void)
{
    int index = cvar_index("AXON_COLL_BCAST_ALGORITHM");
    check_enumeration(index);
    check_read_only();
    CHECK(read_int(index) == 0, "AXON_COLL_BCAST_ALGORITHM reads %d before any write (auto: 0)", read_int(index));
    int knomial = cvar_item_value("AXON_COLL_BCAST_ALGORITHM", "knomial");
    CHECK(knomial == 2, "knomial is item %d", knomial);
    CHECK_MPI(cvar_write_int("AXON_COLL_BCAST_ALGORITHM", knomial));
    CHECK(read_int(index) == knomial, "reads %d after writing knomial", read_int(index));
    CHECK(cvar_write_int("AXON_COLL_BCAST_ALGORITHM", 7) == MPI_T_ERR_INVALID, "item 7 (one past the last) written");
    CHECK(cvar_write_int("AXON_COLL_BCAST_ALGORITHM", -1) == MPI_T_ERR_INVALID, "item -1 written");
    CHECK(read_int(index) == knomial, "reads %d after refused writes", read_int(index));
    bcast_with("knomial", 0);
    bcast_with("pipeline", 0);
    bcast_with("binomial", 0);
    bcast_with("shm", 0);
    bcast_with("shm", 1); /* nonblocking: the node segment serves blocking calls only */
    bcast_with("auto", 0);
    CHECK(read_int(index) == 0, "reads %d after writing auto", read_int(index));
}

/* ---- report: what the environment made of two parameters ------------------------- */

static void report_values(void)
{
    int radix_index = cvar_index("AXON_COLL_KNOMIAL_RADIX"), bcast_index = cvar_index("AXON_COLL_BCAST_ALGORITHM");
    MPI_T_cvar_handle h;
    int count = 0;
    long long radix = -1;
    CHECK_MPI(MPI_T_cvar_handle_alloc(radix_index, NULL, &h, &count));
    CHECK_MPI(MPI_T_cvar_read(h, &radix));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    int bcast = read_int(bcast_index);
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    CHECK_MPI(MPI_T_cvar_get_info(bcast_index, NULL, NULL, NULL, NULL, &enumtype, NULL, NULL, NULL, NULL));
    char name[256] = "?";
    int name_len = sizeof name, value = -1;
    CHECK_MPI(MPI_T_enum_get_item(enumtype, bcast, &value, name, &name_len));
    int x = rank == 0 ? 42 : 0;
    CHECK_MPI(MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(x == 42, "bcast gave %d", x);
    if (rank == 0) printf("radix=%lld bcast=%s\n", radix, name);
}

/* ---- threads: first reads at once, reads during writes ------------------------------ */

static int ncvars;
static pthread_barrier_t each_cvar;
static unsigned long long seen[THREADS][MAX_CVARS];

/* A value as read, folded into a number (strings hashed) for comparing. */
static unsigned long long read_any(int index, MPI_Datatype type)
{
    MPI_T_cvar_handle h;
    int count = 0;
    union {
        long long count_value;
        int int_value;
        char text[TEXT];
    } v;
    memset(&v, 0, sizeof v);
    CHECK_MPI(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    CHECK_MPI(MPI_T_cvar_read(h, &v));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    if (type == MPI_COUNT) return (unsigned long long)v.count_value;
    if (type == MPI_INT) return (unsigned long long)(unsigned)v.int_value;
    unsigned long long hash = 1469598103934665603ull;
    for (const char *c = v.text; *c; c++) hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
    return hash;
}

static MPI_Datatype types[MAX_CVARS];

static void *first_reader(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < ncvars; i++) {
        pthread_barrier_wait(&each_cvar);
        seen[t][i] = read_any(i, types[i]);
    }
    return NULL;
}

/* The value `env` (the environment's text) must read as, or 0 when the
 * check does not apply (booleans, sizes with suffixes: not compared). */
static int expected_value(int index, MPI_Datatype type, const char *env, unsigned long long *want)
{
    if (type == MPI_CHAR) {
        unsigned long long hash = 1469598103934665603ull;
        for (const char *c = env; *c; c++) hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
        *want = hash;
        return 1;
    }
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    CHECK_MPI(MPI_T_cvar_get_info(index, NULL, NULL, NULL, NULL, &enumtype, NULL, NULL, NULL, NULL));
    if (enumtype != MPI_T_ENUM_NULL) {
        int items = 0;
        CHECK_MPI(MPI_T_enum_get_info(enumtype, &items, NULL, NULL));
        for (int i = 0; i < items; i++) {
            char name[256];
            int name_len = sizeof name, value = -1;
            CHECK_MPI(MPI_T_enum_get_item(enumtype, i, &value, name, &name_len));
            if (strcmp(name, env) == 0) {
                *want = (unsigned)value;
                return 1;
            }
        }
        return 0;
    }
    if (type != MPI_COUNT || !*env || strspn(env, "0123456789") != strlen(env)) return 0;
    *want = (unsigned long long)strtoll(env, NULL, 10);
    return 1;
}

enum { WRITES = 20000 };
static int allreduce_items;
static atomic_int writer_done;

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WRITES; i++) CHECK_MPI(cvar_write_int("AXON_COLL_ALLREDUCE_ALGORITHM", i % allreduce_items));
    atomic_store(&writer_done, 1);
    return NULL;
}

static void *reader_during_writes(void *arg)
{
    int index = (int)(intptr_t)arg, reads = 0;
    while (!atomic_load(&writer_done) || reads < 100) {
        int v = read_int(index);
        if (v < 0 || v >= allreduce_items) {
            CHECK(0, "AXON_COLL_ALLREDUCE_ALGORITHM read %d during writes (items 0..%d)", v, allreduce_items - 1);
            break;
        }
        reads++;
    }
    return NULL;
}

static void threads(void)
{
    int provided = 0;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_T_cvar_get_num(&ncvars));
    CHECK(ncvars > 10 && ncvars <= MAX_CVARS, "%d control variables", ncvars);
    if (ncvars > MAX_CVARS) ncvars = MAX_CVARS;
    for (int i = 0; i < ncvars; i++)
        CHECK_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &types[i], NULL, NULL, NULL, NULL, NULL));
    pthread_barrier_init(&each_cvar, NULL, THREADS);
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&tid[t], NULL, first_reader, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&each_cvar);
    int compared = 0;
    for (int i = 0; i < ncvars; i++) {
        char name[256];
        int name_len = sizeof name;
        CHECK_MPI(MPI_T_cvar_get_info(i, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        for (int t = 1; t < THREADS; t++)
            CHECK(seen[t][i] == seen[0][i], "%s: thread %d read %llu, thread 0 %llu", name, t, seen[t][i],
                  seen[0][i]);
        const char *env = getenv(name);
        unsigned long long want = 0;
        if (env && expected_value(i, types[i], env, &want)) {
            CHECK(seen[0][i] == want, "%s=%s read as %llu, want %llu", name, env, seen[0][i], want);
            compared++;
        }
    }
    printf("%d control variables read first by %d threads at once; %d compared with the environment\n", ncvars,
           THREADS, compared);

    /* One writer, three readers of the same variable. */
    int index = cvar_index("AXON_COLL_ALLREDUCE_ALGORITHM");
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    CHECK_MPI(MPI_T_cvar_get_info(index, NULL, NULL, NULL, NULL, &enumtype, NULL, NULL, NULL, NULL));
    CHECK(enumtype != MPI_T_ENUM_NULL, "AXON_COLL_ALLREDUCE_ALGORITHM has no enumeration");
    if (enumtype != MPI_T_ENUM_NULL) CHECK_MPI(MPI_T_enum_get_info(enumtype, &allreduce_items, NULL, NULL));
    if (allreduce_items > 0) {
        pthread_t w, r[3];
        pthread_create(&w, NULL, writer, NULL);
        for (int t = 0; t < 3; t++) pthread_create(&r[t], NULL, reader_during_writes, (void *)(intptr_t)index);
        pthread_join(w, NULL);
        for (int t = 0; t < 3; t++) pthread_join(r[t], NULL);
        CHECK(read_int(index) == (WRITES - 1) % allreduce_items, "last write not read back: %d", read_int(index));
    }
    CHECK_MPI(MPI_T_finalize());
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "cvars";
    if (strcmp(mode, "threads") == 0) {
        threads();
        return report("param_cvars threads");
    }
    int provided = 0;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(mode, "report") == 0)
        report_values();
    else
        cvars();
    MPI_Finalize();
    CHECK_MPI(MPI_T_finalize());
    return report("param_cvars");
}
