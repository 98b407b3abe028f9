/* Choice buffers of `use mpi_f08` (docs/fortran.md, "Non-contiguous
 * buffers"): a contiguous buffer is passed as it is; an array section whose
 * elements lie at one uniform byte stride, with a datatype as wide as one
 * element, becomes that datatype resized to the stride (no copy: works for
 * nonblocking calls too); any other non-contiguous buffer of a blocking call
 * goes through a contiguous temporary. */
#include "fortran/f08_util.h"

#include <stdlib.h>
#include <string.h>

static size_t nelems(const CFI_cdesc_t *d)
{
    size_t n = 1;
    for (int k = 0; k < d->rank; ++k) n *= (size_t)d->dim[k].extent;
    return n;
}

/* The byte offset of element I (array element order) from base_addr. */
static ptrdiff_t elem_offset(const CFI_cdesc_t *d, size_t i)
{
    ptrdiff_t off = 0;
    for (int k = 0; k < d->rank; ++k) {
        size_t e = (size_t)d->dim[k].extent;
        off += (ptrdiff_t)(i % e) * d->dim[k].sm;
        i /= e;
    }
    return off;
}

/* The stride between consecutive elements when it is uniform, else 0. */
static ptrdiff_t uniform_stride(const CFI_cdesc_t *d)
{
    ptrdiff_t s = 0, next = 0;
    for (int k = 0; k < d->rank; ++k) {
        if (d->dim[k].extent == 1) continue;
        if (s == 0) {
            s = d->dim[k].sm;
        } else if (d->dim[k].sm != next) {
            return 0;
        }
        next = d->dim[k].sm * d->dim[k].extent;
    }
    return s;
}

/* CFI_is_contiguous without libgfortran (libmpifort_abi does not link it). */
static int contiguous(const CFI_cdesc_t *d)
{
    ptrdiff_t want = (ptrdiff_t)d->elem_len;
    for (int k = 0; k < d->rank; ++k) {
        if (d->dim[k].extent == 1) continue;
        if (d->dim[k].sm != want) return 0;
        want *= d->dim[k].extent;
    }
    return 1;
}

static void copy_elems(const CFI_cdesc_t *d, char *tmp, int out)
{
    size_t n = nelems(d), len = d->elem_len;
    char *base = (char *)d->base_addr;
    for (size_t i = 0; i < n; ++i) {
        char *e = base + elem_offset(d, i);
        if (out) {
            memcpy(e, tmp + i * len, len);
        } else {
            memcpy(tmp + i * len, e, len);
        }
    }
}

int axon_f08_buf_begin(axon_f08_buf *b, const CFI_cdesc_t *d, MPI_Fint *count, MPI_Fint *type,
                       int mode, int copy_out)
{
    memset(b, 0, sizeof(*b));
    b->countp = count;
    b->typep = type;
    b->d = d;
    b->ptr = d->base_addr;
    if (mode == F08_BUFFER_ADDRESS || d->rank == 0 || nelems(d) <= 1 || contiguous(d)) return MPI_SUCCESS;
    if (mode == F08_BUFFER_CONTIGUOUS) return MPI_ERR_BUFFER;
    if (count != NULL && type != NULL) {
        ptrdiff_t s = uniform_stride(d);
        MPI_Datatype t = MPI_Type_fromint(*type);
        MPI_Aint lb = 0, extent = 0;
        if (s > 0 && MPI_Type_get_extent(t, &lb, &extent) == MPI_SUCCESS && lb == 0 &&
            extent == (MPI_Aint)d->elem_len) {
            MPI_Datatype r = MPI_DATATYPE_NULL;
            if (MPI_Type_create_resized(t, 0, (MPI_Aint)s, &r) == MPI_SUCCESS) {
                if (MPI_Type_commit(&r) == MPI_SUCCESS) {
                    b->type = MPI_Type_toint(r);
                    b->typep = &b->type;
                    b->made_type = 1;
                    return MPI_SUCCESS;
                }
                MPI_Type_free(&r);
            }
        }
    }
    if (mode != F08_BUFFER_BLOCKING) return MPI_ERR_BUFFER;
    b->tmp = axon_f_alloc((long)nelems(d), d->elem_len);
    copy_elems(d, (char *)b->tmp, 0);
    b->copy_out = copy_out;
    b->ptr = b->tmp;
    return MPI_SUCCESS;
}

void axon_f08_buf_end(axon_f08_buf *b)
{
    if (b->made_type) {
        /* Pending operations keep their own reference to the datatype. */
        MPI_Datatype t = MPI_Type_fromint(b->type);
        MPI_Type_free(&t);
        b->made_type = 0;
    }
    if (b->tmp) {
        if (b->copy_out) copy_elems(b->d, (char *)b->tmp, 1);
        free(b->tmp);
        b->tmp = NULL;
    }
}

int axon_f08_raise(int kind, MPI_Fint h, int code)
{
    switch (kind) {
    case 0: MPI_Comm_call_errhandler(MPI_Comm_fromint(h), code); break;
    case 1: MPI_Win_call_errhandler(MPI_Win_fromint(h), code); break;
    case 2: MPI_File_call_errhandler(MPI_File_fromint(h), code); break;
    default: MPI_Comm_call_errhandler(MPI_COMM_SELF, code); break;
    }
    return code;
}
