// SPDX-License-Identifier: MIT
// The arithmetic of a coordinate's cell: floor and clamp of a scaled
// coordinate, written so that the key passes vectorize.
#pragma once

#include <cmath>
#include <cstdint>

namespace hashgrid::detail {

/// Floor of a double known to lie well inside the int32 range: no libm call,
/// and written so that the key pass vectorizes.
inline int32_t floor_to_int(double t) {
    const auto i = static_cast<int32_t>(t); // truncates toward zero
    return i - (static_cast<double>(i) > t ? 1 : 0);
}

/// t clamped into [lo, hi1]; NaN becomes lo (maxsd/minsd semantics), so that
/// floor_to_int of the result is always defined. Branch-free: vectorizes.
inline double clamp_into(double t, double lo, double hi1) {
    t = t > lo ? t : lo;
    return t < hi1 ? t : hi1;
}

/// Cell coordinates far outside any key range, for saturating conversions.
inline constexpr double kFarCell = 0x1p40;

/// floor(t) saturated to +-2^40 (t may be infinite or NaN: NaN gives -2^40).
inline int64_t floor_cell(double t) {
    if (!(t > -kFarCell)) return -static_cast<int64_t>(kFarCell);
    if (t > kFarCell) return static_cast<int64_t>(kFarCell);
    return static_cast<int64_t>(std::floor(t));
}

} // namespace hashgrid::detail
