// SPDX-License-Identifier: MIT
// Uniform point clouds in the unit cube (or square) sized by their mean
// neighbour count: the scene of the profiling sweeps and the frame-time
// recorder (profiling/bench_sweeps.cpp, bench_frames.cpp). n points uniform in
// [0, 1)^d have on average n * 4/3 pi r^3 (3D) or n * pi r^2 (2D) others
// within r, less near the walls.
#pragma once

#include "hashgrid_support/random.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace hashgrid_support {

/// The radius r with `neighbours` = n * 4/3 pi r^3 (3D) or n * pi r^2 (2D).
inline float radius_for_neighbours(uint32_t dimensions, uint32_t n, double neighbours) {
    const double pi = 3.14159265358979323846;
    const double count = static_cast<double>(n);
    return dimensions == 2 ? static_cast<float>(std::sqrt(neighbours / (pi * count)))
                           : static_cast<float>(std::cbrt(neighbours * 3.0 / (4.0 * pi * count)));
}

/// Cells per axis of a bounded world at origin 0 that holds [0, 1]: floor(1 /
/// cell) + 1, so that 1.0 is inside whatever the rounding of 1 / cell.
inline uint32_t cells_over_unit(float cell) {
    return static_cast<uint32_t>(std::floor(1.0 / static_cast<double>(cell))) + 1;
}

/// n points uniform in [0, 1)^dimensions as structure of arrays (axis[2] stays
/// empty in 2D); point i takes `dimensions` consecutive unit() draws of
/// SplitMix64(seed).
struct UniformPoints {
    uint32_t dimensions = 3;
    std::vector<float> axis[3];

    UniformPoints() = default;
    UniformPoints(uint32_t dims, uint32_t n, uint64_t seed) : dimensions(dims) {
        SplitMix64 rng(seed);
        for (uint32_t a = 0; a < dimensions; ++a)
            axis[a].resize(n);
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t a = 0; a < dimensions; ++a)
                axis[a][i] = rng.unit();
    }
    [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(axis[0].size()); }
};

} // namespace hashgrid_support
