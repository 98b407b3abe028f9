// The predefined-datatype table (sizes for x86-64 Linux with gcc/gfortran)
// and the handle <-> object mapping.
#include "datatype/datatype.h"

#include "datatype/pair_types.h"

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <type_traits>

namespace axon {

namespace detail {
constinit std::atomic<Datatype* const*> predefined_types{nullptr};
}  // namespace detail

namespace {

// Predefined handles are integers below this bound (the ABI keeps all of
// them under 0x400); datatypes occupy 0x200..0x2ff.
constexpr std::uintptr_t predefined_handle_limit = 0x400;
constexpr std::uintptr_t datatype_handle_base = detail::kPredefinedTypeBase;
constexpr std::size_t datatype_handle_span = detail::kPredefinedTypeSpan;

std::uintptr_t handle_value(MPI_Datatype handle) { return reinterpret_cast<std::uintptr_t>(handle); }

// One block covering the whole item, for every type without holes. Sized
// for the largest predefined item; `length` is taken from the entry.
constexpr TypeBlock whole_blocks[] = {
    {0, 1}, {0, 2}, {0, 4}, {0, 6}, {0, 8}, {0, 12}, {0, 16}, {0, 20}, {0, 32},
};
const TypeBlock* whole_block(std::size_t size) {
    for (const TypeBlock& block : whole_blocks) {
        if (block.length == size) return &block;
    }
    return nullptr;  // unreachable for the sizes in the table
}

// The two runs of a MINLOC/MAXLOC pair struct: value, then index.
template <typename Pair>
constexpr std::array<TypeBlock, 2> pair_blocks = {{
    {0, sizeof(Pair::value)},
    {static_cast<std::ptrdiff_t>(offsetof(Pair, index)), sizeof(Pair::index)},
}};

struct Entry {
    MPI_Datatype handle;
    Datatype type;
    SignatureRun signature;  // one element of the type itself
};

// Alignment of a basic type in a C struct (the k_i of the extent rule).
std::size_t basic_alignment(std::size_t size, ElementKind element) {
    switch (element) {
        case ElementKind::complex_float16: case ElementKind::complex_float32:
        case ElementKind::complex_float64: case ElementKind::complex_float80:
        case ElementKind::complex_float128:
            return size / 2;
        default:
            return size > 16 ? 16 : size;
    }
}

// A basic type of `size` bytes with no holes.
void set_basic(Datatype& t, const char* name, std::size_t size, ElementKind element, OpGroup group) {
    t.name = name;
    t.size = size;
    t.lb = 0;
    t.extent = static_cast<std::ptrdiff_t>(size);
    t.true_lb = 0;
    t.true_extent = static_cast<std::ptrdiff_t>(size);
    t.contiguous = true;
    t.predefined = true;
    t.committed = true;
    t.element = element;
    t.op_group = group;
    t.elements_per_item = 1;
    t.blocks = whole_block(size);
    t.block_count = 1;
    t.align = basic_alignment(size, element);
}

// A MINLOC/MAXLOC pair: size is the sum of the members, extent that of the
// C struct (with its alignment padding), so it is contiguous only when the
// struct has no padding.
template <typename Pair>
void set_pair(Datatype& t, const char* name, ElementKind element) {
    const std::size_t data = sizeof(Pair::value) + sizeof(Pair::index);
    const std::ptrdiff_t true_end = static_cast<std::ptrdiff_t>(offsetof(Pair, index) + sizeof(Pair::index));
    t.name = name;
    t.size = data;
    t.lb = 0;
    t.extent = static_cast<std::ptrdiff_t>(sizeof(Pair));
    t.true_lb = 0;
    t.true_extent = true_end;
    t.contiguous = (data == sizeof(Pair));
    t.predefined = true;
    t.committed = true;
    t.element = element;
    t.op_group = OpGroup::minloc_pair;
    t.elements_per_item = 1;
    t.align = alignof(Pair);
    if (t.contiguous) {
        t.blocks = whole_block(data);
        t.block_count = 1;
    } else {
        t.blocks = pair_blocks<Pair>.data();
        t.block_count = 2;
    }
}

using EK = ElementKind;
using OG = OpGroup;

// Every predefined datatype of the ABI header (aliases counted once).
constexpr std::size_t predefined_count = 70;

struct Table {
    std::array<Entry, predefined_count> entries{};
    std::array<MPI_Datatype, predefined_count> handles{};
    std::array<Datatype*, datatype_handle_span> by_value{};

    Table() {
        std::size_t n = 0;
        auto next = [&](MPI_Datatype h) -> Datatype& {
            if (n >= predefined_count) std::abort();  // predefined_count is stale
            entries[n].handle = h;
            return entries[n++].type;
        };
        auto basic = [&](MPI_Datatype h, const char* name, std::size_t size, EK kind, OG group) {
            set_basic(next(h), name, size, kind, group);
        };
        auto pair = [&]<typename Pair>(MPI_Datatype h, const char* name, EK kind, Pair*) {
            set_pair<Pair>(next(h), name, kind);
        };
        // Multi-language types and MPI_PACKED.
        basic(MPI_AINT, "MPI_AINT", sizeof(MPI_Aint), EK::int64, OG::multi_language);
        basic(MPI_COUNT, "MPI_COUNT", sizeof(MPI_Count), EK::int64, OG::multi_language);
        basic(MPI_OFFSET, "MPI_OFFSET", sizeof(MPI_Offset), EK::int64, OG::multi_language);
        basic(MPI_PACKED, "MPI_PACKED", 1, EK::packed, OG::none);
        // C integers.
        basic(MPI_SHORT, "MPI_SHORT", sizeof(short), EK::int16, OG::c_integer);
        basic(MPI_INT, "MPI_INT", sizeof(int), EK::int32, OG::c_integer);
        basic(MPI_LONG, "MPI_LONG", sizeof(long), EK::int64, OG::c_integer);
        // MPI_LONG_LONG and MPI_LONG_LONG_INT are one handle in the ABI, as are
        // MPI_C_COMPLEX and MPI_C_FLOAT_COMPLEX: the older names, as MPICH gives
        // (its suite accepts them for both spellings, not the reverse).
        basic(MPI_LONG_LONG, "MPI_LONG_LONG_INT", sizeof(long long), EK::int64, OG::c_integer);
        basic(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(unsigned short), EK::uint16, OG::c_integer);
        basic(MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), EK::uint32, OG::c_integer);
        basic(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), EK::uint64, OG::c_integer);
        basic(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long), EK::uint64,
              OG::c_integer);
        // C/C++ floating point and complex.
        basic(MPI_FLOAT, "MPI_FLOAT", sizeof(float), EK::float32, OG::floating_point);
        basic(MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", 2 * sizeof(float), EK::complex_float32, OG::complex);
        basic(MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", 2 * sizeof(float), EK::complex_float32,
              OG::complex);
        basic(MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), EK::float64, OG::floating_point);
        basic(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 2 * sizeof(double), EK::complex_float64,
              OG::complex);
        basic(MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", 2 * sizeof(double), EK::complex_float64,
              OG::complex);
        basic(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), EK::float80, OG::floating_point);
        basic(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", 2 * sizeof(long double),
              EK::complex_float80, OG::complex);
        basic(MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", 2 * sizeof(long double),
              EK::complex_float80, OG::complex);
        // Fortran (gfortran defaults: INTEGER, REAL, LOGICAL are 4 bytes).
        basic(MPI_LOGICAL, "MPI_LOGICAL", 4, EK::logical32, OG::logical);
        basic(MPI_INTEGER, "MPI_INTEGER", 4, EK::int32, OG::fortran_integer);
        basic(MPI_REAL, "MPI_REAL", 4, EK::float32, OG::floating_point);
        basic(MPI_COMPLEX, "MPI_COMPLEX", 8, EK::complex_float32, OG::complex);
        basic(MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, EK::float64, OG::floating_point);
        basic(MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16, EK::complex_float64, OG::complex);
        basic(MPI_CHARACTER, "MPI_CHARACTER", 1, EK::character, OG::none);
        // MINLOC/MAXLOC pairs.
        pair(MPI_FLOAT_INT, "MPI_FLOAT_INT", EK::pair_float_int, static_cast<FloatIntPair*>(nullptr));
        pair(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", EK::pair_double_int, static_cast<DoubleIntPair*>(nullptr));
        pair(MPI_LONG_INT, "MPI_LONG_INT", EK::pair_long_int, static_cast<LongIntPair*>(nullptr));
        pair(MPI_2INT, "MPI_2INT", EK::pair_int_int, static_cast<IntIntPair*>(nullptr));
        pair(MPI_SHORT_INT, "MPI_SHORT_INT", EK::pair_short_int, static_cast<ShortIntPair*>(nullptr));
        pair(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", EK::pair_long_double_int,
             static_cast<LongDoubleIntPair*>(nullptr));
        pair(MPI_2REAL, "MPI_2REAL", EK::pair_real_real, static_cast<RealRealPair*>(nullptr));
        pair(MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", EK::pair_double_double,
             static_cast<DoubleDoublePair*>(nullptr));
        pair(MPI_2INTEGER, "MPI_2INTEGER", EK::pair_integer_integer, static_cast<IntegerIntegerPair*>(nullptr));
        // Booleans and characters.
        basic(MPI_C_BOOL, "MPI_C_BOOL", sizeof(bool), EK::c_bool, OG::logical);
        basic(MPI_CXX_BOOL, "MPI_CXX_BOOL", sizeof(bool), EK::c_bool, OG::logical);
        basic(MPI_WCHAR, "MPI_WCHAR", sizeof(wchar_t), EK::wchar, OG::none);
        // Fixed-size C integers, chars and bytes.
        basic(MPI_INT8_T, "MPI_INT8_T", 1, EK::int8, OG::c_integer);
        basic(MPI_UINT8_T, "MPI_UINT8_T", 1, EK::uint8, OG::c_integer);
        // MPI_CHAR takes the C integer ops as in MPICH, whose test suite reduces
        // it with SUM/PROD/MIN/MAX and the logical and bitwise ops; its
        // arithmetic is that of the platform's plain char.
        basic(MPI_CHAR, "MPI_CHAR", 1, std::is_signed_v<char> ? EK::int8 : EK::uint8, OG::c_integer);
        basic(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, EK::int8, OG::c_integer);
        basic(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, EK::uint8, OG::c_integer);
        basic(MPI_BYTE, "MPI_BYTE", 1, EK::byte, OG::byte);
        basic(MPI_INT16_T, "MPI_INT16_T", 2, EK::int16, OG::c_integer);
        basic(MPI_UINT16_T, "MPI_UINT16_T", 2, EK::uint16, OG::c_integer);
        basic(MPI_INT32_T, "MPI_INT32_T", 4, EK::int32, OG::c_integer);
        basic(MPI_UINT32_T, "MPI_UINT32_T", 4, EK::uint32, OG::c_integer);
        basic(MPI_INT64_T, "MPI_INT64_T", 8, EK::int64, OG::c_integer);
        basic(MPI_UINT64_T, "MPI_UINT64_T", 8, EK::uint64, OG::c_integer);
        // Sized Fortran types. REAL2 is IEEE binary16, REAL16 is binary128
        // (gfortran's REAL(16)); COMPLEXn is a pair of REAL(n/2).
        basic(MPI_LOGICAL1, "MPI_LOGICAL1", 1, EK::logical8, OG::logical);
        basic(MPI_INTEGER1, "MPI_INTEGER1", 1, EK::int8, OG::fortran_integer);
        basic(MPI_LOGICAL2, "MPI_LOGICAL2", 2, EK::logical16, OG::logical);
        basic(MPI_INTEGER2, "MPI_INTEGER2", 2, EK::int16, OG::fortran_integer);
        basic(MPI_REAL2, "MPI_REAL2", 2, EK::float16, OG::floating_point);
        basic(MPI_LOGICAL4, "MPI_LOGICAL4", 4, EK::logical32, OG::logical);
        basic(MPI_INTEGER4, "MPI_INTEGER4", 4, EK::int32, OG::fortran_integer);
        basic(MPI_REAL4, "MPI_REAL4", 4, EK::float32, OG::floating_point);
        basic(MPI_COMPLEX4, "MPI_COMPLEX4", 4, EK::complex_float16, OG::complex);
        basic(MPI_LOGICAL8, "MPI_LOGICAL8", 8, EK::logical64, OG::logical);
        basic(MPI_INTEGER8, "MPI_INTEGER8", 8, EK::int64, OG::fortran_integer);
        basic(MPI_REAL8, "MPI_REAL8", 8, EK::float64, OG::floating_point);
        basic(MPI_COMPLEX8, "MPI_COMPLEX8", 8, EK::complex_float32, OG::complex);
        basic(MPI_LOGICAL16, "MPI_LOGICAL16", 16, EK::logical128, OG::logical);
        basic(MPI_INTEGER16, "MPI_INTEGER16", 16, EK::int128, OG::fortran_integer);
        basic(MPI_REAL16, "MPI_REAL16", 16, EK::float128, OG::floating_point);
        basic(MPI_COMPLEX16, "MPI_COMPLEX16", 16, EK::complex_float64, OG::complex);
        basic(MPI_COMPLEX32, "MPI_COMPLEX32", 32, EK::complex_float128, OG::complex);

        // A table edit that forgets to update predefined_count must not
        // leave silent empty entries.
        if (n != predefined_count) std::abort();
        for (std::size_t i = 0; i < n; ++i) {
            handles[i] = entries[i].handle;
            entries[i].type.abi_handle = static_cast<std::uint16_t>(handle_value(entries[i].handle));
            entries[i].signature = {&entries[i].type, 1};
            entries[i].type.signature = &entries[i].signature;
            entries[i].type.signature_count = 1;
            by_value[handle_value(entries[i].handle) - datatype_handle_base] = &entries[i].type;
        }
        detail::predefined_types.store(by_value.data(), std::memory_order_release);
    }
};

// Built on first use (a function-local static), so it is safe even from
// other translation units' static initializers.
Table& table() {
    static Table instance;
    return instance;
}

static_assert(sizeof(long) == 8 && sizeof(int) == 4 && sizeof(short) == 2, "LP64 is assumed");
static_assert(sizeof(wchar_t) == 4, "Linux wchar_t is assumed");
static_assert(sizeof(MPI_Aint) == 8 && sizeof(MPI_Count) == 8 && sizeof(MPI_Offset) == 8);

}  // namespace

Datatype* datatype_from_handle(MPI_Datatype handle) {
    const std::uintptr_t value = handle_value(handle);
    if (value < predefined_handle_limit) {
        if (value < datatype_handle_base || value >= datatype_handle_base + datatype_handle_span) return nullptr;
        return table().by_value[value - datatype_handle_base];
    }
    if (!may_be_object<Datatype>(handle)) return nullptr;
    auto* type = reinterpret_cast<Datatype*>(value);
    return type->magic == datatype_magic_live ? type : nullptr;
}

MPI_Datatype to_handle(const Datatype* type) {
    if (type == nullptr) return MPI_DATATYPE_NULL;
    if (type->predefined) return reinterpret_cast<MPI_Datatype>(static_cast<std::uintptr_t>(type->abi_handle));
    return reinterpret_cast<MPI_Datatype>(const_cast<Datatype*>(type));
}

bool is_predefined_handle(MPI_Datatype handle) {
    const std::uintptr_t value = handle_value(handle);
    return value >= datatype_handle_base && value < datatype_handle_base + datatype_handle_span &&
           table().by_value[value - datatype_handle_base] != nullptr;
}

std::span<const MPI_Datatype> predefined_datatype_handles() { return table().handles; }

bool is_valid_for_communication(const Datatype* type) {
    return type != nullptr && (type->predefined || type->committed);
}

void pack_items(const Datatype& type, const void* user, std::size_t count, void* packed) {
    if (type.contiguous) {
        if (count != 0 && type.size != 0) std::memcpy(packed, user, type.size * count);
        return;
    }
    Convertor cv(type, user, count);
    convertor_pack(cv, packed, cv.total);
}

void unpack_items(const Datatype& type, const void* packed, std::size_t count, void* user) {
    if (type.contiguous) {
        if (count != 0 && type.size != 0) std::memcpy(user, packed, type.size * count);
        return;
    }
    Convertor cv(type, user, count);
    convertor_unpack(cv, packed, cv.total);
}

void copy_items_between(const Datatype& type, const void* in, void* out, std::size_t count) {
    const auto* src = static_cast<const unsigned char*>(in);
    auto* dst = static_cast<unsigned char*>(out);
    if (type.contiguous) {
        if (count != 0 && type.size != 0 && src != dst) std::memmove(dst, src, type.size * count);
        return;
    }
    for (std::size_t i = 0; i < count * type.reps; ++i) {
        const std::ptrdiff_t unit = static_cast<std::ptrdiff_t>(i / type.reps) * type.extent +
                                    static_cast<std::ptrdiff_t>(i % type.reps) * type.rep_stride;
        for (std::size_t b = 0; b < type.block_count; ++b) {
            const TypeBlock& block = type.blocks[b];
            for (std::size_t r = 0; r < block.count; ++r) {
                const std::ptrdiff_t at = unit + block.offset + static_cast<std::ptrdiff_t>(r) * block.stride;
                std::memmove(dst + at, src + at, block.length);
            }
        }
    }
}

Datatype* type_value_index(const Datatype& value, const Datatype& index) {
    struct P { MPI_Datatype value, index, pair; };
    static const P pairs[] = {
        {MPI_FLOAT, MPI_INT, MPI_FLOAT_INT},     {MPI_DOUBLE, MPI_INT, MPI_DOUBLE_INT},
        {MPI_LONG, MPI_INT, MPI_LONG_INT},       {MPI_INT, MPI_INT, MPI_2INT},
        {MPI_SHORT, MPI_INT, MPI_SHORT_INT},     {MPI_LONG_DOUBLE, MPI_INT, MPI_LONG_DOUBLE_INT},
        {MPI_REAL, MPI_REAL, MPI_2REAL},         {MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_2DOUBLE_PRECISION},
        {MPI_INTEGER, MPI_INTEGER, MPI_2INTEGER},
    };
    if (!value.predefined || !index.predefined) return nullptr;
    for (const P& p : pairs)
        if (to_handle(&value) == p.value && to_handle(&index) == p.index) return datatype_from_handle(p.pair);
    return nullptr;
}

Datatype* type_match_size(int typeclass, int size) {
    struct M { int typeclass, size; MPI_Datatype type; };
    static const M table[] = {
        {MPI_TYPECLASS_INTEGER, 1, MPI_INTEGER1}, {MPI_TYPECLASS_INTEGER, 2, MPI_INTEGER2},
        {MPI_TYPECLASS_INTEGER, 4, MPI_INTEGER4}, {MPI_TYPECLASS_INTEGER, 8, MPI_INTEGER8},
        {MPI_TYPECLASS_INTEGER, 16, MPI_INTEGER16},
        {MPI_TYPECLASS_REAL, 2, MPI_REAL2}, {MPI_TYPECLASS_REAL, 4, MPI_REAL4},
        {MPI_TYPECLASS_REAL, 8, MPI_REAL8}, {MPI_TYPECLASS_REAL, 16, MPI_REAL16},
        {MPI_TYPECLASS_COMPLEX, 4, MPI_COMPLEX4}, {MPI_TYPECLASS_COMPLEX, 8, MPI_COMPLEX8},
        {MPI_TYPECLASS_COMPLEX, 16, MPI_COMPLEX16}, {MPI_TYPECLASS_COMPLEX, 32, MPI_COMPLEX32},
        {MPIX_TYPECLASS_LOGICAL, 1, MPI_LOGICAL1}, {MPIX_TYPECLASS_LOGICAL, 2, MPI_LOGICAL2},
        {MPIX_TYPECLASS_LOGICAL, 4, MPI_LOGICAL4}, {MPIX_TYPECLASS_LOGICAL, 8, MPI_LOGICAL8},
        {MPIX_TYPECLASS_LOGICAL, 16, MPI_LOGICAL16},
    };
    for (const M& m : table)
        if (m.typeclass == typeclass && m.size == size) return datatype_from_handle(m.type);
    return nullptr;
}

void datatype_retain_derived(Datatype* type) { type->refcount.fetch_add(1, std::memory_order_relaxed); }

void datatype_release_derived(Datatype* type) {
    if (type->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // Clobber the magic first so a stale handle to this memory is
        // rejected while the allocator has not reused it.
        type->magic = datatype_magic_dead;
        delete type;
    }
}

}  // namespace axon
