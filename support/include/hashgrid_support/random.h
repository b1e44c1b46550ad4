// SPDX-License-Identifier: MIT
// The one random generator of the examples, benchmarks and tests: splitmix64
// (Steele, Lea, Flood 2014) with our own conversions to floats and ranges, so
// a seed gives the same scene with every standard library and on every
// target (no std distributions, no libm). Golden hashes in tests/ and the
// scenes of profiling/RESULTS.md depend on every sequence here: a change to
// any conversion changes them, so add a new function instead.
#pragma once

#include "hashgrid_support/exact_float.h"

#include <cstdint>

namespace hashgrid_support {

/// splitmix64's increment (2^64 / golden ratio, odd); also a cheap seed mixer.
inline constexpr uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ull;

/// splitmix64's output function: a bijective 64-bit mix, also used on its own
/// to hash (identity, frame) into a reproducible per-object value.
constexpr uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : state_(seed) {}

    uint64_t next_u64() { return mix64(state_ += kSplitMixGamma); }
    /// The high 32 bits of next_u64().
    uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
    /// Integer in [0, n), n > 0 (multiply-shift, no modulo bias worth caring about here).
    uint32_t below(uint32_t n) { return static_cast<uint32_t>((uint64_t{next_u32()} * n) >> 32); }
    /// Integer in [lo, hi] (hi - lo < 2^32 - 1; same multiply-shift as below()).
    int32_t between(int32_t lo, int32_t hi) {
        const uint64_t span = static_cast<uint64_t>(int64_t{hi} - int64_t{lo}) + 1u;
        return static_cast<int32_t>(int64_t{lo} + static_cast<int64_t>((uint64_t{next_u32()} * span) >> 32));
    }
    /// The top bit of next_u64().
    bool coin() { return (next_u64() >> 63) != 0; }
    /// Float in [0, 1) with 24 random bits: exact conversion, exact scaling.
    float unit() { return static_cast<float>(next_u64() >> 40) * 0x1p-24f; }
    /// Double in [0, 1) with 53 random bits: exact conversion, exact scaling.
    double unit_double() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }
    /// Float in [lo, hi) (one rounded multiply, one rounded add).
    float uniform(float lo, float hi) { return lo + rounded_mul(hi - lo, unit()); }
    /// Bell-shaped value around `center`: Irwin-Hall sum of four uniforms, scaled
    /// to standard deviation `sigma` (portable, unlike a Box-Muller Gaussian).
    float cluster(float center, float sigma) {
        // Separate statements: the order of calls within one expression is unspecified.
        const float u0 = unit();
        const float u1 = unit();
        const float u2 = unit();
        const float u3 = unit();
        const float sum = ((u0 + u1) + (u2 + u3)) - 2.0f; // variance 1/3
        return center + rounded_mul(sum, rounded_mul(sigma, 1.7320508f));
    }

private:
    uint64_t state_;
};

} // namespace hashgrid_support
