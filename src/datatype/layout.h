// Internal to src/datatype: the Builder that every constructor uses to turn
// "n copies of an old type at these offsets" into a flattened layout (merged
// blocks, run-length signature, bounds by the standard's typemap rules).
#pragma once

#include "datatype/datatype.h"

#include <cstddef>
#include <memory>

namespace axon::layout {

// Upper bound on the blocks one type may expand to (32 bytes each); beyond
// it a constructor fails with MPI_ERR_NO_MEM instead of exhausting memory.
inline constexpr std::size_t max_blocks = std::size_t{1} << 25;

class Builder {
public:
    // Appends n copies of `child` at offset, offset + stride, ... to the unit
    // being built (in type-map order). Returns MPI_SUCCESS, MPI_ERR_COUNT on
    // arithmetic overflow or MPI_ERR_NO_MEM past max_blocks.
    int add_copies(const Datatype& child, std::ptrdiff_t offset, std::size_t n, std::ptrdiff_t stride);

    // Makes the type: one item is `reps` copies of the unit built so far,
    // rep_stride bytes apart. Bounds follow MPI-4.1 5.1.6 (markers, then the
    // alignment epsilon). The result has a DerivedParts with empty contents.
    int finish(std::size_t reps, std::ptrdiff_t rep_stride, std::unique_ptr<Datatype>* out);

private:
    void append_block(TypeBlock block);
    void append_signature(const Datatype* basic, std::size_t count);

    std::vector<TypeBlock> blocks_;
    std::vector<SignatureRun> signature_;
    std::size_t size_ = 0;
    std::size_t align_ = 1;
    bool any_data_ = false;
    std::ptrdiff_t data_lo_ = 0, data_hi_ = 0;
    bool lb_marker_ = false, ub_marker_ = false;
    std::ptrdiff_t lb_pos_ = 0, ub_pos_ = 0;
};

// A new derived type with exactly the layout and bounds of `old` (its
// blocks, signature and repetitions copied, nothing expanded).
int clone_layout(const Datatype& old, std::unique_ptr<Datatype>* out);

// Sets the derived flags (contiguous, element kind, op group, elements per
// item) from the layout; finish() calls it, constructors that change bounds
// afterwards call it again.
void refresh_flags(Datatype& type);

}  // namespace axon::layout
