/* Helpers of the Fortran entry points (fortran_util.h). */
#include "fortran/fortran_util.h"

#include <stdio.h>
#include <string.h>

AXON_F_API MPI_Fint mpi_fortran_bottom_;
AXON_F_API MPI_Fint mpi_fortran_in_place_;
AXON_F_API MPI_Fint mpi_fortran_buffer_automatic_;
AXON_F_API MPI_Fint mpi_fortran_errcodes_ignore_;
AXON_F_API MPI_Fint mpi_fortran_unweighted_;
AXON_F_API MPI_Fint mpi_fortran_weights_empty_;
AXON_F_API char mpi_fortran_argv_null_;
AXON_F_API char mpi_fortran_argvs_null_;

void *axon_f_alloc(long n, size_t size)
{
    void *p = calloc(n > 0 ? (size_t)n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "axon: out of memory in a Fortran binding\n");
        abort();
    }
    return p;
}

char *axon_f_str_in(const char *f, size_t len)
{
    /* Leading and trailing blanks are not part of a Fortran string argument
     * (the standard says so of info keys and values, MPI-4.1 chapter 10;
     * MPICH strips them from every string argument, and so does Axon). */
    while (len > 0 && f[0] == ' ') ++f, --len;
    while (len > 0 && f[len - 1] == ' ') --len;
    char *c = (char *)axon_f_alloc((long)len + 1, 1);
    memcpy(c, f, len);
    c[len] = '\0';
    return c;
}

void axon_f_str_out(const char *c, char *f, size_t len)
{
    size_t n = strlen(c);
    if (n > len) n = len;
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

int axon_f_comm_size(MPI_Comm comm)
{
    int inter = 0, size = 0;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    if (inter ? MPI_Comm_remote_size(comm, &size) : MPI_Comm_size(comm, &size)) return 0;
    return size;
}

static void degrees(MPI_Comm comm, int *in, int *out)
{
    int kind = MPI_UNDEFINED, n = 0, weighted = 0, rank = 0;
    *in = *out = 0;
    if (MPI_Topo_test(comm, &kind) != MPI_SUCCESS) return;
    if (kind == MPI_CART) {
        if (MPI_Cartdim_get(comm, &n) == MPI_SUCCESS) *in = *out = 2 * n;
    } else if (kind == MPI_GRAPH) {
        if (MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && MPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS)
            *in = *out = n;
    } else if (kind == MPI_DIST_GRAPH) {
        MPI_Dist_graph_neighbors_count(comm, in, out, &weighted);
    }
}

int axon_f_indegree(MPI_Comm comm)
{
    int in, out;
    degrees(comm, &in, &out);
    return in;
}

int axon_f_outdegree(MPI_Comm comm)
{
    int in, out;
    degrees(comm, &in, &out);
    return out;
}
