// SPDX-License-Identifier: MIT
/// @file
/// Grid configuration and the exact memory it needs.
///
/// Recipe:
///
///     hashgrid::GridConfig config;             // defaults: 3D, unbounded
///     config.cell_size = r; config.interaction_distance = r;
///     config.max_particles = n; config.max_cells = n; config.max_pairs = 40 * n;
///     hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
///     void* memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment); // or your own (memory.h)
///     hashgrid::Grid grid;
///     hashgrid::Status s = grid.init(config, memory, req.bytes);
#pragma once

#include "hashgrid/lattice_config.h" // World, OutOfBounds, LatticeConfig
#include "hashgrid/memory.h"         // MemoryRequirements
#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid {

/// Everything fixed at init. All capacities are hard limits: nothing grows.
/// The lattice fields (dimensions, cell_size, world, origin, cell_counts,
/// out_of_bounds) are those of LatticeConfig (lattice_config.h); a particle
/// grid also needs cell_size >= interaction_distance.
struct GridConfig : LatticeConfig {
    /// Uniform mode: a pair is reported when distance < interaction_distance.
    /// Finite, > 0 and <= cell_size.
    float interaction_distance = 1.0f;
    /// Largest particle count passed to rebuild(), in [1, 2^31).
    uint32_t max_particles = 0;
    /// Unbounded only: most distinct occupied cells per frame, in [1, 2^30).
    /// The table reserves max(256, next power of two >= 2 * max_cells) slots;
    /// a frame uses max(256, next power of two >= 2 * its occupied cells) of
    /// them (load <= 0.5, Grid::table_slots()); a key's home slot is the top
    /// log2(slots) bits of hash_key().
    uint32_t max_cells = 0;
    /// Most pairs find_pairs() may find per frame (< 2^40): a hard limit; more
    /// is StatusCode::pair_capacity with the exact count.
    uint64_t max_pairs = 0;
};

/// Validates the config and returns the bytes init() needs. Allocates nothing.
[[nodiscard]] MemoryRequirements memory_requirements(const GridConfig& config);

/// Checks a config without computing memory (same rules as init()): the
/// lattice rules of validate(const LatticeConfig&) first, then this config's
/// own fields.
[[nodiscard]] Status validate(const GridConfig& config);

} // namespace hashgrid
