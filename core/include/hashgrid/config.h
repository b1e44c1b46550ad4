// Grid configuration and the exact memory it needs.
//
// Recipe:
//   hashgrid::GridConfig config;             // defaults: 3D, unbounded
//   config.cell_size = r; config.interaction_distance = r;
//   config.max_particles = n; config.max_cells = n; config.max_pairs = 40 * n;
//   hashgrid::MemoryRequirements req = hashgrid::memory_requirements(config);
//   void* memory = hashgrid::aligned_alloc_bytes(req.bytes, req.alignment); // or your own (grid.h)
//   hashgrid::Grid grid;
//   hashgrid::Status s = grid.init(config, memory, req.bytes);
#pragma once

#include "hashgrid/status.h"

#include <cstdint>

namespace hashgrid {

/// How cell coordinates become cell-table entries.
enum class World : uint8_t {
    /// Any finite coordinate; occupied cells live in a preallocated
    /// open-addressing table keyed by the cell coordinates, modulo 2^21 per
    /// axis in 3D and 2^31 in 2D beyond +-2^20 / +-2^30 cells of the origin
    /// (far cells share keys; the exact distance test tells them apart).
    unbounded,
    /// A box [origin, origin + cell_counts * cell_size * (1 + 2^-18)) (the
    /// guarded key lattice of cell_key.h) with one dense entry per cell
    /// (direct index, no hashing). Costs O(total cells) per rebuild.
    bounded,
};

/// Bounded worlds: what happens to a particle outside the box.
enum class OutOfBounds : uint8_t {
    reject, ///< The frame is rejected with StatusCode::position_out_of_range.
    clamp,  ///< The particle goes into the nearest border cell (pairs stay exact).
};

/// Everything fixed at init. All capacities are hard limits: nothing grows.
struct GridConfig {
    /// 2 or 3. In 2D only x and y are read.
    uint32_t dimensions = 3;
    /// Edge length of a (square/cubic) cell. Must be >= interaction_distance and,
    /// with per-particle radii, >= 2 * the largest radius.
    float cell_size = 1.0f;
    /// Uniform mode: a pair is reported when distance < interaction_distance.
    float interaction_distance = 1.0f;
    World world = World::unbounded;
    /// Bounded: the world's minimum corner. Unbounded: the point cell (0,0,0)
    /// starts at (a "floating origin" that keeps cell keys small).
    float origin[3] = {0.0f, 0.0f, 0.0f};
    /// Bounded only: cells per axis (each >= 1, product < 2^31).
    uint32_t cell_counts[3] = {0, 0, 0};
    /// Bounded only.
    OutOfBounds out_of_bounds = OutOfBounds::reject;
    /// Largest particle count passed to rebuild(), in [1, 2^31).
    uint32_t max_particles = 0;
    /// Unbounded only: most distinct occupied cells per frame, in [1, 2^30).
    /// The table has max(256, next power of two >= 2 * max_cells) slots (load
    /// <= 0.5); a key's home slot is the top log2(slots) bits of hash_key().
    uint32_t max_cells = 0;
    /// Most pairs find_pairs() may find per frame (< 2^40): a hard limit; more
    /// is StatusCode::pair_capacity with the exact count.
    uint64_t max_pairs = 0;
};

/// Exact size and alignment of the memory block init() needs for a config.
struct MemoryRequirements {
    Status status;          ///< invalid_config when the config is rejected (bytes is 0 then).
    uint64_t bytes = 0;     ///< 64-bit even on 32-bit targets; status is invalid_config if it exceeds SIZE_MAX.
    uint32_t alignment = 0; ///< Power of two.
};

/// Validates the config and returns the bytes init() needs. Allocates nothing.
MemoryRequirements memory_requirements(const GridConfig& config);

/// Checks a config without computing memory (same rules as init()).
Status validate(const GridConfig& config);

} // namespace hashgrid
