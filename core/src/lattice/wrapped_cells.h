// SPDX-License-Identifier: MIT
// Cell coordinates of unbounded worlds, for any finite coordinate.
//
// An unbounded particle grid keys a cell by its integer coordinates modulo
// 2^21 per axis in 3D (three fields fit one 64-bit key) and 2^31 in 2D (a
// 2^32 period would let the last cell's key equal kEmptyKey). Cells
// that far apart share a key: their particles land in one table cell and the
// exact distance test tells them apart. Close particles are never more than
// one cell apart (cell_key.h), and one step on the true lattice is one step
// modulo the wrap, so the stencil that walks neighbouring keys still sees
// every pair once. Within [wrap_min, wrap_max] per axis nothing wraps: the
// wrapped coordinate is the cell coordinate and keys are what they always were.
//
// Computing the cell: the key formula of cell_key.h, floor((p - origin) *
// scale) in double, is off by at most 2^-22 of a cell while |scaled| < 2^31,
// which the exactness argument needs. Beyond that (only a world whose
// particles are billions of cells from its origin) far_cell() computes the
// same floor to within 2^-50 of a cell from exact pieces, then wraps it. Both
// are plain IEEE double operations in a fixed order: the same bits on every
// platform.
#pragma once

#include <cmath>
#include <cstdint>

namespace hashgrid::detail {

/// Bits per axis of a wrapped cell coordinate.
inline constexpr uint32_t wrap_bits(uint32_t dims) { return dims == 3 ? 21u : 31u; }
/// Smallest and largest wrapped cell coordinate per axis.
inline constexpr int64_t wrap_min(uint32_t dims) { return -(int64_t{1} << (wrap_bits(dims) - 1)); }
inline constexpr int64_t wrap_max(uint32_t dims) { return (int64_t{1} << (wrap_bits(dims) - 1)) - 1; }
/// Cells per axis before the lattice wraps.
inline constexpr int64_t wrap_period(uint32_t dims) { return int64_t{1} << wrap_bits(dims); }

/// The fast key formula is used while |scaled coordinate| is below this.
inline constexpr double kFastCellLimit = 0x1p31 - 4.0;

/// c modulo the period, in [wrap_min, wrap_max].
inline int32_t wrap_cell(int64_t c, uint32_t dims) {
    const auto mask = static_cast<uint64_t>(wrap_period(dims) - 1);
    const auto half = static_cast<uint64_t>(int64_t{1} << (wrap_bits(dims) - 1));
    // Unsigned arithmetic: defined for every c, and a multiple of the period apart gives the same value.
    return static_cast<int32_t>(static_cast<int64_t>((static_cast<uint64_t>(c) + half) & mask) -
                                static_cast<int64_t>(half));
}

/// wrap_cell for a fast-path cell (any int32) in D dimensions: the form the
/// key pass vectorizes (32-bit lanes).
template <uint32_t D>
inline int32_t wrap_fast_cell(int32_t c) {
    constexpr uint32_t half = 1u << (wrap_bits(D) - 1);
    return static_cast<int32_t>((static_cast<uint32_t>(c) + half) & (2 * half - 1u)) - static_cast<int32_t>(half);
}

/// True when c is a wrapped coordinate whose neighbour c - 1 or c + 1 wraps.
inline bool on_wrap_seam(int32_t c, uint32_t dims) { return c == wrap_min(dims) || c == wrap_max(dims); }

/// True when no cell of the box [lo, lo + extent) (wrapped coordinates, the
/// first `dims` axes) lies on the wrap seam: no neighbour of its cells wraps.
inline bool box_clear_of_seam(const int32_t lo[3], const uint32_t extent[3], uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d) {
        const int64_t last = int64_t{lo[d]} + extent[d] - 1;
        if (lo[d] <= wrap_min(dims) || last >= wrap_max(dims)) return false;
    }
    return true;
}

/// x reduced modulo m (a power of two) into (-m, m), exactly: |x| < m is kept;
/// otherwise x - m * floor(x / m) is a multiple of ulp(x) below m.
inline double reduce_exact(double x, double m) {
    if (std::fabs(x) < m) return x;
    return x - m * std::floor(x / m);
}

/// Wrapped floor((p - origin) * scale) for any finite p and origin, to within
/// 2^-50 of a cell (before the floor). scale is split into two halves of at
/// most 27 bits, so p * half and origin * half are exact (a float has 24 bits);
/// each of the four products is reduced exactly modulo the period; their whole
/// parts add exactly and their fractions lose a few units of 2^-52.
inline int32_t far_cell(float p, float origin, double scale, uint32_t dims) {
    const double m = static_cast<double>(wrap_period(dims));
    const double split = 134217729.0 * scale; // 2^27 + 1: Veltkamp's split
    const double scale_hi = split - (split - scale);
    const double scale_lo = scale - scale_hi;
    const double terms[4] = {static_cast<double>(p) * scale_hi, static_cast<double>(p) * scale_lo,
                             -(static_cast<double>(origin) * scale_hi), -(static_cast<double>(origin) * scale_lo)};
    double whole = 0.0;
    double fraction = 0.0;
    for (double term : terms) {
        const double r = reduce_exact(term, m);
        const double w = std::floor(r);
        whole += w;        // integers below 2^34 in magnitude: exact
        fraction += r - w; // each in [0, 1]
    }
    return wrap_cell(static_cast<int64_t>(whole + std::floor(fraction)), dims);
}

/// The wrapped cell of coordinate p: the fast formula where it is exact
/// enough, far_cell beyond. Sets `wrapped` when the result differs from the
/// true cell coordinate. p must be finite.
inline int32_t unbounded_cell(float p, float origin, double scale, uint32_t dims, bool& wrapped) {
    const double t = (static_cast<double>(p) - static_cast<double>(origin)) * scale;
    if (t >= -kFastCellLimit && t < kFastCellLimit) {
        const double f = std::floor(t);
        const auto c = static_cast<int64_t>(f);
        const int32_t w = wrap_cell(c, dims);
        wrapped = wrapped || w != c;
        return w;
    }
    wrapped = true;
    return far_cell(p, origin, scale, dims);
}

} // namespace hashgrid::detail
