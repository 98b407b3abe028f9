/* A program compiled against a standard-ABI mpi.h that is not Axon's
 * (test/mpi/abi/foreign/mpi.h) and linked only with -lmpi_abi: it checks at
 * run time that the library gives each constant the meaning the standard
 * gives its value. A constant whose value the library read differently would
 * show here as a wrong answer, not as a compile error.
 *
 *   foreign_program          the checks (any number of ranks)
 *   foreign_program abort    sets MPI_ERRORS_ABORT on MPI_COMM_WORLD and makes
 *                            an erroneous call: the job must end, with the
 *                            call never returning (test/mpi/abi_foreign.sh) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AXON_MPI_H
#error "compiled against Axon's mpi.h: this test needs the foreign header"
#endif

static int failures;

#define EXPECT(cond, ...)                                               \
    do {                                                                \
        if (!(cond)) {                                                  \
            failures++;                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                 \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
        }                                                               \
    } while (0)

static int error_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

/* MPI_ERRORS_RETURN returns codes; the default on MPI_COMM_WORLD is fatal. */
static void check_error_handlers(int size)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    EXPECT(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh) == MPI_SUCCESS, "MPI_Comm_get_errhandler");
    EXPECT(eh == MPI_ERRORS_ARE_FATAL, "default handler of MPI_COMM_WORLD is %p, not MPI_ERRORS_ARE_FATAL",
           (void *)eh);
    MPI_Errhandler_free(&eh);

    EXPECT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS, "set MPI_ERRORS_RETURN");
    int value = 7;
    int rc = MPI_Send(&value, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    EXPECT(rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_RANK,
           "send to rank %d under MPI_ERRORS_RETURN returned %d (class %d), want class MPI_ERR_RANK", size, rc,
           error_class(rc));
    rc = MPI_Send(&value, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    EXPECT(error_class(rc) == MPI_ERR_COUNT, "negative count gave class %d", error_class(rc));
    rc = MPI_Send(&value, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    EXPECT(error_class(rc) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL gave class %d", error_class(rc));

    eh = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    EXPECT(eh == MPI_ERRORS_RETURN, "handler read back is %p, not MPI_ERRORS_RETURN", (void *)eh);
    MPI_Errhandler_free(&eh);

    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_ABORT);
    MPI_Comm_get_errhandler(dup, &eh);
    EXPECT(eh == MPI_ERRORS_ABORT, "handler read back is %p, not MPI_ERRORS_ABORT", (void *)eh);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
    EXPECT(dup == MPI_COMM_NULL, "MPI_Comm_free left %p", (void *)dup);
}

/* Each predefined attribute key answers with what its name says. */
static void check_attributes(int size)
{
    void *value = NULL;
    int flag = 0;

    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
    EXPECT(flag && *(int *)value >= 32767, "MPI_TAG_UB: flag %d value %d", flag, flag ? *(int *)value : 0);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &value, &flag);
    EXPECT(flag && *(int *)value == 0, "MPI_APPNUM: flag %d value %d (want 0: the first application)", flag,
           flag ? *(int *)value : -1);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &value, &flag);
    EXPECT(flag && *(int *)value >= size, "MPI_UNIVERSE_SIZE: flag %d value %d, want >= %d", flag,
           flag ? *(int *)value : -1, size);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &value, &flag);
    EXPECT(flag && (*(int *)value == 0 || *(int *)value == 1), "MPI_WTIME_IS_GLOBAL: flag %d value %d", flag,
           flag ? *(int *)value : -1);

    int added = -1;
    EXPECT(MPI_Add_error_class(&added) == MPI_SUCCESS && added > MPI_ERR_LASTCODE,
           "MPI_Add_error_class gave %d, want above MPI_ERR_LASTCODE", added);
    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &flag);
    EXPECT(flag && *(int *)value == added, "MPI_LASTUSEDCODE: flag %d value %d, want the class just added (%d)",
           flag, flag ? *(int *)value : -1, added);
}

/* MPI_SEEK_SET / _CUR / _END move the individual file pointer as named. */
static void check_seek(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/axon-abi-foreign.%ld", (long)getpid());
    MPI_File fh = MPI_FILE_NULL;
    int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    EXPECT(error_class(rc) == MPI_ERR_NO_SUCH_FILE,
           "opening a missing file returned class %d, want MPI_ERR_NO_SUCH_FILE (files default to "
           "MPI_ERRORS_RETURN)", error_class(rc));
    rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &fh);
    EXPECT(rc == MPI_SUCCESS, "MPI_File_open %s: %d", path, rc);
    if (rc != MPI_SUCCESS) return;
    unsigned char bytes[100];
    for (int i = 0; i < 100; i++) bytes[i] = (unsigned char)i;
    MPI_Status st;
    MPI_File_write(fh, bytes, 100, MPI_BYTE, &st);

    unsigned char got = 0xff;
    MPI_Offset pos = -1;
    MPI_File_seek(fh, 10, MPI_SEEK_SET);
    MPI_File_read(fh, &got, 1, MPI_BYTE, &st);
    EXPECT(got == 10, "after MPI_SEEK_SET 10 read %d", got);
    MPI_File_seek(fh, 5, MPI_SEEK_CUR);
    MPI_File_get_position(fh, &pos);
    EXPECT(pos == 16, "after MPI_SEEK_CUR +5 from 11 the position is %lld", (long long)pos);
    MPI_File_read(fh, &got, 1, MPI_BYTE, &st);
    EXPECT(got == 16, "after MPI_SEEK_CUR +5 read %d", got);
    MPI_File_seek(fh, -1, MPI_SEEK_END);
    MPI_File_read(fh, &got, 1, MPI_BYTE, &st);
    EXPECT(got == 99, "after MPI_SEEK_END -1 read %d", got);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    EXPECT(count == 1, "read count %d", count);
    MPI_File_close(&fh);
    EXPECT(fh == MPI_FILE_NULL, "MPI_File_close left %p", (void *)fh);
    EXPECT(access(path, F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left %s", path);
}

/* Datatypes, ops, combiners, comparisons, topologies, windows. */
static void check_meanings(int rank, int size)
{
    int major = -1, minor = -1;
    MPI_Abi_get_version(&major, &minor);
    EXPECT(major == MPI_ABI_VERSION && minor == MPI_ABI_SUBVERSION, "ABI version %d.%d", major, minor);

    int provided = -1;
    MPI_Query_thread(&provided);
    EXPECT(provided == MPI_THREAD_SINGLE, "MPI_Init gives %d, want MPI_THREAD_SINGLE", provided);

    struct { MPI_Datatype type; int size; const char *name; } sizes[] = {
        {MPI_CHAR, 1, "MPI_CHAR"}, {MPI_SHORT, 2, "MPI_SHORT"}, {MPI_INT, 4, "MPI_INT"},
        {MPI_LONG_LONG, 8, "MPI_LONG_LONG"}, {MPI_FLOAT, 4, "MPI_FLOAT"}, {MPI_DOUBLE, 8, "MPI_DOUBLE"},
        {MPI_C_DOUBLE_COMPLEX, 16, "MPI_C_DOUBLE_COMPLEX"}, {MPI_INT16_T, 2, "MPI_INT16_T"},
        {MPI_UINT64_T, 8, "MPI_UINT64_T"}, {MPI_BYTE, 1, "MPI_BYTE"}, {MPI_2INT, 8, "MPI_2INT"},
        {MPI_DOUBLE_INT, 12, "MPI_DOUBLE_INT"}, {MPI_INTEGER8, 8, "MPI_INTEGER8"}, {MPI_REAL4, 4, "MPI_REAL4"},
        {MPI_AINT, (int)sizeof(MPI_Aint), "MPI_AINT"}, {MPI_COUNT, 8, "MPI_COUNT"}, {MPI_OFFSET, 8, "MPI_OFFSET"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int s = -1;
        MPI_Type_size(sizes[i].type, &s);
        EXPECT(s == sizes[i].size, "MPI_Type_size(%s) = %d, want %d", sizes[i].name, s, sizes[i].size);
    }

    int mine = rank + 1, sum = 0, max = 0, band = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int bits = ~(1 << rank);
    MPI_Allreduce(&bits, &band, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
    EXPECT(sum == size * (size + 1) / 2, "MPI_SUM gave %d", sum);
    EXPECT(max == size, "MPI_MAX gave %d", max);
    EXPECT(band == ~((1 << size) - 1), "MPI_BAND gave %#x", (unsigned)band);

    if (size > 1) {
        /* The pair a rank sends: MPI_2INT data and MPI_ANY_SOURCE / MPI_ANY_TAG matching. */
        int pair[2] = {rank, 100 + rank}, got[2] = {-1, -1};
        MPI_Status st;
        if (rank == 0) {
            MPI_Recv(got, 1, MPI_2INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            EXPECT(got[0] == 1 && got[1] == 101 && st.MPI_SOURCE == 1 && st.MPI_TAG == 5,
                   "received {%d,%d} from %d tag %d", got[0], got[1], st.MPI_SOURCE, st.MPI_TAG);
        } else if (rank == 1) {
            MPI_Send(pair, 1, MPI_2INT, 0, 5, MPI_COMM_WORLD);
        }
    }
    MPI_Status st;
    int rc = MPI_Send(&mine, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    EXPECT(rc == MPI_SUCCESS, "send to MPI_PROC_NULL: %d", rc);
    rc = MPI_Recv(&mine, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    EXPECT(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
           "receive from MPI_PROC_NULL: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);

    MPI_Datatype vec = MPI_DATATYPE_NULL, f90 = MPI_DATATYPE_NULL;
    int ni = -1, na = -1, nd = -1, combiner = -1;
    MPI_Type_create_hvector(2, 1, 16, MPI_INT, &vec);
    MPI_Type_get_envelope(vec, &ni, &na, &nd, &combiner);
    EXPECT(combiner == MPI_COMBINER_HVECTOR && ni == 2 && na == 1 && nd == 1,
           "hvector envelope: combiner %d (%d %d %d)", combiner, ni, na, nd);
    MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &combiner);
    EXPECT(combiner == MPI_COMBINER_NAMED, "MPI_INT's combiner %d", combiner);
    MPI_Type_create_f90_integer(9, &f90);
    MPI_Type_get_envelope(f90, &ni, &na, &nd, &combiner);
    EXPECT(combiner == MPI_COMBINER_F90_INTEGER, "f90 integer type's combiner %d, want %d", combiner,
           MPI_COMBINER_F90_INTEGER);
    MPI_Type_free(&vec);

    int result = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
    EXPECT(result == MPI_IDENT, "compare(world, world) = %d", result);
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    EXPECT(result == MPI_CONGRUENT, "compare(world, dup) = %d", result);
    int topo = -1;
    MPI_Topo_test(dup, &topo);
    EXPECT(topo == MPI_UNDEFINED, "topology of a plain communicator %d", topo);
    MPI_Comm_free(&dup);
    MPI_Comm cart = MPI_COMM_NULL;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Topo_test(cart, &topo);
    EXPECT(topo == MPI_CART, "topology %d, want MPI_CART", topo);
    MPI_Comm_free(&cart);

    MPI_Win win = MPI_WIN_NULL;
    void *base = NULL;
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    int flag = 0;
    int *flavor = NULL, *model = NULL;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    EXPECT(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "window flavor %d", flag ? *flavor : -1);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    EXPECT(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "window model %d",
           flag ? *model : -1);
    MPI_Aint *wsize = NULL;
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
    EXPECT(flag && *wsize == 64, "window size %ld", flag ? (long)*wsize : -1L);
    MPI_Win_free(&win);
    EXPECT(win == MPI_WIN_NULL, "MPI_Win_free left %p", (void *)win);
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
        int value = 0;
        int rc = MPI_Send(&value, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
        printf("MPI_Send returned %d under MPI_ERRORS_ABORT\n", rc);
        fflush(stdout);
        MPI_Finalize();
        return 0;
    }

    check_meanings(rank, size);
    check_attributes(size);
    if (rank == 0) check_seek();
    check_error_handlers(size);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) printf("abi_foreign: %d failures over %d ranks\n", all, size);
    return all ? 1 : 0;
}
