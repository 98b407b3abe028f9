/* init_query: the environment queries around MPI_Init_thread and
 * MPI_Finalize: initialized/finalized flags, thread level, rank/size
 * consistency, processor name, versions, and the wall clock. */
#include "check.h"

#include <pthread.h>
#include <time.h>

static void *is_thread_main_from_other_thread(void *result)
{
    int flag = -1;
    MPI_Is_thread_main(&flag);
    *(int *)result = flag;
    return NULL;
}

static void check_rank_and_size(void)
{
    int rank = -1, size = -1;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 1 && rank >= 0 && rank < size, "rank %d size %d", rank, size);

    /* Every rank must agree on the size, and the ranks must be 0..size-1
     * exactly once: the sum of ranks and of squared ranks pins that down for
     * the small sizes we run. */
    int min_size = 0, max_size = 0;
    CHECK_MPI(MPI_Allreduce(&size, &min_size, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Allreduce(&size, &max_size, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(min_size == size && max_size == size, "sizes differ: min %d max %d", min_size, max_size);
    long mine[2] = {rank, (long)rank * rank}, sums[2] = {0, 0};
    CHECK_MPI(MPI_Allreduce(mine, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    long n = size;
    CHECK(sums[0] == n * (n - 1) / 2, "sum of ranks %ld", sums[0]);
    CHECK(sums[1] == (n - 1) * n * (2 * n - 1) / 6, "sum of squared ranks %ld", sums[1]);

    int self_rank = -1, self_size = -1;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &self_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &self_size));
    CHECK(self_rank == 0 && self_size == 1, "COMM_SELF rank %d size %d", self_rank, self_size);
}

static void check_names_and_versions(void)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = -1;
    memset(name, 'x', sizeof name);
    CHECK_MPI(MPI_Get_processor_name(name, &length));
    CHECK(length > 0 && length < MPI_MAX_PROCESSOR_NAME, "processor name length %d", length);
    if (length > 0 && length < MPI_MAX_PROCESSOR_NAME)
        CHECK((int)strlen(name) == length, "strlen %zu != resultlen %d", strlen(name), length);

    int version = -1, subversion = -1;
    CHECK_MPI(MPI_Get_version(&version, &subversion));
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION,
          "MPI_Get_version %d.%d, header says %d.%d", version, subversion, MPI_VERSION,
          MPI_SUBVERSION);
#if MPI_VERSION >= 5
    CHECK(version == 5 && subversion == 0, "an MPI 5 ABI library reports %d.%d", version,
          subversion);
    int abi_major = -1, abi_minor = -1;
    CHECK_MPI(MPI_Abi_get_version(&abi_major, &abi_minor));
    CHECK(abi_major == 1 && abi_minor >= 0, "ABI version %d.%d", abi_major, abi_minor);
#endif

    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    length = -1;
    CHECK_MPI(MPI_Get_library_version(library, &length));
    CHECK(length > 0 && length < MPI_MAX_LIBRARY_VERSION_STRING, "library version length %d",
          length);
    /* The standard stores the '\0' at library[resultlen]; Open MPI 4.1 counts
     * the '\0' in resultlen and fails here -- that is its deviation. */
    if (length > 0 && length < MPI_MAX_LIBRARY_VERSION_STRING)
        CHECK((int)strlen(library) == length, "strlen %zu != resultlen %d", strlen(library),
              length);
}

static void check_clock(void)
{
    double tick = MPI_Wtick();
    CHECK(tick > 0 && tick < 1e-3, "MPI_Wtick %g", tick);

    double previous = MPI_Wtime();
    for (int i = 0; i < 100000; i++) {
        double now = MPI_Wtime();
        CHECK(now >= previous, "MPI_Wtime went back from %.9f to %.9f", previous, now);
        if (now < previous)
            break;
        previous = now;
    }

    /* 20 ms of real sleep must show up as about 20 ms of MPI_Wtime. */
    double before = MPI_Wtime();
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    double elapsed = MPI_Wtime() - before;
    CHECK(elapsed >= 0.019 && elapsed < 5.0, "20 ms sleep measured as %.6f s", elapsed);
}

int main(int argc, char **argv)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized before init: %d", flag);
    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized before init: %d", flag);

    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
              provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "provided %d is not a thread level", provided);
    int queried = -1;
    CHECK_MPI(MPI_Query_thread(&queried));
    CHECK(queried == provided, "MPI_Query_thread %d, Init_thread provided %d", queried, provided);

    flag = -1;
    CHECK_MPI(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "MPI_Is_thread_main on the main thread: %d", flag);
    if (provided == MPI_THREAD_MULTIPLE) {
        int other = -1;
        pthread_t thread;
        if (pthread_create(&thread, NULL, is_thread_main_from_other_thread, &other) == 0) {
            pthread_join(thread, NULL);
            CHECK(other == 0, "MPI_Is_thread_main on another thread: %d", other);
        }
    }

    flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized after init: %d", flag);

    check_rank_and_size();
    check_names_and_versions();
    check_clock();

    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized before finalize: %d", flag);
    CHECK_MPI(MPI_Finalize());
    flag = -1;
    MPI_Finalized(&flag);
    CHECK(flag == 1, "MPI_Finalized after finalize: %d", flag);
    /* MPI_Initialized stays true after finalize (the standard says it reports
     * whether MPI_Init was called). */
    flag = -1;
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized after finalize: %d", flag);
    return report("init_query");
}
