// SPDX-License-Identifier: MIT
/// @file
/// The cell lattice: how space is cut into cells. Both grid kinds share it:
/// GridConfig (config.h, particles) and BoxGridConfig (box_grid.h, boxes)
/// derive from LatticeConfig, so one lattice can be copied from one config
/// into the other:
///
///     hashgrid::BoxGridConfig boxes;
///     static_cast<hashgrid::LatticeConfig&>(boxes) = particle_config;  // same cells
///
/// A point p lies in cell floor((p - origin) * key_scale(cell_size)) per axis
/// (cell_key.h: the cell edge is enlarged by 2^-18 so that neighbouring
/// particles are never more than one cell apart).
#pragma once

#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid {

/// How cell coordinates become cell-table entries.
enum class World : uint8_t {
    /// No box. Particle grids take any finite coordinate; occupied cells live
    /// in a preallocated open-addressing table keyed by the cell coordinates,
    /// modulo 2^21 per axis in 3D and 2^31 in 2D beyond +-2^20 / +-2^30 cells
    /// of the origin (far cells share keys; the exact distance test tells
    /// them apart). Box grids key cells within +-kKeyLimit3 (3D) /
    /// +-kKeyLimit2 (2D) of the origin (cell_key.h) and keep a box reaching
    /// beyond with the large objects (box_grid.h): every finite coordinate
    /// is accepted there too.
    unbounded,
    /// A box [origin, origin + cell_counts * cell_size * (1 + 2^-18)) (the
    /// guarded key lattice of cell_key.h) with one dense entry per cell
    /// (direct index, no hashing). Costs O(total cells) per rebuild.
    bounded,
};

/// Bounded worlds: what happens to a particle or box outside the box.
enum class OutOfBounds : uint8_t {
    /// The frame is rejected with StatusCode::position_out_of_range (a particle
    /// outside the box, a box reaching outside it; index = lowest offender).
    reject,
    /// The particle (box) goes into the nearest border cell(s); pairs stay exact.
    clamp,
};

/// The cell lattice of a grid, shared by every grid kind. The rules below are
/// those validate() checks; a grid kind may add its own (noted per field).
struct LatticeConfig {
    /// 2 or 3. In 2D only x and y are read (origin[2] and cell_counts[2] too).
    uint32_t dimensions = 3;
    /// Edge length of a (square/cubic) cell: finite and > 0. Particle grids:
    /// also >= GridConfig::interaction_distance and, with per-particle radii,
    /// >= 2 * the largest radius. Box grids: about the median box edge is a
    /// good start.
    float cell_size = 1.0f;
    /// bounded or unbounded (see World).
    World world = World::unbounded;
    /// Finite. Bounded: the world's minimum corner. Unbounded: the point cell
    /// (0,0,0) starts at (a "floating origin" that keeps cell keys small).
    float origin[3] = {0.0f, 0.0f, 0.0f};
    /// Bounded only (ignored when unbounded): cells per axis, each >= 1, product
    /// < 2^31. Box grids name cells by packed keys (cell_key.h) in bounded
    /// worlds too, so a bounded 3D box grid also needs each count <= 2^20 - 1.
    uint32_t cell_counts[3] = {0, 0, 0};
    /// Bounded only (ignored when unbounded): reject or clamp (see OutOfBounds).
    OutOfBounds out_of_bounds = OutOfBounds::reject;
};

/// The lattice rules every grid kind shares: dimensions 2 or 3, cell_size
/// finite and > 0, origin finite (the first `dimensions` entries), world
/// bounded or unbounded and, when bounded, cell_counts >= 1 with a product
/// < 2^31 and out_of_bounds reject or clamp. Returns invalid_config with a
/// message naming the field, else ok. validate(GridConfig) and
/// BoxGrid::validate run exactly this first, then check their own fields.
[[nodiscard]] Status validate(const LatticeConfig& lattice);

} // namespace hashgrid
