// MPI_Op objects: the predefined ops, user ops, the standard's op x type
// table, and applying an op to buffers.
#include "op/op.h"

#include "op/op_kernels.h"

#include <climits>
#include <cstring>
#include <new>
#include <type_traits>

namespace axon {
namespace {

constexpr std::uintptr_t predefined_handle_limit = 0x400;  // every ABI constant is below

// A prvalue (no copy: Op holds an atomic), so it can initialize a constinit.
constexpr Op make_predefined(OpKind kind, const char* name, bool commutative = true) {
    return Op{.kind = kind, .commutative = commutative, .predefined = true, .name = name};
}

// Constant-initialized: usable before main and from any thread.
constinit Op op_sum = make_predefined(OpKind::sum, "MPI_SUM");
constinit Op op_min = make_predefined(OpKind::min, "MPI_MIN");
constinit Op op_max = make_predefined(OpKind::max, "MPI_MAX");
constinit Op op_prod = make_predefined(OpKind::prod, "MPI_PROD");
constinit Op op_band = make_predefined(OpKind::band, "MPI_BAND");
constinit Op op_bor = make_predefined(OpKind::bor, "MPI_BOR");
constinit Op op_bxor = make_predefined(OpKind::bxor, "MPI_BXOR");
constinit Op op_land = make_predefined(OpKind::land, "MPI_LAND");
constinit Op op_lor = make_predefined(OpKind::lor, "MPI_LOR");
constinit Op op_lxor = make_predefined(OpKind::lxor, "MPI_LXOR");
constinit Op op_minloc = make_predefined(OpKind::minloc, "MPI_MINLOC");
constinit Op op_maxloc = make_predefined(OpKind::maxloc, "MPI_MAXLOC");
// REPLACE keeps the incoming value, so it is not commutative; it and NO_OP
// exist for MPI_Accumulate and friends.
constinit Op op_replace = make_predefined(OpKind::replace, "MPI_REPLACE", false);
constinit Op op_no_op = make_predefined(OpKind::no_op, "MPI_NO_OP", false);

std::uintptr_t handle_value(MPI_Op handle) { return reinterpret_cast<std::uintptr_t>(handle); }

template <typename Fn>
Op* make_user_op(Fn* fn, bool commutative) {
    if (fn == nullptr) return nullptr;
    Op* op = new (std::nothrow) Op;
    if (op == nullptr) return nullptr;
    op->kind = OpKind::user;
    op->commutative = commutative;
    op->predefined = false;
    op->name = "";
    if constexpr (std::is_same_v<Fn, MPI_User_function>) {
        op->user_fn = fn;
    } else {
        op->user_fn_c = fn;
    }
    return op;
}

// Calls the user function in chunks its length argument can hold.
int apply_user(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& type) {
    MPI_Datatype handle = to_handle(&type);
    auto* left = static_cast<unsigned char*>(const_cast<void*>(in));  // the C signature is not const
    auto* right = static_cast<unsigned char*>(inout);
    const std::size_t extent = static_cast<std::size_t>(type.extent);
    if (op.user_fn_c != nullptr) {
        // MPI_Count holds any count we can address; one call suffices.
        MPI_Count length = static_cast<MPI_Count>(count);
        if (count != 0) op.user_fn_c(left, right, &length, &handle);
        return MPI_SUCCESS;
    }
    if (op.user_fn == nullptr) return MPI_ERR_OP;
    while (count > 0) {
        const std::size_t chunk = count < static_cast<std::size_t>(INT_MAX) ? count : static_cast<std::size_t>(INT_MAX);
        int length = static_cast<int>(chunk);
        op.user_fn(left, right, &length, &handle);
        left += chunk * extent;
        right += chunk * extent;
        count -= chunk;
    }
    return MPI_SUCCESS;
}

}  // namespace

Op* op_from_handle(MPI_Op handle) {
    const std::uintptr_t value = handle_value(handle);
    if (value < predefined_handle_limit) {
        switch (value) {
            case 0x21: return &op_sum;
            case 0x22: return &op_min;
            case 0x23: return &op_max;
            case 0x24: return &op_prod;
            case 0x28: return &op_band;
            case 0x29: return &op_bor;
            case 0x2a: return &op_bxor;
            case 0x30: return &op_land;
            case 0x31: return &op_lor;
            case 0x32: return &op_lxor;
            case 0x38: return &op_minloc;
            case 0x39: return &op_maxloc;
            case 0x3c: return &op_replace;
            case 0x3d: return &op_no_op;
            default: return nullptr;  // MPI_OP_NULL, gaps, other handle kinds
        }
    }
    if (!may_be_object<Op>(handle)) return nullptr;
    auto* op = reinterpret_cast<Op*>(value);
    return op->magic == op_magic_live ? op : nullptr;
}

MPI_Op to_handle(const Op* op) {
    if (op == nullptr) return MPI_OP_NULL;
    if (op->predefined) {
        switch (op->kind) {
            case OpKind::sum: return MPI_SUM;
            case OpKind::min: return MPI_MIN;
            case OpKind::max: return MPI_MAX;
            case OpKind::prod: return MPI_PROD;
            case OpKind::band: return MPI_BAND;
            case OpKind::bor: return MPI_BOR;
            case OpKind::bxor: return MPI_BXOR;
            case OpKind::land: return MPI_LAND;
            case OpKind::lor: return MPI_LOR;
            case OpKind::lxor: return MPI_LXOR;
            case OpKind::minloc: return MPI_MINLOC;
            case OpKind::maxloc: return MPI_MAXLOC;
            case OpKind::replace: return MPI_REPLACE;
            case OpKind::no_op: return MPI_NO_OP;
            case OpKind::user:
            case OpKind::count_: break;
        }
        return MPI_OP_NULL;
    }
    return reinterpret_cast<MPI_Op>(const_cast<Op*>(op));
}

Op* op_create_user(MPI_User_function* fn, bool commutative) { return make_user_op(fn, commutative); }
Op* op_create_user_c(MPI_User_function_c* fn, bool commutative) { return make_user_op(fn, commutative); }

void op_retain(Op* op) {
    if (op != nullptr && !op->predefined) op->refcount.fetch_add(1, std::memory_order_relaxed);
}

void op_release(Op* op) {
    if (op == nullptr || op->predefined) return;
    if (op->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        op->magic = op_magic_dead;  // a stale handle is rejected until the memory is reused
        delete op;
    }
}

bool op_defined_for(const Op& op, const Datatype& type) {
    const OpGroup g = type.op_group;
    switch (op.kind) {
        case OpKind::user:
        case OpKind::replace:
        case OpKind::no_op:
            return true;
        case OpKind::min:
        case OpKind::max:
            return g == OpGroup::c_integer || g == OpGroup::fortran_integer || g == OpGroup::floating_point ||
                   g == OpGroup::multi_language;
        case OpKind::sum:
        case OpKind::prod:
            return g == OpGroup::c_integer || g == OpGroup::fortran_integer || g == OpGroup::floating_point ||
                   g == OpGroup::complex || g == OpGroup::multi_language;
        case OpKind::land:
        case OpKind::lor:
        case OpKind::lxor:
            // The standard lists only C integer and logical; MPI_AINT,
            // MPI_OFFSET and MPI_COUNT are C integers in all but name, and
            // Open MPI and MPICH (and MPICH's allred test) take them too.
            return g == OpGroup::c_integer || g == OpGroup::logical || g == OpGroup::multi_language;
        case OpKind::band:
        case OpKind::bor:
        case OpKind::bxor:
            return g == OpGroup::c_integer || g == OpGroup::fortran_integer || g == OpGroup::byte ||
                   g == OpGroup::multi_language;
        case OpKind::minloc:
        case OpKind::maxloc:
            return g == OpGroup::minloc_pair;
        case OpKind::count_:
            break;
    }
    return false;
}

int op_apply(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& type) {
    if (op.kind == OpKind::user) return apply_user(op, in, inout, count, type);
    if (!op_defined_for(op, type)) return MPI_ERR_OP;
    if (op.kind == OpKind::no_op) return MPI_SUCCESS;
    if (op.kind == OpKind::replace) {
        copy_items_between(type, in, inout, count);  // holes are left alone
        return MPI_SUCCESS;
    }
    const ReductionKernel kernel = reduction_kernel(op.kind, type.element);
    if (kernel == nullptr) return MPI_ERR_OP;
    if (type.predefined || type.contiguous) {
        // Items laid out as an array of elements: one kernel call.
        std::size_t elements = 0;
        if (__builtin_mul_overflow(count, type.elements_per_item, &elements)) return MPI_ERR_COUNT;
        if (elements != 0) kernel(in, inout, elements);
        return MPI_SUCCESS;
    }
    // A derived type of one basic type with holes: every flattened block is a
    // run of whole elements (blocks merge only adjacent data), so the kernel
    // runs in place on each block and the holes are left alone. A padded
    // MINLOC pair splits into value and index blocks: not an element run.
    if (type.signature_count == 0) return MPI_SUCCESS;
    const Datatype& basic = *type.signature[0].basic;
    if (!basic.contiguous || basic.size == 0) return MPI_ERR_OP;
    const auto* src = static_cast<const unsigned char*>(in);
    auto* dst = static_cast<unsigned char*>(inout);
    for (std::size_t i = 0; i < count * type.reps; ++i) {
        const std::ptrdiff_t unit = static_cast<std::ptrdiff_t>(i / type.reps) * type.extent +
                                    static_cast<std::ptrdiff_t>(i % type.reps) * type.rep_stride;
        for (std::size_t b = 0; b < type.block_count; ++b) {
            const TypeBlock& block = type.blocks[b];
            for (std::size_t r = 0; r < block.count; ++r) {
                const std::ptrdiff_t at = unit + block.offset + static_cast<std::ptrdiff_t>(r) * block.stride;
                kernel(src + at, dst + at, block.length / basic.size);
            }
        }
    }
    return MPI_SUCCESS;
}

}  // namespace axon
