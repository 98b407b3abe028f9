/* mpi_hooks: an MPI job runs normally with the registration cache's memory
 * hooks patched into libc. Reading the MPI_T variable axon_rcache_state
 * installs them (0: on); then every rank churns memory through each hooked
 * path (free() of large and small blocks, realloc, malloc_trim, mmap,
 * munmap, mremap, madvise, System V shm) while exchanging messages large
 * enough for the rendezvous protocol from freshly allocated buffers, whose
 * contents must arrive intact.
 *   mpi_hooks       expects the hooks on (a sanitizer build: refused for the sanitizer)
 *   mpi_hooks off   expects them off for AXON_RCACHE=off (state 1) */
#define _GNU_SOURCE
#include <malloc.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "../mpi/check.h"

static unsigned long long rcache_state(void)
{
    int index = -1, count = 0;
    unsigned long long value = ~0ull;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    CHECK_MPI(MPI_T_pvar_get_index("axon_rcache_state", MPI_T_PVAR_CLASS_LEVEL, &index));
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count));
    CHECK_MPI(MPI_T_pvar_read(session, handle, &value));
    CHECK_MPI(MPI_T_pvar_handle_free(session, &handle));
    CHECK_MPI(MPI_T_pvar_session_free(&session));
    return value;
}

/* Memory traffic through every hook; the data written must read back. */
static void churn(int round)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *big = malloc(8 << 20); /* above the mmap threshold: free() unmaps it */
    CHECK(big != NULL, "malloc 8 MiB");
    if (!big) return;
    fill_pattern(big, 8 << 20, (unsigned)round);
    big = realloc(big, 16 << 20); /* mremap */
    CHECK(big != NULL, "realloc 16 MiB");
    if (!big) return;
    CHECK_PATTERN(big, 8 << 20, (unsigned)round, "after realloc");
    free(big);
    void *small[64];
    for (int i = 0; i < 64; i++) {
        small[i] = malloc(4096 + (size_t)i * 512);
        memset(small[i], i, 4096);
    }
    for (int i = 0; i < 64; i++) free(small[i]);
    malloc_trim(0); /* brk and madvise */
    char *m = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED, "mmap");
    if (m == MAP_FAILED) return;
    memset(m, 5, 16 * page);
    CHECK(madvise(m, 4 * page, MADV_DONTNEED) == 0 && m[0] == 0 && m[4 * page] == 5, "madvise DONTNEED");
    CHECK(mmap(m + 4 * page, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
              m + 4 * page && m[4 * page] == 0, "mmap MAP_FIXED");
    char *moved = mremap(m, 16 * page, 32 * page, MREMAP_MAYMOVE);
    CHECK(moved != MAP_FAILED && moved[8 * page] == 5, "mremap");
    CHECK(munmap(moved != MAP_FAILED ? moved : m, moved != MAP_FAILED ? 32 * page : 16 * page) == 0, "munmap");
    int id = shmget(IPC_PRIVATE, 4 * page, IPC_CREAT | 0600);
    if (id >= 0) {
        char *s = shmat(id, NULL, 0);
        CHECK(s != (char *)-1, "shmat");
        if (s != (char *)-1) {
            s[0] = 1;
            CHECK(shmdt(s) == 0, "shmdt");
        }
        shmctl(id, IPC_RMID, NULL);
    }
    void *top = sbrk(0);
    CHECK(top != (void *)-1, "sbrk(0)");
}

int main(int argc, char **argv)
{
    int expect_off = argc > 1 && strcmp(argv[1], "off") == 0;
    int provided;
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    unsigned long long want = 0; /* on */
#if defined(__SANITIZE_ADDRESS__)
    want = 3; /* Off::Sanitizer */
#elif !defined(__x86_64__)
    want = 2; /* Off::Unsupported */
#endif
    if (expect_off) want = 1; /* Off::Param */
    unsigned long long state = rcache_state();
    CHECK(state == want, "axon_rcache_state %llu, expected %llu", state, want);

    const size_t bytes = 4 << 20;
    const int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int round = 0; round < 20; round++) {
        churn(round);
        /* A fresh buffer each round, often at the address of the last one. */
        char *out = malloc(bytes), *in = malloc(bytes);
        CHECK(out && in, "malloc message buffers");
        if (!out || !in) break;
        fill_pattern(out, bytes, (unsigned)(rank * 100 + round));
        CHECK_MPI(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, round, in, (int)bytes, MPI_BYTE, from, round,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, bytes, (unsigned)(from * 100 + round), "round %d from rank %d", round, from);
        free(out);
        free(in);
    }
    CHECK(rcache_state() == state, "the state changed");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_T_finalize());
    MPI_Finalize();
    return report("mpi_hooks");
}
