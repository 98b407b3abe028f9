/* Erroneous calls with handles that are readable memory but not objects of
 * the library return the handle kind's error class through the error
 * handler that the standard names, instead of crashing:
 *
 *   - a handle pointing at a buffer of junk (three fillings: zeros, 0xff,
 *     pseudo-random bytes), at a live object of another kind (a datatype
 *     passed as a communicator), or holding a small integer that is no
 *     predefined handle (in the first page: never dereferenced);
 *   - for every kind: communicator, datatype, request, window, file, op,
 *     group, info, error handler, message and session, in the calls that
 *     take it first-hand (MPI_Send, MPI_Wait, MPI_Win_fence, ...);
 *   - errors of communicator-less calls go to MPI_COMM_SELF's handler; the
 *     job keeps working afterwards (a message exchange at the end).
 *
 *   garbage_handles [K]   runs only probe K (to find which one crashes). */
#include "../mpi/check.h"

#include <unistd.h>

enum { JUNK_BYTES = 512 };

static unsigned char junk[4][JUNK_BYTES] __attribute__((aligned(64)));
static int only = -1, probe_index;

static void fill_junk(void)
{
    memset(junk[0], 0, JUNK_BYTES);
    memset(junk[1], 0xff, JUNK_BYTES);
    uint32_t x = 12345;
    for (int i = 0; i < JUNK_BYTES; i++) {
        x = x * 1103515245u + 12345u;
        junk[2][i] = (unsigned char)(x >> 16);
    }
    /* Pointer-looking words: the low half of each 8 bytes points at junk[3]. */
    for (int i = 0; i < JUNK_BYTES; i += (int)sizeof(void *)) {
        void *p = junk[3];
        memcpy(junk[3] + i, &p, sizeof p);
    }
}

static int class_of(int rc)
{
    int cls = -1;
    if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) return -1;
    return cls;
}

/* One probe: `call` evaluated with a bad handle must give class `want`. */
#define PROBE(want, call)                                                            \
    do {                                                                             \
        int k_ = probe_index++;                                                      \
        if (only >= 0 && only != k_) break;                                          \
        int rc_ = (call);                                                            \
        CHECK(class_of(rc_) == (want), "probe %d (%s, handle %d): class %d, want %d", \
              k_, #call, bad, class_of(rc_), (want));                                \
    } while (0)

int main(int argc, char **argv)
{
    if (argc > 1) only = atoi(argv[1]);
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    fill_junk();

    /* Bad handle values: four junk buffers, a live object of another kind,
     * and integers that are no predefined handle of the kind. */
    MPI_Datatype other_kind = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &other_kind));
    MPI_Group world_group = MPI_GROUP_NULL;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    void *values[9] = {junk[0], junk[1], junk[2], junk[3], (void *)other_kind, (void *)world_group,
                       (void *)(uintptr_t)0x3f7, (void *)(uintptr_t)0x777, (void *)(uintptr_t)0x800};
    int buf[16] = {0};
    MPI_Status status;
    for (int bad = 0; bad < 9; bad++) {
        void *v = values[bad];
        MPI_Comm comm = (MPI_Comm)v;
        MPI_Datatype type = (MPI_Datatype)v;
        MPI_Request req = (MPI_Request)v;
        MPI_Win win = (MPI_Win)v;
        MPI_File file = (MPI_File)v;
        MPI_Op op = (MPI_Op)v;
        MPI_Group group = (MPI_Group)v;
        MPI_Info info = (MPI_Info)v;
        MPI_Errhandler eh = (MPI_Errhandler)v;
        MPI_Message msg = (MPI_Message)v;
        MPI_Session session = (MPI_Session)v;
        int n = -1, flag = -1;

        if (bad != 4) { /* other_kind is a valid datatype */
            PROBE(MPI_ERR_TYPE, MPI_Send(buf, 1, type, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
            PROBE(MPI_ERR_TYPE, MPI_Recv(buf, 1, type, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &status));
            PROBE(MPI_ERR_TYPE, MPI_Type_size(type, &n));
            PROBE(MPI_ERR_TYPE, MPI_Type_commit(&type));
            MPI_Datatype t = type;
            PROBE(MPI_ERR_TYPE, MPI_Type_free(&t));
            PROBE(MPI_ERR_TYPE, MPI_Allreduce(buf, buf + 8, 1, type, MPI_SUM, MPI_COMM_WORLD));
        }
        PROBE(MPI_ERR_COMM, MPI_Comm_size(comm, &n));
        PROBE(MPI_ERR_COMM, MPI_Comm_rank(comm, &n));
        PROBE(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, comm));
        PROBE(MPI_ERR_COMM, MPI_Barrier(comm));
        PROBE(MPI_ERR_COMM, MPI_Allreduce(buf, buf + 8, 1, MPI_INT, MPI_SUM, comm));
        MPI_Comm c = comm;
        PROBE(MPI_ERR_COMM, MPI_Comm_free(&c));
        MPI_Comm dup = MPI_COMM_NULL;
        PROBE(MPI_ERR_COMM, MPI_Comm_dup(comm, &dup));

        MPI_Request r = req;
        PROBE(MPI_ERR_REQUEST, MPI_Wait(&r, &status));
        r = req;
        PROBE(MPI_ERR_REQUEST, MPI_Test(&r, &flag, &status));
        r = req;
        PROBE(MPI_ERR_REQUEST, MPI_Request_free(&r));
        r = req;
        PROBE(MPI_ERR_REQUEST, MPI_Cancel(&r));
        PROBE(MPI_ERR_REQUEST, MPI_Request_get_status(req, &flag, &status));
        MPI_Request two[2] = {MPI_REQUEST_NULL, req};
        PROBE(MPI_ERR_REQUEST, MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
        r = req;
        PROBE(MPI_ERR_REQUEST, MPI_Start(&r));

        PROBE(MPI_ERR_WIN, MPI_Win_fence(0, win));
        PROBE(MPI_ERR_WIN, MPI_Put(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        PROBE(MPI_ERR_WIN, MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_Win w = win;
        PROBE(MPI_ERR_WIN, MPI_Win_free(&w));

        PROBE(MPI_ERR_FILE, MPI_File_write(file, buf, 1, MPI_INT, &status));
        PROBE(MPI_ERR_FILE, MPI_File_seek(file, 0, MPI_SEEK_SET));
        MPI_File f = file;
        PROBE(MPI_ERR_FILE, MPI_File_close(&f));

        PROBE(MPI_ERR_OP, MPI_Allreduce(buf, buf + 8, 1, MPI_INT, op, MPI_COMM_WORLD));
        PROBE(MPI_ERR_OP, MPI_Reduce_local(buf, buf + 8, 1, MPI_INT, op));
        MPI_Op o = op;
        PROBE(MPI_ERR_OP, MPI_Op_free(&o));

        if (bad != 5) { /* world_group is a valid group */
            PROBE(MPI_ERR_GROUP, MPI_Group_size(group, &n));
            MPI_Group g = group;
            PROBE(MPI_ERR_GROUP, MPI_Group_free(&g));
            MPI_Comm sub = MPI_COMM_NULL;
            PROBE(MPI_ERR_GROUP, MPI_Comm_create(MPI_COMM_WORLD, group, &sub));
        }

        PROBE(MPI_ERR_INFO, MPI_Info_set(info, "key", "value"));
        PROBE(MPI_ERR_INFO, MPI_Info_get_nkeys(info, &n));
        MPI_Info i = info;
        PROBE(MPI_ERR_INFO, MPI_Info_free(&i));

        PROBE(MPI_ERR_ERRHANDLER, MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
        MPI_Errhandler e = eh;
        PROBE(MPI_ERR_ERRHANDLER, MPI_Errhandler_free(&e));

        MPI_Message m = msg;
        PROBE(MPI_ERR_REQUEST, MPI_Mrecv(buf, 1, MPI_INT, &m, &status));
        m = msg;
        MPI_Request mr = MPI_REQUEST_NULL;
        PROBE(MPI_ERR_REQUEST, MPI_Imrecv(buf, 1, MPI_INT, &m, &mr));

        MPI_Session s = session;
        PROBE(MPI_ERR_SESSION, MPI_Session_finalize(&s));
        MPI_Group sg = MPI_GROUP_NULL;
        PROBE(MPI_ERR_SESSION, MPI_Group_from_session_pset(session, "mpi://WORLD", &sg));
    }

    /* The job still works. */
    int token = rank, got = -1;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, right, 9, &got, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &status));
    CHECK(got == left, "token %d from rank %d", got, left);
    MPI_Type_free(&other_kind);
    MPI_Group_free(&world_group);
    CHECK_MPI(MPI_Finalize());
    return report("garbage_handles");
}
