// The "external32" data representation (MPI-4.1 section 19.5.2): big-endian,
// IEEE formats, fixed sizes. On x86-64 Linux most basic types only need a
// byte swap; MPI_LONG / MPI_UNSIGNED_LONG (8 -> 4 bytes), MPI_WCHAR (4 -> 2)
// and long double (x87 80-bit -> IEEE binary128) change size. Values that do
// not fit the narrower external type are truncated, as MPICH does.
//
// Conversion works on the packed stream: items are first packed natively
// (the convertor), then each basic element of the signature is converted.
#include "datatype/datatype.h"

#include <cstring>
#include <vector>

namespace axon {
namespace {

enum class Form : unsigned char { swap, long4, ulong4, wchar2, x87 };

// How one basic (non-pair) element is represented: its form and external
// size (the native size is the type's size).
struct Encoding {
    Form form;
    std::size_t external;
    std::size_t part;  // bytes swapped as one number (complex: each half)
};

Encoding encoding_of(const Datatype& basic) {
    const MPI_Datatype h = to_handle(&basic);
    if (h == MPI_LONG) return {Form::long4, 4, 4};
    if (h == MPI_UNSIGNED_LONG) return {Form::ulong4, 4, 4};
    if (h == MPI_WCHAR) return {Form::wchar2, 2, 2};
    switch (basic.element) {
        case ElementKind::float80: return {Form::x87, 16, 16};
        case ElementKind::complex_float80: return {Form::x87, 32, 16};
        case ElementKind::complex_float16: case ElementKind::complex_float32:
        case ElementKind::complex_float64: case ElementKind::complex_float128:
            return {Form::swap, basic.size, basic.size / 2};
        default: return {Form::swap, basic.size, basic.size};
    }
}

// The two members of a MINLOC/MAXLOC pair type, or false for other types.
bool pair_members(const Datatype& t, MPI_Datatype* value, MPI_Datatype* index) {
    const MPI_Datatype h = to_handle(&t);
    struct P { MPI_Datatype pair, value, index; };
    static const P pairs[] = {
        {MPI_FLOAT_INT, MPI_FLOAT, MPI_INT},     {MPI_DOUBLE_INT, MPI_DOUBLE, MPI_INT},
        {MPI_LONG_INT, MPI_LONG, MPI_INT},       {MPI_2INT, MPI_INT, MPI_INT},
        {MPI_SHORT_INT, MPI_SHORT, MPI_INT},     {MPI_LONG_DOUBLE_INT, MPI_LONG_DOUBLE, MPI_INT},
        {MPI_2REAL, MPI_REAL, MPI_REAL},         {MPI_2DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION},
        {MPI_2INTEGER, MPI_INTEGER, MPI_INTEGER},
    };
    for (const P& p : pairs)
        if (p.pair == h) {
            *value = p.value;
            *index = p.index;
            return true;
        }
    return false;
}

void put_be(unsigned char* out, unsigned __int128 v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[n - 1 - i] = static_cast<unsigned char>(v >> (8 * i));
}
unsigned __int128 get_be(const unsigned char* in, std::size_t n) {
    unsigned __int128 v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | in[i];
    return v;
}
unsigned __int128 get_le(const unsigned char* in, std::size_t n) {
    unsigned __int128 v = 0;
    for (std::size_t i = n; i > 0; --i) v = (v << 8) | in[i - 1];
    return v;
}
void put_le(unsigned char* out, unsigned __int128 v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

constexpr std::uint64_t low63 = 0x7fffffffffffffffull;

// x87 extended (mantissa with explicit integer bit, then sign+exponent) to
// IEEE binary128 (same exponent bias; the fraction is the mantissa without
// the integer bit, left-aligned in 112 bits).
void x87_to_quad(const unsigned char* in, unsigned char* out) {
    std::uint64_t mantissa = 0;
    std::uint16_t sign_exp = 0;
    std::memcpy(&mantissa, in, 8);
    std::memcpy(&sign_exp, in + 8, 2);
    const unsigned __int128 q = (static_cast<unsigned __int128>(sign_exp) << 112) |
                                (static_cast<unsigned __int128>(mantissa & low63) << 49);
    put_be(out, q, 16);
}

void quad_to_x87(const unsigned char* in, unsigned char* out) {
    const unsigned __int128 q = get_be(in, 16);
    const auto sign_exp = static_cast<std::uint16_t>(q >> 112);
    const bool normal = (sign_exp & 0x7fff) != 0;  // also infinities and NaNs
    const std::uint64_t mantissa = (static_cast<std::uint64_t>(q >> 49) & low63) | (normal ? 1ull << 63 : 0);
    std::memset(out, 0, 16);
    std::memcpy(out, &mantissa, 8);
    std::memcpy(out + 8, &sign_exp, 2);
}

// One basic element native -> external; returns the external bytes.
std::size_t encode(const Datatype& basic, const unsigned char* in, unsigned char* out) {
    MPI_Datatype value, index;
    if (pair_members(basic, &value, &index)) {
        const Datatype& v = *datatype_from_handle(value);
        const Datatype& i = *datatype_from_handle(index);
        const std::size_t n = encode(v, in, out);
        // The packed pair holds the value then the index, without padding.
        return n + encode(i, in + v.size, out + n);
    }
    const Encoding e = encoding_of(basic);
    switch (e.form) {
        case Form::long4: case Form::ulong4: case Form::wchar2:
            put_be(out, get_le(in, basic.size), e.external);
            return e.external;
        case Form::x87:
            for (std::size_t k = 0; k < e.external / 16; ++k) x87_to_quad(in + 16 * k, out + 16 * k);
            return e.external;
        case Form::swap:
            for (std::size_t k = 0; k < basic.size; k += e.part) put_be(out + k, get_le(in + k, e.part), e.part);
            return e.external;
    }
    return 0;
}

// One basic element external -> native; returns the external bytes used.
std::size_t decode(const Datatype& basic, const unsigned char* in, unsigned char* out) {
    MPI_Datatype value, index;
    if (pair_members(basic, &value, &index)) {
        const Datatype& v = *datatype_from_handle(value);
        const Datatype& i = *datatype_from_handle(index);
        const std::size_t n = decode(v, in, out);
        return n + decode(i, in + n, out + v.size);
    }
    const Encoding e = encoding_of(basic);
    switch (e.form) {
        case Form::long4: {
            const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_be(in, 4)));
            put_le(out, static_cast<unsigned __int128>(static_cast<__int128>(v)), basic.size);
            return 4;
        }
        case Form::ulong4: case Form::wchar2:
            put_le(out, get_be(in, e.external), basic.size);
            return e.external;
        case Form::x87:
            for (std::size_t k = 0; k < e.external / 16; ++k) quad_to_x87(in + 16 * k, out + 16 * k);
            return e.external;
        case Form::swap:
            for (std::size_t k = 0; k < basic.size; k += e.part) put_le(out + k, get_be(in + k, e.part), e.part);
            return e.external;
    }
    return 0;
}

std::size_t external_element_size(const Datatype& basic) {
    MPI_Datatype value, index;
    if (pair_members(basic, &value, &index))
        return external_element_size(*datatype_from_handle(value)) +
               external_element_size(*datatype_from_handle(index));
    return encoding_of(basic).external;
}

// Calls fn(basic) for every basic element of `count` items, in stream order.
template <typename Fn>
void for_each_element(const Datatype& type, std::size_t count, Fn fn) {
    for (std::size_t u = 0; u < count * type.reps; ++u)
        for (std::size_t s = 0; s < type.signature_count; ++s)
            for (std::size_t k = 0; k < type.signature[s].count; ++k) fn(*type.signature[s].basic);
}

}  // namespace

bool external32_size(const Datatype& type, std::size_t count, std::size_t* bytes) {
    std::size_t unit = 0;
    for (std::size_t s = 0; s < type.signature_count; ++s) {
        std::size_t run = 0;
        if (__builtin_mul_overflow(external_element_size(*type.signature[s].basic), type.signature[s].count, &run) ||
            __builtin_add_overflow(unit, run, &unit))
            return false;
    }
    return !__builtin_mul_overflow(unit, type.reps, &unit) && !__builtin_mul_overflow(unit, count, bytes);
}

int external32_pack(const Datatype& type, const void* user, std::size_t count, void* out) {
    try {
        std::vector<unsigned char> native(type.size * count);
        pack_items(type, user, count, native.data());
        const unsigned char* in = native.data();
        auto* dst = static_cast<unsigned char*>(out);
        for_each_element(type, count, [&](const Datatype& basic) {
            dst += encode(basic, in, dst);
            in += basic.size;
        });
        return MPI_SUCCESS;
    } catch (const std::bad_alloc&) {
        return MPI_ERR_NO_MEM;
    }
}

int external32_unpack(const Datatype& type, const void* in, std::size_t count, void* user) {
    try {
        std::vector<unsigned char> native(type.size * count);
        const auto* src = static_cast<const unsigned char*>(in);
        unsigned char* dst = native.data();
        for_each_element(type, count, [&](const Datatype& basic) {
            src += decode(basic, src, dst);
            dst += basic.size;
        });
        unpack_items(type, native.data(), count, user);
        return MPI_SUCCESS;
    } catch (const std::bad_alloc&) {
        return MPI_ERR_NO_MEM;
    }
}

}  // namespace axon
