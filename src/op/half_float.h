// IEEE binary16 (MPI_REAL2, the parts of MPI_COMPLEX4) <-> double, in
// software so it builds with any C++20 compiler. Arithmetic on halves is done
// in double, where the sum or product of two halves is exact, and rounded
// once back to binary16 (round to nearest, ties to even).
#pragma once

#include <cmath>
#include <cstdint>

namespace axon {

// A binary16 value kept as its bit pattern, a distinct type so the kernel
// templates never treat it as a 16-bit integer.
struct HalfFloat {
    std::uint16_t bits;
};

inline double half_to_double(HalfFloat h) {
    const bool negative = (h.bits & 0x8000u) != 0;
    const int exponent = (h.bits >> 10) & 0x1f;
    const int mantissa = h.bits & 0x3ff;
    double magnitude;
    if (exponent == 0) {
        magnitude = std::ldexp(static_cast<double>(mantissa), -24);  // zero or subnormal
    } else if (exponent == 31) {
        magnitude = mantissa != 0 ? std::nan("") : INFINITY;
    } else {
        magnitude = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
    }
    return negative ? -magnitude : magnitude;
}

inline HalfFloat double_to_half(double value) {
    const std::uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
    if (std::isnan(value)) return {static_cast<std::uint16_t>(sign | 0x7e00u)};
    const double magnitude = std::fabs(value);
    // 65520 is halfway between the largest half (65504) and 2^16: from there
    // on, round-to-nearest gives infinity.
    if (magnitude >= 65520.0) return {static_cast<std::uint16_t>(sign | 0x7c00u)};
    if (magnitude < 0x1p-14) {
        // Subnormal (or zero): the value in units of 2^-24, rounded to even.
        // A result of 1024 is the smallest normal, which the encoding gives.
        const auto units = static_cast<std::uint16_t>(std::nearbyint(magnitude * 0x1p24));
        return {static_cast<std::uint16_t>(sign | units)};
    }
    int exponent = 0;
    (void)std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
    int unbiased = exponent - 1;             // magnitude in [2^unbiased, 2^(unbiased+1))
    double significand = std::nearbyint(std::ldexp(magnitude, 10 - unbiased));  // in [1024, 2048]
    if (significand >= 2048.0) {
        significand = 1024.0;
        ++unbiased;
    }
    const auto biased = static_cast<std::uint16_t>(unbiased + 15);
    const auto fraction = static_cast<std::uint16_t>(static_cast<int>(significand) - 1024);
    return {static_cast<std::uint16_t>(sign | (biased << 10) | fraction)};
}

}  // namespace axon
