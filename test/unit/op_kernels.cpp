// Checks MPI_Op handles, the standard's op x datatype table, and the exact
// results of every predefined op on chosen values.
#include "datatype/datatype.h"
#include "op/op.h"
#include "unit_check.h"

#include <climits>
#include <complex>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

using axon::Datatype;
using axon::Op;

namespace {

std::uintptr_t value_of(const void* h) { return reinterpret_cast<std::uintptr_t>(h); }

Op& op_of(MPI_Op h) { return *axon::op_from_handle(h); }
Datatype& type_of(MPI_Datatype h) { return *axon::datatype_from_handle(h); }

struct NamedOp {
    MPI_Op handle;
    const char* name;
};
const std::vector<NamedOp> predefined_ops = {
    {MPI_SUM, "MPI_SUM"},   {MPI_MIN, "MPI_MIN"},       {MPI_MAX, "MPI_MAX"},       {MPI_PROD, "MPI_PROD"},
    {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},       {MPI_BXOR, "MPI_BXOR"},     {MPI_LAND, "MPI_LAND"},
    {MPI_LOR, "MPI_LOR"},   {MPI_LXOR, "MPI_LXOR"},     {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
    {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
};

void check_op_handles() {
    std::set<std::uintptr_t> known;
    for (const NamedOp& n : predefined_ops) {
        Op* op = axon::op_from_handle(n.handle);
        known.insert(value_of(n.handle));
        CHECK(op != nullptr, "%s has no object", n.name);
        if (op == nullptr) continue;
        CHECK(std::strcmp(op->name, n.name) == 0, "%s is named %s", n.name, op->name);
        CHECK(op->predefined, "%s not predefined", n.name);
        CHECK(axon::to_handle(op) == n.handle, "%s: to_handle mismatch", n.name);
        axon::op_release(op);  // ignored for predefined ops
        CHECK(axon::op_from_handle(n.handle) == op && op->magic == axon::op_magic_live, "%s broken by release",
              n.name);
    }
    CHECK(axon::op_from_handle(MPI_OP_NULL) == nullptr, "MPI_OP_NULL maps to an op");
    CHECK(axon::to_handle(static_cast<const Op*>(nullptr)) == MPI_OP_NULL, "to_handle(nullptr)");
    for (std::uintptr_t v = 0; v < 0x400; ++v) {
        if (known.count(v) != 0) continue;
        CHECK(axon::op_from_handle(reinterpret_cast<MPI_Op>(v)) == nullptr, "0x%zx maps to an op",
              static_cast<std::size_t>(v));
    }
    CHECK(!op_of(MPI_REPLACE).commutative && op_of(MPI_SUM).commutative, "commutative flags");
}

// ---- the standard's table, written independently of the library ------------

enum Group { c_integer, fortran_integer, floating_point, logical, complex_group, byte_group, multi_language, pair };

const std::vector<std::pair<MPI_Datatype, Group>> grouped_types = {
    {MPI_INT, c_integer}, {MPI_LONG, c_integer}, {MPI_SHORT, c_integer}, {MPI_UNSIGNED_SHORT, c_integer},
    {MPI_UNSIGNED, c_integer}, {MPI_UNSIGNED_LONG, c_integer}, {MPI_LONG_LONG_INT, c_integer},
    {MPI_UNSIGNED_LONG_LONG, c_integer}, {MPI_SIGNED_CHAR, c_integer}, {MPI_UNSIGNED_CHAR, c_integer},
    // Not in the standard's C integer group, but Open MPI and MPICH both
    // reduce MPI_CHAR as a small integer and MPICH's test suite relies on it.
    {MPI_CHAR, c_integer},
    {MPI_INT8_T, c_integer}, {MPI_INT16_T, c_integer}, {MPI_INT32_T, c_integer}, {MPI_INT64_T, c_integer},
    {MPI_UINT8_T, c_integer}, {MPI_UINT16_T, c_integer}, {MPI_UINT32_T, c_integer}, {MPI_UINT64_T, c_integer},
    {MPI_INTEGER, fortran_integer}, {MPI_INTEGER1, fortran_integer}, {MPI_INTEGER2, fortran_integer},
    {MPI_INTEGER4, fortran_integer}, {MPI_INTEGER8, fortran_integer}, {MPI_INTEGER16, fortran_integer},
    {MPI_FLOAT, floating_point}, {MPI_DOUBLE, floating_point}, {MPI_REAL, floating_point},
    {MPI_DOUBLE_PRECISION, floating_point}, {MPI_LONG_DOUBLE, floating_point}, {MPI_REAL2, floating_point},
    {MPI_REAL4, floating_point}, {MPI_REAL8, floating_point}, {MPI_REAL16, floating_point},
    {MPI_LOGICAL, logical}, {MPI_C_BOOL, logical}, {MPI_CXX_BOOL, logical}, {MPI_LOGICAL1, logical},
    {MPI_LOGICAL2, logical}, {MPI_LOGICAL4, logical}, {MPI_LOGICAL8, logical}, {MPI_LOGICAL16, logical},
    {MPI_COMPLEX, complex_group}, {MPI_C_FLOAT_COMPLEX, complex_group}, {MPI_C_DOUBLE_COMPLEX, complex_group},
    {MPI_C_LONG_DOUBLE_COMPLEX, complex_group}, {MPI_CXX_FLOAT_COMPLEX, complex_group},
    {MPI_CXX_DOUBLE_COMPLEX, complex_group}, {MPI_CXX_LONG_DOUBLE_COMPLEX, complex_group},
    {MPI_DOUBLE_COMPLEX, complex_group}, {MPI_COMPLEX4, complex_group}, {MPI_COMPLEX8, complex_group},
    {MPI_COMPLEX16, complex_group}, {MPI_COMPLEX32, complex_group},
    {MPI_BYTE, byte_group},
    {MPI_AINT, multi_language}, {MPI_OFFSET, multi_language}, {MPI_COUNT, multi_language},
    {MPI_FLOAT_INT, pair}, {MPI_DOUBLE_INT, pair}, {MPI_LONG_INT, pair}, {MPI_2INT, pair}, {MPI_SHORT_INT, pair},
    {MPI_LONG_DOUBLE_INT, pair}, {MPI_2REAL, pair}, {MPI_2DOUBLE_PRECISION, pair}, {MPI_2INTEGER, pair},
};

// MPI-4.1 section 6.9.2; -1 stands for a type in no group (MPI_CHARACTER, ...).
bool standard_allows(MPI_Op op, int group) {
    const bool ci = group == c_integer, fi = group == fortran_integer, fp = group == floating_point;
    const bool lg = group == logical, cx = group == complex_group, by = group == byte_group;
    const bool ml = group == multi_language;
    if (op == MPI_MAX || op == MPI_MIN) return ci || fi || fp || ml;
    if (op == MPI_SUM || op == MPI_PROD) return ci || fi || fp || cx || ml;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return ci || lg || ml;  // ml: as Open MPI and MPICH
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return ci || fi || by || ml;
    if (op == MPI_MINLOC || op == MPI_MAXLOC) return group == pair;
    return op == MPI_REPLACE || op == MPI_NO_OP;
}

void check_defined_table() {
    std::set<std::uintptr_t> grouped;
    for (const auto& [h, g] : grouped_types) grouped.insert(value_of(h));
    CHECK(grouped.size() == grouped_types.size(), "a type is in two groups in the test's table");
    int ungrouped = 0;
    for (MPI_Datatype h : axon::predefined_datatype_handles()) {
        int group = -1;
        for (const auto& [gh, g] : grouped_types) {
            if (gh == h) group = g;
        }
        if (group < 0) ++ungrouped;
        const Datatype& type = type_of(h);
        for (const NamedOp& n : predefined_ops) {
            const bool expected = standard_allows(n.handle, group);
            CHECK(axon::op_defined_for(op_of(n.handle), type) == expected, "%s on %s: defined should be %d",
                  n.name, type.name, expected);
            // op_apply agrees: MPI_ERR_OP exactly when undefined, and then
            // the inout buffer is untouched.
            alignas(32) unsigned char in[64], inout[64], before[64];
            std::memset(in, 0, sizeof in);
            std::memset(inout, 0x11, sizeof inout);
            std::memcpy(before, inout, sizeof inout);
            const int rc = axon::op_apply(op_of(n.handle), in, inout, 1, type);
            CHECK(rc == (expected ? MPI_SUCCESS : MPI_ERR_OP), "op_apply(%s, %s) returned %d", n.name, type.name, rc);
            if (!expected) CHECK(std::memcmp(inout, before, sizeof inout) == 0, "%s on %s wrote data", n.name, type.name);
        }
    }
    // MPI_PACKED, MPI_CHARACTER, MPI_WCHAR are in no group.
    CHECK(ungrouped == 3, "%d predefined types are in no group, expected 3", ungrouped);
}

// ---- exact results ------------------------------------------------------------------

template <typename T>
void expect(MPI_Op op, MPI_Datatype dt, const std::vector<T>& in, std::vector<T> inout, const std::vector<T>& want,
            int line) {
    const int rc = axon::op_apply(op_of(op), in.data(), inout.data(), in.size(), type_of(dt));
    const char* opname = op_of(op).name;
    const char* tname = type_of(dt).name;
    CHECK(rc == MPI_SUCCESS, "line %d: %s on %s returned %d", line, opname, tname, rc);
    for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(inout[i] == want[i], "line %d: %s on %s: element %zu wrong", line, opname, tname, i);
    }
}
#define EXPECT(T, op, dt, in, inout, want) expect<T>(op, dt, std::vector<T> in, std::vector<T> inout, std::vector<T> want, __LINE__)

// A bool in a struct, since std::vector<bool> has no contiguous storage.
struct Bool {
    bool value;
    bool operator==(const Bool& o) const { return value == o.value; }
};

void check_integer_results() {
    EXPECT(int, MPI_SUM, MPI_INT, ({-5, 7, INT_MAX, 0}), ({3, -10, 1, -1}), ({-2, -3, INT_MIN, -1}));
    EXPECT(unsigned char, MPI_SUM, MPI_UNSIGNED_CHAR, ({250, 1}), ({10, 2}), ({4, 3}));
    EXPECT(std::uint64_t, MPI_SUM, MPI_UINT64_T, ({UINT64_MAX, 5}), ({2, 7}), ({1, 12}));
    EXPECT(long, MPI_SUM, MPI_LONG, ({-1000000000000L, 3}), ({1, -5}), ({-999999999999L, -2}));
    EXPECT(short, MPI_SUM, MPI_SHORT, ({32767, -32768}), ({1, -1}), ({-32768, 32767}));
    EXPECT(std::int64_t, MPI_SUM, MPI_AINT, ({INT64_MAX}), ({1}), ({INT64_MIN}));
    EXPECT(unsigned short, MPI_PROD, MPI_UNSIGNED_SHORT, ({65535, 300}), ({65535, 300}), ({1, 24464}));
    EXPECT(std::int8_t, MPI_PROD, MPI_INT8_T, ({-128, -3, 7}), ({-1, 5, -2}), ({-128, -15, -14}));
    EXPECT(int, MPI_PROD, MPI_INT, ({-3, 46341}), ({7, 46341}), ({-21, -2147479015}));
    EXPECT(int, MPI_MIN, MPI_INT, ({-5, 3, 0}), ({2, -7, 0}), ({-5, -7, 0}));
    EXPECT(int, MPI_MAX, MPI_INT, ({-5, 3, 0}), ({2, -7, 0}), ({2, 3, 0}));
    EXPECT(unsigned, MPI_MIN, MPI_UNSIGNED, ({1u, 0xFFFFFFFFu}), ({2u, 0u}), ({1u, 0u}));
    EXPECT(unsigned, MPI_MAX, MPI_UNSIGNED, ({1u, 0xFFFFFFFFu}), ({2u, 0u}), ({2u, 0xFFFFFFFFu}));
    EXPECT(signed char, MPI_MIN, MPI_SIGNED_CHAR, ({-128, 127}), ({0, -1}), ({-128, -1}));
    EXPECT(int, MPI_MAX, MPI_INTEGER, ({-5, 9}), ({-6, 8}), ({-5, 9}));
    const __int128 big = static_cast<__int128>(1) << 100;
    EXPECT(__int128, MPI_SUM, MPI_INTEGER16, ({big, -5}), ({1, -6}), ({big + 1, -11}));
    EXPECT(__int128, MPI_MIN, MPI_INTEGER16, ({big, -5}), ({-big, -6}), ({-big, -6}));
    EXPECT(__int128, MPI_PROD, MPI_INTEGER16, ({big, -3}), ({4, 5}), ({big * 4, -15}));
    // Logical ops on integers and logicals give 0 or 1 whatever the inputs.
    EXPECT(int, MPI_LAND, MPI_INT, ({5, 0, -3, 0}), ({2, 7, 0, 0}), ({1, 0, 0, 0}));
    EXPECT(int, MPI_LOR, MPI_INT, ({5, 0, -3, 0}), ({2, 7, 0, 0}), ({1, 1, 1, 0}));
    EXPECT(int, MPI_LXOR, MPI_INT, ({5, 0, -3, 0}), ({2, 7, 0, 0}), ({0, 1, 1, 0}));
    EXPECT(unsigned char, MPI_LXOR, MPI_UNSIGNED_CHAR, ({0x80, 0x01}), ({0x01, 0x00}), ({0, 1}));
    EXPECT(std::uint32_t, MPI_LAND, MPI_LOGICAL, ({2, 0, 0xFFFFFFFFu, 0}), ({9, 4, 0, 0}), ({1, 0, 0, 0}));
    EXPECT(std::uint32_t, MPI_LOR, MPI_LOGICAL, ({2, 0, 0xFFFFFFFFu, 0}), ({9, 4, 0, 0}), ({1, 1, 1, 0}));
    EXPECT(std::uint32_t, MPI_LXOR, MPI_LOGICAL4, ({2, 0, 0xFFFFFFFFu, 0}), ({9, 4, 0, 0}), ({0, 1, 1, 0}));
    EXPECT(Bool, MPI_LAND, MPI_C_BOOL, ({{true}, {true}, {false}, {false}}), ({{true}, {false}, {true}, {false}}),
           ({{true}, {false}, {false}, {false}}));
    EXPECT(Bool, MPI_LXOR, MPI_CXX_BOOL, ({{true}, {true}, {false}, {false}}), ({{true}, {false}, {true}, {false}}),
           ({{false}, {true}, {true}, {false}}));
    using u128 = unsigned __int128;
    const u128 high_bit_only = static_cast<u128>(1) << 100;  // true, though its low 64 bits are 0
    EXPECT(u128, MPI_LAND, MPI_LOGICAL16, ({high_bit_only, 0}), ({3, 3}), ({1, 0}));
    EXPECT(std::uint8_t, MPI_LOR, MPI_LOGICAL1, ({0x40, 0}), ({0, 0}), ({1, 0}));
    // Bitwise ops.
    EXPECT(unsigned char, MPI_BAND, MPI_BYTE, ({0xF0, 0xFF}), ({0x3C, 0x00}), ({0x30, 0x00}));
    EXPECT(unsigned char, MPI_BOR, MPI_BYTE, ({0xF0, 0xFF}), ({0x3C, 0x00}), ({0xFC, 0xFF}));
    EXPECT(unsigned char, MPI_BXOR, MPI_BYTE, ({0xF0, 0xFF}), ({0x3C, 0x00}), ({0xCC, 0xFF}));
    EXPECT(std::int64_t, MPI_BAND, MPI_INT64_T, ({-1, 0x0F0F}), ({0x1234, 0xFF00}), ({0x1234, 0x0F00}));
    EXPECT(std::int64_t, MPI_BOR, MPI_COUNT, ({-2, 0x0F0F}), ({1, 0xF000}), ({-1, 0xFF0F}));
    EXPECT(int, MPI_BXOR, MPI_INTEGER, ({-1, 6}), ({5, 3}), ({-6, 5}));
}

void check_floating_results() {
    EXPECT(double, MPI_PROD, MPI_DOUBLE, ({1.5, -2.0}), ({-4.0, 0.25}), ({-6.0, -0.5}));
    EXPECT(double, MPI_MIN, MPI_DOUBLE_PRECISION, ({-1.5, 2.0}), ({-1.25, 3.0}), ({-1.5, 2.0}));
    EXPECT(double, MPI_MAX, MPI_REAL8, ({-1.5, 2.0}), ({-1.25, 3.0}), ({-1.25, 3.0}));
    EXPECT(float, MPI_SUM, MPI_FLOAT, ({0.5f, -1.25f}), ({0.25f, 1.25f}), ({0.75f, 0.0f}));
    EXPECT(float, MPI_MAX, MPI_REAL, ({-0.5f, 7.0f}), ({-0.25f, 6.5f}), ({-0.25f, 7.0f}));
    // 1 + 2^-63 is exact in x86 extended precision, not in double.
    const long double tiny = 1.0L / 9223372036854775808.0L;
    EXPECT(long double, MPI_SUM, MPI_LONG_DOUBLE, ({1.0L, -2.0L}), ({tiny, 0.5L}), ({1.0L + tiny, -1.5L}));
    EXPECT(long double, MPI_MIN, MPI_LONG_DOUBLE, ({1.0L + tiny}), ({1.0L}), ({1.0L}));
    const __float128 third = static_cast<__float128>(1) / 3;
    EXPECT(__float128, MPI_SUM, MPI_REAL16, ({1.5, third}), ({2.25, third}), ({3.75, third + third}));
    EXPECT(__float128, MPI_PROD, MPI_REAL16, ({-2.0}), ({third}), ({-2 * third}));
    // REAL2 (IEEE binary16) as bit patterns, rounded once to nearest even.
    using H = std::uint16_t;
    EXPECT(H, MPI_SUM, MPI_REAL2, ({0x3E00, 0x6800, 0x6800, 0x7BFF, 0x0001}),  // 1.5, 2048, 2048, 65504, 2^-24
           ({0x4080, 0x3C00, 0x4200, 0x7BFF, 0x0001}),                          // 2.25, 1, 3, 65504, 2^-24
           ({0x4380, 0x6800, 0x6802, 0x7C00, 0x0002}));                         // 3.75, 2048 (tie: even), 2052, inf
    EXPECT(H, MPI_PROD, MPI_REAL2, ({0x3800, 0x3C01}), ({0xC200, 0x3C01}), ({0xBE00, 0x3C02}));  // -1.5; (1+2^-10)^2
    EXPECT(H, MPI_MIN, MPI_REAL2, ({0x3E00, 0xC200}), ({0x4080, 0xBC00}), ({0x3E00, 0xC200}));
    EXPECT(H, MPI_MAX, MPI_REAL2, ({0x3E00, 0xC200}), ({0x4080, 0xBC00}), ({0x4080, 0xBC00}));
}

struct ComplexQuad {
    __float128 re, im;
    bool operator==(const ComplexQuad& o) const { return re == o.re && im == o.im; }
};
struct ComplexHalfBits {
    std::uint16_t re, im;
    bool operator==(const ComplexHalfBits& o) const { return re == o.re && im == o.im; }
};

void check_complex_results() {
    using CF = std::complex<float>;
    using CD = std::complex<double>;
    using CL = std::complex<long double>;
    EXPECT(CF, MPI_PROD, MPI_C_FLOAT_COMPLEX, ({CF(1, 2), CF(0, 1)}), ({CF(3, 4), CF(0, 1)}), ({CF(-5, 10), CF(-1, 0)}));
    EXPECT(CF, MPI_SUM, MPI_COMPLEX, ({CF(1, 2)}), ({CF(3, -4)}), ({CF(4, -2)}));
    EXPECT(CD, MPI_PROD, MPI_C_DOUBLE_COMPLEX, ({CD(1, 2), CD(-2, 0.5)}), ({CD(3, 4), CD(2, 2)}),
           ({CD(-5, 10), CD(-5, -3)}));
    EXPECT(CD, MPI_SUM, MPI_DOUBLE_COMPLEX, ({CD(1, 2)}), ({CD(3, -4)}), ({CD(4, -2)}));
    EXPECT(CD, MPI_PROD, MPI_COMPLEX16, ({CD(1, 2)}), ({CD(3, 4)}), ({CD(-5, 10)}));
    EXPECT(CL, MPI_PROD, MPI_CXX_LONG_DOUBLE_COMPLEX, ({CL(1, 2)}), ({CL(3, 4)}), ({CL(-5, 10)}));
    EXPECT(CL, MPI_SUM, MPI_C_LONG_DOUBLE_COMPLEX, ({CL(1, 2)}), ({CL(3, -4)}), ({CL(4, -2)}));
    EXPECT(ComplexQuad, MPI_PROD, MPI_COMPLEX32, ({{1, 2}}), ({{3, 4}}), ({{-5, 10}}));
    EXPECT(ComplexQuad, MPI_SUM, MPI_COMPLEX32, ({{1, 2}}), ({{3, -4}}), ({{4, -2}}));
    // COMPLEX4: (1+2i)(3+4i) = -5+10i in binary16 bits.
    EXPECT(ComplexHalfBits, MPI_PROD, MPI_COMPLEX4, ({{0x3C00, 0x4000}}), ({{0x4200, 0x4400}}), ({{0xC500, 0x4900}}));
    EXPECT(ComplexHalfBits, MPI_SUM, MPI_COMPLEX4, ({{0x3C00, 0x4000}}), ({{0x4200, 0xC400}}), ({{0x4400, 0xC000}}));  // 4-2i
}

// ---- MINLOC / MAXLOC ----------------------------------------------------------------

template <typename V, typename I>
struct Pair {
    V v;
    I i;
    bool operator==(const Pair& o) const { return v == o.v && i == o.i; }
};

template <typename V, typename I>
void check_loc(MPI_Datatype dt, int line) {
    using P = Pair<V, I>;
    const std::vector<P> in = {{3, 5}, {2, 1}, {7, 9}, {4, 1}};
    const std::vector<P> inout = {{3, 2}, {4, 0}, {1, 4}, {4, 3}};
    // Ties (items 0 and 3) keep the value and take the lower index.
    expect<P>(MPI_MINLOC, dt, in, inout, {{3, 2}, {2, 1}, {1, 4}, {4, 1}}, line);
    expect<P>(MPI_MAXLOC, dt, in, inout, {{3, 2}, {4, 0}, {7, 9}, {4, 1}}, line);
    CHECK(type_of(dt).extent == static_cast<std::ptrdiff_t>(sizeof(P)), "line %d: %s extent", line, type_of(dt).name);
}

void check_minloc_maxloc() {
    check_loc<float, int>(MPI_FLOAT_INT, __LINE__);
    check_loc<double, int>(MPI_DOUBLE_INT, __LINE__);
    check_loc<long, int>(MPI_LONG_INT, __LINE__);
    check_loc<int, int>(MPI_2INT, __LINE__);
    check_loc<short, int>(MPI_SHORT_INT, __LINE__);
    check_loc<long double, int>(MPI_LONG_DOUBLE_INT, __LINE__);
    check_loc<float, float>(MPI_2REAL, __LINE__);
    check_loc<double, double>(MPI_2DOUBLE_PRECISION, __LINE__);
    check_loc<int, int>(MPI_2INTEGER, __LINE__);
    // Negative values, and the padding of MPI_DOUBLE_INT is never written.
    using P = Pair<double, int>;
    P in[2], inout[2];
    std::memset(in, 0x77, sizeof in);
    std::memset(inout, 0xee, sizeof inout);
    in[0] = {-3.5, 8};
    in[1] = {-1.0, 2};
    inout[0].v = -2.0, inout[0].i = 1;
    inout[1].v = -0.5, inout[1].i = 0;
    CHECK(axon::op_apply(op_of(MPI_MINLOC), in, inout, 2, type_of(MPI_DOUBLE_INT)) == MPI_SUCCESS, "MINLOC rc");
    CHECK(inout[0] == (P{-3.5, 8}) && inout[1] == (P{-1.0, 2}), "MINLOC with negative values");
    const auto* raw = reinterpret_cast<const unsigned char*>(inout);
    bool padding_untouched = true;
    for (int item = 0; item < 2; ++item) {
        for (std::size_t b = offsetof(P, i) + sizeof(int); b < sizeof(P); ++b) {
            padding_untouched = padding_untouched && raw[item * sizeof(P) + b] == 0xee;
        }
    }
    CHECK(padding_untouched, "MINLOC wrote the padding of MPI_DOUBLE_INT");
}

// ---- REPLACE, NO_OP, user ops, long arrays ----------------------------------------

void check_replace_no_op() {
    EXPECT(int, MPI_REPLACE, MPI_INT, ({1, -2, 3}), ({7, 8, 9}), ({1, -2, 3}));
    EXPECT(int, MPI_NO_OP, MPI_INT, ({1, -2, 3}), ({7, 8, 9}), ({7, 8, 9}));
    EXPECT(char, MPI_REPLACE, MPI_CHAR, ({'a', 'b'}), ({'x', 'y'}), ({'a', 'b'}));
    using P = Pair<double, int>;
    P in[2] = {{1.0, 1}, {2.0, 2}}, inout[2];
    std::memset(inout, 0xee, sizeof inout);
    CHECK(axon::op_apply(op_of(MPI_REPLACE), in, inout, 2, type_of(MPI_DOUBLE_INT)) == MPI_SUCCESS, "REPLACE rc");
    CHECK(inout[0] == in[0] && inout[1] == in[1], "REPLACE on MPI_DOUBLE_INT");
    CHECK(reinterpret_cast<const unsigned char*>(inout)[sizeof(P) - 1] == 0xee, "REPLACE wrote padding");
}

int user_calls = 0;
int user_last_len = 0;
MPI_Count user_last_len_c = 0;
MPI_Datatype user_last_type = MPI_DATATYPE_NULL;

// Not commutative: inout = in - inout.
void subtract_into(void* invec, void* inoutvec, int* len, MPI_Datatype* type) {
    ++user_calls;
    user_last_len = *len;
    user_last_type = *type;
    const int* in = static_cast<const int*>(invec);
    int* inout = static_cast<int*>(inoutvec);
    for (int i = 0; i < *len; ++i) inout[i] = in[i] - inout[i];
}
void subtract_into_c(void* invec, void* inoutvec, MPI_Count* len, MPI_Datatype* type) {
    ++user_calls;
    user_last_len_c = *len;
    user_last_type = *type;
    const int* in = static_cast<const int*>(invec);
    int* inout = static_cast<int*>(inoutvec);
    for (MPI_Count i = 0; i < *len; ++i) inout[i] = in[i] - inout[i];
}

void check_user_ops() {
    Op* op = axon::op_create_user(subtract_into, false);
    CHECK(op != nullptr && !op->commutative && !op->predefined, "op_create_user");
    MPI_Op handle = axon::to_handle(op);
    CHECK(axon::op_from_handle(handle) == op, "user op not found from its handle");
    const std::vector<int> in = {10, 20, -5};
    std::vector<int> inout = {3, 25, 5};
    CHECK(axon::op_defined_for(*op, type_of(MPI_CHAR)), "user ops are defined for every type");
    CHECK(axon::op_apply(*op, in.data(), inout.data(), 3, type_of(MPI_INT)) == MPI_SUCCESS, "user op rc");
    CHECK(inout == (std::vector<int>{7, -5, -10}), "user op order: got %d %d %d", inout[0], inout[1], inout[2]);
    CHECK(user_calls == 1 && user_last_len == 3 && user_last_type == MPI_INT, "user op called %d times, len %d",
          user_calls, user_last_len);
    axon::op_retain(op);
    axon::op_release(op);
    CHECK(axon::op_from_handle(handle) == op && op->refcount.load() == 1, "retain/release miscounted");
    axon::op_release(op);  // frees it

    Op* op_c = axon::op_create_user_c(subtract_into_c, false);
    CHECK(op_c != nullptr && op_c->user_fn_c != nullptr && op_c->user_fn == nullptr, "op_create_user_c");
    inout = {3, 25, 5};
    user_calls = 0;
    CHECK(axon::op_apply(*op_c, in.data(), inout.data(), 3, type_of(MPI_INT32_T)) == MPI_SUCCESS, "user_c rc");
    CHECK(inout == (std::vector<int>{7, -5, -10}), "user_c op order");
    CHECK(user_calls == 1 && user_last_len_c == 3 && user_last_type == MPI_INT32_T, "user_c op arguments");
    axon::op_release(op_c);
    CHECK(axon::op_create_user(nullptr, true) == nullptr, "null user function accepted");
}

void check_long_arrays() {
    // Lengths that are not multiples of any vector width exercise loop tails.
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1003}}) {
        std::vector<double> a(n), b(n);
        std::vector<std::int64_t> c(n), d(n);
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = 0.5 * static_cast<double>(i);
            b[i] = -static_cast<double>(i);
            c[i] = static_cast<std::int64_t>(i) * 3 - 1000;
            d[i] = 2000 - static_cast<std::int64_t>(i);
        }
        CHECK(axon::op_apply(op_of(MPI_SUM), a.data(), b.data(), n, type_of(MPI_DOUBLE)) == MPI_SUCCESS, "sum rc");
        CHECK(axon::op_apply(op_of(MPI_MAX), c.data(), d.data(), n, type_of(MPI_INT64_T)) == MPI_SUCCESS, "max rc");
        bool ok = true;
        for (std::size_t i = 0; i < n; ++i) {
            ok = ok && b[i] == -0.5 * static_cast<double>(i);
            ok = ok && d[i] == std::max<std::int64_t>(static_cast<std::int64_t>(i) * 3 - 1000,
                                                      2000 - static_cast<std::int64_t>(i));
        }
        CHECK(ok, "long array of %zu elements", n);
    }
}

}  // namespace

int main() {
    check_op_handles();
    check_defined_table();
    check_integer_results();
    check_floating_results();
    check_complex_results();
    check_minloc_maxloc();
    check_replace_no_op();
    check_user_ops();
    check_long_arrays();
    return unit::finish("op_kernels");
}
