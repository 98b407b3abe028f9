// GPU kernels for device buffers (docs/cuda.md, "GPU kernels"): packing and
// unpacking of a flattened datatype layout, and the predefined reductions.
//
// Compiled by nvcc into a fatbin only (`nvcc -fatbin`), embedded in libmpi
// (kernels_fatbin.S) and loaded at run time with cuModuleLoadData by
// kernels.cpp: no CUDA runtime API is used here, every entry point is a
// plain __global__ function with an extern "C" name for cuModuleGetFunction.
// The launch geometry is the caller's choice; every kernel loops over its
// work with a grid stride, so any grid size is correct.
//
// Exactness: reductions must give the bytes the host kernels of
// src/op/op_kernels.cpp give. The fatbin is compiled with -fmad=false (no
// fused multiply-add contraction) and without fast-math, so every float
// operation rounds as it does on the host; comparisons and operand order
// (`in` is the left operand) are those of the host code.
#include <stdint.h>

#include "accel/kernel_records.h"

namespace {

// ---- layout records (src/accel/kernel_records.h) ---------------------------

using axon::accel::kernel_records::Layout;
using axon::accel::kernel_records::Piece;

__device__ __forceinline__ long long unit_offset(const Layout& l, unsigned long long u) {
    return static_cast<long long>(u / l.reps) * l.extent + static_cast<long long>(u % l.reps) * l.rep_stride;
}

// ---- pack / unpack ----------------------------------------------------------

// Copies `rows` runs of `length` bytes between the user layout (runs
// `stride` apart) and the packed stream (runs back to back), in words of W
// (the caller checked that W divides every address, length and stride).
// Work item i of `total` is word i of the piece; `first`/`step` spread the
// items over a warp (first = lane, step = 32) or give all to one thread.
template <typename W, bool kPack>
__device__ __forceinline__ void copy_rows(char* user, char* packed, unsigned long long length,
                                          unsigned long long rows, long long stride, unsigned first,
                                          unsigned step) {
    const unsigned long long words = length / sizeof(W);
    const unsigned long long total = words * rows;
    if (rows == 1) {
        W* u = reinterpret_cast<W*>(user);
        W* p = reinterpret_cast<W*>(packed);
        for (unsigned long long i = first; i < total; i += step) {
            if (kPack) p[i] = u[i];
            else u[i] = p[i];
        }
        return;
    }
    W* p = reinterpret_cast<W*>(packed);
    if (total <= 0xffffffffull) {
        // 32-bit division: much cheaper than 64-bit on the GPU.
        const unsigned w32 = static_cast<unsigned>(words);
        for (unsigned i = first; i < static_cast<unsigned>(total); i += step) {
            const unsigned r = i / w32, c = i - r * w32;
            W* u = reinterpret_cast<W*>(user + static_cast<long long>(r) * stride) + c;
            if (kPack) p[i] = *u;
            else *u = p[i];
        }
        return;
    }
    for (unsigned long long i = first; i < total; i += step) {
        const unsigned long long r = i / words, c = i - r * words;
        W* u = reinterpret_cast<W*>(user + static_cast<long long>(r) * stride) + c;
        if (kPack) p[i] = *u;
        else *u = p[i];
    }
}

template <bool kPack>
__device__ __forceinline__ void copy_piece(char* user_unit, char* packed_unit, const Piece& pc, unsigned first,
                                           unsigned step) {
    char* u = user_unit + pc.offset;
    char* p = packed_unit + pc.packed;
    // The widest word that divides both addresses, the run length and (with
    // several runs) the stride.
    unsigned long long bits = reinterpret_cast<uintptr_t>(u) | reinterpret_cast<uintptr_t>(p) | pc.length |
                              (pc.count > 1 ? static_cast<unsigned long long>(pc.stride) : 0ull);
    if ((bits & 15) == 0) copy_rows<uint4, kPack>(u, p, pc.length, pc.count, pc.stride, first, step);
    else if ((bits & 7) == 0) copy_rows<unsigned long long, kPack>(u, p, pc.length, pc.count, pc.stride, first, step);
    else if ((bits & 3) == 0) copy_rows<unsigned, kPack>(u, p, pc.length, pc.count, pc.stride, first, step);
    else if ((bits & 1) == 0) copy_rows<unsigned short, kPack>(u, p, pc.length, pc.count, pc.stride, first, step);
    else copy_rows<unsigned char, kPack>(u, p, pc.length, pc.count, pc.stride, first, step);
}

// One warp per (unit, piece): for pieces of a few hundred bytes and more
// (kernels.cpp cuts pieces to at most a few KiB, so a warp's share is small
// and big blocks spread over many warps, copied in 16-byte words where
// aligned).
template <bool kPack>
__device__ void warp_per_piece(char* user, char* packed, const Layout& l) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long warp = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const unsigned long long warps = (static_cast<unsigned long long>(gridDim.x) * blockDim.x) >> 5;
    const unsigned long long work = l.units * l.piece_count;
    for (unsigned long long w = warp; w < work; w += warps) {
        const unsigned long long unit = w / l.piece_count, b = w - unit * l.piece_count;
        copy_piece<kPack>(user + unit_offset(l, unit), packed + unit * l.unit_size, l.pieces[b], lane, 32);
    }
}

// One thread per (unit, piece): for layouts of many tiny blocks (a warp per
// 4-byte block would leave 31 lanes idle).
template <bool kPack>
__device__ void thread_per_piece(char* user, char* packed, const Layout& l) {
    const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    const unsigned long long work = l.units * l.piece_count;
    for (unsigned long long w = t; w < work; w += threads) {
        const unsigned long long unit = w / l.piece_count, b = w - unit * l.piece_count;
        copy_piece<kPack>(user + unit_offset(l, unit), packed + unit * l.unit_size, l.pieces[b], 0, 1);
    }
}

// ---- reductions -------------------------------------------------------------

// Op codes (kernels.cpp maps OpKind to these).
enum OpCode : int { kSum = 0, kProd, kMin, kMax, kLand, kLor, kLxor, kBand, kBor, kBxor, kMinloc, kMaxloc };

// Integer + and * wrap in the unsigned type of the host kernels (narrow
// types widened to unsigned int first).
template <typename T> struct Wrap { typedef unsigned type; };
template <> struct Wrap<long long> { typedef unsigned long long type; };
template <> struct Wrap<unsigned long long> { typedef unsigned long long type; };

template <typename T, int O> struct IntOp;
template <typename T> struct IntOp<T, kSum> {
    __device__ static T apply(T a, T b) {
        typedef typename Wrap<T>::type W;
        return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    }
};
template <typename T> struct IntOp<T, kProd> {
    __device__ static T apply(T a, T b) {
        typedef typename Wrap<T>::type W;
        return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    }
};
template <typename T> struct IntOp<T, kMin> { __device__ static T apply(T a, T b) { return a < b ? a : b; } };
template <typename T> struct IntOp<T, kMax> { __device__ static T apply(T a, T b) { return a > b ? a : b; } };
template <typename T> struct IntOp<T, kLand> {
    __device__ static T apply(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); }
};
template <typename T> struct IntOp<T, kLor> {
    __device__ static T apply(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); }
};
template <typename T> struct IntOp<T, kLxor> {
    __device__ static T apply(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); }
};
template <typename T> struct IntOp<T, kBand> { __device__ static T apply(T a, T b) { return static_cast<T>(a & b); } };
template <typename T> struct IntOp<T, kBor> { __device__ static T apply(T a, T b) { return static_cast<T>(a | b); } };
template <typename T> struct IntOp<T, kBxor> { __device__ static T apply(T a, T b) { return static_cast<T>(a ^ b); } };

// Floating point: the host's expressions (MIN/MAX keep the host's operand
// choice for NaN and signed zeros: a < b ? a : b, not fmin). The explicit
// _rn intrinsics forbid contraction even if -fmad were on.
template <typename T, int O> struct FloatOp;
template <> struct FloatOp<float, kSum> { __device__ static float apply(float a, float b) { return __fadd_rn(a, b); } };
template <> struct FloatOp<float, kProd> { __device__ static float apply(float a, float b) { return __fmul_rn(a, b); } };
template <> struct FloatOp<double, kSum> { __device__ static double apply(double a, double b) { return __dadd_rn(a, b); } };
template <> struct FloatOp<double, kProd> {
    __device__ static double apply(double a, double b) { return __dmul_rn(a, b); }
};
template <typename T> struct FloatOp<T, kMin> { __device__ static T apply(T a, T b) { return a < b ? a : b; } };
template <typename T> struct FloatOp<T, kMax> { __device__ static T apply(T a, T b) { return a > b ? a : b; } };

__device__ __forceinline__ float rn_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float rn_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float rn_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rn_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double rn_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double rn_mul(double a, double b) { return __dmul_rn(a, b); }

template <typename R> struct Complex { R re, im; };

template <typename R, int O> struct ComplexOp;
template <typename R> struct ComplexOp<R, kSum> {
    __device__ static Complex<R> apply(Complex<R> a, Complex<R> b) {
        Complex<R> r = {rn_add(a.re, b.re), rn_add(a.im, b.im)};
        return r;
    }
};
// (a.re + i a.im)(b.re + i b.im), each product rounded, then the C99 Annex G
// recovery of infinities when both parts came out NaN — what gcc's complex
// multiplication (__mulsc3 / __muldc3) does on the host.
template <typename R> struct ComplexOp<R, kProd> {
    __device__ static R copysign_(R x, R y) { return copysign(x, y); }
    __device__ static Complex<R> apply(Complex<R> a, Complex<R> b) {
        R ac = rn_mul(a.re, b.re), bd = rn_mul(a.im, b.im), ad = rn_mul(a.re, b.im), bc = rn_mul(a.im, b.re);
        R x = rn_sub(ac, bd), y = rn_add(ad, bc);
        if (isnan(x) && isnan(y)) {
            R p = a.re, q = a.im, u = b.re, v = b.im;
            bool recalc = false;
            if (isinf(p) || isinf(q)) {
                p = copysign_(isinf(p) ? R(1) : R(0), p);
                q = copysign_(isinf(q) ? R(1) : R(0), q);
                if (isnan(u)) u = copysign_(R(0), u);
                if (isnan(v)) v = copysign_(R(0), v);
                recalc = true;
            }
            if (isinf(u) || isinf(v)) {
                u = copysign_(isinf(u) ? R(1) : R(0), u);
                v = copysign_(isinf(v) ? R(1) : R(0), v);
                if (isnan(p)) p = copysign_(R(0), p);
                if (isnan(q)) q = copysign_(R(0), q);
                recalc = true;
            }
            if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
                if (isnan(p)) p = copysign_(R(0), p);
                if (isnan(q)) q = copysign_(R(0), q);
                if (isnan(u)) u = copysign_(R(0), u);
                if (isnan(v)) v = copysign_(R(0), v);
                recalc = true;
            }
            if (recalc) {
                const R inf = R(1) / R(0);
                x = inf * rn_sub(rn_mul(p, u), rn_mul(q, v));
                y = inf * rn_add(rn_mul(p, v), rn_mul(q, u));
            }
        }
        Complex<R> r = {x, y};
        return r;
    }
};

// MINLOC / MAXLOC on (value, index) pairs: the better value wins, on a tie
// the lower index; only the two members are written, never the padding.
template <typename V, typename I> struct Pair { V value; I index; };
template <typename P, bool kMaxSide> struct PairOp {
    __device__ static void apply(const P& a, P& b) {
        const bool better = kMaxSide ? a.value > b.value : a.value < b.value;
        if (better) {
            b.value = a.value;
            b.index = a.index;
        } else if (a.value == b.value && a.index < b.index) {
            b.index = a.index;
        }
    }
};

// Elementwise wrappers with one interface: inout = f(in, inout).
template <typename T, typename F> struct Elementwise {
    typedef T type;
    __device__ static void apply(const T& a, T& b) { b = F::apply(a, b); }
};
template <typename P, bool kMaxSide> struct PairwiseApply {
    typedef P type;
    __device__ static void apply(const P& a, P& b) { PairOp<P, kMaxSide>::apply(a, b); }
};

// inout[i] = in[i] op inout[i] for n elements laid out as an array.
template <typename A>
__device__ void reduce_array(typename A::type* inout, const typename A::type* in, unsigned long long n) {
    const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = t; i < n; i += threads) {
        typename A::type b = inout[i];
        A::apply(in[i], b);
        inout[i] = b;
    }
}

// The same over a layout (a derived type of one basic type with holes):
// every run is a whole number of elements; one warp per (unit, piece).
template <typename A>
__device__ void reduce_layout(char* inout, const char* in, const Layout& l) {
    typedef typename A::type T;
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long warp = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const unsigned long long warps = (static_cast<unsigned long long>(gridDim.x) * blockDim.x) >> 5;
    const unsigned long long work = l.units * l.piece_count;
    for (unsigned long long w = warp; w < work; w += warps) {
        const unsigned long long unit = w / l.piece_count, b = w - unit * l.piece_count;
        const Piece& pc = l.pieces[b];
        const long long at = unit_offset(l, unit) + pc.offset;
        const unsigned long long per_row = pc.length / sizeof(T);
        const unsigned long long total = per_row * pc.count;
        for (unsigned long long i = lane; i < total; i += 32) {
            const unsigned long long r = i / per_row, c = i - r * per_row;
            const long long off = at + static_cast<long long>(r) * pc.stride + static_cast<long long>(c * sizeof(T));
            T* o = reinterpret_cast<T*>(inout + off);
            T b2 = *o;
            A::apply(*reinterpret_cast<const T*>(in + off), b2);
            *o = b2;
        }
    }
}

// Dispatch of the runtime op code to one instantiation (the op is uniform
// over the launch: no divergence).
#define AXON_INT_CASES(T, CALL)                                   \
    switch (op) {                                                 \
    case kSum: CALL(Elementwise<T, IntOp<T, kSum> >); break;      \
    case kProd: CALL(Elementwise<T, IntOp<T, kProd> >); break;    \
    case kMin: CALL(Elementwise<T, IntOp<T, kMin> >); break;      \
    case kMax: CALL(Elementwise<T, IntOp<T, kMax> >); break;      \
    case kLand: CALL(Elementwise<T, IntOp<T, kLand> >); break;    \
    case kLor: CALL(Elementwise<T, IntOp<T, kLor> >); break;      \
    case kLxor: CALL(Elementwise<T, IntOp<T, kLxor> >); break;    \
    case kBand: CALL(Elementwise<T, IntOp<T, kBand> >); break;    \
    case kBor: CALL(Elementwise<T, IntOp<T, kBor> >); break;      \
    case kBxor: CALL(Elementwise<T, IntOp<T, kBxor> >); break;    \
    default: break;                                               \
    }
#define AXON_FLOAT_CASES(T, CALL)                                 \
    switch (op) {                                                 \
    case kSum: CALL(Elementwise<T, FloatOp<T, kSum> >); break;    \
    case kProd: CALL(Elementwise<T, FloatOp<T, kProd> >); break;  \
    case kMin: CALL(Elementwise<T, FloatOp<T, kMin> >); break;    \
    case kMax: CALL(Elementwise<T, FloatOp<T, kMax> >); break;    \
    default: break;                                               \
    }
#define AXON_COMPLEX_CASES(R, CALL)                                              \
    switch (op) {                                                                \
    case kSum: CALL(Elementwise<Complex<R>, ComplexOp<R, kSum> >); break;        \
    case kProd: CALL(Elementwise<Complex<R>, ComplexOp<R, kProd> >); break;      \
    default: break;                                                              \
    }
#define AXON_PAIR_CASES(P, CALL)                                  \
    switch (op) {                                                 \
    case kMinloc: CALL(PairwiseApply<P, false>); break;           \
    case kMaxloc: CALL(PairwiseApply<P, true>); break;            \
    default: break;                                               \
    }

typedef Pair<float, int> PairFloatInt;
typedef Pair<double, int> PairDoubleInt;
typedef Pair<long long, int> PairLongInt;  // C long is 64-bit on the hosts Axon supports (LP64)
typedef Pair<int, int> PairIntInt;
typedef Pair<short, int> PairShortInt;
typedef Pair<float, float> PairFloatFloat;
typedef Pair<double, double> PairDoubleDouble;

}  // namespace

// ---- entry points -------------------------------------------------------------

extern "C" __global__ void axon_pack(char* packed, const char* user, Layout l, int per_thread) {
    if (per_thread) thread_per_piece<true>(const_cast<char*>(user), packed, l);
    else warp_per_piece<true>(const_cast<char*>(user), packed, l);
}

extern "C" __global__ void axon_unpack(char* user, const char* packed, Layout l, int per_thread) {
    if (per_thread) thread_per_piece<false>(user, const_cast<char*>(packed), l);
    else warp_per_piece<false>(user, const_cast<char*>(packed), l);
}

// axon_reduce_<type>(inout, in, n, op) on arrays and
// axon_reduce_layout_<type>(inout, in, layout, op) on a layout.
// (variadic: the op's template arguments contain commas)
#define AXON_ARRAY_CALL(...)                                                                       \
    {                                                                                              \
        typedef __VA_ARGS__ A_;                                                                    \
        reduce_array<A_>(static_cast<A_::type*>(inout), static_cast<const A_::type*>(in), n);      \
    }
#define AXON_LAYOUT_CALL(...)                \
    {                                        \
        typedef __VA_ARGS__ A_;              \
        reduce_layout<A_>(inout, in, l);     \
    }
#define AXON_REDUCE_ENTRY(name, T, CASES)                                                                  \
    extern "C" __global__ void axon_reduce_##name(void* inout, const void* in, unsigned long long n, int op) { \
        CASES(T, AXON_ARRAY_CALL)                                                                          \
    }                                                                                                      \
    extern "C" __global__ void axon_reduce_layout_##name(char* inout, const char* in, Layout l, int op) {  \
        CASES(T, AXON_LAYOUT_CALL)                                                                         \
    }

AXON_REDUCE_ENTRY(i8, signed char, AXON_INT_CASES)
AXON_REDUCE_ENTRY(i16, short, AXON_INT_CASES)
AXON_REDUCE_ENTRY(i32, int, AXON_INT_CASES)
AXON_REDUCE_ENTRY(i64, long long, AXON_INT_CASES)
AXON_REDUCE_ENTRY(u8, unsigned char, AXON_INT_CASES)
AXON_REDUCE_ENTRY(u16, unsigned short, AXON_INT_CASES)
AXON_REDUCE_ENTRY(u32, unsigned, AXON_INT_CASES)
AXON_REDUCE_ENTRY(u64, unsigned long long, AXON_INT_CASES)
AXON_REDUCE_ENTRY(f32, float, AXON_FLOAT_CASES)
AXON_REDUCE_ENTRY(f64, double, AXON_FLOAT_CASES)
AXON_REDUCE_ENTRY(c32, float, AXON_COMPLEX_CASES)
AXON_REDUCE_ENTRY(c64, double, AXON_COMPLEX_CASES)
AXON_REDUCE_ENTRY(pfi, PairFloatInt, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(pdi, PairDoubleInt, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(pli, PairLongInt, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(pii, PairIntInt, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(psi, PairShortInt, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(pff, PairFloatFloat, AXON_PAIR_CASES)
AXON_REDUCE_ENTRY(pdd, PairDoubleDouble, AXON_PAIR_CASES)
