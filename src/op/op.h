// The object behind an MPI_Op handle and the reduction kernels.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "datatype/datatype.h"

namespace axon {

enum class OpKind : std::uint8_t {
    sum, prod, min, max,
    land, lor, lxor,
    band, bor, bxor,
    minloc, maxloc,
    replace, no_op,
    user,  // a function given to MPI_Op_create / MPI_Op_create_c
    count_
};
inline constexpr std::size_t op_kind_count = static_cast<std::size_t>(OpKind::count_);

inline constexpr std::uint32_t op_magic_live = 0x0B5EC7EDu;
inline constexpr std::uint32_t op_magic_dead = 0xDEAD0B5Eu;

struct Op {
    std::uint32_t magic = op_magic_live;  // rejects garbage/freed heap handles
    OpKind kind = OpKind::user;
    bool commutative = true;
    bool predefined = false;
    const char* name = "";  // "MPI_SUM", ...; "" for user ops
    // Exactly one of these is set for a user op.
    MPI_User_function* user_fn = nullptr;
    MPI_User_function_c* user_fn_c = nullptr;
    std::atomic<int> refcount{1};  // heap (user) ops only
};

// Predefined handles map to static objects; MPI_OP_NULL and unknown values in
// the predefined range give nullptr; any other value is a heap Op accepted
// only when its magic is live.
Op* op_from_handle(MPI_Op handle);
MPI_Op to_handle(const Op* op);

// New user op with refcount 1 (nullptr when out of memory or fn is null).
Op* op_create_user(MPI_User_function* fn, bool commutative);
Op* op_create_user_c(MPI_User_function_c* fn, bool commutative);
void op_retain(Op* op);
// Drops one reference; frees a user op at zero. Predefined ops are ignored.
void op_release(Op* op);

// Whether a predefined op may be applied to the type (the standard's table
// of op x datatype group); user ops are defined for every type.
bool op_defined_for(const Op& op, const Datatype& type);

// inout[i] = in[i] op inout[i] for `count` items of `type` (for a
// non-commutative op the order matters: `in` is the left operand).
// Returns MPI_SUCCESS, or MPI_ERR_OP when the op is not defined for the type.
// `in` and `inout` must not overlap unless they are equal.
int op_apply(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& type);

}  // namespace axon
