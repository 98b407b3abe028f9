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

/* A datatype of one element of TYPE (extent ELEM_LEN, lower bound 0) per
 * element of section D, in array element order: nested hvectors, one per
 * dimension, each dimension's byte stride its own. MPI_DATATYPE_NULL when
 * it cannot be made. */
static MPI_Datatype section_type(const CFI_cdesc_t *d, MPI_Datatype type)
{
    MPI_Datatype t = type;
    for (int k = 0; k < d->rank; ++k) {
        MPI_Datatype next = MPI_DATATYPE_NULL;
        int ok = MPI_Type_create_hvector((int)d->dim[k].extent, 1, (MPI_Aint)d->dim[k].sm, t, &next) ==
                 MPI_SUCCESS;
        if (t != type) MPI_Type_free(&t);
        if (!ok) return MPI_DATATYPE_NULL;
        t = next;
    }
    if (MPI_Type_commit(&t) != MPI_SUCCESS) {
        MPI_Type_free(&t);
        return MPI_DATATYPE_NULL;
    }
    return t;
}

int axon_f08_buf_begin(axon_f08_buf *b, const CFI_cdesc_t *d, MPI_Fint *count, MPI_Count *count_c,
                       MPI_Fint *type, int mode, int copy_out)
{
    memset(b, 0, sizeof(*b));
    b->countp = count;
    b->countcp = count_c;
    b->typep = type;
    b->one = 1;
    b->one_c = 1;
    b->d = d;
    b->ptr = d->base_addr;
    if (mode == F08_BUFFER_ADDRESS || d->rank == 0 || nelems(d) <= 1 || contiguous(d)) return MPI_SUCCESS;
    if (mode == F08_BUFFER_CONTIGUOUS) return MPI_ERR_BUFFER;
    if (type != NULL) {
        MPI_Datatype t = MPI_Type_fromint(*type);
        MPI_Aint lb = 0, extent = 0;
        int elementwise = MPI_Type_get_extent(t, &lb, &extent) == MPI_SUCCESS && lb == 0 &&
                          extent == (MPI_Aint)d->elem_len;
        ptrdiff_t s = uniform_stride(d);
        MPI_Count n = count != NULL ? (MPI_Count)*count : count_c != NULL ? *count_c : -1;
        MPI_Datatype r = MPI_DATATYPE_NULL;
        if (elementwise && s > 0) {
            /* One stride: the datatype resized to it, COUNT of them. */
            if (MPI_Type_create_resized(t, 0, (MPI_Aint)s, &r) == MPI_SUCCESS && MPI_Type_commit(&r) != MPI_SUCCESS)
                MPI_Type_free(&r);
        } else if (elementwise && n == (MPI_Count)nelems(d)) {
            /* Every element of a section with strides of its own per
             * dimension: one datatype describing the section, count 1. */
            r = section_type(d, t);
            if (r != MPI_DATATYPE_NULL) {
                b->countp = count != NULL ? &b->one : NULL;
                b->countcp = count_c != NULL ? &b->one_c : NULL;
            }
        }
        if (r != MPI_DATATYPE_NULL) {
            b->type = MPI_Type_toint(r);
            b->typep = &b->type;
            b->made_type = 1;
            return MPI_SUCCESS;
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

/* MPI_SIZEOF(X, SIZE, IERROR) of `use mpi` and `use mpi_f08`: X of any type,
 * kind and rank arrives as a descriptor, whose element length is the size in
 * bytes of one element. IERROR is optional in mpi_f08. */
AXON_F_API void axon_f_sizeof(const CFI_cdesc_t *x, MPI_Fint *size, MPI_Fint *ierror)
{
    *size = (MPI_Fint)x->elem_len;
    if (ierror != NULL) *ierror = MPI_SUCCESS;
}

/* MPI_F_SYNC_REG(BUF): does nothing, but the compiler cannot know that, so
 * it must assume BUF changed and reload it from memory. */
AXON_F_ENTRY(mpi_f_sync_reg_, (void *buf))
{
    (void)buf;
}
