/*
 * A standard-ABI mpi.h that is not Axon's: the declarations a program
 * compiled against the MPI 5.0 ABI needs, written from the standard (types
 * of A.1.2, handle types as pointers to incomplete structs, the constants of
 * A.1.1 generated from test/mpi/abi/constants.txt) and nothing else. Only
 * the functions test/mpi/abi/foreign_program.c calls are declared. A program
 * built against it and linked with -lmpi_abi stands for a binary built
 * against the MPI Forum's header, or another implementation's, and run on
 * Axon unchanged.
 */
#ifndef MPI_H_ABI
#define MPI_H_ABI

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef intptr_t MPI_Aint;
typedef int64_t MPI_Offset;
typedef MPI_Offset MPI_Count;

typedef struct {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int MPI_internal[5];
} MPI_Status;

/* Struct tags of this header's own: the ABI fixes the handles' size and
 * values, not the names of the structs they point to. */
typedef struct foreign_comm *MPI_Comm;
typedef struct foreign_datatype *MPI_Datatype;
typedef struct foreign_errhandler *MPI_Errhandler;
typedef struct foreign_file *MPI_File;
typedef struct foreign_group *MPI_Group;
typedef struct foreign_info *MPI_Info;
typedef struct foreign_message *MPI_Message;
typedef struct foreign_op *MPI_Op;
typedef struct foreign_request *MPI_Request;
typedef struct foreign_session *MPI_Session;
typedef struct foreign_win *MPI_Win;
typedef struct foreign_t_enum *MPI_T_enum;
typedef struct foreign_t_cvar_handle *MPI_T_cvar_handle;
typedef struct foreign_t_pvar_handle *MPI_T_pvar_handle;
typedef struct foreign_t_pvar_session *MPI_T_pvar_session;

typedef int (MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Delete_function)(MPI_Comm, int, void *, void *);
typedef int (MPI_Comm_copy_attr_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Comm_delete_attr_function)(MPI_Comm, int, void *, void *);
typedef int (MPI_Type_copy_attr_function)(MPI_Datatype, int, void *, void *, void *, int *);
typedef int (MPI_Type_delete_attr_function)(MPI_Datatype, int, void *, void *);
typedef int (MPI_Win_copy_attr_function)(MPI_Win, int, void *, void *, void *, int *);
typedef int (MPI_Win_delete_attr_function)(MPI_Win, int, void *, void *);
typedef int (MPI_Datarep_conversion_function)(void *, MPI_Datatype, int, void *, MPI_Offset, void *);
typedef int (MPI_Datarep_conversion_function_c)(void *, MPI_Datatype, MPI_Count, void *, MPI_Offset,
                                                void *);

#include "foreign_constants.h"

int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Abi_get_version(int *abi_major, int *abi_minor);
int MPI_Query_thread(int *provided);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Add_error_class(int *errorclass);
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype);
int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype);
int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                          int *num_datatypes, int *combiner);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *comm_cart);
int MPI_Topo_test(MPI_Comm comm, int *status);
int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh);
int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status);
int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status);
int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence);
int MPI_File_get_position(MPI_File fh, MPI_Offset *offset);
int MPI_File_close(MPI_File *fh);
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win);
int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag);
int MPI_Win_free(MPI_Win *win);

#ifdef __cplusplus
}
#endif

#endif /* MPI_H_ABI */
