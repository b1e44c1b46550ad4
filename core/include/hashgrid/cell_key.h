// SPDX-License-Identifier: MIT
/// @file
/// Cell coordinates and packed cell keys.
///
/// Why a point's cell can be trusted: the key of coordinate p is
/// floor((p - origin) * inv) computed in double precision, where
/// inv = 1 / (cell_size * (1 + 2^-18)). Two particles pass the float distance
/// test only if |dp| <= r * (1 + 2^-22): the float rounding of the differences,
/// squares and sums is at most about 5 units of 2^-24 in d^2. With
/// r <= cell_size the exact scaled difference is below 1 - 2^-19. In double,
/// (p - origin) * inv for |key| < 2^31 is off by at most 2^-22 per particle
/// (two roundings of at most half an ulp of 2^-22), 2^-21 for the difference:
/// the two floors differ by at most one. So the half stencil sees every pair,
/// whatever the origin and scale. tests/test_cell_key.cpp probes the edges.
#pragma once

#include <cmath>
#include <cstdint>

namespace hashgrid {

/// Relative enlargement of the cell edge used for keys (see above).
inline constexpr double kCellGuard = 1.0 + 1.0 / (1 << 18);

/// Box-object grids (box_grid.h) key cells with coordinates in
/// [-kKeyLimit3, kKeyLimit3] (3D, 21 bits per axis) or [-kKeyLimit2,
/// kKeyLimit2] (2D); an object reaching beyond is a large object there.
/// Unbounded particle grids take any finite coordinate and
/// keep their cell coordinates modulo 2^21 (3D) or 2^31 (2D) instead (grid.h).
inline constexpr int32_t kKeyLimit3 = (1 << 20) - 2;
/// The 2D limit of box-object grid cell coordinates (see kKeyLimit3).
inline constexpr int32_t kKeyLimit2 = 0x7fffffff - 2;

/// Reciprocal of the guarded cell edge.
inline double key_scale(float cell_size) { return 1.0 / (static_cast<double>(cell_size) * kCellGuard); }

/// Scaled coordinate; its floor is the cell coordinate.
inline double scaled_coordinate(float p, float origin, double scale) {
    return (static_cast<double>(p) - static_cast<double>(origin)) * scale;
}

/// Packs integer cell coordinates (within the limits above) into an unsigned key
/// whose unsigned order is lexicographic (z, y, x). 2D ignores z.
inline uint64_t pack_key3(int32_t x, int32_t y, int32_t z) {
    constexpr int64_t bias = int64_t{1} << 20;
    return (static_cast<uint64_t>(z + bias) << 42) | (static_cast<uint64_t>(y + bias) << 21) |
           static_cast<uint64_t>(x + bias);
}
/// The 2D key: (y, x) in unsigned order, 32 bits per axis (see pack_key3).
inline uint64_t pack_key2(int32_t x, int32_t y) {
    constexpr int64_t bias = int64_t{1} << 31;
    return (static_cast<uint64_t>(y + bias) << 32) | static_cast<uint64_t>(int64_t{x} + bias);
}

/// Inverse of pack_key3 / pack_key2.
inline void unpack_key3(uint64_t key, int32_t& x, int32_t& y, int32_t& z) {
    constexpr int64_t bias = int64_t{1} << 20;
    constexpr uint64_t mask = (uint64_t{1} << 21) - 1;
    x = static_cast<int32_t>(static_cast<int64_t>(key & mask) - bias);
    y = static_cast<int32_t>(static_cast<int64_t>((key >> 21) & mask) - bias);
    z = static_cast<int32_t>(static_cast<int64_t>(key >> 42) - bias);
}
/// Inverse of pack_key2.
inline void unpack_key2(uint64_t key, int32_t& x, int32_t& y) {
    constexpr int64_t bias = int64_t{1} << 31;
    x = static_cast<int32_t>(static_cast<int64_t>(key & 0xffffffffu) - bias);
    y = static_cast<int32_t>(static_cast<int64_t>(key >> 32) - bias);
}

/// Slot hash of a packed key (a 64-bit finalizer; our own, never std::hash).
inline uint64_t hash_key(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return key;
}

} // namespace hashgrid
