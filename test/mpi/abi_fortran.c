/* The Fortran side of the MPI 5.0 ABI: MPI_Abi_get_fortran_info reports the
 * sizes the datatype table uses (and they agree with MPI_Type_size), the
 * booleans of every predefined logical size are known (.TRUE. = 1, .FALSE. =
 * 0, is_set true) and cannot be set again (MPI_ERR_ABI), a logical size that
 * is not a power of two is MPI_ERR_ARG, and a size without a predefined type
 * can be registered exactly once. The getters run before MPI_Init too, as the
 * ABI lets a Fortran layer ask early. */
#include "../mpi/check.h"

static void check_info_size(MPI_Info info, const char *key, MPI_Datatype type)
{
    char value[64] = "";
    int flag = 0, size = -1;
    CHECK_MPI(MPI_Info_get_string(info, key, &(int){sizeof value}, value, &flag));
    MPI_Type_size(type, &size);
    CHECK(flag && atoi(value) == size, "%s = '%s' (flag %d), MPI_Type_size %d", key, value, flag, size);
}

static void check_supported(MPI_Info info, const char *key)
{
    char value[64] = "";
    int flag = 0;
    CHECK_MPI(MPI_Info_get_string(info, key, &(int){sizeof value}, value, &flag));
    CHECK(flag && (strcmp(value, "true") == 0 || strcmp(value, "false") == 0), "%s = '%s'", key, value);
}

static void check_booleans(int try_set)
{
    for (int size = 1; size <= 16; size *= 2) {
        unsigned char t[16], f[16], want_t[16] = {1}, want_f[16] = {0};
        memset(t, 0xAA, sizeof t);
        memset(f, 0xAA, sizeof f);
        int is_set = -1;
        CHECK_MPI(MPI_Abi_get_fortran_booleans(size, t, f, &is_set));
        CHECK(is_set == 1, "size %d: is_set %d", size, is_set);
        CHECK(memcmp(t, want_t, size) == 0 && memcmp(f, want_f, size) == 0, "size %d: wrong literals", size);
        CHECK(size == 16 || t[size] == 0xAA, "size %d: wrote past the logical", size);
        if (!try_set) continue;  /* before MPI_Init errors would be fatal */
        int cls = -1;
        MPI_Error_class(MPI_Abi_set_fortran_booleans(size, t, f), &cls);
        CHECK(cls == MPI_ERR_ABI, "set of known size %d: class %d", size, cls);
    }
}

int main(int argc, char **argv)
{
    /* Before MPI_Init: no communicator, errors are returned (MPI-4.1 9.3). */
    check_booleans(0);
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_booleans(1);

    MPI_Info info = MPI_INFO_NULL;
    CHECK_MPI(MPI_Abi_get_fortran_info(&info));
    CHECK(info != MPI_INFO_NULL, "no Fortran info");
    if (info != MPI_INFO_NULL) {
        check_info_size(info, "mpi_logical_size", MPI_LOGICAL);
        check_info_size(info, "mpi_integer_size", MPI_INTEGER);
        check_info_size(info, "mpi_real_size", MPI_REAL);
        check_info_size(info, "mpi_double_precision_size", MPI_DOUBLE_PRECISION);
        const char *keys[] = {"mpi_logical1_supported", "mpi_logical16_supported", "mpi_integer1_supported",
                              "mpi_integer16_supported", "mpi_real2_supported", "mpi_real16_supported",
                              "mpi_complex4_supported", "mpi_complex32_supported", "mpi_double_complex_supported"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i) check_supported(info, keys[i]);
        int cls = -1;
        MPI_Error_class(MPI_Abi_set_fortran_info(info), &cls);
        CHECK(cls == MPI_ERR_ABI, "MPI_Abi_set_fortran_info: class %d", cls);
        MPI_Info_free(&info);
    }
    int cls = -1;
    MPI_Error_class(MPI_Abi_set_fortran_info(MPI_INFO_NULL), &cls);
    CHECK(cls == MPI_ERR_INFO, "MPI_Abi_set_fortran_info(MPI_INFO_NULL): class %d", cls);

    unsigned char t[64], f[64];
    int is_set = -1;
    MPI_Error_class(MPI_Abi_get_fortran_booleans(3, t, f, &is_set), &cls);
    CHECK(cls == MPI_ERR_ARG, "get, size 3: class %d", cls);
    MPI_Error_class(MPI_Abi_set_fortran_booleans(0, t, f), &cls);
    CHECK(cls == MPI_ERR_ARG, "set, size 0: class %d", cls);
    /* A 32-byte logical: unknown, registered once, then read back. */
    CHECK_MPI(MPI_Abi_get_fortran_booleans(32, t, f, &is_set));
    CHECK(is_set == 0, "size 32 before registration: is_set %d", is_set);
    unsigned char mine_t[32], mine_f[32];
    for (int i = 0; i < 32; ++i) mine_t[i] = (unsigned char)(0xF0 + i % 16), mine_f[i] = (unsigned char)i;
    CHECK_MPI(MPI_Abi_set_fortran_booleans(32, mine_t, mine_f));
    MPI_Error_class(MPI_Abi_set_fortran_booleans(32, mine_f, mine_t), &cls);
    CHECK(cls == MPI_ERR_ABI, "second set of size 32: class %d", cls);
    memset(t, 0, sizeof t);
    CHECK_MPI(MPI_Abi_get_fortran_booleans(32, t, f, &is_set));
    CHECK(is_set == 1 && memcmp(t, mine_t, 32) == 0 && memcmp(f, mine_f, 32) == 0, "size 32 read back wrong");
    MPI_Finalize();
    return report("mpi_abi_fortran");
}
