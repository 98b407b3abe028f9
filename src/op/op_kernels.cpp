// The predefined reduction kernels: one tight loop per (op, element kind),
// generated from templates, picked once per call from a table. No switch runs
// per element, so the compiler vectorizes the integer and floating loops.
#include "op/op_kernels.h"

#include "datatype/pair_types.h"
#include "op/half_float.h"

#include <array>
#include <complex>
#include <cstdint>
#include <utility>

namespace axon {
namespace {

// ---- element storage types, one per ElementKind ----------------------------

// Fortran COMPLEX32 (two binary128) and COMPLEX4 (two binary16): std::complex
// is only specified for float, double and long double.
struct ComplexFloat128 {
    __float128 re, im;
};
struct ComplexHalf {
    HalfFloat re, im;
};

enum class Category { none, integer, floating, half, complex, complex_special, logical, byte, pair };

template <ElementKind K> struct Element { static constexpr Category category = Category::none; };

#define AXON_ELEMENT(kind, storage, cat)                             \
    template <> struct Element<ElementKind::kind> {                  \
        using type = storage;                                        \
        static constexpr Category category = Category::cat;          \
    }
AXON_ELEMENT(int8, std::int8_t, integer);
AXON_ELEMENT(int16, std::int16_t, integer);
AXON_ELEMENT(int32, std::int32_t, integer);
AXON_ELEMENT(int64, std::int64_t, integer);
AXON_ELEMENT(int128, __int128, integer);
AXON_ELEMENT(uint8, std::uint8_t, integer);
AXON_ELEMENT(uint16, std::uint16_t, integer);
AXON_ELEMENT(uint32, std::uint32_t, integer);
AXON_ELEMENT(uint64, std::uint64_t, integer);
AXON_ELEMENT(float16, HalfFloat, half);
AXON_ELEMENT(float32, float, floating);
AXON_ELEMENT(float64, double, floating);
AXON_ELEMENT(float80, long double, floating);
AXON_ELEMENT(float128, __float128, floating);
AXON_ELEMENT(complex_float16, ComplexHalf, complex_special);
AXON_ELEMENT(complex_float32, std::complex<float>, complex);
AXON_ELEMENT(complex_float64, std::complex<double>, complex);
AXON_ELEMENT(complex_float80, std::complex<long double>, complex);
AXON_ELEMENT(complex_float128, ComplexFloat128, complex_special);
AXON_ELEMENT(c_bool, std::uint8_t, logical);
AXON_ELEMENT(logical8, std::uint8_t, logical);
AXON_ELEMENT(logical16, std::uint16_t, logical);
AXON_ELEMENT(logical32, std::uint32_t, logical);
AXON_ELEMENT(logical64, std::uint64_t, logical);
AXON_ELEMENT(logical128, unsigned __int128, logical);
AXON_ELEMENT(byte, std::uint8_t, byte);
AXON_ELEMENT(pair_float_int, FloatIntPair, pair);
AXON_ELEMENT(pair_double_int, DoubleIntPair, pair);
AXON_ELEMENT(pair_long_int, LongIntPair, pair);
AXON_ELEMENT(pair_int_int, IntIntPair, pair);
AXON_ELEMENT(pair_short_int, ShortIntPair, pair);
AXON_ELEMENT(pair_long_double_int, LongDoubleIntPair, pair);
AXON_ELEMENT(pair_real_real, RealRealPair, pair);
AXON_ELEMENT(pair_double_double, DoubleDoublePair, pair);
AXON_ELEMENT(pair_integer_integer, IntegerIntegerPair, pair);
#undef AXON_ELEMENT

// The unsigned type in which integer + and * wrap without undefined
// behaviour (narrow types are widened to unsigned int first, so that e.g.
// 65535 * 65535 on uint16 does not overflow a promoted signed int).
// Written out because std::make_unsigned does not know __int128 in strict
// C++ mode.
template <typename T> struct WrapType { using type = unsigned; };
template <> struct WrapType<std::int64_t> { using type = std::uint64_t; };
template <> struct WrapType<std::uint64_t> { using type = std::uint64_t; };
template <> struct WrapType<__int128> { using type = unsigned __int128; };
template <> struct WrapType<unsigned __int128> { using type = unsigned __int128; };

// ---- the loop ---------------------------------------------------------------

// The one loop every elementwise kernel runs: inout[i] = f(in[i], inout[i]).
// It is written so that gcc's default -O2 vectorizes it: the buffers are
// declared not to alias (MPI forbids overlapping reduction buffers; the
// identical-buffer case takes the plain loop), and the body works on blocks
// of a fixed count, which the cheap cost model of -O2 accepts where a loop
// of unknown count would need a scalar epilogue it refuses.
template <typename T, typename F>
void elementwise_disjoint(const T* __restrict left, T* __restrict right, std::size_t n) {
    constexpr std::size_t block = sizeof(T) >= 128 ? 1 : 128 / sizeof(T);
    std::size_t i = 0;
    for (; i + block <= n; i += block) {
        for (std::size_t j = 0; j < block; ++j) right[i + j] = F::apply(left[i + j], right[i + j]);
    }
    for (; i < n; ++i) right[i] = F::apply(left[i], right[i]);
}

template <typename T, typename F>
void elementwise(const void* in, void* inout, std::size_t n) {
    if (in == inout) {
        T* same = static_cast<T*>(inout);
        for (std::size_t i = 0; i < n; ++i) same[i] = F::apply(same[i], same[i]);
        return;
    }
    elementwise_disjoint<T, F>(static_cast<const T*>(in), static_cast<T*>(inout), n);
}

// ---- integer ops --------------------------------------------------------------

template <typename T> struct IntSum {
    static T apply(T a, T b) {
        using W = typename WrapType<T>::type;
        return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    }
};
template <typename T> struct IntProd {
    static T apply(T a, T b) {
        using W = typename WrapType<T>::type;
        return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    }
};
template <typename T> struct Min { static T apply(T a, T b) { return a < b ? a : b; } };
template <typename T> struct Max { static T apply(T a, T b) { return a > b ? a : b; } };
template <typename T> struct LogicalAnd { static T apply(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); } };
template <typename T> struct LogicalOr { static T apply(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); } };
template <typename T> struct LogicalXor { static T apply(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); } };
template <typename T> struct BitAnd { static T apply(T a, T b) { return static_cast<T>(a & b); } };
template <typename T> struct BitOr { static T apply(T a, T b) { return static_cast<T>(a | b); } };
template <typename T> struct BitXor { static T apply(T a, T b) { return static_cast<T>(a ^ b); } };

// ---- floating and complex ops ---------------------------------------------------

template <typename T> struct Sum { static T apply(T a, T b) { return a + b; } };
template <typename T> struct Prod { static T apply(T a, T b) { return a * b; } };

struct HalfSum {
    static HalfFloat apply(HalfFloat a, HalfFloat b) { return double_to_half(half_to_double(a) + half_to_double(b)); }
};
struct HalfProd {
    static HalfFloat apply(HalfFloat a, HalfFloat b) { return double_to_half(half_to_double(a) * half_to_double(b)); }
};
// MIN/MAX return one of the operands unchanged; only the comparison is in double.
struct HalfMin {
    static HalfFloat apply(HalfFloat a, HalfFloat b) { return half_to_double(a) < half_to_double(b) ? a : b; }
};
struct HalfMax {
    static HalfFloat apply(HalfFloat a, HalfFloat b) { return half_to_double(a) > half_to_double(b) ? a : b; }
};

struct ComplexHalfSum {
    static ComplexHalf apply(ComplexHalf a, ComplexHalf b) { return {HalfSum::apply(a.re, b.re), HalfSum::apply(a.im, b.im)}; }
};
struct ComplexHalfProd {
    static ComplexHalf apply(ComplexHalf a, ComplexHalf b) {
        const double ar = half_to_double(a.re), ai = half_to_double(a.im);
        const double br = half_to_double(b.re), bi = half_to_double(b.im);
        return {double_to_half(ar * br - ai * bi), double_to_half(ar * bi + ai * br)};
    }
};
struct ComplexFloat128Sum {
    static ComplexFloat128 apply(ComplexFloat128 a, ComplexFloat128 b) { return {a.re + b.re, a.im + b.im}; }
};
struct ComplexFloat128Prod {
    static ComplexFloat128 apply(ComplexFloat128 a, ComplexFloat128 b) {
        return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    }
};

// ---- MINLOC / MAXLOC --------------------------------------------------------------

// The better value wins; on a tie the lower index wins (MPI's rule). Only
// the two members are written, never the struct's padding.
template <typename P, bool take_max>
void value_index_loop(const void* in, void* inout, std::size_t n) {
    const P* left = static_cast<const P*>(in);
    P* right = static_cast<P*>(inout);
    for (std::size_t i = 0; i < n; ++i) {
        const bool better = take_max ? left[i].value > right[i].value : left[i].value < right[i].value;
        if (better) {
            right[i].value = left[i].value;
            right[i].index = left[i].index;
        } else if (left[i].value == right[i].value && left[i].index < right[i].index) {
            right[i].index = left[i].index;
        }
    }
}

// ---- selection ----------------------------------------------------------------------

template <OpKind O, ElementKind K>
constexpr ReductionKernel select_kernel() {
    using E = Element<K>;
    constexpr Category c = E::category;
    if constexpr (c == Category::integer) {
        using T = typename E::type;
        if constexpr (O == OpKind::sum) return &elementwise<T, IntSum<T>>;
        if constexpr (O == OpKind::prod) return &elementwise<T, IntProd<T>>;
        if constexpr (O == OpKind::min) return &elementwise<T, Min<T>>;
        if constexpr (O == OpKind::max) return &elementwise<T, Max<T>>;
        if constexpr (O == OpKind::land) return &elementwise<T, LogicalAnd<T>>;
        if constexpr (O == OpKind::lor) return &elementwise<T, LogicalOr<T>>;
        if constexpr (O == OpKind::lxor) return &elementwise<T, LogicalXor<T>>;
        if constexpr (O == OpKind::band) return &elementwise<T, BitAnd<T>>;
        if constexpr (O == OpKind::bor) return &elementwise<T, BitOr<T>>;
        if constexpr (O == OpKind::bxor) return &elementwise<T, BitXor<T>>;
    } else if constexpr (c == Category::floating) {
        using T = typename E::type;
        if constexpr (O == OpKind::sum) return &elementwise<T, Sum<T>>;
        if constexpr (O == OpKind::prod) return &elementwise<T, Prod<T>>;
        if constexpr (O == OpKind::min) return &elementwise<T, Min<T>>;
        if constexpr (O == OpKind::max) return &elementwise<T, Max<T>>;
    } else if constexpr (c == Category::half) {
        if constexpr (O == OpKind::sum) return &elementwise<HalfFloat, HalfSum>;
        if constexpr (O == OpKind::prod) return &elementwise<HalfFloat, HalfProd>;
        if constexpr (O == OpKind::min) return &elementwise<HalfFloat, HalfMin>;
        if constexpr (O == OpKind::max) return &elementwise<HalfFloat, HalfMax>;
    } else if constexpr (c == Category::complex) {
        using T = typename E::type;
        if constexpr (O == OpKind::sum) return &elementwise<T, Sum<T>>;
        if constexpr (O == OpKind::prod) return &elementwise<T, Prod<T>>;
    } else if constexpr (K == ElementKind::complex_float16) {
        if constexpr (O == OpKind::sum) return &elementwise<ComplexHalf, ComplexHalfSum>;
        if constexpr (O == OpKind::prod) return &elementwise<ComplexHalf, ComplexHalfProd>;
    } else if constexpr (K == ElementKind::complex_float128) {
        if constexpr (O == OpKind::sum) return &elementwise<ComplexFloat128, ComplexFloat128Sum>;
        if constexpr (O == OpKind::prod) return &elementwise<ComplexFloat128, ComplexFloat128Prod>;
    } else if constexpr (c == Category::logical) {
        using T = typename E::type;
        if constexpr (O == OpKind::land) return &elementwise<T, LogicalAnd<T>>;
        if constexpr (O == OpKind::lor) return &elementwise<T, LogicalOr<T>>;
        if constexpr (O == OpKind::lxor) return &elementwise<T, LogicalXor<T>>;
    } else if constexpr (c == Category::byte) {
        using T = typename E::type;
        if constexpr (O == OpKind::band) return &elementwise<T, BitAnd<T>>;
        if constexpr (O == OpKind::bor) return &elementwise<T, BitOr<T>>;
        if constexpr (O == OpKind::bxor) return &elementwise<T, BitXor<T>>;
    } else if constexpr (c == Category::pair) {
        using T = typename E::type;
        if constexpr (O == OpKind::minloc) return &value_index_loop<T, false>;
        if constexpr (O == OpKind::maxloc) return &value_index_loop<T, true>;
    }
    return nullptr;
}

using KernelRow = std::array<ReductionKernel, element_kind_count>;
using KernelTable = std::array<KernelRow, op_kind_count>;

template <OpKind O, std::size_t... K>
constexpr KernelRow make_row(std::index_sequence<K...>) {
    return KernelRow{select_kernel<O, static_cast<ElementKind>(K)>()...};
}

template <std::size_t... O>
constexpr KernelTable make_table(std::index_sequence<O...>) {
    return KernelTable{make_row<static_cast<OpKind>(O)>(std::make_index_sequence<element_kind_count>())...};
}

constexpr KernelTable kernel_table = make_table(std::make_index_sequence<op_kind_count>());

}  // namespace

ReductionKernel reduction_kernel(OpKind op, ElementKind element) {
    const auto o = static_cast<std::size_t>(op);
    const auto e = static_cast<std::size_t>(element);
    if (o >= op_kind_count || e >= element_kind_count) return nullptr;
    return kernel_table[o][e];
}

}  // namespace axon
