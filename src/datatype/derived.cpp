// The type constructors of MPI-4.1 section 5.1: each checks its arguments,
// describes the new type as copies of old types to a layout::Builder, and
// records its construction for MPI_Type_get_envelope / get_contents.
#include "datatype/datatype.h"
#include "datatype/layout.h"

#include <algorithm>
#include <new>

namespace axon {
namespace {

using layout::Builder;

constexpr MPI_Count int_max = 0x7fffffff;

bool negative(const MPI_Count* values, MPI_Count n) {
    for (MPI_Count i = 0; i < n; ++i)
        if (values[i] < 0) return true;
    return false;
}

// Byte offset of `index` items of `extent` bytes, MPI_ERR_COUNT on overflow.
int scaled(MPI_Count index, std::ptrdiff_t extent, std::ptrdiff_t* out) {
    return __builtin_mul_overflow(static_cast<std::ptrdiff_t>(index), extent, out) ? MPI_ERR_COUNT : MPI_SUCCESS;
}

// Records the construction and hands out the finished type.
class Recorder {
public:
    Recorder(int combiner, bool large) : large_(large) { contents_.combiner = combiner; }
    // An argument the standard lists among the integers, or among the large
    // counts in the _c binding.
    void count(MPI_Count v) {
        if (large_) contents_.large_counts.push_back(v);
        else contents_.ints.push_back(static_cast<int>(v));
    }
    // An address-sized argument (MPI_Aint in the int binding).
    void address(MPI_Count v) {
        if (large_) contents_.large_counts.push_back(v);
        else contents_.addresses.push_back(static_cast<MPI_Aint>(v));
    }
    void integer(int v) { contents_.ints.push_back(v); }           // always an int
    void aint(MPI_Aint v) { contents_.addresses.push_back(v); }    // always an MPI_Aint
    void type(Datatype* t) {
        datatype_retain(t);
        contents_.types.push_back(t);
    }
    int finish(std::unique_ptr<Datatype> made, Datatype** out) {
        auto& c = made->derived->contents;
        c.combiner = contents_.combiner;
        c.ints = std::move(contents_.ints);
        c.addresses = std::move(contents_.addresses);
        c.large_counts = std::move(contents_.large_counts);
        c.types = std::move(contents_.types);
        contents_.types.clear();
        *out = made.release();
        return MPI_SUCCESS;
    }

private:
    bool large_;
    TypeContents contents_;
};

// Runs a constructor body, turning allocation failure into MPI_ERR_NO_MEM.
template <typename Body>
int guarded(Body body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return MPI_ERR_NO_MEM;
    }
}

// Items of a subarray/darray dimension the builder repeats: (first element, count).
struct Run {
    MPI_Count start;
    MPI_Count length;
};

// Builds the type of an n-dimensional selection: per dimension (fastest
// first) the runs of selected elements, then resizes to the whole array.
int build_array(int ndims, const MPI_Count* sizes, const std::vector<std::vector<Run>>& runs_fast_first,
                const std::vector<int>& dim_fast_first, Datatype* old, std::unique_ptr<Datatype>* out) {
    std::unique_ptr<Datatype> current;
    const Datatype* inner = old;
    std::ptrdiff_t stride = old->extent;  // bytes between neighbours in this dimension
    for (int k = 0; k < ndims; ++k) {
        Builder b;
        for (const Run& run : runs_fast_first[static_cast<std::size_t>(k)]) {
            std::ptrdiff_t offset = 0;
            if (int rc = scaled(run.start, stride, &offset)) return rc;
            if (int rc = b.add_copies(*inner, offset, static_cast<std::size_t>(run.length), stride)) return rc;
        }
        std::unique_ptr<Datatype> next;
        if (int rc = b.finish(1, 0, &next)) return rc;
        current = std::move(next);
        inner = current.get();
        if (scaled(sizes[dim_fast_first[static_cast<std::size_t>(k)]], stride, &stride)) return MPI_ERR_COUNT;
    }
    // lb 0, extent = the whole array (the standard defines both constructors
    // through MPI_Type_create_resized).
    Builder whole;
    if (int rc = whole.add_copies(*inner, 0, 1, 0)) return rc;
    std::unique_ptr<Datatype> result;
    if (int rc = whole.finish(1, 0, &result)) return rc;
    result->lb = 0;
    result->extent = stride;
    result->has_lb_marker = result->has_ub_marker = true;
    layout::refresh_flags(*result);
    *out = std::move(result);
    return MPI_SUCCESS;
}

std::vector<int> dims_fast_first(int ndims, int order) {
    std::vector<int> dims(static_cast<std::size_t>(ndims));
    for (int k = 0; k < ndims; ++k) dims[static_cast<std::size_t>(k)] = order == MPI_ORDER_C ? ndims - 1 - k : k;
    return dims;
}

}  // namespace

TypeContents::~TypeContents() {
    for (Datatype* t : types) datatype_release(t);
}

const TypeContents* type_contents(const Datatype& type) {
    return type.derived ? &type.derived->contents : nullptr;
}

int type_contiguous(MPI_Count count, Datatype* old, bool large, Datatype** out) {
    if (count < 0) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        if (int rc = b.add_copies(*old, 0, 1, 0)) return rc;
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(static_cast<std::size_t>(count), old->extent, &t)) return rc;
        Recorder r(MPI_COMBINER_CONTIGUOUS, large);
        r.count(count);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

namespace {
int vector_common(MPI_Count count, MPI_Count blocklength, std::ptrdiff_t stride_bytes, Datatype* old,
                  std::unique_ptr<Datatype>* t) {
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    Builder b;
    if (int rc = b.add_copies(*old, 0, static_cast<std::size_t>(blocklength), old->extent)) return rc;
    return b.finish(static_cast<std::size_t>(count), stride_bytes, t);
}
}  // namespace

int type_vector(MPI_Count count, MPI_Count blocklength, MPI_Count stride, Datatype* old, bool large,
                Datatype** out) {
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    return guarded([&] {
        std::ptrdiff_t bytes = 0;
        if (int rc = scaled(stride, old->extent, &bytes)) return rc;
        std::unique_ptr<Datatype> t;
        if (int rc = vector_common(count, blocklength, bytes, old, &t)) return rc;
        Recorder r(MPI_COMBINER_VECTOR, large);
        r.count(count);
        r.count(blocklength);
        r.count(stride);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_hvector(MPI_Count count, MPI_Count blocklength, MPI_Count stride_bytes, Datatype* old, bool large,
                 Datatype** out) {
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    return guarded([&] {
        std::unique_ptr<Datatype> t;
        if (int rc = vector_common(count, blocklength, static_cast<std::ptrdiff_t>(stride_bytes), old, &t))
            return rc;
        Recorder r(MPI_COMBINER_HVECTOR, large);
        r.count(count);
        r.count(blocklength);
        r.address(stride_bytes);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_indexed(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements, Datatype* old,
                 bool large, Datatype** out) {
    if (count < 0 || negative(blocklengths, count)) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        for (MPI_Count i = 0; i < count; ++i) {
            std::ptrdiff_t offset = 0;
            if (int rc = scaled(displacements[i], old->extent, &offset)) return rc;
            if (int rc = b.add_copies(*old, offset, static_cast<std::size_t>(blocklengths[i]), old->extent)) return rc;
        }
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(1, 0, &t)) return rc;
        Recorder r(MPI_COMBINER_INDEXED, large);
        r.count(count);
        for (MPI_Count i = 0; i < count; ++i) r.count(blocklengths[i]);
        for (MPI_Count i = 0; i < count; ++i) r.count(displacements[i]);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_hindexed(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements_bytes,
                  Datatype* old, bool large, Datatype** out) {
    if (count < 0 || negative(blocklengths, count)) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        for (MPI_Count i = 0; i < count; ++i)
            if (int rc = b.add_copies(*old, static_cast<std::ptrdiff_t>(displacements_bytes[i]),
                                      static_cast<std::size_t>(blocklengths[i]), old->extent))
                return rc;
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(1, 0, &t)) return rc;
        Recorder r(MPI_COMBINER_HINDEXED, large);
        r.count(count);
        for (MPI_Count i = 0; i < count; ++i) r.count(blocklengths[i]);
        for (MPI_Count i = 0; i < count; ++i) r.address(displacements_bytes[i]);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_indexed_block(MPI_Count count, MPI_Count blocklength, const MPI_Count* displacements, Datatype* old,
                       bool large, Datatype** out) {
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        for (MPI_Count i = 0; i < count; ++i) {
            std::ptrdiff_t offset = 0;
            if (int rc = scaled(displacements[i], old->extent, &offset)) return rc;
            if (int rc = b.add_copies(*old, offset, static_cast<std::size_t>(blocklength), old->extent)) return rc;
        }
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(1, 0, &t)) return rc;
        Recorder r(MPI_COMBINER_INDEXED_BLOCK, large);
        r.count(count);
        r.count(blocklength);
        for (MPI_Count i = 0; i < count; ++i) r.count(displacements[i]);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_hindexed_block(MPI_Count count, MPI_Count blocklength, const MPI_Count* displacements_bytes,
                        Datatype* old, bool large, Datatype** out) {
    if (count < 0 || blocklength < 0) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        for (MPI_Count i = 0; i < count; ++i)
            if (int rc = b.add_copies(*old, static_cast<std::ptrdiff_t>(displacements_bytes[i]),
                                      static_cast<std::size_t>(blocklength), old->extent))
                return rc;
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(1, 0, &t)) return rc;
        Recorder r(MPI_COMBINER_HINDEXED_BLOCK, large);
        r.count(count);
        r.count(blocklength);
        for (MPI_Count i = 0; i < count; ++i) r.address(displacements_bytes[i]);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_struct(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements_bytes,
                Datatype* const* types, bool large, Datatype** out) {
    if (count < 0 || negative(blocklengths, count)) return MPI_ERR_COUNT;
    return guarded([&] {
        Builder b;
        for (MPI_Count i = 0; i < count; ++i)
            if (int rc = b.add_copies(*types[i], static_cast<std::ptrdiff_t>(displacements_bytes[i]),
                                      static_cast<std::size_t>(blocklengths[i]), types[i]->extent))
                return rc;
        std::unique_ptr<Datatype> t;
        if (int rc = b.finish(1, 0, &t)) return rc;
        Recorder r(MPI_COMBINER_STRUCT, large);
        r.count(count);
        for (MPI_Count i = 0; i < count; ++i) r.count(blocklengths[i]);
        for (MPI_Count i = 0; i < count; ++i) r.address(displacements_bytes[i]);
        for (MPI_Count i = 0; i < count; ++i) r.type(types[i]);
        return r.finish(std::move(t), out);
    });
}

int type_subarray(int ndims, const MPI_Count* sizes, const MPI_Count* subsizes, const MPI_Count* starts,
                  int order, Datatype* old, bool large, Datatype** out) {
    if (ndims <= 0) return MPI_ERR_ARG;
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) return MPI_ERR_ARG;
    for (int d = 0; d < ndims; ++d) {
        if (sizes[d] <= 0 || subsizes[d] < 0 || starts[d] < 0) return MPI_ERR_ARG;
        if (subsizes[d] > sizes[d] || starts[d] > sizes[d] - subsizes[d]) return MPI_ERR_ARG;
    }
    return guarded([&] {
        const std::vector<int> dims = dims_fast_first(ndims, order);
        std::vector<std::vector<Run>> runs;
        for (int d : dims) runs.push_back({Run{starts[d], subsizes[d]}});
        std::unique_ptr<Datatype> t;
        if (int rc = build_array(ndims, sizes, runs, dims, old, &t)) return rc;
        // int binding: ndims, sizes, subsizes, starts, order; _c: ndims and
        // order are ints, the arrays large counts.
        Recorder r(MPI_COMBINER_SUBARRAY, large);
        r.integer(ndims);
        for (int d = 0; d < ndims; ++d) r.count(sizes[d]);
        for (int d = 0; d < ndims; ++d) r.count(subsizes[d]);
        for (int d = 0; d < ndims; ++d) r.count(starts[d]);
        r.integer(order);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_darray(int size, int rank, int ndims, const MPI_Count* gsizes, const int* distribs, const int* dargs,
                const int* psizes, int order, Datatype* old, bool large, Datatype** out) {
    if (size <= 0 || rank < 0 || rank >= size || ndims <= 0) return MPI_ERR_ARG;
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) return MPI_ERR_ARG;
    MPI_Count procs = 1;
    for (int d = 0; d < ndims; ++d) {
        if (gsizes[d] <= 0 || psizes[d] <= 0) return MPI_ERR_ARG;
        if (distribs[d] != MPI_DISTRIBUTE_NONE && distribs[d] != MPI_DISTRIBUTE_BLOCK &&
            distribs[d] != MPI_DISTRIBUTE_CYCLIC)
            return MPI_ERR_ARG;
        if (distribs[d] == MPI_DISTRIBUTE_NONE && psizes[d] != 1) return MPI_ERR_ARG;
        if (dargs[d] != MPI_DISTRIBUTE_DFLT_DARG && dargs[d] <= 0) return MPI_ERR_ARG;
        if (distribs[d] == MPI_DISTRIBUTE_BLOCK && dargs[d] != MPI_DISTRIBUTE_DFLT_DARG &&
            static_cast<MPI_Count>(dargs[d]) * psizes[d] < gsizes[d])
            return MPI_ERR_ARG;
        procs *= psizes[d];
        if (procs > size) return MPI_ERR_ARG;
    }
    if (procs != size) return MPI_ERR_ARG;
    return guarded([&] {
        // The process grid is row-major whatever the array order (MPI-4.1 5.1.4).
        std::vector<int> coords(static_cast<std::size_t>(ndims));
        for (int d = ndims - 1, rest = rank; d >= 0; --d) {
            coords[static_cast<std::size_t>(d)] = rest % psizes[d];
            rest /= psizes[d];
        }
        const std::vector<int> dims = dims_fast_first(ndims, order);
        std::vector<std::vector<Run>> runs;
        for (int d : dims) {
            std::vector<Run> mine;
            const MPI_Count g = gsizes[d], p = psizes[d], c = coords[static_cast<std::size_t>(d)];
            if (distribs[d] == MPI_DISTRIBUTE_NONE) {
                mine.push_back({0, g});
            } else if (distribs[d] == MPI_DISTRIBUTE_BLOCK) {
                const MPI_Count b = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[d];
                const MPI_Count start = c * b;
                if (start < g) mine.push_back({start, std::min(b, g - start)});
            } else {
                const MPI_Count b = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[d];
                for (MPI_Count start = c * b; start < g; start += p * b) mine.push_back({start, std::min(b, g - start)});
            }
            runs.push_back(std::move(mine));
        }
        std::unique_ptr<Datatype> t;
        if (int rc = build_array(ndims, gsizes, runs, dims, old, &t)) return rc;
        // int binding: size, rank, ndims, gsizes, distribs, dargs, psizes,
        // order; _c: gsizes are the large counts.
        Recorder r(MPI_COMBINER_DARRAY, large);
        r.integer(size);
        r.integer(rank);
        r.integer(ndims);
        for (int d = 0; d < ndims; ++d) r.count(gsizes[d]);
        for (int d = 0; d < ndims; ++d) r.integer(distribs[d]);
        for (int d = 0; d < ndims; ++d) r.integer(dargs[d]);
        for (int d = 0; d < ndims; ++d) r.integer(psizes[d]);
        r.integer(order);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

int type_resized(Datatype* old, MPI_Count lb, MPI_Count extent, bool large, Datatype** out) {
    return guarded([&] {
        std::unique_ptr<Datatype> t;
        if (int rc = layout::clone_layout(*old, &t)) return rc;
        t->lb = static_cast<std::ptrdiff_t>(lb);
        t->extent = static_cast<std::ptrdiff_t>(extent);
        t->has_lb_marker = t->has_ub_marker = true;
        layout::refresh_flags(*t);
        Recorder r(MPI_COMBINER_RESIZED, large);
        r.address(lb);
        r.address(extent);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

// MPI_Type_create_f90_*: the layout of the predefined `basic` type, recorded
// with the F90 combiner and its (p, r) or (r) parameters, since
// MPI_Type_get_contents must return the values the program asked for.
int type_f90(Datatype* basic, int combiner, std::span<const int> params, Datatype** out) {
    return guarded([&] {
        std::unique_ptr<Datatype> t;
        if (int rc = layout::clone_layout(*basic, &t)) return rc;
        t->committed = true;  // the standard treats these as predefined: usable at once
        Recorder r(combiner, false);
        for (int v : params) r.integer(v);
        return r.finish(std::move(t), out);
    });
}

int type_dup(Datatype* old, Datatype** out) {
    return guarded([&] {
        std::unique_ptr<Datatype> t;
        if (int rc = layout::clone_layout(*old, &t)) return rc;
        Recorder r(MPI_COMBINER_DUP, false);
        r.type(old);
        return r.finish(std::move(t), out);
    });
}

}  // namespace axon
