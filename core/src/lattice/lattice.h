// SPDX-License-Identifier: MIT
// The cell lattice of a grid: which cell a coordinate falls in and how a
// cell is keyed, for particle grids (GridConfig) and box grids
// (BoxGridConfig) alike.
//
// The cell of p on axis d is floor((p - origin[d]) * scale) in double, with
// scale = key_scale(cell_size) (hashgrid/cell_key.h explains why this is
// exact enough). Valid cell coordinates per axis are [lo, hi]: bounded
// worlds [0, n - 1]; unbounded box grids the packing limits +-kKeyLimit3/2
// (an object beyond them is a large object, box_grid_rebuild.cpp);
// unbounded particle grids the wrap range (wrapped_cells.h). Unused axes
// (2D) are [0, 0]. Bounded cells are numbered linearly (x fastest);
// unbounded cells are keyed by pack_key3 / pack_key2, which sort the same
// way. Users: the particle rebuild (rebuild_steps.h KeyParams), the box
// grid (box_grid_internal.h BoxState) and every reader of a built frame
// through its CellIndex (cell_index.h).
#pragma once

#include "lattice/cell_coords.h"
#include "lattice/wrapped_cells.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/cell_key.h"
#include "hashgrid/config.h"
#include "hashgrid/lattice_config.h"

#include <cstdint>

namespace hashgrid::detail {

struct Lattice {
    uint32_t dims = 3;
    bool bounded = true;
    bool clamp = false; ///< Bounded world with OutOfBounds::clamp.
    float cell_size = 1.0f;
    double scale = 1.0; ///< key_scale(cell_size)
    double edge = 1.0;  ///< Guarded cell edge, cell_size * kCellGuard.
    float origin_f[3] = {0.0f, 0.0f, 0.0f};
    double origin[3] = {0.0, 0.0, 0.0}; ///< origin_f as doubles.
    uint32_t n[3] = {1, 1, 1};          ///< Bounded: cells per axis (1 on unused axes).
    int64_t lo[3] = {0, 0, 0};          ///< Valid cell coordinates per axis (inclusive).
    int64_t hi[3] = {0, 0, 0};

    /// Scaled coordinate; its floor is the cell coordinate.
    [[nodiscard]] double scaled(uint32_t d, float p) const { return scaled_coordinate(p, origin_f[d], scale); }
    [[nodiscard]] double scaled(uint32_t d, double p) const { return (p - origin[d]) * scale; }
    /// The scaled coordinates whose cells are valid on axis d: [lower, upper).
    [[nodiscard]] double lower(uint32_t d) const { return static_cast<double>(lo[d]); }
    [[nodiscard]] double upper(uint32_t d) const { return static_cast<double>(hi[d]) + 1.0; }
    [[nodiscard]] bool contains(uint32_t d, int64_t c) const { return c >= lo[d] && c <= hi[d]; }

    /// Cell of p on axis d; false if outside [lo, hi] (clamped instead in clamp mode).
    bool cell_of(uint32_t d, float p, int32_t& cell) const;
    /// Unbounded: the (wrapped) cell of p on axis d (cell_key.h, unbounded_cell).
    [[nodiscard]] int32_t unbounded_cell_of(uint32_t d, float p, bool& wrapped) const {
        return unbounded_cell(p, origin_f[d], scale, dims, wrapped);
    }
    /// Cell of scaled coordinate t (any double, NaN gives lo) clamped into [lo, hi].
    [[nodiscard]] int32_t clamped_cell(uint32_t d, double t) const {
        return floor_to_int(clamp_into(t, lower(d), upper(d) - 1.0));
    }

    /// Cell of world coordinate p on axis d (any double, NaN gives lo), clamped into [lo, hi].
    [[nodiscard]] int32_t clamped_cell_of(uint32_t d, double p) const { return clamped_cell(d, scaled(d, p)); }
    /// World coordinate where cell k starts on axis d (approximately: ranges
    /// built from it are widened by their users).
    [[nodiscard]] double boundary(uint32_t d, int64_t k) const { return origin[d] + static_cast<double>(k) / scale; }

    /// Packed key of unbounded cell coordinates in `dims` dimensions.
    static uint64_t pack(uint32_t dims, int32_t x, int32_t y, int32_t z) {
        return dims == 3 ? pack_key3(x, y, z) : pack_key2(x, y);
    }
    /// Inverse of pack (z = 0 in 2D).
    static void unpack(uint32_t dims, uint64_t key, int32_t& x, int32_t& y, int32_t& z) {
        if (dims == 3) {
            unpack_key3(key, x, y, z);
        } else {
            unpack_key2(key, x, y);
            z = 0;
        }
    }
    [[nodiscard]] uint64_t pack(int32_t x, int32_t y, int32_t z) const { return pack(dims, x, y, z); }
    void unpack(uint64_t key, int32_t& x, int32_t& y, int32_t& z) const { unpack(dims, key, x, y, z); }
    /// Linear index of bounded cell coordinates (x fastest).
    [[nodiscard]] uint32_t linear(int64_t x, int64_t y, int64_t z) const {
        return static_cast<uint32_t>(x + int64_t{n[0]} * (y + int64_t{n[1]} * z));
    }
};

/// One axis of a lattice with its bounds as doubles, hoisted out of a
/// per-object loop: cell() is Lattice::cell_of, which runs it.
struct AxisCells {
    float origin;
    double scale;
    double lower;
    double upper;
    bool clamp;

    AxisCells(const Lattice& k, uint32_t d)
        : origin(k.origin_f[d]), scale(k.scale), lower(k.lower(d)), upper(k.upper(d)), clamp(k.clamp) {}
    bool cell(float p, int32_t& out) const {
        double t = scaled_coordinate(p, origin, scale);
        if (!(t >= lower && t < upper)) {
            if (!clamp) return false;
            t = t < lower ? lower : upper - 1.0;
        }
        out = floor_to_int(t);
        return true;
    }
};

inline bool Lattice::cell_of(uint32_t d, float p, int32_t& cell) const { return AxisCells(*this, d).cell(p, cell); }

/// The lattice of a config with the given unbounded per-axis range.
inline Lattice make_lattice(const LatticeConfig& c, int64_t unbounded_lo, int64_t unbounded_hi) {
    Lattice l;
    l.dims = c.dimensions;
    l.bounded = c.world == World::bounded;
    l.clamp = l.bounded && c.out_of_bounds == OutOfBounds::clamp;
    l.cell_size = c.cell_size;
    l.scale = key_scale(c.cell_size);
    l.edge = static_cast<double>(c.cell_size) * kCellGuard;
    for (uint32_t d = 0; d < 3; ++d) {
        const bool used = d < l.dims;
        l.origin_f[d] = c.origin[d];
        l.origin[d] = c.origin[d];
        l.n[d] = l.bounded && used ? c.cell_counts[d] : 1u;
        l.lo[d] = !used ? 0 : (l.bounded ? 0 : unbounded_lo);
        l.hi[d] = !used ? 0 : (l.bounded ? int64_t{c.cell_counts[d]} - 1 : unbounded_hi);
    }
    return l;
}

/// Particle grid: unbounded cells are wrapped (wrapped_cells.h).
inline Lattice make_lattice(const GridConfig& c) {
    return make_lattice(c, wrap_min(c.dimensions), wrap_max(c.dimensions));
}

/// Box grid: unbounded cells within the packing limits.
inline Lattice make_lattice(const BoxGridConfig& c) {
    const int64_t limit = c.dimensions == 3 ? kKeyLimit3 : kKeyLimit2;
    return make_lattice(c, -limit, limit);
}

} // namespace hashgrid::detail
