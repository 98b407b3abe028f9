// The flattening engine: constructors describe a type as copies of old
// types; the Builder merges the copies' blocks into the fewest runs, keeps
// the signature run-length encoded and computes the bounds.
#include "datatype/layout.h"

#include <algorithm>
#include <new>

namespace axon::layout {
namespace {

// Rounds `extent` up to a multiple of `align` (the standard's epsilon).
std::ptrdiff_t round_up(std::ptrdiff_t extent, std::size_t align) {
    const auto k = static_cast<std::ptrdiff_t>(align);
    if (k <= 1) return extent;
    const std::ptrdiff_t r = ((extent % k) + k) % k;
    return r == 0 ? extent : extent + (k - r);
}

}  // namespace

void Builder::append_block(TypeBlock r) {
    if (r.length == 0 || r.count == 0) return;
    if (r.count > 1 && r.stride == static_cast<std::ptrdiff_t>(r.length)) {
        r.length *= r.count;  // repetitions that touch are one block
        r.count = 1;
        r.stride = 0;
    }
    if (r.count == 1) r.stride = 0;
    if (!blocks_.empty()) {
        TypeBlock& l = blocks_.back();
        if (l.count == 1 && r.count == 1 && l.offset + static_cast<std::ptrdiff_t>(l.length) == r.offset) {
            l.length += r.length;
            return;
        }
        if (l.length == r.length) {
            if (l.count == 1 && r.count == 1) {
                l.count = 2;
                l.stride = r.offset - l.offset;
                return;
            }
            const std::ptrdiff_t s = l.count > 1 ? l.stride : r.stride;
            const bool same_stride = l.count == 1 || r.count == 1 || l.stride == r.stride;
            if (same_stride && r.offset == l.offset + static_cast<std::ptrdiff_t>(l.count) * s) {
                l.count += r.count;
                l.stride = s;
                return;
            }
        }
    }
    blocks_.push_back(r);
}

void Builder::append_signature(const Datatype* basic, std::size_t count) {
    if (count == 0) return;
    if (!signature_.empty() && signature_.back().basic == basic) {
        signature_.back().count += count;
        return;
    }
    signature_.push_back({basic, count});
}

int Builder::add_copies(const Datatype& child, std::ptrdiff_t offset, std::size_t n, std::ptrdiff_t stride) {
    if (n == 0) return MPI_SUCCESS;
    // Offsets of the first and last copy, ordered.
    std::ptrdiff_t span = 0, last = 0;
    if (__builtin_mul_overflow(static_cast<std::ptrdiff_t>(n - 1), stride, &span) ||
        __builtin_add_overflow(offset, span, &last))
        return MPI_ERR_COUNT;
    const std::ptrdiff_t lo = std::min(offset, last), hi = std::max(offset, last);
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(child.size, n, &bytes) || __builtin_add_overflow(size_, bytes, &size_))
        return MPI_ERR_COUNT;
    if (child.size > 0) {
        // The epsilon's k is the largest alignment among the basic entries
        // of the type map: a child without data adds no entries, hence no
        // alignment (contiguous(0, MPI_DOUBLE) inside a struct with one char
        // leaves the struct's extent 1).
        align_ = std::max(align_, child.align);
        const std::ptrdiff_t child_lo = lo + child.true_lb, child_hi = hi + child.true_lb + child.true_extent;
        data_lo_ = any_data_ ? std::min(data_lo_, child_lo) : child_lo;
        data_hi_ = any_data_ ? std::max(data_hi_, child_hi) : child_hi;
        any_data_ = true;
    }
    if (child.has_lb_marker) {
        lb_pos_ = lb_marker_ ? std::min(lb_pos_, lo + child.lb) : lo + child.lb;
        lb_marker_ = true;
    }
    if (child.has_ub_marker) {
        const std::ptrdiff_t ub = hi + child.lb + child.extent;
        ub_pos_ = ub_marker_ ? std::max(ub_pos_, ub) : ub;
        ub_marker_ = true;
    }
    if (child.size == 0) return MPI_SUCCESS;

    // Signature: the child's item signature, n times.
    if (child.signature_count == 1) {
        std::size_t total = 0;
        if (__builtin_mul_overflow(child.signature[0].count, child.reps, &total) ||
            __builtin_mul_overflow(total, n, &total))
            return MPI_ERR_COUNT;
        append_signature(child.signature[0].basic, total);
    } else {
        std::size_t runs = 0;
        if (__builtin_mul_overflow(n * child.reps, child.signature_count, &runs) || runs > max_blocks)
            return MPI_ERR_NO_MEM;
        for (std::size_t k = 0; k < n * child.reps; ++k)
            for (std::size_t i = 0; i < child.signature_count; ++i)
                append_signature(child.signature[i].basic, child.signature[i].count);
    }

    // Blocks: a single-block child becomes one strided run.
    if (child.reps == 1 && child.block_count == 1 && child.blocks[0].count == 1) {
        append_block({offset + child.blocks[0].offset, child.blocks[0].length, n, stride});
        return MPI_SUCCESS;
    }
    std::size_t copies = 0;
    if (__builtin_mul_overflow(n, child.reps, &copies) || copies > max_blocks ||
        copies * child.block_count > max_blocks || blocks_.size() + copies * child.block_count > max_blocks)
        return MPI_ERR_NO_MEM;
    for (std::size_t k = 0; k < n; ++k) {
        const std::ptrdiff_t copy = offset + static_cast<std::ptrdiff_t>(k) * stride;
        for (std::size_t r = 0; r < child.reps; ++r) {
            const std::ptrdiff_t unit = copy + static_cast<std::ptrdiff_t>(r) * child.rep_stride;
            for (std::size_t b = 0; b < child.block_count; ++b) {
                TypeBlock block = child.blocks[b];
                block.offset += unit;
                append_block(block);
            }
        }
    }
    return MPI_SUCCESS;
}

int Builder::finish(std::size_t reps, std::ptrdiff_t rep_stride, std::unique_ptr<Datatype>* out) {
    try {
        auto type = std::make_unique<Datatype>();
        type->derived = std::make_unique<DerivedParts>();
        if (reps == 0) {  // an empty type map: no data, no markers, no alignment
            any_data_ = lb_marker_ = ub_marker_ = false;
            size_ = 0;
            align_ = 1;
            reps = 1;
            rep_stride = 0;
        }
        // Bounds of `reps` units.
        std::ptrdiff_t span = 0;
        if (__builtin_mul_overflow(static_cast<std::ptrdiff_t>(reps - 1), rep_stride, &span)) return MPI_ERR_COUNT;
        const std::ptrdiff_t grow_lo = std::min<std::ptrdiff_t>(0, span), grow_hi = std::max<std::ptrdiff_t>(0, span);
        std::size_t size = 0;
        if (__builtin_mul_overflow(size_, reps, &size)) return MPI_ERR_COUNT;
        type->size = size;
        type->align = align_;
        type->true_lb = any_data_ ? data_lo_ + grow_lo : 0;
        type->true_extent = any_data_ ? (data_hi_ + grow_hi) - type->true_lb : 0;
        type->has_lb_marker = lb_marker_;
        type->has_ub_marker = ub_marker_;
        type->lb = lb_marker_ ? lb_pos_ + grow_lo : type->true_lb;
        if (ub_marker_) {
            type->extent = ub_pos_ + grow_hi - type->lb;
        } else {
            const std::ptrdiff_t ub = any_data_ ? type->true_lb + type->true_extent : type->lb;
            type->extent = round_up(ub - type->lb, align_);
        }

        if (size_ == 0) {  // markers only: nothing to move
            blocks_.clear();
            signature_.clear();
            reps = 1;
            rep_stride = 0;
        }
        // Fold the repetitions into the blocks when the unit is one run.
        if (reps > 1 && blocks_.size() == 1 && signature_.size() <= 1) {
            TypeBlock& b = blocks_[0];
            if (b.count == 1) {
                TypeBlock run{b.offset, b.length, reps, rep_stride};
                blocks_.clear();
                append_block(run);
                for (auto& s : signature_) s.count *= reps;
                reps = 1;
                rep_stride = 0;
            } else if (rep_stride == static_cast<std::ptrdiff_t>(b.count) * b.stride) {
                b.count *= reps;
                for (auto& s : signature_) s.count *= reps;
                reps = 1;
                rep_stride = 0;
            }
        }
        type->reps = reps;
        type->rep_stride = rep_stride;
        type->derived->blocks = std::move(blocks_);
        type->derived->signature = std::move(signature_);
        type->blocks = type->derived->blocks.data();
        type->block_count = type->derived->blocks.size();
        type->signature = type->derived->signature.data();
        type->signature_count = type->derived->signature.size();
        refresh_flags(*type);
        *out = std::move(type);
        return MPI_SUCCESS;
    } catch (const std::bad_alloc&) {
        return MPI_ERR_NO_MEM;
    }
}

int clone_layout(const Datatype& old, std::unique_ptr<Datatype>* out) {
    try {
        auto t = std::make_unique<Datatype>();
        t->derived = std::make_unique<DerivedParts>();
        t->derived->blocks.assign(old.blocks, old.blocks + old.block_count);
        t->derived->signature.assign(old.signature, old.signature + old.signature_count);
        t->blocks = t->derived->blocks.data();
        t->block_count = t->derived->blocks.size();
        t->signature = t->derived->signature.data();
        t->signature_count = t->derived->signature.size();
        t->size = old.size;
        t->lb = old.lb;
        t->extent = old.extent;
        t->true_lb = old.true_lb;
        t->true_extent = old.true_extent;
        t->align = old.align;
        t->has_lb_marker = old.has_lb_marker;
        t->has_ub_marker = old.has_ub_marker;
        t->reps = old.reps;
        t->rep_stride = old.rep_stride;
        refresh_flags(*t);
        *out = std::move(t);
        return MPI_SUCCESS;
    } catch (const std::bad_alloc&) {
        return MPI_ERR_NO_MEM;
    }
}

void refresh_flags(Datatype& t) {
    t.predefined = false;
    t.committed = false;
    t.abi_handle = 0;
    const bool one_block = t.reps == 1 && t.block_count == 1 && t.blocks[0].count == 1 &&
                           t.blocks[0].offset == 0 && t.blocks[0].length == t.size;
    t.contiguous = t.size == 0 || (one_block && t.extent == static_cast<std::ptrdiff_t>(t.size));
    std::size_t elements = 0;
    ElementKind kind = ElementKind::none;
    OpGroup group = OpGroup::none;
    for (std::size_t i = 0; i < t.signature_count; ++i) {
        const Datatype* b = t.signature[i].basic;
        if (i == 0) {
            kind = b->element;
            group = b->op_group;
        } else if (b->element != kind || b->op_group != group) {
            kind = ElementKind::none;
            group = OpGroup::none;
        }
        elements += t.signature[i].count;
    }
    t.element = kind;
    t.op_group = group;
    t.elements_per_item = elements * t.reps;
}

}  // namespace axon::layout
